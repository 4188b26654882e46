//! Counters and the Prometheus text endpoint (a minimal HTTP/1.1 responder).

use std::fmt::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;

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

/// The exposition text, rendered afresh for each scrape.
pub(crate) type Render = Arc<dyn Fn() -> String + Send + Sync>;

/// Answers every GET on `listener` with `render`'s text until `stop` turns true.
pub(crate) async fn serve_metrics(listener: TcpListener, render: Render, mut stop: watch::Receiver<bool>) {
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                // A failed accept (e.g. out of descriptors) must not end the endpoint.
                Err(_) => continue,
            },
            _ = stop.wait_for(|s| *s) => return,
        };
        let render = render.clone();
        tokio::spawn(async move {
            let _ = tokio::time::timeout(Duration::from_secs(10), answer(stream, &*render)).await;
        });
    }
}

async fn answer(mut stream: TcpStream, render: &(dyn Fn() -> String + Send + Sync)) -> std::io::Result<()> {
    let mut request = Vec::with_capacity(1024);
    let mut buf = [0u8; 1024];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") && request.len() < 16 * 1024 {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        request.extend_from_slice(&buf[..n]);
    }
    let (status, body) = if request.starts_with(b"GET ") {
        ("200 OK", render())
    } else {
        ("405 Method Not Allowed", "only GET\n".to_string())
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    stream.shutdown().await
}
