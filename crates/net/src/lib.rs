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

pub mod bench;
pub mod checkpoint;
pub mod config;
pub mod device;
pub mod encoding;
pub mod model;
pub mod policy;
pub mod service;
pub mod train;

pub use checkpoint::{CheckpointError, CheckpointInfo, CheckpointMeta};
pub use config::{ConfigError, ModelConfig, TrainConfig};
pub use device::{DeviceError, parse_device};
pub use model::{BatchPrediction, Network, Prediction};
pub use train::{Losses, TrainBatch, TrainError, Trainer};

/// Re-exported so that callers name devices without depending on tch themselves.
pub use tch::Device;
