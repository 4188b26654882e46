//! Checkpoints: weights in safetensors, optimizer state beside them, and a JSON metadata file that
//! names both with their sha256, the model config, the encoding version and training counters.
//!
//! A checkpoint is named by its metadata path `NAME.json`; the weights are `NAME.safetensors` and
//! the optimizer state, when saved, `NAME.optimizer.safetensors`. Files are written to a temporary
//! name, synced and renamed, the metadata last: a checkpoint whose metadata exists is complete.
//!
//! ```
//! use xqz_net::checkpoint::{self, CheckpointInfo};
//! use xqz_net::{ModelConfig, Network};
//!
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("tiny-1.json");
//! let tiny = ModelConfig::builtin("tiny")?;
//! let net = Network::new(&tiny, tch::Device::Cpu);
//! checkpoint::save(&path, &net, CheckpointInfo { model_version: 1, ..Default::default() })?;
//! let (loaded, meta) = checkpoint::load(&path, tch::Device::Cpu, Some(&tiny))?;
//! assert_eq!(meta.info.model_version, 1);
//! assert_eq!(loaded.config(), &tiny);
//! // A different model config is refused.
//! let small = ModelConfig::builtin("small")?;
//! assert!(checkpoint::load(&path, tch::Device::Cpu, Some(&small)).is_err());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::{BTreeMap, HashMap};
use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use safetensors::SafeTensors;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tch::{Device, Kind, Tensor};
use xqz_run_folder::{IoError, write_atomic_with};

use crate::config::{ModelConfig, TrainConfig};
use crate::encoding::ENCODING_VERSION;
use crate::model::Network;
use crate::policy::POLICY_SIZE;

/// Version of the checkpoint layout: its metadata and the network's tensors (2: the value head
/// pools over the board, so version 1 weights no longer fit).
pub const FORMAT_VERSION: u32 = 2;

/// Where a network is in its training, stored with its weights.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointInfo {
    /// The model's number in the registry (0 for a random network).
    pub model_version: u64,
    /// Optimizer steps taken.
    pub training_steps: u64,
    /// Training samples seen (steps times batch size).
    pub samples_seen: u64,
    /// Samples in the dataset the trainer read when this was saved. A dataset with fewer is a
    /// new one: the run was resumed from a light state. 0 in checkpoints from before it was kept.
    #[serde(default)]
    pub dataset_samples: u64,
    /// Self-play samples of the datasets of earlier sittings that the trainer's
    /// samples-per-sample guard credits, beside the dataset's own (0 unless the run was resumed
    /// from a light state).
    #[serde(default)]
    pub guard_credit: u64,
    /// Wall seconds the trainer had trained for in all, across resumes: a checkpoint's hours of
    /// training, wherever and in how many sittings the run ran. 0 in checkpoints from before it was
    /// kept.
    #[serde(default)]
    pub train_seconds: u64,
}

/// A file of the checkpoint and its digest.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileDigest {
    /// File name, relative to the metadata file's folder.
    pub file: String,
    /// Size in bytes.
    pub bytes: u64,
    /// sha256 of the contents, lowercase hex.
    pub sha256: String,
}

/// The optimizer state's file and settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct OptimizerMeta {
    /// Momentum buffers, named as the weights they belong to.
    pub state: FileDigest,
    /// Learning rate, momentum and weight decay.
    pub config: TrainConfig,
}

/// The metadata file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CheckpointMeta {
    /// [`FORMAT_VERSION`] of the writer.
    pub format: u32,
    /// The network's shape.
    pub model: ModelConfig,
    /// The input encoding it was trained on.
    pub encoding_version: u32,
    /// Its policy width.
    pub policy_size: usize,
    /// Training counters.
    pub info: CheckpointInfo,
    /// The weights.
    pub weights: FileDigest,
    /// The optimizer state, if saved.
    pub optimizer: Option<OptimizerMeta>,
}

/// Why a checkpoint cannot be saved or loaded.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    /// A file cannot be read or written.
    #[error("checkpoint file {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The metadata is not valid JSON of the expected shape.
    #[error("checkpoint metadata {path} is malformed: {message}")]
    Metadata {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// Written by a newer or older program.
    #[error("checkpoint {path} has format {found}, this program reads format {FORMAT_VERSION}")]
    Format {
        /// The file.
        path: PathBuf,
        /// Its format.
        found: u32,
    },
    /// Trained on another input encoding or policy width.
    #[error(
        "checkpoint {path} was trained on input encoding {encoding} with {policy} policy moves; this program \
         uses encoding {ENCODING_VERSION} with {POLICY_SIZE}"
    )]
    Encoding {
        /// The file.
        path: PathBuf,
        /// Its encoding version.
        encoding: u32,
        /// Its policy width.
        policy: usize,
    },
    /// Another model config than the one asked for.
    #[error("checkpoint {path} is model {found:?}, but model {expected:?} was asked for")]
    ConfigMismatch {
        /// The file.
        path: PathBuf,
        /// The config asked for.
        expected: Box<ModelConfig>,
        /// The checkpoint's config.
        found: Box<ModelConfig>,
    },
    /// The file's contents do not match the digest in the metadata.
    #[error(
        "checkpoint file {path} is corrupted: sha256 {found} ({found_bytes} bytes), metadata says {expected} ({expected_bytes} bytes)"
    )]
    Corrupted {
        /// The file.
        path: PathBuf,
        /// Digest in the metadata.
        expected: String,
        /// Digest of the file.
        found: String,
        /// Size in the metadata.
        expected_bytes: u64,
        /// Size of the file.
        found_bytes: u64,
    },
    /// The weights do not fit the model config.
    #[error("checkpoint file {path} does not fit model {model:?}: {message}")]
    Weights {
        /// The file.
        path: PathBuf,
        /// The model config's name.
        model: String,
        /// The first difference.
        message: String,
    },
    /// libtorch failed.
    #[error("checkpoint {path}: {source}")]
    Torch {
        /// The file.
        path: PathBuf,
        /// Why.
        source: tch::TchError,
    },
}

type Result<T> = std::result::Result<T, CheckpointError>;

impl From<IoError> for CheckpointError {
    fn from(e: IoError) -> CheckpointError {
        CheckpointError::Io { path: e.path, source: e.source }
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> CheckpointError + '_ {
    move |source| CheckpointError::Io { path: path.to_path_buf(), source }
}

fn sibling(meta_path: &Path, suffix: &str) -> PathBuf {
    let stem = meta_path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default();
    meta_path.with_file_name(format!("{stem}{suffix}"))
}

fn digest(path: &Path, bytes: &[u8]) -> FileDigest {
    FileDigest {
        file: path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
        bytes: bytes.len() as u64,
        sha256: format!("{:x}", Sha256::digest(bytes)),
    }
}

/// Writes named tensors as safetensors; returns the file's digest.
fn write_tensors(path: &Path, tensors: &BTreeMap<String, Tensor>) -> Result<FileDigest> {
    let named: Vec<(&str, Tensor)> =
        tensors.iter().map(|(name, t)| (name.as_str(), t.to_device(Device::Cpu).contiguous())).collect();
    write_atomic_with(path, |tmp| {
        Tensor::write_safetensors(&named, tmp)
            .map_err(|source| CheckpointError::Torch { path: tmp.to_path_buf(), source })
    })?;
    let bytes = fs::read(path).map_err(io(path))?;
    Ok(digest(path, &bytes))
}

/// Reads a checkpoint file and checks it against its digest.
fn read_checked(meta_path: &Path, expected: &FileDigest) -> Result<Vec<u8>> {
    let path = meta_path.with_file_name(&expected.file);
    let bytes = fs::read(&path).map_err(io(&path))?;
    let found = digest(&path, &bytes);
    if found.sha256 != expected.sha256 || found.bytes != expected.bytes {
        return Err(CheckpointError::Corrupted {
            path,
            expected: expected.sha256.clone(),
            found: found.sha256,
            expected_bytes: expected.bytes,
            found_bytes: found.bytes,
        });
    }
    Ok(bytes)
}

/// Copies tensors from safetensors bytes into `targets`, which must match them name for name and
/// shape for shape.
fn copy_into(path: &Path, model: &str, bytes: &[u8], targets: &HashMap<String, Tensor>) -> Result<()> {
    let weights =
        |message: String| CheckpointError::Weights { path: path.to_path_buf(), model: model.to_string(), message };
    let file = SafeTensors::deserialize(bytes).map_err(|e| weights(format!("not a safetensors file: {e}")))?;
    let mut names: Vec<String> = file.names().into_iter().cloned().collect();
    names.sort();
    if let Some(extra) = names.iter().find(|n| !targets.contains_key(*n)) {
        return Err(weights(format!("unexpected tensor {extra:?}")));
    }
    let _guard = tch::no_grad_guard();
    let mut sorted: Vec<_> = targets.iter().collect();
    sorted.sort_by(|a, b| a.0.cmp(b.0));
    for (name, target) in sorted {
        let view = file.tensor(name).map_err(|_| weights(format!("missing tensor {name:?}")))?;
        let shape: Vec<i64> = view.shape().iter().map(|&d| d as i64).collect();
        if shape != target.size() {
            return Err(weights(format!("tensor {name:?} has shape {shape:?}, expected {:?}", target.size())));
        }
        let source = Tensor::try_from(view).map_err(|e| weights(format!("tensor {name:?}: {e}")))?;
        // Half-precision weights (a shipped model, see [`save_half`]) widen to the network's kind.
        let widens = source.kind() == Kind::Half && target.kind() == Kind::Float;
        if source.kind() != target.kind() && !widens {
            return Err(weights(format!("tensor {name:?} is {:?}, expected {:?}", source.kind(), target.kind())));
        }
        let mut target = target.shallow_clone();
        target.f_copy_(&source).map_err(|source| CheckpointError::Torch { path: path.to_path_buf(), source })?;
    }
    Ok(())
}

/// Saves a network without optimizer state.
pub fn save(path: &Path, net: &Network, info: CheckpointInfo) -> Result<CheckpointMeta> {
    save_with_optimizer(path, net, &net.var_store().variables().into_iter().collect(), info, None)
}

/// Saves a network's weights in half precision, without optimizer state: half the size, for a
/// model that is shipped rather than trained on (loading widens them back; a network's outputs
/// move by about 1e-3).
pub fn save_half(path: &Path, net: &Network, info: CheckpointInfo) -> Result<CheckpointMeta> {
    let weights: BTreeMap<String, Tensor> =
        net.var_store().variables().into_iter().map(|(name, t)| (name, t.to_kind(Kind::Half))).collect();
    write_meta(path, net, info, write_tensors(&sibling(path, ".safetensors"), &weights)?, None)
}

/// Saves `weights` for `net`'s model and, if given, optimizer buffers (named as their weights)
/// with their settings.
pub(crate) fn save_with_optimizer(
    path: &Path,
    net: &Network,
    weights: &BTreeMap<String, Tensor>,
    info: CheckpointInfo,
    optimizer: Option<(&BTreeMap<String, Tensor>, TrainConfig)>,
) -> Result<CheckpointMeta> {
    let weights = write_tensors(&sibling(path, ".safetensors"), weights)?;
    let optimizer = match optimizer {
        Some((state, config)) => {
            Some(OptimizerMeta { state: write_tensors(&sibling(path, ".optimizer.safetensors"), state)?, config })
        }
        None => None,
    };
    write_meta(path, net, info, weights, optimizer)
}

/// Writes the metadata file that names the weights (and optimizer state) already written.
fn write_meta(
    path: &Path,
    net: &Network,
    info: CheckpointInfo,
    weights: FileDigest,
    optimizer: Option<OptimizerMeta>,
) -> Result<CheckpointMeta> {
    let meta = CheckpointMeta {
        format: FORMAT_VERSION,
        model: net.config().clone(),
        encoding_version: ENCODING_VERSION,
        policy_size: POLICY_SIZE,
        info,
        weights,
        optimizer,
    };
    let json = serde_json::to_string_pretty(&meta).expect("metadata serialises");
    write_atomic_with(path, |tmp| {
        let mut file = File::create(tmp).map_err(io(tmp))?;
        file.write_all(json.as_bytes()).and_then(|()| file.write_all(b"\n")).map_err(io(tmp))
    })?;
    Ok(meta)
}

/// Reads and checks a checkpoint's metadata (format, encoding, policy width), without the weights.
pub fn read_meta(path: &Path) -> Result<CheckpointMeta> {
    check_meta(path, &fs::read_to_string(path).map_err(io(path))?)
}

/// Parses and checks metadata text read from `path`.
fn check_meta(path: &Path, text: &str) -> Result<CheckpointMeta> {
    let meta: CheckpointMeta = serde_json::from_str(text)
        .map_err(|e| CheckpointError::Metadata { path: path.to_path_buf(), message: e.to_string() })?;
    if meta.format != FORMAT_VERSION {
        return Err(CheckpointError::Format { path: path.to_path_buf(), found: meta.format });
    }
    if meta.encoding_version != ENCODING_VERSION || meta.policy_size != POLICY_SIZE {
        return Err(CheckpointError::Encoding {
            path: path.to_path_buf(),
            encoding: meta.encoding_version,
            policy: meta.policy_size,
        });
    }
    meta.model.validate().map_err(|message| CheckpointError::Metadata { path: path.to_path_buf(), message })?;
    Ok(meta)
}

/// Loads a checkpoint onto `device`. With `expected`, a checkpoint of another model config is
/// refused. Every file is checked against its sha256 before use.
pub fn load(path: &Path, device: Device, expected: Option<&ModelConfig>) -> Result<(Network, CheckpointMeta)> {
    let meta = read_meta(path)?;
    if let Some(expected) = expected.filter(|e| **e != meta.model) {
        return Err(CheckpointError::ConfigMismatch {
            path: path.to_path_buf(),
            expected: Box::new(expected.clone()),
            found: Box::new(meta.model.clone()),
        });
    }
    let bytes = read_checked(path, &meta.weights)?;
    let net = Network::new(&meta.model, device);
    copy_into(&path.with_file_name(&meta.weights.file), &meta.model.name, &bytes, &net.var_store().variables())?;
    Ok((net, meta))
}

/// Loads a checkpoint held in memory (a model built into a binary): its metadata file's text and
/// its weights file's bytes, checked as [`load`] checks files; `origin` names it in errors.
pub fn load_bytes(origin: &Path, meta: &str, weights: &[u8], device: Device) -> Result<(Network, CheckpointMeta)> {
    let meta = check_meta(origin, meta)?;
    let found = digest(Path::new(&meta.weights.file), weights);
    if found.sha256 != meta.weights.sha256 || found.bytes != meta.weights.bytes {
        return Err(CheckpointError::Corrupted {
            path: origin.to_path_buf(),
            expected: meta.weights.sha256.clone(),
            found: found.sha256,
            expected_bytes: meta.weights.bytes,
            found_bytes: found.bytes,
        });
    }
    let net = Network::new(&meta.model, device);
    copy_into(origin, &meta.model.name, weights, &net.var_store().variables())?;
    Ok((net, meta))
}

/// Loads the optimizer buffers of a checkpoint into `buffers` (named as their weights).
pub(crate) fn load_optimizer(path: &Path, meta: &CheckpointMeta, buffers: &HashMap<String, Tensor>) -> Result<()> {
    let Some(optimizer) = &meta.optimizer else {
        return Ok(());
    };
    let bytes = read_checked(path, &optimizer.state)?;
    copy_into(&path.with_file_name(&optimizer.state.file), &meta.model.name, &bytes, buffers)
}
