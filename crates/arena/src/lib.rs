//! xqzero's arena: matches between two players that search with [`xqz_mcts`], each with its own
//! [`Evaluator`], scored from the first player's point of view with an Elo estimate and its 95%
//! error bar.
//!
//! ```
//! use xiangqi::game::GameConfig;
//! use xqz_arena::{MatchConfig, play_match};
//! use xqz_mcts::{MaterialEvaluator, UniformEvaluator};
//!
//! // One opening, played once with each colour: material counting against the bare rules.
//! let config = MatchConfig {
//!     games: 2,
//!     playouts: 16,
//!     game: GameConfig { max_plies: Some(40), ..GameConfig::default() },
//!     ..MatchConfig::default()
//! };
//! let result = play_match(&mut MaterialEvaluator, &mut UniformEvaluator, &config)?;
//! assert_eq!(result.games(), 2);
//! // Wins, draws, losses, score and Elo, e.g. `+12 =5 -3 (score 72.5%, Elo +168 ± 157)`.
//! println!("{result}");
//! # Ok::<(), xqz_mcts::EvalError>(())
//! ```

pub mod player;
pub mod stats;
pub mod tournament;
pub mod uci;

use std::fmt;

use xiangqi::Color;
use xiangqi::game::{GameConfig, Outcome};
use xqz_mcts::{EvalError, Evaluator, SearchConfig};

use crate::player::{SearchPlayer, play_game};
use crate::tournament::Openings;

/// The Elo difference reported for a score of 0% or 100% (which imply an infinite one).
const ELO_LIMIT: f64 = 800.0;

/// How a match is played.
#[derive(Clone, Debug, PartialEq)]
pub struct MatchConfig {
    /// Games in all; even, as each opening is played twice with the colours swapped.
    pub games: u32,
    /// Playouts of each side's search per move.
    pub playouts: u32,
    /// Search settings of both sides.
    pub search: SearchConfig,
    /// Adjudication of every game; a cap on the length keeps matches between weak players finite.
    pub game: GameConfig,
    /// Plies of each opening drawn uniformly from the legal moves, so deterministic players do
    /// not play the same game over and over.
    pub opening_plies: u32,
    /// Seed of the openings: pair `i` draws its opening with [`game_seed`]`(seed, i)`.
    pub seed: u64,
}

impl Default for MatchConfig {
    fn default() -> MatchConfig {
        MatchConfig {
            games: 20,
            playouts: 200,
            search: SearchConfig::default(),
            game: GameConfig { max_plies: Some(300), ..GameConfig::default() },
            opening_plies: 4,
            seed: 0,
        }
    }
}

/// A match's games from the first player's point of view.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct MatchResult {
    /// Games the first player won.
    pub wins: u32,
    /// Drawn games.
    pub draws: u32,
    /// Games the first player lost.
    pub losses: u32,
}

/// The Elo difference for an expected score, clamped to [`ELO_LIMIT`].
fn elo_from_score(score: f64) -> f64 {
    stats::elo_from_score(score).clamp(-ELO_LIMIT, ELO_LIMIT)
}

impl MatchResult {
    /// Games played.
    pub fn games(&self) -> u32 {
        self.wins + self.draws + self.losses
    }

    /// The first player's score in [0, 1]: (wins + draws / 2) / games; 0.5 before any game.
    pub fn score(&self) -> f64 {
        match self.games() {
            0 => 0.5,
            n => (f64::from(self.wins) + f64::from(self.draws) / 2.0) / f64::from(n),
        }
    }

    /// The Elo difference the score implies (first player minus second), within ±800.
    pub fn elo(&self) -> f64 {
        elo_from_score(self.score())
    }

    /// Half the width of the 95% confidence interval of [`elo`](Self::elo), from the variance of
    /// the per-game scores; infinite before any game, and 0 when every game scored the same (all
    /// draws, say), as that variance is then 0.
    pub fn elo_error95(&self) -> f64 {
        let n = self.games();
        if n == 0 {
            return f64::INFINITY;
        }
        let s = self.score();
        let variance = (f64::from(self.wins) * (1.0 - s).powi(2)
            + f64::from(self.draws) * (0.5 - s).powi(2)
            + f64::from(self.losses) * s.powi(2))
            / f64::from(n);
        let margin = 1.96 * (variance / f64::from(n)).sqrt();
        (elo_from_score(s + margin) - elo_from_score(s - margin)) / 2.0
    }

    /// Counts one finished game, `first` being the first player's colour in it.
    pub(crate) fn record(&mut self, outcome: Outcome, first: Color) {
        match outcome.winner() {
            None => self.draws += 1,
            Some(winner) if winner == first => self.wins += 1,
            Some(_) => self.losses += 1,
        }
    }
}

impl fmt::Display for MatchResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "+{} ={} -{} (score {:.1}%, Elo {:+.0} ± {:.0})",
            self.wins,
            self.draws,
            self.losses,
            100.0 * self.score(),
            self.elo(),
            self.elo_error95()
        )
    }
}

/// Plays a match of `a` against `b`, one game at a time, and scores it from `a`'s point of view.
///
/// Each pair of games starts from the same random opening ([`MatchConfig::opening_plies`],
/// redrawn if it ends the game), `a` playing Red in the first and Black in the second. Every
/// move is the most visited one of a fresh search by the side to move's own evaluator.
///
/// # Errors
/// The first evaluator error, which ends the match.
///
/// # Panics
/// If `config.games` is odd, or no opening of `config.opening_plies` random plies leaves the game
/// going (a length cap not above them, say).
pub fn play_match<A: Evaluator + ?Sized, B: Evaluator + ?Sized>(
    a: &mut A,
    b: &mut B,
    config: &MatchConfig,
) -> Result<MatchResult, EvalError> {
    assert!(
        config.games.is_multiple_of(2),
        "a match has an even number of games (paired openings), not {}",
        config.games
    );
    let openings = Openings::Random { plies: config.opening_plies, seed: config.seed };
    let mut a = SearchPlayer::new("a", a, config.playouts, config.search);
    let mut b = SearchPlayer::new("b", b, config.playouts, config.search);
    let mut result = MatchResult::default();
    for pair in 0..config.games / 2 {
        for first in [Color::Red, Color::Black] {
            let opening = openings.game(pair, config.game);
            let (game, forfeit) = if first == Color::Red {
                play_game(opening, &mut a, &mut b)
            } else {
                play_game(opening, &mut b, &mut a)
            };
            if let Some(forfeit) = forfeit {
                // Search players fail only when their evaluator does.
                return Err(EvalError(forfeit.reason));
            }
            result.record(game.outcome(), first);
        }
    }
    Ok(result)
}
