//! xqzero's neural network on tch (libtorch): the input encoding, the 2086-move policy index, a
//! residual network with policy and win/draw/loss heads, checked checkpoints, a batching inference
//! service and the training step.
//!
//! ```
//! use xqz_net::service::{InferenceService, Query, ServiceConfig};
//! use xqz_net::{ModelConfig, Network, encoding::History};
//!
//! let net = Network::new(&ModelConfig::builtin("tiny")?, tch::Device::Cpu);
//! let service = InferenceService::spawn(net, ServiceConfig::default());
//! let pos = xiangqi::Position::startpos();
//! let eval = service.client().evaluate(Query::new(&pos, History::default()))?;
//! let moves = pos.legal_moves();
//! let (best, _) = moves.iter().zip(&eval.priors).max_by(|a, b| a.1.total_cmp(b.1)).unwrap();
//! println!("{best} with win/draw/loss {:?}", eval.wdl);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Without the `torch` feature (on by default) only what needs no libtorch is built: the model
//! configs, the input encoding and the policy index, for roles that name models without running
//! them.

#[cfg(feature = "torch")]
pub mod bench;
#[cfg(feature = "torch")]
pub mod checkpoint;
pub mod config;
#[cfg(feature = "torch")]
pub mod device;
pub mod encoding;
#[cfg(feature = "torch")]
pub mod inference;
#[cfg(feature = "torch")]
pub mod model;
pub mod policy;
#[cfg(feature = "torch")]
pub mod service;
#[cfg(feature = "torch")]
pub mod train;

#[cfg(feature = "torch")]
pub use checkpoint::{CheckpointError, CheckpointInfo, CheckpointMeta};
pub use config::{ConfigError, ModelConfig, TrainConfig};
#[cfg(feature = "torch")]
pub use device::{DeviceError, parse_device};
#[cfg(feature = "torch")]
pub use inference::{InferenceNet, LegalPrediction, Precision, PrecisionError};
#[cfg(feature = "torch")]
pub use model::{BatchPrediction, Heads, Network, Prediction};
#[cfg(feature = "torch")]
pub use train::{DeviceBatch, Losses, StepLosses, TrainBatch, TrainError, Trainer};

/// Re-exported so that callers name devices without depending on tch themselves.
#[cfg(feature = "torch")]
pub use tch::Device;
