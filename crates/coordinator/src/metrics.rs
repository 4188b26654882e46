//! Counters and their Prometheus text exposition (served by [`crate::http`]).

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// Upper bounds (seconds) of the ingest latency histogram buckets.
const BUCKETS: [f64; 12] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0];

/// Process-lifetime counters.
#[derive(Default)]
pub(crate) struct Metrics {
    pub games_accepted: AtomicU64,
    pub samples_accepted: AtomicU64,
    pub games_rejected: AtomicU64,
    pub batches_rejected: AtomicU64,
    pub duplicates: AtomicU64,
    latency_buckets: [AtomicU64; BUCKETS.len()],
    latency_count: AtomicU64,
    latency_sum_us: AtomicU64,
}

impl Metrics {
    /// Records one `SubmitGames` handling time.
    pub fn observe_ingest(&self, elapsed: Duration) {
        let secs = elapsed.as_secs_f64();
        for (bound, bucket) in BUCKETS.iter().zip(&self.latency_buckets) {
            if secs <= *bound {
                bucket.fetch_add(1, Relaxed);
            }
        }
        self.latency_count.fetch_add(1, Relaxed);
        self.latency_sum_us.fetch_add(elapsed.as_micros() as u64, Relaxed);
    }

    /// The text exposition format.
    pub fn render(&self, workers_alive: u64) -> String {
        let mut out = String::new();
        let mut counter = |name: &str, help: &str, value: u64| {
            let _ = write!(out, "# HELP {name} {help}\n# TYPE {name} counter\n{name} {value}\n");
        };
        counter("xqz_games_accepted_total", "Games stored.", self.games_accepted.load(Relaxed));
        counter("xqz_samples_accepted_total", "Samples stored.", self.samples_accepted.load(Relaxed));
        counter("xqz_games_rejected_total", "Games in rejected batches.", self.games_rejected.load(Relaxed));
        counter("xqz_batches_rejected_total", "Rejected SubmitGames requests.", self.batches_rejected.load(Relaxed));
        counter("xqz_duplicate_games_total", "Games skipped as already stored.", self.duplicates.load(Relaxed));
        let _ = write!(
            out,
            "# HELP xqz_workers_alive Workers heard from in the last minute.\n# TYPE xqz_workers_alive gauge\n\
             xqz_workers_alive {workers_alive}\n"
        );
        let name = "xqz_ingest_latency_seconds";
        let _ = write!(out, "# HELP {name} SubmitGames handling time.\n# TYPE {name} histogram\n");
        for (bound, bucket) in BUCKETS.iter().zip(&self.latency_buckets) {
            let _ = writeln!(out, "{name}_bucket{{le=\"{bound}\"}} {}", bucket.load(Relaxed));
        }
        let count = self.latency_count.load(Relaxed);
        let sum = self.latency_sum_us.load(Relaxed) as f64 / 1e6;
        let _ = write!(out, "{name}_bucket{{le=\"+Inf\"}} {count}\n{name}_sum {sum}\n{name}_count {count}\n");
        out
    }
}
