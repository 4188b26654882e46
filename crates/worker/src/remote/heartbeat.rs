//! Heartbeats: the worker says it is alive, with its games and model, every interval.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tracing::warn;
use xqz_proto::v1::HeartbeatRequest;

use super::client::{Client, call};

/// Says the worker is alive every `interval`; failures only delay the next one.
pub(super) async fn heartbeats(
    mut client: Client,
    worker_id: String,
    interval: Duration,
    finished: Arc<AtomicU64>,
    version: Arc<AtomicU64>,
) {
    let mut tick = tokio::time::interval(interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut health = Health::default();
    loop {
        tick.tick().await;
        let request = HeartbeatRequest {
            worker_id: worker_id.clone(),
            games_finished: finished.load(Ordering::Relaxed),
            model_version: version.load(Ordering::SeqCst),
        };
        let answer = call(client.heartbeat(request)).await;
        if health.record(answer.is_ok())
            && let Err(status) = answer
        {
            warn!(code = ?status.code(), reason = status.message(), "heartbeat failed");
        }
    }
}

/// Whether heartbeats get through. Only the first failure of a run is news: a coordinator that is
/// down for an hour would otherwise fill the log with one line per interval.
#[derive(Debug)]
struct Health {
    healthy: bool,
}

impl Default for Health {
    fn default() -> Health {
        Health { healthy: true }
    }
}

impl Health {
    /// Records a heartbeat's fate; true if it failed after one that got through.
    fn record(&mut self, ok: bool) -> bool {
        let news = self.healthy && !ok;
        self.healthy = ok;
        news
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_first_failure_of_a_run_is_reported() {
        let mut health = Health::default();
        let reported: Vec<bool> = [true, false, false, false, true, false, true].map(|ok| health.record(ok)).to_vec();
        assert_eq!(reported, [false, true, false, false, false, true, false]);
    }
}
