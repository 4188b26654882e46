//! Random self-play with legality only vs with full adjudication after every move.
//!
//! Run with `cargo bench -p xiangqi --bench adjudication`. Prints games/s and plies/s for both
//! and the relative cost of adjudication; the same seeds give the same games in both modes.
//! `XQZ_BENCH_GAMES` (2000) sets the games per measurement.

use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use xiangqi::Position;
use xiangqi::game::{Game, GameConfig};

const MAX_PLIES: u32 = 300;

/// Plays random games with legal-move generation only; returns (games, plies).
fn legality_only(seed: u64, games: usize) -> (usize, usize) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut plies = 0;
    for _ in 0..games {
        let mut pos = Position::startpos();
        for _ in 0..MAX_PLIES {
            let moves = pos.legal_moves();
            if moves.is_empty() {
                break;
            }
            pos.play_unchecked(moves[rng.random_range(0..moves.len())]);
            plies += 1;
        }
    }
    (games, plies)
}

/// The same games through `Game`, adjudicated after every move (they may end earlier, by a
/// repetition or the natural move limit).
fn adjudicated(seed: u64, games: usize) -> (usize, usize) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut plies = 0;
    let config = GameConfig { max_plies: Some(MAX_PLIES), ..GameConfig::default() };
    for _ in 0..games {
        let mut game = Game::new(config);
        while !game.outcome().is_over() {
            let moves = game.legal_moves();
            let mv = moves[rng.random_range(0..moves.len())];
            game.push_unchecked(mv);
            plies += 1;
        }
    }
    (games, plies)
}

fn measure(name: &str, run: impl Fn() -> (usize, usize)) -> f64 {
    let mut best = Duration::MAX;
    let mut result = (0, 0);
    for _ in 0..5 {
        let start = Instant::now();
        result = run();
        best = best.min(start.elapsed());
    }
    let secs = best.as_secs_f64();
    let ply_rate = result.1 as f64 / secs;
    println!(
        "{name:<24} {:>8.0} games/s {:>11.0} plies/s ({} games, {} plies, best of 5)",
        result.0 as f64 / secs,
        ply_rate,
        result.0,
        result.1
    );
    secs / result.1 as f64
}

fn main() {
    let games = std::env::var("XQZ_BENCH_GAMES").ok().and_then(|v| v.parse().ok()).unwrap_or(2000);
    let base = measure("legality only", || legality_only(1, games));
    let full = measure("full adjudication", || adjudicated(1, games));
    println!("adjudication cost per ply: {:+.1}%", (full / base - 1.0) * 100.0);
}
