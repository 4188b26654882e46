//! The model registry in `<data>/models/`: `v<N>.safetensors`, `v<N>.json` (the checkpoint
//! metadata, rewritten to name the stored file and version) and `registry.json`, each written
//! atomically; new models are announced to watchers through a broadcast channel.
//!
//! A model published under a gate (`--gate`) is stored but *held*: downloadable by version (the
//! workers that play its gating match need it), yet neither announced nor counted as the latest
//! until it passes ([`Registry::release`]); one that fails stays refused, across restarts.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use tokio::sync::broadcast;
use xqz_proto::v1::ModelAnnouncement;

use crate::error::{CoordinatorError, IoAt};

/// The registry listing the published models, in `models/`.
const REGISTRY_FILE: &str = xqz_run_folder::CoordinatorFolder::REGISTRY;

/// One published model as `registry.json` lists it.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Entry {
    version: u64,
    weights_file: String,
    metadata_file: String,
    sha256: String,
    bytes: u64,
    publisher: String,
    published_ms: i64,
    #[serde(default)]
    gate: Gate,
}

/// Whether a model is announced to self-play.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Gate {
    /// Announced (every model of a run without a gate).
    #[default]
    Announced,
    /// Waiting for its gating match.
    Held,
    /// Lost its gating match: never announced.
    Refused,
}

#[derive(Default, Serialize, Deserialize)]
struct RegistryFile {
    models: Vec<Entry>,
}

/// The names of model `version`'s weights and metadata files.
fn model_files(version: u64) -> (String, String) {
    (format!("v{version}.safetensors"), format!("v{version}.json"))
}

/// The weights and metadata files that a `registry.json` lists, oldest model first; refused
/// unless it lists versions 1, 2, 3, ... under the names the registry gives them (so the names,
/// read from a backup, are safe as file names).
pub(crate) fn listed_files(registry_json: &[u8]) -> Result<Vec<(String, String)>, String> {
    let file: RegistryFile = serde_json::from_slice(registry_json).map_err(|e| e.to_string())?;
    file.models
        .into_iter()
        .enumerate()
        .map(|(i, entry)| {
            let version = i as u64 + 1;
            let names = model_files(version);
            if (entry.version, &entry.weights_file, &entry.metadata_file) != (version, &names.0, &names.1) {
                return Err(format!(
                    "model {version} is listed as version {} in {:?} and {:?}",
                    entry.version, entry.weights_file, entry.metadata_file
                ));
            }
            Ok(names)
        })
        .collect()
}

/// Why a publication is refused.
#[derive(Debug, thiserror::Error)]
pub(crate) enum PublishError {
    /// The header or the weights are not acceptable.
    #[error("{0}")]
    Invalid(String),
    /// Storing failed.
    #[error(transparent)]
    Storage(#[from] CoordinatorError),
}

/// Refuses weights that no worker could load: not a safetensors file, no tensors, a tensor that
/// is not 32- or 16-bit floats, or a value that is not finite. (Whether the tensors fit the
/// model config is for the loader, which knows the network's shape.)
fn check_weights(weights: &[u8]) -> Result<(), String> {
    let file = safetensors::SafeTensors::deserialize(weights).map_err(|e| format!("not a safetensors file: {e:?}"))?;
    let tensors = file.tensors();
    if tensors.is_empty() {
        return Err("no tensors".into());
    }
    for (name, tensor) in tensors {
        let finite = match tensor.dtype() {
            safetensors::Dtype::F32 => {
                tensor.data().chunks_exact(4).all(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]).is_finite())
            }
            // A half's exponent bits all set: infinity or NaN.
            safetensors::Dtype::F16 => {
                tensor.data().chunks_exact(2).all(|b| u16::from_le_bytes([b[0], b[1]]) & 0x7c00 != 0x7c00)
            }
            other => return Err(format!("tensor {name:?} is {other:?}, not F32 or F16")),
        };
        if !finite {
            return Err(format!("tensor {name:?} holds a value that is not finite"));
        }
    }
    Ok(())
}

/// A stored model and whether it is announced.
struct Listed {
    model: ModelAnnouncement,
    gate: Gate,
}

pub(crate) struct Registry {
    dir: PathBuf,
    models: Mutex<Vec<Listed>>,
    announce: broadcast::Sender<ModelAnnouncement>,
}

/// Writes `bytes` to `path` whole or not at all ([`xqz_run_folder::write_atomic`]).
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), CoordinatorError> {
    xqz_run_folder::write_atomic(path, bytes).map_err(|e| CoordinatorError::Io { path: e.path, source: e.source })
}

fn corrupt(path: &Path, message: String) -> CoordinatorError {
    CoordinatorError::Corrupt { path: path.into(), message }
}

impl Registry {
    /// Opens (creating) `dir` and loads `registry.json` and each model's metadata.
    pub fn open(dir: &Path) -> Result<Registry, CoordinatorError> {
        fs::create_dir_all(dir).at(dir)?;
        let path = dir.join(REGISTRY_FILE);
        let file: RegistryFile = match fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| corrupt(&path, e.to_string()))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => RegistryFile::default(),
            Err(source) => return Err(CoordinatorError::Io { path, source }),
        };
        let mut models = Vec::with_capacity(file.models.len());
        for (i, entry) in file.models.into_iter().enumerate() {
            if entry.version != i as u64 + 1 {
                return Err(corrupt(&path, format!("model {} listed as version {}", i + 1, entry.version)));
            }
            let meta_path = dir.join(&entry.metadata_file);
            let metadata_json = fs::read_to_string(&meta_path).at(&meta_path)?;
            models.push(Listed {
                gate: entry.gate,
                model: ModelAnnouncement {
                    version: entry.version,
                    metadata_json,
                    weights_sha256: entry.sha256,
                    weights_bytes: entry.bytes,
                    published_by: entry.publisher,
                    published_ms: entry.published_ms,
                    // The service adds the settings in force when it announces a model.
                    settings: None,
                },
            });
        }
        let (announce, _) = broadcast::channel(64);
        Ok(Registry { dir: dir.to_path_buf(), models: Mutex::new(models), announce })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Listed>> {
        // A panic while holding the lock cannot leave the list half-updated (one change at the end).
        self.models.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn announced(models: &[Listed]) -> impl DoubleEndedIterator<Item = &ModelAnnouncement> {
        models.iter().filter(|m| m.gate == Gate::Announced).map(|m| &m.model)
    }

    /// The newest announced version, 0 when none is.
    pub fn latest_version(&self) -> u64 {
        Self::announced(&self.lock()).next_back().map_or(0, |m| m.version)
    }

    /// The newest announced model.
    pub fn latest(&self) -> Option<ModelAnnouncement> {
        Self::announced(&self.lock()).next_back().cloned()
    }

    /// The models announced after `version`, oldest first.
    pub fn after(&self, version: u64) -> Vec<ModelAnnouncement> {
        Self::announced(&self.lock()).filter(|m| m.version > version).cloned().collect()
    }

    /// The model `version`, if stored (held or refused ones too: matches play them).
    pub fn get(&self, version: u64) -> Option<ModelAnnouncement> {
        self.lock().iter().find(|m| m.model.version == version).map(|m| m.model.clone())
    }

    /// The models held back by a gate, oldest first.
    pub fn held(&self) -> Vec<u64> {
        self.lock().iter().filter(|m| m.gate == Gate::Held).map(|m| m.model.version).collect()
    }

    /// The newest model announced before `version`: the one a model published as `version` was
    /// gated against.
    pub fn announced_before(&self, version: u64) -> Option<u64> {
        Self::announced(&self.lock()).map(|m| m.version).rfind(|&v| v < version)
    }

    /// The weights file of `version`.
    pub fn weights_path(&self, version: u64) -> PathBuf {
        self.dir.join(model_files(version).0)
    }

    /// Announcements of models published from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<ModelAnnouncement> {
        self.announce.subscribe()
    }

    /// Checks `weights` against the metadata, stores them as the next version and announces it.
    pub fn publish(
        &self,
        metadata_json: &str,
        publisher: &str,
        weights: &[u8],
        now_ms: i64,
        hold: bool,
    ) -> Result<ModelAnnouncement, PublishError> {
        let invalid = |m: String| PublishError::Invalid(m);
        let mut meta: serde_json::Value =
            serde_json::from_str(metadata_json).map_err(|e| invalid(format!("metadata is not JSON: {e}")))?;
        let digest = meta
            .get("weights")
            .filter(|w| w.is_object())
            .ok_or_else(|| invalid("metadata has no \"weights\" object".into()))?;
        let want_bytes = digest
            .get("bytes")
            .and_then(|b| b.as_u64())
            .ok_or_else(|| invalid("metadata weights.bytes is not a number".into()))?;
        let want_sha = digest
            .get("sha256")
            .and_then(|s| s.as_str())
            .ok_or_else(|| invalid("metadata weights.sha256 is not a string".into()))?
            .to_ascii_lowercase();
        if weights.len() as u64 != want_bytes {
            return Err(invalid(format!("received {} bytes of weights, metadata says {want_bytes}", weights.len())));
        }
        let sha = format!("{:x}", Sha256::digest(weights));
        if sha != want_sha {
            return Err(invalid(format!("weights sha256 is {sha}, metadata says {want_sha}")));
        }
        check_weights(weights).map_err(|m| invalid(format!("the weights are not a network: {m}")))?;
        let mut models = self.lock();
        let version = models.last().map_or(0, |m| m.model.version) + 1;
        let (weights_file, metadata_file) = model_files(version);
        meta["weights"]["file"] = weights_file.clone().into();
        if !meta.get("info").is_some_and(|i| i.is_object()) {
            meta["info"] = serde_json::json!({});
        }
        meta["info"]["model_version"] = version.into();
        // The optimizer state is not uploaded, so the stored checkpoint must not point at it.
        if meta.get("optimizer").is_some() {
            meta["optimizer"] = serde_json::Value::Null;
        }
        let metadata_json = serde_json::to_string_pretty(&meta).map_err(|e| invalid(e.to_string()))?;
        write_atomic(&self.dir.join(&weights_file), weights)?;
        write_atomic(&self.dir.join(&metadata_file), metadata_json.as_bytes())?;
        let announcement = ModelAnnouncement {
            version,
            metadata_json,
            weights_sha256: sha.clone(),
            weights_bytes: want_bytes,
            published_by: publisher.to_string(),
            published_ms: now_ms,
            settings: None,
        };
        let gate = if hold { Gate::Held } else { Gate::Announced };
        let mut listed = Self::entries(&models);
        listed.push(Entry {
            version,
            weights_file,
            metadata_file,
            sha256: sha,
            bytes: want_bytes,
            publisher: publisher.to_string(),
            published_ms: now_ms,
            gate,
        });
        self.write_listing(listed).map_err(PublishError::Storage)?;
        models.push(Listed { model: announcement.clone(), gate });
        if gate == Gate::Announced {
            // No receiver is not an error: nobody is watching yet.
            let _ = self.announce.send(announcement.clone());
        }
        Ok(announcement)
    }

    /// Ends the hold on model `version`: announced if it `passed` its gating match, else refused
    /// for good. A model that is not held is left as it is (false).
    pub fn release(&self, version: u64, passed: bool) -> Result<bool, CoordinatorError> {
        let mut models = self.lock();
        let Some(at) = models.iter().position(|m| m.model.version == version && m.gate == Gate::Held) else {
            return Ok(false);
        };
        let gate = if passed { Gate::Announced } else { Gate::Refused };
        let mut listed = Self::entries(&models);
        listed[at].gate = gate;
        self.write_listing(listed)?;
        models[at].gate = gate;
        if passed {
            let _ = self.announce.send(models[at].model.clone());
        }
        Ok(true)
    }

    fn entries(models: &[Listed]) -> Vec<Entry> {
        models
            .iter()
            .map(|Listed { model: m, gate }| {
                let (weights_file, metadata_file) = model_files(m.version);
                Entry {
                    version: m.version,
                    weights_file,
                    metadata_file,
                    sha256: m.weights_sha256.clone(),
                    bytes: m.weights_bytes,
                    publisher: m.published_by.clone(),
                    published_ms: m.published_ms,
                    gate: *gate,
                }
            })
            .collect()
    }

    fn write_listing(&self, models: Vec<Entry>) -> Result<(), CoordinatorError> {
        let text = serde_json::to_vec_pretty(&RegistryFile { models }).expect("the listing serialises");
        write_atomic(&self.dir.join(REGISTRY_FILE), &text)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// The metadata and weights of a small checkpoint, `n` making each one different.
    pub(crate) fn checkpoint(n: u32) -> (String, Vec<u8>) {
        let data: Vec<u8> = (0..64u32).flat_map(|i| ((i + n) as f32).to_le_bytes()).collect();
        let tensor = safetensors::tensor::TensorView::new(safetensors::Dtype::F32, vec![64], &data).unwrap();
        let weights = safetensors::serialize([("w", tensor)], &None).unwrap();
        let metadata = serde_json::json!({
            "format": 2,
            "weights": { "file": "latest.safetensors", "bytes": weights.len(), "sha256": format!("{:x}", Sha256::digest(&weights)) },
        });
        (metadata.to_string(), weights)
    }

    #[test]
    fn a_listing_names_each_version_s_files_or_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let registry = Registry::open(dir.path()).unwrap();
        for n in 0..2 {
            let (metadata, weights) = checkpoint(n);
            registry.publish(&metadata, "trainer", &weights, 1, false).unwrap();
        }
        let listing = fs::read(dir.path().join(REGISTRY_FILE)).unwrap();
        let listed = listed_files(&listing).unwrap();
        assert_eq!(listed[1], ("v2.safetensors".to_string(), "v2.json".to_string()));
        let hostile = String::from_utf8(listing).unwrap().replace("v2.json", "../../etc/passwd");
        assert!(listed_files(hostile.as_bytes()).unwrap_err().contains("\"../../etc/passwd\""));
        assert!(listed_files(b"[]").is_err());
    }
}
