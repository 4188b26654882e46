//! Finished games grouped into `SubmitGamesRequest`s, each with its idempotency key, and appended
//! to the spool (fsynced) before they count as played.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc;
use tracing::info;
use xqz_proto::v1::{GameSubmission, SubmitGamesRequest};

use super::RemoteError;
use crate::spool::Spool;

/// How finished games are grouped.
pub(super) struct Batcher {
    /// The id the batches are keyed and sent under.
    pub worker_id: String,
    /// Most games in one batch.
    pub games: usize,
    /// A partial batch is spooled after this long.
    pub interval: Duration,
}

/// Runs `f` on the spool on a blocking thread: each operation fsyncs.
pub(super) async fn with_spool<T: Send + 'static>(
    spool: &Arc<Mutex<Spool>>,
    f: impl FnOnce(&mut Spool) -> T + Send + 'static,
) -> T {
    let spool = spool.clone();
    tokio::task::spawn_blocking(move || f(&mut spool.lock().unwrap_or_else(|e| e.into_inner())))
        .await
        .expect("spool operations do not panic")
}

/// Groups finished games into batches and spools them; each spooled batch is announced on
/// `spooled`. Ends when self-play does, after spooling the last games.
pub(super) async fn batch_games(
    batcher: Batcher,
    mut games: mpsc::UnboundedReceiver<GameSubmission>,
    spool: Arc<Mutex<Spool>>,
    spooled: mpsc::UnboundedSender<()>,
) -> Result<(), RemoteError> {
    let mut pending = Vec::new();
    let mut tick = tokio::time::interval(batcher.interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        // (whether to spool what is pending, whether self-play has ended)
        let (flush, done) = tokio::select! {
            game = games.recv() => match game {
                Some(game) => {
                    pending.push(game);
                    (pending.len() >= batcher.games, false)
                }
                None => (true, true),
            },
            _ = tick.tick() => (true, false),
        };
        if flush && !pending.is_empty() {
            let batch = SubmitGamesRequest {
                // The coordinator's id (short, printable) keeps keys within its bound.
                idempotency_key: format!("{}-{:032x}", batcher.worker_id, rand::random::<u128>()),
                worker_id: batcher.worker_id.clone(),
                games: std::mem::take(&mut pending),
            };
            // Each finished game, once durable here, is logged: what a run can check the
            // coordinator's dataset against.
            let ids: Vec<(xqz_dataset::GameId, u64)> = batch
                .games
                .iter()
                .map(|g| {
                    let id = g
                        .game_id
                        .as_slice()
                        .try_into()
                        .map(xqz_dataset::GameId)
                        .expect("the worker encodes 16-byte ids");
                    (id, g.model_version)
                })
                .collect();
            with_spool(&spool, move |s| s.push(&batch)).await?;
            for (id, model_version) in ids {
                info!(game = %id, model_version, "finished game");
            }
            let _ = spooled.send(());
            tick.reset();
        }
        if done {
            return Ok(());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn game(n: u8) -> GameSubmission {
        GameSubmission { game_id: vec![n; 16], ..Default::default() }
    }

    fn spool_in(dir: &std::path::Path) -> Arc<Mutex<Spool>> {
        Arc::new(Mutex::new(Spool::open(&dir.join("spool")).unwrap()))
    }

    /// The spooled batches, oldest first, as the game ids' first bytes.
    fn batches(spool: &Arc<Mutex<Spool>>) -> Vec<Vec<u8>> {
        let mut spool = spool.lock().unwrap();
        let mut out = Vec::new();
        while let Some(batch) = spool.front().cloned() {
            assert!(batch.idempotency_key.starts_with("w7-"), "{}", batch.idempotency_key);
            assert_eq!(batch.worker_id, "w7");
            out.push(batch.games.iter().map(|g| g.game_id[0]).collect());
            spool.remove(&batch.idempotency_key).unwrap();
        }
        out
    }

    #[tokio::test]
    async fn full_batches_go_as_they_fill_and_the_rest_when_self_play_ends() {
        let dir = tempfile::tempdir().unwrap();
        let spool = spool_in(dir.path());
        let (games_tx, games_rx) = mpsc::unbounded_channel();
        let (spooled_tx, mut spooled_rx) = mpsc::unbounded_channel();
        let batcher = Batcher { worker_id: "w7".into(), games: 2, interval: Duration::from_secs(3600) };
        for n in 1..=5 {
            games_tx.send(game(n)).unwrap();
        }
        drop(games_tx);
        batch_games(batcher, games_rx, spool.clone(), spooled_tx).await.unwrap();
        let mut announced = 0;
        while spooled_rx.recv().await.is_some() {
            announced += 1;
        }
        assert_eq!(batches(&spool), vec![vec![1, 2], vec![3, 4], vec![5]]);
        assert_eq!(announced, 3, "each spooled batch is announced once");
    }

    #[tokio::test]
    async fn a_partial_batch_is_spooled_after_the_interval_while_self_play_goes_on() {
        let dir = tempfile::tempdir().unwrap();
        let spool = spool_in(dir.path());
        let (games_tx, games_rx) = mpsc::unbounded_channel();
        let (spooled_tx, mut spooled_rx) = mpsc::unbounded_channel();
        let batcher = Batcher { worker_id: "w7".into(), games: 100, interval: Duration::from_millis(20) };
        let task = tokio::spawn(batch_games(batcher, games_rx, spool.clone(), spooled_tx));
        games_tx.send(game(9)).unwrap();
        tokio::time::timeout(Duration::from_secs(10), spooled_rx.recv()).await.unwrap().unwrap();
        assert_eq!(batches(&spool), vec![vec![9]]);
        assert!(!task.is_finished(), "the batcher ends only with self-play");
        drop(games_tx);
        task.await.unwrap().unwrap();
        assert!(batches(&spool).is_empty(), "nothing was pending at the end");
    }
}
