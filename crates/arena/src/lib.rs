//! xqzero's arena: matches between players (searches over any [`xqz_mcts::Evaluator`], external
//! UCI engines), scored from the first player's point of view.
//!
//! ```
//! use xiangqi::game::GameConfig;
//! use xqz_arena::MatchConfig;
//! use xqz_arena::player::{Player, SearchPlayer};
//! use xqz_arena::tournament::run_match;
//! use xqz_mcts::{MaterialEvaluator, UniformEvaluator};
//!
//! // One opening, played once with each colour: material counting against the bare rules.
//! let config = MatchConfig {
//!     games: 2,
//!     playouts: 16,
//!     game: GameConfig { max_plies: Some(40), ..GameConfig::default() },
//!     ..MatchConfig::default()
//! };
//! let material = || Ok(Box::new(SearchPlayer::new("material", MaterialEvaluator, 16, config.search)) as Box<dyn Player>);
//! let uniform = || Ok(Box::new(SearchPlayer::new("uniform", UniformEvaluator, 16, config.search)) as Box<dyn Player>);
//! let report = run_match(&config.plan(), &material, &uniform, |_, _| {})?;
//! assert_eq!(report.games.games(), 2);
//! # Ok::<(), xqz_arena::player::PlayerError>(())
//! ```
//!
//! Every match is played by [`tournament::run_match`] and scored by [`stats`]; [`records`] keeps
//! the games of evaluation matches (`xqz eval match`, the strength tracker of `xqz run`) in one
//! table that `xqz eval ladder` rates whole.

pub mod job;
pub mod ladder;
pub mod player;
pub mod records;
pub mod stats;
pub mod tournament;
pub mod uci;

use xiangqi::Color;
use xiangqi::game::{GameConfig, Outcome};
use xqz_mcts::SearchConfig;

use crate::tournament::{MatchPlan, Openings};

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
    /// The plan [`run_match`](tournament::run_match) plays this match by: its games as pairs of random openings of
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

    /// Counts one game by the first player's score in it: 1 a win, 0 a loss, else a draw.
    pub fn record_score(&mut self, score: f64) {
        match score {
            s if s >= 1.0 => self.wins += 1,
            s if s <= 0.0 => self.losses += 1,
            _ => self.draws += 1,
        }
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
