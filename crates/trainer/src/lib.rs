//! xqzero's trainer: turns replay-window batches into network inputs and targets, and trains.
//!
//! ```
//! use rand::SeedableRng;
//! use xqz_dataset::synthetic::{SyntheticConfig, random_game};
//! use xqz_dataset::{DatasetWriter, ReplayConfig, ReplayWindow, WriterConfig};
//! use xqz_net::{ModelConfig, Network, TrainConfig, Trainer};
//! use xqz_trainer::{Targets, TrainingData};
//!
//! let dir = tempfile::tempdir()?;
//! let (mut writer, _) = DatasetWriter::open(dir.path(), WriterConfig::default())?;
//! let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
//! for id in 0..4 {
//!     let (game, samples) = random_game(&mut rng, id, &SyntheticConfig::default());
//!     writer.append(game, samples)?;
//! }
//! writer.finish()?;
//! let window = ReplayWindow::open(dir.path(), ReplayConfig { batch_size: 32, ..Default::default() })?;
//! let batch = window.epoch(0).next().unwrap();
//! let data = TrainingData::from_replay(&batch, Targets::default())?;
//! let mut trainer = Trainer::new(Network::new(&ModelConfig::builtin("tiny")?, xqz_net::Device::Cpu), TrainConfig::default());
//! let losses = trainer.step(&data.batch())?;
//! assert!(losses.total.is_finite());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#[cfg(feature = "torch")]
mod data;
#[cfg(feature = "torch")]
mod metrics;
#[cfg(feature = "torch")]
mod publish;
#[cfg(feature = "torch")]
mod run;
mod settings;

#[cfg(feature = "torch")]
pub use data::{DataError, Targets, TrainingData};
#[cfg(feature = "torch")]
pub use metrics::TrainerMetrics;
#[cfg(feature = "torch")]
pub use publish::{GrpcPublisher, PublishError, Publisher};
#[cfg(feature = "torch")]
pub use run::{RunError, TrainerConfig, latest_checkpoint, light_state_files, train};
pub use settings::{TrainSettings, TrainSettingsError};
