//! xqzero's self-play worker: turns finished self-play games into dataset records, plays games
//! locally into a dataset folder ([`play_into`]) or for a coordinator ([`remote`]).
//!
//! ```
//! use xqz_mcts::{MaterialEvaluator, PlaySettings};
//! use xqz_worker::{LocalSelfPlay, play_into};
//!
//! let dir = tempfile::tempdir()?;
//! let settings = PlaySettings { playouts: 8, cheap_playouts: 4, max_plies: 6, ..Default::default() };
//! let config = settings.self_play_config(1, 32, 0);
//! let run = LocalSelfPlay { games: 2, model_version: 0, worker_id: "doc".into() };
//! let report = play_into(dir.path(), &config, MaterialEvaluator, &run, |_| {})?;
//! assert_eq!(report.stats.games, 2);
//! assert_eq!(xqz_dataset::Dataset::open(dir.path())?.games()?.len(), 2);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod backoff;
mod local;
mod metrics;
mod record;
pub mod remote;
pub mod spool;

pub use backoff::Backoff;
pub use local::{LocalReport, LocalSelfPlay, WorkerError, play_into};
pub use metrics::WorkerMetrics;
