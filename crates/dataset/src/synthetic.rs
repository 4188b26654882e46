//! Synthetic self-play data for tests and benchmarks: random legal games, adjudicated by the
//! rules core, with made-up search targets over the legal moves.
//!
//! ```
//! use rand::SeedableRng;
//! use xqz_dataset::synthetic::{SyntheticConfig, random_game};
//! let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
//! let (game, samples) = random_game(&mut rng, 1, &SyntheticConfig::default());
//! assert_eq!(samples.len(), game.moves.len());
//! ```

use rand::Rng;
use rand::seq::IndexedRandom;
use xiangqi::game::{Game, GameConfig, Ruleset};

use crate::record::{GameId, GameRecord, PlySearch, PolicyEntry, SampleRecord};

/// Shape of the generated games.
#[derive(Clone, Debug)]
pub struct SyntheticConfig {
    /// Length cap (a draw by `max_length` when reached).
    pub max_plies: u32,
    /// Probability of playing a capture when one exists (shortens games).
    pub capture_bias: f64,
    /// At most this many moves get policy mass (the played move always does).
    pub policy_moves: usize,
    /// At most this many moves get policy mass after a cheap search (as a search of that many
    /// playouts visits at most that many moves); `usize::MAX`: as after a full one.
    pub cheap_policy_moves: usize,
    /// Fraction of plies with a full search.
    pub full_search_fraction: f64,
    /// The model version recorded.
    pub model_version: u64,
    /// The ruleset.
    pub ruleset: Ruleset,
}

impl Default for SyntheticConfig {
    fn default() -> SyntheticConfig {
        SyntheticConfig {
            max_plies: 160,
            capture_bias: 0.3,
            policy_moves: 40,
            cheap_policy_moves: usize::MAX,
            full_search_fraction: 0.75,
            model_version: 1,
            ruleset: Ruleset::Chinese2011,
        }
    }
}

/// Plays one random game and makes up its samples: a policy over up to `policy_moves` legal
/// moves (summing to 1), a root WDL estimate, a seed and timestamps.
pub fn random_game<R: Rng>(rng: &mut R, id: u128, config: &SyntheticConfig) -> (GameRecord, Vec<SampleRecord>) {
    let mut game =
        Game::new(GameConfig { ruleset: config.ruleset, max_plies: Some(config.max_plies), ..GameConfig::default() });
    let mut searches = Vec::new();
    while !game.outcome().is_over() {
        let pos = game.position();
        let legal: Vec<_> = game.legal_moves().iter().copied().collect();
        let captures: Vec<_> = legal.iter().copied().filter(|m| pos.piece_at(m.to()).is_some()).collect();
        let mv = match captures.choose(rng) {
            Some(&c) if rng.random_bool(config.capture_bias) => c,
            _ => *legal.choose(rng).unwrap_or(&legal[0]),
        };
        let mut moves: Vec<_> = legal.choose_multiple(rng, config.policy_moves.max(1)).copied().collect();
        if !moves.contains(&mv) {
            moves[0] = mv;
        }
        let mut weights: Vec<f32> = moves.iter().map(|_| rng.random_range(0.01f32..1.0)).collect();
        let (w, l) = (rng.random_range(0.0f32..0.6), rng.random_range(0.0f32..0.4));
        let full_search = rng.random_bool(config.full_search_fraction);
        if !full_search && moves.len() > config.cheap_policy_moves.max(1) {
            // The played move first, so that it keeps its place among the moves kept.
            let played = moves.iter().position(|&m| m == mv).expect("the played move is in the policy");
            moves.swap(0, played);
            weights.swap(0, played);
            moves.truncate(config.cheap_policy_moves.max(1));
            weights.truncate(moves.len());
        }
        let sum: f32 = weights.iter().sum();
        let policy = moves.iter().zip(&weights).map(|(&mv, &w)| PolicyEntry { mv, p: w / sum }).collect();
        searches.push(PlySearch {
            policy,
            root_wdl: [w, 1.0 - w - l, l],
            model_version: config.model_version,
            full_search,
        });
        game.push_unchecked(mv);
    }
    let mut record = GameRecord::from_game(&game, GameId::from_u128(id)).expect("the game is over");
    record.model_version = config.model_version;
    record.worker_id = format!("synthetic-{}", id % 4);
    record.seed = rng.random();
    record.start_time_ms = 1_767_225_600_000 + (id as i64) * 60_000;
    record.end_time_ms = record.start_time_ms + 45_000;
    let samples = SampleRecord::from_game(&record, &searches).expect("the moves are legal");
    (record, samples)
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;

    #[test]
    fn a_cheap_search_covers_at_most_its_moves_and_keeps_the_played_one() {
        let config =
            SyntheticConfig { cheap_policy_moves: 8, full_search_fraction: 0.25, ..SyntheticConfig::default() };
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let (mut cheap, mut full_sizes) = (0, Vec::new());
        for id in 0..20 {
            let (game, samples) = random_game(&mut rng, id, &config);
            for (sample, mv) in samples.iter().zip(&game.moves) {
                let sum: f32 = sample.policy.iter().map(|e| e.p).sum();
                assert!((sum - 1.0).abs() < 1e-4, "a policy sums to 1, not {sum}");
                assert!(sample.policy.iter().any(|e| e.mv == *mv), "the played move has policy mass");
                if sample.full_search {
                    full_sizes.push(sample.policy.len());
                } else {
                    assert!(sample.policy.len() <= 8, "a cheap search's policy has {} moves", sample.policy.len());
                    cheap += 1;
                }
            }
        }
        assert!(cheap > 3 * full_sizes.len() / 2, "about three plies in four are cheap searches");
        assert!(full_sizes.iter().any(|&n| n > 8), "full searches keep their larger policies");
    }
}
