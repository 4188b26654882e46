//! xqzero's search: PUCT Monte Carlo tree search over any [`Evaluator`], and the self-play
//! driver that keeps an evaluator fed with batches from many games at once.
//!
//! ```
//! use xiangqi::game::Game;
//! use xqz_mcts::{SearchConfig, Tree, UniformEvaluator, search};
//!
//! // Red wins in one: the rook takes the open d-file (mate: the kings face on the e-file) or
//! // rank 8 (stalemate, which loses too).
//! let game = Game::from_position("3k5/9/9/9/9/9/9/9/R8/4K4 w".parse()?, Default::default());
//! let mut tree = Tree::new(game);
//! search(&mut tree, &mut UniformEvaluator, 400, &SearchConfig::default())?;
//! let best = tree.root().best_move().expect("a legal move").to_string();
//! assert!(best == "a1d1" || best == "a1a8", "{best}");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod evaluator;
mod mate;
mod openings;
mod search;
mod seed;
mod selfplay;
mod settings;
mod tree;

pub use evaluator::{EvalError, Evaluation, Evaluator, MaterialEvaluator, Pending, UniformEvaluator};
pub use openings::{OpeningSuite, SuiteError};
pub use search::{search, search_until};
pub use seed::game_seed;
pub use selfplay::{
    LiveConfig, PlyRecord, Resignation, SelfPlayConfig, SelfPlayGame, SelfPlayStats, replay, self_play, self_play_live,
};
pub use settings::{ParsePolicyTargetError, PlaySchedule, PlaySettings, PolicyTarget, ResignConfig, SettingsError};
pub use tree::{Line, PendingLeaf, RootStats, SearchConfig, Selection, Tree};
