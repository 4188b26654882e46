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
//!
//! Every match, this quick one included, is played by [`tournament::run_match`] and scored by
//! [`stats`]; [`records`] keeps the games of evaluation matches (`xqz eval match`, the strength
//! tracker of `xqz run`) in one table that `xqz eval ladder` rates whole.

pub mod ladder;
pub mod player;
pub mod records;
pub mod stats;
pub mod tournament;
pub mod uci;

use std::fmt;
use std::sync::{Mutex, PoisonError};

use xiangqi::Color;
use xiangqi::game::{GameConfig, Outcome};
use xqz_mcts::{EvalError, Evaluator, SearchConfig};

use crate::player::{Player, PlayerError, SearchPlayer};
use crate::tournament::{MatchPlan, Openings, run_match};

/// Why a player factory of [`play_match`] cannot be called twice.
const ONE_THREAD: &str = "a one-thread match makes each player once";

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

impl MatchConfig {
    /// The plan [`run_match`] plays this match by: its games as pairs of random openings of
    /// [`opening_plies`](Self::opening_plies) drawn from [`seed`](Self::seed), one game at a
    /// time, no early stop.
    pub fn plan(&self) -> MatchPlan {
        MatchPlan {
            pairs: self.games / 2,
            played: std::collections::BTreeSet::new(),
            concurrency: 1,
            openings: Openings::Random { plies: self.opening_plies, seed: self.seed },
            game: self.game,
            sprt: None,
        }
    }
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

/// An Elo difference clamped to [`ELO_LIMIT`].
fn clamp_elo(elo: f64) -> f64 {
    elo.clamp(-ELO_LIMIT, ELO_LIMIT)
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

    /// The Elo difference the score implies (first player minus second): the estimate of
    /// [`stats::elo_wdl`] within ±800.
    pub fn elo(&self) -> f64 {
        clamp_elo(self.estimate().elo)
    }

    /// Half the width of the 95% interval of [`stats::elo_wdl`], its ends within ±800; infinite
    /// before any game, and 0 when every game scored the same (all draws, say), as the variance of
    /// the per-game scores is then 0.
    pub fn elo_error95(&self) -> f64 {
        if self.games() == 0 {
            return f64::INFINITY;
        }
        let estimate = self.estimate();
        (clamp_elo(estimate.upper) - clamp_elo(estimate.lower)) / 2.0
    }

    /// The Elo estimate of the games, unpaired.
    fn estimate(&self) -> stats::EloEstimate {
        stats::elo_wdl(self.wins, self.draws, self.losses)
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
/// The match is [`config.plan()`](MatchConfig::plan) played by [`run_match`], the runner of every
/// match: each pair of games starts from the same random opening
/// ([`MatchConfig::opening_plies`], redrawn if it ends the game), `a` playing Red in the first and
/// Black in the second. Every move is the most visited one of a fresh search by the side to
/// move's own evaluator.
///
/// # Errors
/// The first evaluator error (its game is lost by forfeit and the match played on to its end).
///
/// # Panics
/// If `config.games` is odd, or no opening of `config.opening_plies` random plies leaves the game
/// going (a length cap not above them, say).
pub fn play_match<A: Evaluator + Send + ?Sized, B: Evaluator + Send + ?Sized>(
    a: &mut A,
    b: &mut B,
    config: &MatchConfig,
) -> Result<MatchResult, EvalError> {
    assert!(
        config.games.is_multiple_of(2),
        "a match has an even number of games (paired openings), not {}",
        config.games
    );
    // One thread makes each player once, so each evaluator is lent out exactly once.
    let (a, b) = (Mutex::new(Some(a)), Mutex::new(Some(b)));
    let make_a = || -> Result<Box<dyn Player + '_>, PlayerError> {
        let evaluator = a.lock().unwrap_or_else(PoisonError::into_inner).take().expect(ONE_THREAD);
        Ok(Box::new(SearchPlayer::new("a", evaluator, config.playouts, config.search)))
    };
    let make_b = || -> Result<Box<dyn Player + '_>, PlayerError> {
        let evaluator = b.lock().unwrap_or_else(PoisonError::into_inner).take().expect(ONE_THREAD);
        Ok(Box::new(SearchPlayer::new("b", evaluator, config.playouts, config.search)))
    };
    let mut failure = None;
    let report = run_match(&config.plan(), &make_a, &make_b, |game, _| {
        // Search players fail only when their evaluator does.
        if let Some(forfeit) = &game.forfeit {
            failure.get_or_insert_with(|| EvalError(forfeit.reason.clone()));
        }
    });
    match (report, failure) {
        (_, Some(e)) => Err(e),
        (Ok(report), None) => Ok(report.games),
        (Err(e), None) => Err(EvalError(e.to_string())),
    }
}
