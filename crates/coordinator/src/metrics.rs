//! The coordinator's Prometheus metrics (served by [`crate::http`] through [`xqz_metrics`]).

use std::time::Duration;

use xqz_metrics::{Counter, Gauge, Histogram, Registry, register};

/// Upper bounds (seconds) of the ingest latency histogram buckets.
const BUCKETS: [f64; 12] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0];

/// Process-lifetime counters, and the registry that exposes them.
pub(crate) struct Metrics {
    registry: Registry,
    pub games_accepted: Counter,
    pub samples_accepted: Counter,
    pub games_rejected: Counter,
    pub batches_rejected: Counter,
    pub duplicates: Counter,
    /// Group commits: each one shard flush and one fsync of the idempotency log.
    pub commits: Counter,
    /// Set at each scrape (liveness is a matter of time, not of events).
    workers_alive: Gauge,
    /// Set at each scrape, from the model registry.
    model_version: Gauge,
    ingest_latency: Histogram,
}

impl Default for Metrics {
    fn default() -> Metrics {
        let mut registry = Registry::default();
        let r = &mut registry;
        let games_accepted = register(r, "xqz_games_accepted", "Games stored.");
        let samples_accepted = register(r, "xqz_samples_accepted", "Samples stored.");
        let games_rejected = register(r, "xqz_games_rejected", "Games in rejected batches.");
        let batches_rejected = register(r, "xqz_batches_rejected", "Rejected SubmitGames requests.");
        let duplicates = register(r, "xqz_duplicate_games", "Games skipped as already stored.");
        let commits =
            register(r, "xqz_commits", "Group commits of SubmitGames requests (one shard and one fsync each).");
        let workers_alive = register(
            r,
            "xqz_workers_alive",
            "Workers heard from within the alive window (a minute unless the coordinator is told otherwise).",
        );
        let model_version = register(r, "xqz_model_version", "Version of the newest published model.");
        let ingest_latency = Histogram::new(BUCKETS);
        registry.register("xqz_ingest_latency_seconds", "SubmitGames handling time.", ingest_latency.clone());
        Metrics {
            registry,
            games_accepted,
            samples_accepted,
            games_rejected,
            batches_rejected,
            duplicates,
            commits,
            workers_alive,
            model_version,
            ingest_latency,
        }
    }
}

impl Metrics {
    /// Records one `SubmitGames` handling time.
    pub fn observe_ingest(&self, elapsed: Duration) {
        self.ingest_latency.observe(elapsed.as_secs_f64());
    }

    /// The OpenMetrics text, with the live workers and the newest model version as of now.
    pub fn render(&self, workers_alive: u64, model_version: u64) -> String {
        self.workers_alive.set(i64::try_from(workers_alive).unwrap_or(i64::MAX));
        self.model_version.set(i64::try_from(model_version).unwrap_or(i64::MAX));
        xqz_metrics::render(&self.registry)
    }
}
