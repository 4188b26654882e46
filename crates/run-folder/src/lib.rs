//! The run folder of `xqz run` has one owner: this crate. Every program that writes or reads a
//! run's files (the trainer's metrics, the strength matches, the coordinator's ready file, the
//! record of how the roles stopped, the plots, the status line, the dashboard) names them through [`RunFolder`] and reads and writes
//! their rows through the one writer and the one reader here, so that the format lives in one
//! place and a resumed run reads what an older one wrote.
//!
//! It sits at the bottom of the house, on no other workspace crate, which is why the atomic
//! file write that the coordinator, the network's checkpoints and the binary share lives here
//! too.
//!
//! ```
//! use xqz_run_folder::{MetricsRow, RowReader, RowWriter, RunFolder};
//!
//! let dir = tempfile::tempdir()?;
//! let run = RunFolder::new(dir.path());
//! run.create()?;
//! let mut log = RowWriter::<MetricsRow>::open(&run.trainer().metrics_csv())?;
//! log.append(&MetricsRow { step: 1, policy_loss: 3.5, value_loss: 0.9, ..MetricsRow::default() })?;
//! let rows = RowReader::<MetricsRow>::new(run.trainer().metrics_csv()).read_all()?;
//! assert_eq!(rows[0].step, 1);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod atomic;
mod layout;
mod ready;
mod rows;
mod state;

pub use atomic::{IoError, write_atomic, write_atomic_with};
pub use layout::{CoordinatorFolder, RunFolder, TrainerFolder};
pub use ready::{Ready, ReadyError};
pub use rows::{Appended, MetricsRow, RoleEvent, RoleRow, Row, RowError, RowReader, RowWriter, StrengthRow};
pub use state::RunState;
