//! The model watcher: follows `WatchModels`, downloads each new model (resuming a broken download
//! from the bytes it has) and hands it to [`ModelHost::install`]; each announcement's settings go
//! to [`follow_settings`].

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use sha2::{Digest, Sha256};
use tokio::io::AsyncWriteExt;
use tonic::Status;
use tracing::{error, info, warn};
use xqz_mcts::LiveConfig;
use xqz_proto::v1::{DownloadModelRequest, ModelAnnouncement, WatchModelsRequest};

use super::client::{Client, Failure, classify, wait};
use super::play::follow_settings;
use super::{ModelHost, RemoteConfig, RemoteError};
use crate::backoff::Backoff;

/// Follows the published models and installs each new one, and the settings announced with it;
/// reconnects with backoff.
pub(super) async fn watch_models<H: ModelHost>(
    mut client: Client,
    config: RemoteConfig,
    host: Arc<H>,
    version: Arc<AtomicU64>,
    live: Arc<LiveConfig>,
) {
    let cache = config.dir.join("models");
    let mut backoff = Backoff::default();
    loop {
        let after_version = version.load(Ordering::SeqCst);
        match client.watch_models(WatchModelsRequest { after_version }).await {
            Ok(stream) => {
                let mut stream = stream.into_inner();
                loop {
                    match stream.message().await {
                        Ok(Some(model)) if model.version > version.load(Ordering::SeqCst) => {
                            follow_settings(&model, &config, &live);
                            match install(&client, &cache, &host, &model).await {
                                Ok(()) => {
                                    version.store(model.version, Ordering::SeqCst);
                                    config.metrics.playing(model.version);
                                    backoff.reset();
                                    info!(model_version = model.version, "now playing with the new model");
                                }
                                Err(e) => {
                                    // Reconnecting announces it again.
                                    warn!(model_version = model.version, error = %e, "cannot install the model; retrying");
                                    break;
                                }
                            }
                        }
                        Ok(Some(model)) => follow_settings(&model, &config, &live),
                        Ok(None) => break,
                        Err(status) => {
                            warn!(code = ?status.code(), reason = status.message(), "model announcements broke off; reconnecting");
                            break;
                        }
                    }
                }
            }
            Err(status) if classify(status.code()) == Failure::Fatal => {
                error!(code = ?status.code(), reason = status.message(), "cannot follow models; keeping this one");
                return;
            }
            Err(_) => {}
        }
        wait(&mut backoff).await;
    }
}

async fn install<H: ModelHost>(
    client: &Client,
    cache: &Path,
    host: &Arc<H>,
    model: &ModelAnnouncement,
) -> Result<(), RemoteError> {
    let path = download(client.clone(), cache, model).await?;
    let host = host.clone();
    tokio::task::spawn_blocking(move || host.install(&path))
        .await
        .expect("loading a model does not panic")
        .map_err(|source| RemoteError::Install { version: model.version, source })
}

fn sha256_hex(path: &Path) -> std::io::Result<String> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    std::io::copy(&mut file, &mut hasher)?;
    Ok(format!("{:x}", hasher.finalize()))
}

async fn hash_file(path: &Path) -> std::io::Result<String> {
    let path = path.to_path_buf();
    tokio::task::spawn_blocking(move || sha256_hex(&path)).await.expect("hashing does not panic")
}

/// Fetches model `model.version` into `cache` as `v<N>.safetensors` and `v<N>.json` (its metadata
/// naming that weights file) unless it is there already. A broken download resumes from the bytes
/// on disk; weights whose sha256 differs from the announcement's are fetched again (twice at most).
pub(super) async fn download(
    mut client: Client,
    cache: &Path,
    model: &ModelAnnouncement,
) -> Result<PathBuf, RemoteError> {
    let version = model.version;
    let fail = |message: String| RemoteError::Model { version, message };
    let io = |what: &Path, e: std::io::Error| fail(format!("{}: {e}", what.display()));
    let weights = cache.join(format!("v{version}.safetensors"));
    let meta = cache.join(format!("v{version}.json"));
    let expected = model.weights_sha256.to_lowercase();
    if meta.exists() && hash_file(&weights).await.is_ok_and(|h| h == expected) {
        return Ok(meta);
    }
    tokio::fs::create_dir_all(cache).await.map_err(|e| io(cache, e))?;
    let part = cache.join(format!("v{version}.safetensors.part"));
    let mut backoff = Backoff::default();
    let mut bad_copies = 0;
    loop {
        let have = tokio::fs::metadata(&part).await.map_or(0, |m| m.len());
        if have >= model.weights_bytes {
            if have == model.weights_bytes && hash_file(&part).await.map_err(|e| io(&part, e))? == expected {
                break;
            }
            bad_copies += 1;
            if bad_copies > 2 {
                return Err(fail("the downloaded weights do not match the announced sha256".into()));
            }
            tokio::fs::remove_file(&part).await.map_err(|e| io(&part, e))?;
            continue;
        }
        match fetch_from(&mut client, version, have, &part).await {
            Ok(true) => backoff.reset(),
            Ok(false) => wait(&mut backoff).await,
            Err(Fetch::Io(e)) => return Err(io(&part, e)),
            Err(Fetch::Status(status)) if classify(status.code()) == Failure::Transient => {
                warn!(
                    model_version = version,
                    at_byte = have,
                    reason = status.message(),
                    "model download broke off; resuming"
                );
                wait(&mut backoff).await;
            }
            Err(Fetch::Status(status)) => {
                return Err(RemoteError::Refused { call: "DownloadModel", status: Box::new(status) });
            }
        }
    }
    let text = local_metadata(model).map_err(fail)?;
    tokio::fs::rename(&part, &weights).await.map_err(|e| io(&weights, e))?;
    let tmp = cache.join(format!("v{version}.json.tmp"));
    tokio::fs::write(&tmp, text).await.map_err(|e| io(&tmp, e))?;
    tokio::fs::rename(&tmp, &meta).await.map_err(|e| io(&meta, e))?;
    Ok(meta)
}

/// The announced metadata of `model`, naming the weights file it is kept beside
/// (`v<N>.safetensors`) in place of the publisher's.
fn local_metadata(model: &ModelAnnouncement) -> Result<String, String> {
    let mut json: serde_json::Value =
        serde_json::from_str(&model.metadata_json).map_err(|e| format!("metadata: {e}"))?;
    json.get_mut("weights")
        .and_then(serde_json::Value::as_object_mut)
        .ok_or_else(|| "metadata without weights".to_string())?
        .insert("file".into(), format!("v{}.safetensors", model.version).into());
    Ok(serde_json::to_string_pretty(&json).expect("JSON serialises"))
}

enum Fetch {
    Io(std::io::Error),
    Status(Status),
}

/// Appends the weights from byte `offset` to `part`; `Ok(false)` when no byte came.
async fn fetch_from(client: &mut Client, version: u64, offset: u64, part: &Path) -> Result<bool, Fetch> {
    let mut stream =
        client.download_model(DownloadModelRequest { version, offset }).await.map_err(Fetch::Status)?.into_inner();
    let mut file = tokio::fs::OpenOptions::new().create(true).append(true).open(part).await.map_err(Fetch::Io)?;
    let mut at = offset;
    let result = loop {
        match stream.message().await {
            Ok(Some(chunk)) if chunk.offset == at => {
                file.write_all(&chunk.data).await.map_err(Fetch::Io)?;
                at += chunk.data.len() as u64;
            }
            Ok(Some(chunk)) => {
                break Err(Fetch::Status(Status::data_loss(format!("chunk at {} while expecting {at}", chunk.offset))));
            }
            Ok(None) => break Ok(at > offset),
            Err(status) => break Err(Fetch::Status(status)),
        }
    };
    // What arrived before a break is kept: the next try resumes after it.
    file.flush().await.map_err(Fetch::Io)?;
    file.sync_data().await.map_err(Fetch::Io)?;
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client that never connects: the paths under test must not call the coordinator.
    fn offline() -> Client {
        let channel = tonic::transport::Endpoint::from_static("http://127.0.0.1:1").connect_lazy();
        xqz_proto::v1::coordinator_client::CoordinatorClient::with_interceptor(
            channel,
            super::super::client::Auth(None),
        )
    }

    fn announced(version: u64, weights: &[u8]) -> ModelAnnouncement {
        ModelAnnouncement {
            version,
            weights_bytes: weights.len() as u64,
            weights_sha256: format!("{:X}", Sha256::digest(weights)),
            metadata_json: r#"{"config": "tiny", "weights": {"file": "publisher/step-9.safetensors", "sha256": "x"}}"#
                .into(),
            ..Default::default()
        }
    }

    #[test]
    fn the_kept_metadata_names_the_local_weights_and_bad_metadata_is_refused() {
        let text = local_metadata(&announced(4, b"w")).unwrap();
        let json: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(json["weights"]["file"], "v4.safetensors");
        assert_eq!((json["weights"]["sha256"].as_str(), json["config"].as_str()), (Some("x"), Some("tiny")));
        let no_weights = ModelAnnouncement { metadata_json: "{}".into(), ..announced(4, b"w") };
        assert_eq!(local_metadata(&no_weights).unwrap_err(), "metadata without weights");
        let broken = ModelAnnouncement { metadata_json: "{".into(), ..announced(4, b"w") };
        assert!(local_metadata(&broken).unwrap_err().starts_with("metadata: "));
    }

    #[tokio::test]
    async fn a_model_already_in_the_cache_is_not_downloaded_again() {
        let dir = tempfile::tempdir().unwrap();
        let model = announced(3, b"weights");
        std::fs::write(dir.path().join("v3.safetensors"), b"weights").unwrap();
        std::fs::write(dir.path().join("v3.json"), "{}").unwrap();
        assert_eq!(download(offline(), dir.path(), &model).await.unwrap(), dir.path().join("v3.json"));
    }

    #[tokio::test]
    async fn a_complete_partial_download_is_checked_and_kept_without_a_call() {
        let dir = tempfile::tempdir().unwrap();
        let model = announced(5, b"all the weights");
        std::fs::write(dir.path().join("v5.safetensors.part"), b"all the weights").unwrap();
        let meta = download(offline(), dir.path(), &model).await.unwrap();
        assert_eq!(std::fs::read(dir.path().join("v5.safetensors")).unwrap(), b"all the weights");
        assert!(!dir.path().join("v5.safetensors.part").exists());
        let json: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(meta).unwrap()).unwrap();
        assert_eq!(json["weights"]["file"], "v5.safetensors");
    }
}
