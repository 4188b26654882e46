//! xqzero's coordinator: the gRPC server (`xqz.v1.Coordinator`) that hands out self-play
//! settings and models, replays every submitted game through the rules core before storing it in
//! a dataset, deduplicates retries (by idempotency key and by game id, across restarts) and keeps
//! the model registry. It also serves `grpc.health.v1`, gRPC reflection and, optionally,
//! Prometheus metrics over plain HTTP.
//!
//! Data layout under the data folder: `dataset/` (an `xqz_dataset` dataset), `idempotency.log`
//! (one JSON line per answered idempotency key, fsynced after the games' shard), `settings.json`
//! (every version of the play settings the folder's games were played under) and `models/`
//! (`v<N>.safetensors`, `v<N>.json`, `registry.json`).

mod error;
mod metrics;
mod registry;
mod service;
mod settings;
mod store;
mod validate;

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_stream::wrappers::TcpListenerStream;
use tonic::service::interceptor::InterceptedService;
use tonic::{Request, Status};
use xqz_mcts::PlaySettings;
use xqz_proto::v1::coordinator_server::CoordinatorServer;

pub use error::CoordinatorError;
pub use service::CoordinatorService;
pub use settings::SETTINGS_FILE;

use crate::error::IoAt;
use crate::registry::Registry;
use crate::service::State;
use crate::settings::SettingsHistory;
use crate::store::Store;

/// Size limits of requests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Games in one `SubmitGames` request.
    pub max_games_per_request: usize,
    /// Moves of all games in one `SubmitGames` request.
    pub max_moves_per_request: usize,
    /// Largest message the server decodes; larger ones fail in tonic with RESOURCE_EXHAUSTED.
    pub max_message_bytes: usize,
    /// Largest model `PublishModel` accepts.
    pub max_model_bytes: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_games_per_request: 256,
            max_moves_per_request: 256 * 400,
            max_message_bytes: 64 << 20,
            max_model_bytes: 2 << 30,
        }
    }
}

/// Everything [`serve`] needs.
#[derive(Clone, Debug)]
pub struct CoordinatorConfig {
    /// The gRPC address (port 0 picks a free one; see [`Running::addr`]).
    pub listen: SocketAddr,
    /// The Prometheus metrics address, if any.
    pub metrics: Option<SocketAddr>,
    /// The data folder.
    pub data_dir: PathBuf,
    /// The bearer token every coordinator call must carry, if any.
    pub token: Option<String>,
    /// How games are played and adjudicated (checked when the coordinator starts).
    pub settings: PlaySettings,
    /// Request size limits.
    pub limits: Limits,
}

impl CoordinatorConfig {
    /// A configuration with default settings and limits, no token and no metrics.
    pub fn new(listen: SocketAddr, data_dir: impl Into<PathBuf>) -> CoordinatorConfig {
        CoordinatorConfig {
            listen,
            metrics: None,
            data_dir: data_dir.into(),
            token: None,
            settings: PlaySettings::default(),
            limits: Limits::default(),
        }
    }
}

/// A started coordinator.
#[derive(Debug)]
pub struct Running {
    addr: SocketAddr,
    metrics_addr: Option<SocketAddr>,
    task: JoinHandle<Result<(), CoordinatorError>>,
}

impl Running {
    /// The bound gRPC address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The bound metrics address, if metrics are served.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_addr
    }

    /// Waits until the server has stopped (after the shutdown future resolved) and the dataset is closed.
    pub async fn wait(self) -> Result<(), CoordinatorError> {
        self.task.await?
    }
}

/// Compares in time independent of where the first difference lies.
fn same_secret(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The interceptor that demands `authorization: Bearer <token>` when a token is configured.
fn check_token(token: Option<Arc<str>>) -> impl FnMut(Request<()>) -> Result<Request<()>, Status> + Clone {
    move |request: Request<()>| {
        let Some(token) = &token else { return Ok(request) };
        let given = request.metadata().get("authorization").and_then(|v| v.to_str().ok()).unwrap_or_default();
        match given.strip_prefix("Bearer ") {
            Some(t) if same_secret(t.as_bytes(), token.as_bytes()) => Ok(request),
            Some(_) => Err(Status::unauthenticated("wrong bearer token")),
            None => Err(Status::unauthenticated("missing `authorization: Bearer <token>` metadata")),
        }
    }
}

/// Checks the settings, opens the data folder, binds the addresses and serves until `shutdown`
/// resolves; then stops
/// accepting calls, ends the model streams, lets running calls finish and closes the dataset.
/// The health and reflection services need no token (probes and tools use them).
pub async fn serve(
    config: CoordinatorConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<Running, CoordinatorError> {
    config.settings.validate()?;
    let data = config.data_dir.clone();
    let settings = config.settings.clone();
    let (history, store, registry) = tokio::task::spawn_blocking(move || {
        std::fs::create_dir_all(&data).at(&data)?;
        Ok::<_, CoordinatorError>((
            SettingsHistory::open(&data, &settings)?,
            Store::open(&data)?,
            Registry::open(&data.join("models"))?,
        ))
    })
    .await??;
    let state = Arc::new(State::new(history, config.limits.clone(), store, registry));
    let listener = TcpListener::bind(config.listen).await.at(config.listen.to_string())?;
    let addr = listener.local_addr().at(config.listen.to_string())?;
    let (stop_tx, stop_rx) = watch::channel(false);
    let metrics_addr = match config.metrics {
        Some(at) => {
            let metrics = TcpListener::bind(at).await.at(at.to_string())?;
            let bound = metrics.local_addr().at(at.to_string())?;
            let scraped = state.clone();
            let render: metrics::Render = Arc::new(move || scraped.metrics.render(scraped.workers_alive()));
            tokio::spawn(metrics::serve_metrics(metrics, render, stop_rx.clone()));
            Some(bound)
        }
        None => None,
    };

    let (health, health_service) = tonic_health::server::health_reporter();
    health.set_serving::<CoordinatorServer<CoordinatorService>>().await;
    let reflection = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(xqz_proto::FILE_DESCRIPTOR_SET)
        .build_v1()?;
    let coordinator = CoordinatorServer::new(CoordinatorService::new(state.clone(), stop_rx))
        .max_decoding_message_size(config.limits.max_message_bytes)
        .max_encoding_message_size(config.limits.max_message_bytes);
    let token = config.token.map(Arc::<str>::from);
    let router = tonic::transport::Server::builder()
        .add_service(health_service)
        .add_service(reflection)
        .add_service(InterceptedService::new(coordinator, check_token(token)));
    let signal = async move {
        shutdown.await;
        // Ends the watch and download streams, which would otherwise keep the drain waiting.
        let _ = stop_tx.send(true);
    };
    let task = tokio::spawn(async move {
        let served = router.serve_with_incoming_shutdown(TcpListenerStream::new(listener), signal).await;
        let closed =
            tokio::task::spawn_blocking(move || state.store.lock().unwrap_or_else(|e| e.into_inner()).close()).await;
        served?;
        closed?
    });
    Ok(Running { addr, metrics_addr, task })
}
