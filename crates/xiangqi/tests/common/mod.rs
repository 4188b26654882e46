//! Shared helpers for the integration tests: seeded random games, assertions on game outcomes.
#![allow(dead_code)] // each test binary uses a different subset

pub mod naive;
pub mod rules;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use xiangqi::game::{Game, Outcome, Reason};
use xiangqi::{Color, Move, Position};

/// A random game: the start position and the legal moves played from it.
pub struct RandomGame {
    /// Where the game starts.
    pub start: Position,
    /// The moves, each legal in turn.
    pub moves: Vec<Move>,
}

impl RandomGame {
    /// Every position of the game, the start included, paired with the move played from it
    /// (`None` for the last position).
    pub fn positions(&self) -> Vec<(Position, Option<Move>)> {
        let mut pos = self.start.clone();
        let mut out = Vec::with_capacity(self.moves.len() + 1);
        for &mv in &self.moves {
            out.push((pos.clone(), Some(mv)));
            pos.play_unchecked(mv);
        }
        out.push((pos, None));
        out
    }
}

/// Plays uniformly random legal moves from the start position until no move is left or
/// `max_plies` were played. Captures are preferred with probability `capture_bias` so that games
/// reach sparse endgames too.
pub fn random_game(rng: &mut ChaCha8Rng, max_plies: usize, capture_bias: f64) -> RandomGame {
    let start = Position::startpos();
    let mut pos = start.clone();
    let mut moves = Vec::new();
    while moves.len() < max_plies {
        let legal = pos.legal_moves();
        if legal.is_empty() {
            break;
        }
        let captures: Vec<Move> = legal.iter().copied().filter(|m| pos.piece_at(m.to()).is_some()).collect();
        let mv = if !captures.is_empty() && rng.random_bool(capture_bias) {
            captures[rng.random_range(0..captures.len())]
        } else {
            legal[rng.random_range(0..legal.len())]
        };
        pos.play_unchecked(mv);
        moves.push(mv);
    }
    RandomGame { start, moves }
}

/// `count` random games from one seed; game lengths vary between 1 and `max_plies`.
pub fn random_games(seed: u64, count: usize, max_plies: usize) -> Vec<RandomGame> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..count)
        .map(|_| {
            let plies = rng.random_range(1..=max_plies);
            let bias = rng.random_range(0.0..0.6);
            random_game(&mut rng, plies, bias)
        })
        .collect()
}

/// Asserts that `winner` has won `game` by `reason` under `article`.
pub fn assert_win(game: &Game, winner: Color, reason: Reason, article: &str) {
    match game.outcome() {
        Outcome::Win { winner: w, verdict } => {
            assert_eq!((w, verdict.reason, verdict.article), (winner, reason, article), "{:?}", game.outcome());
        }
        other => panic!("expected {winner} to win by {reason} ({article}), got {other:?}"),
    }
}

/// Asserts that `game` is drawn by `reason` under `article`.
pub fn assert_draw(game: &Game, reason: Reason, article: &str) {
    match game.outcome() {
        Outcome::Draw { verdict } => {
            assert_eq!((verdict.reason, verdict.article), (reason, article), "{:?}", game.outcome())
        }
        other => panic!("expected a draw by {reason} ({article}), got {other:?}"),
    }
}
