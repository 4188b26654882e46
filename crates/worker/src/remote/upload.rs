//! The uploader: sends spooled batches oldest first, forgets a batch only once the coordinator
//! acknowledged it (or said it had it already), retries transient failures with backoff and sets
//! a rejected batch aside in `rejected/` for a person to look at.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use tokio::sync::mpsc;
use tracing::{error, info, warn};
use xqz_proto::v1::SubmitGamesRequest;

use super::RemoteError;
use super::batcher::with_spool;
use super::client::{Client, Failure, call, classify, wait};
use crate::backoff::Backoff;
use crate::metrics::WorkerMetrics;
use crate::spool::{Spool, SpoolError};

/// Sends spooled batches oldest first until the batcher has ended and the spool is empty;
/// returns the number of games the coordinator took (stored or already had). Each goes under this
/// session's `worker_id`: a batch spooled by an earlier session carries that session's id, which
/// a coordinator whose data folder was replaced no longer knows.
pub(super) async fn upload(
    mut client: Client,
    worker_id: String,
    dir: PathBuf,
    spool: Arc<Mutex<Spool>>,
    mut spooled: mpsc::UnboundedReceiver<()>,
    metrics: WorkerMetrics,
) -> Result<u64, RemoteError> {
    let mut backoff = Backoff::default();
    let mut batcher_done = false;
    let mut uploaded = 0;
    loop {
        let Some(batch) = with_spool(&spool, |s| s.front().cloned()).await else {
            if batcher_done {
                return Ok(uploaded);
            }
            batcher_done = spooled.recv().await.is_none();
            continue;
        };
        let key = batch.idempotency_key.clone();
        let games = batch.games.len() as u64;
        let request = SubmitGamesRequest { worker_id: worker_id.clone(), ..batch.clone() };
        match call(client.submit_games(request)).await {
            Ok(answer) => {
                backoff.reset();
                with_spool(&spool, move |s| s.remove(&key)).await?;
                uploaded += games;
                metrics.uploaded(games);
                info!(
                    games,
                    accepted = answer.accepted,
                    duplicates = answer.duplicates,
                    replayed_batch = answer.replayed_batch,
                    "uploaded a batch"
                );
            }
            Err(status) => match classify(status.code()) {
                Failure::Transient => {
                    warn!(code = ?status.code(), reason = status.message(), "upload failed; retrying");
                    wait(&mut backoff).await;
                }
                Failure::Rejected => {
                    metrics.rejected();
                    let dir = dir.join("rejected");
                    let message = format!("{:?}: {}\n", status.code(), status.message());
                    error!(
                        key = %key,
                        code = ?status.code(),
                        reason = status.message(),
                        kept_in = %dir.display(),
                        "batch rejected by the coordinator"
                    );
                    with_spool(&spool, move |s| {
                        set_aside(&dir, &batch, &message).map_err(|source| SpoolError { path: dir, source })?;
                        s.remove(&batch.idempotency_key)
                    })
                    .await?;
                }
                Failure::Fatal => return Err(RemoteError::Refused { call: "SubmitGames", status: Box::new(status) }),
            },
        }
    }
}

/// Keeps a rejected batch and the reason, for a person to look at.
fn set_aside(dir: &Path, batch: &SubmitGamesRequest, message: &str) -> std::io::Result<()> {
    use prost::Message;
    std::fs::create_dir_all(dir)?;
    let name = batch.idempotency_key.replace(['/', '\\'], "_");
    std::fs::write(dir.join(format!("{name}.txt")), message)?;
    let file = dir.join(format!("{name}.pb"));
    std::fs::write(&file, batch.encode_to_vec())?;
    std::fs::File::open(&file)?.sync_all()
}

#[cfg(test)]
mod tests {
    use prost::Message;

    use super::*;

    #[test]
    fn a_rejected_batch_is_kept_with_its_reason_under_a_safe_name() {
        let dir = tempfile::tempdir().unwrap();
        let batch = SubmitGamesRequest {
            idempotency_key: "w1/../k\\2".into(),
            worker_id: "w1".into(),
            games: vec![xqz_proto::v1::GameSubmission { game_id: vec![3; 16], ..Default::default() }],
        };
        let rejected = dir.path().join("rejected");
        set_aside(&rejected, &batch, "InvalidArgument: game #0: bad FEN\n").unwrap();
        let mut names: Vec<String> =
            std::fs::read_dir(&rejected).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
        names.sort();
        assert_eq!(names, ["w1_.._k_2.pb", "w1_.._k_2.txt"]);
        let kept = SubmitGamesRequest::decode(std::fs::read(rejected.join("w1_.._k_2.pb")).unwrap().as_slice());
        assert_eq!(kept.unwrap(), batch);
        let reason = std::fs::read_to_string(rejected.join("w1_.._k_2.txt")).unwrap();
        assert_eq!(reason, "InvalidArgument: game #0: bad FEN\n");
    }
}
