//! Prometheus metrics for every role of xqzero: the coordinator, the trainer and the workers
//! each keep one [`Registry`] (of the well-kept `prometheus-client` crate) and serve it as the
//! OpenMetrics text at `GET /metrics`, the coordinator beside its dashboard ([`router`]), the
//! others on a small server of their own ([`Server`]).
//!
//! ```
//! use std::sync::Arc;
//! use xqz_metrics::{Counter, Registry, Server};
//!
//! let mut registry = Registry::default();
//! let games: Counter = xqz_metrics::register(&mut registry, "xqz_example_games", "Games played.");
//! games.inc();
//! assert!(xqz_metrics::render(&registry).contains("xqz_example_games_total 1\n"));
//!
//! let server = Server::start("127.0.0.1:0".parse()?, Arc::new(registry))?;
//! println!("scrape http://{}/metrics", server.addr());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::net::SocketAddr;
use std::sync::Arc;
use std::thread::JoinHandle;

use axum::Router;
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
pub use prometheus_client::metrics::counter::Counter;
pub use prometheus_client::metrics::gauge::Gauge;
pub use prometheus_client::metrics::histogram::Histogram;
pub use prometheus_client::registry::{Metric, Registry};
use tokio::sync::oneshot;

/// A gauge of floating-point values (losses, rates).
pub type FloatGauge = Gauge<f64, std::sync::atomic::AtomicU64>;

/// The content type of [`render`]'s text, as Prometheus negotiates it.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// A new metric, registered in `registry` as `name` (a counter's series gets `_total`) with `help`.
pub fn register<M: Metric + Clone + Default>(registry: &mut Registry, name: &str, help: &str) -> M {
    let metric = M::default();
    registry.register(name, help, metric.clone());
    metric
}

/// The OpenMetrics text of everything in `registry`.
pub fn render(registry: &Registry) -> String {
    let mut text = String::new();
    // Writing into a String cannot fail; an error here would be a bug in a metric's encoder.
    prometheus_client::encoding::text::encode(&mut text, registry).expect("metrics encode into a String");
    text
}

/// The HTTP answer to a scrape: `text` with its content type, and the connection closed after
/// it (a scrape is one request; plain clients such as `curl` read to the end).
pub fn response(text: String) -> Response {
    ([(header::CONTENT_TYPE, CONTENT_TYPE), (header::CONNECTION, "close")], text).into_response()
}

/// A router that serves `registry` at `GET /metrics`.
pub fn router(registry: Arc<Registry>) -> Router {
    Router::new().route("/metrics", get(scrape)).with_state(registry)
}

async fn scrape(State(registry): State<Arc<Registry>>) -> Response {
    response(render(&registry))
}

/// `GET /metrics` on an address of its own, served from a thread of its own (so that roles
/// without an async runtime, such as the trainer's loop, can serve it); stops when dropped.
pub struct Server {
    addr: SocketAddr,
    stop: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    /// Binds `addr` (port 0 picks a free one) and serves `registry` there.
    pub fn start(addr: SocketAddr, registry: Arc<Registry>) -> std::io::Result<Server> {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let listener = runtime.block_on(tokio::net::TcpListener::bind(addr))?;
        let addr = listener.local_addr()?;
        let (stop, stopped) = oneshot::channel::<()>();
        let thread = std::thread::Builder::new().name("metrics".into()).spawn(move || {
            // At the stop the runtime and its connection tasks are dropped, open connections
            // and a scrape in flight with them: nothing waits on a client, and a cut scrape is
            // simply repeated. axum retries failed accepts itself, so serving ends only there.
            runtime.block_on(async move {
                tokio::select! {
                    _ = axum::serve(listener, router(registry)) => {}
                    _ = stopped => {}
                }
            });
        })?;
        Ok(Server { addr, stop: Some(stop), thread: Some(thread) })
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write};

    use super::*;

    fn get(addr: SocketAddr, path: &str) -> String {
        let mut conn = std::net::TcpStream::connect(addr).unwrap();
        write!(conn, "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").unwrap();
        let mut text = String::new();
        conn.read_to_string(&mut text).unwrap();
        text
    }

    #[test]
    fn a_server_answers_scrapes_with_the_registry_as_it_is_now_and_stops_when_dropped() {
        let mut registry = Registry::default();
        let games: Counter = register(&mut registry, "xqz_test_games", "Games.");
        let loss: FloatGauge = register(&mut registry, "xqz_test_loss", "Loss.");
        let server = Server::start("127.0.0.1:0".parse().unwrap(), Arc::new(registry)).unwrap();
        games.inc_by(3);
        loss.set(0.25);
        let text = get(server.addr(), "/metrics");
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
        assert!(text.contains(&format!("content-type: {CONTENT_TYPE}")), "{text}");
        assert!(text.contains("# TYPE xqz_test_games counter\n"), "{text}");
        assert!(text.contains("xqz_test_games_total 3\n"), "{text}");
        assert!(text.contains("xqz_test_loss 0.25\n"), "{text}");
        assert!(text.trim_end().ends_with("# EOF"), "{text}");
        assert!(get(server.addr(), "/other").starts_with("HTTP/1.1 404"));
        // A scraper that keeps its connection open does not hold the stop up.
        let _idle = std::net::TcpStream::connect(server.addr()).unwrap();
        let addr = server.addr();
        drop(server);
        assert!(std::net::TcpStream::connect(addr).is_err(), "still listening after the drop");
    }
}
