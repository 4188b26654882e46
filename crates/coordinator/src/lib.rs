//! xqzero's coordinator: the gRPC server (`xqz.v1.Coordinator`) that hands out self-play
//! settings and models, replays every submitted game through the rules core before storing it in
//! a dataset, deduplicates retries (by idempotency key and by game id, across restarts) and keeps
//! the model registry. It also serves `grpc.health.v1`, gRPC reflection and, optionally, an
//! HTTP port with Prometheus metrics and a read-only [dashboard] of the run.
//!
//! Data layout under the data folder: `dataset/` (an `xqz_dataset` dataset), `idempotency.log`
//! (one JSON line per answered idempotency key, fsynced after the games' shard), `settings.json`
//! (every version of the play settings the folder's games were played under), `models/`
//! (`v<N>.safetensors`, `v<N>.json`, `registry.json`), `matches.json` (the match jobs that workers
//! play pair by pair) and `eval/` (their games: the match table of `xqz_arena::records`; and
//! `audit.jsonl`, the audits of their pairs).

mod audit;
mod backup;
mod budget;
mod connections;
pub mod dashboard;
mod error;
mod evaluation;
mod http;
mod matches;
mod metrics;
mod registry;
mod service;
mod settings;
mod store;
mod validate;
mod worker_ids;

use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Certificate, Identity, ServerTlsConfig};
use tonic::{Request, Status};
use xqz_dataset::DatasetLocation;
use xqz_mcts::{OpeningSuite, PlaySchedule, PlaySettings};
use xqz_proto::v1::coordinator_server::CoordinatorServer;
use xqz_run_folder::CoordinatorFolder;

pub use audit::RESIDUAL_MARK;
pub use backup::{Restored, light_state_files};
pub use error::CoordinatorError;
pub use matches::{Evaluation, match_id};
pub use service::CoordinatorService;
pub use settings::SettingsHistory;
pub use validate::{Against, check_request, validate_games};
pub use worker_ids::WorkerIds;

use crate::backup::Backup;
use crate::error::IoAt;
use crate::matches::Board;
use crate::registry::Registry;
use crate::service::State;
use crate::store::Store;

/// Limits on requests, which bound the memory they can take: a request waits until the bytes its
/// message declares fit in `max_request_bytes_in_flight`, and its message of at most
/// `max_message_bytes` is decoded into at most [`MAX_EXPANSION`](xqz_proto::codec::MAX_EXPANSION)
/// times its size; so about `64 MiB * 17`, 1.1 GiB, by default, however many clients call and
/// however many handlers run (`max_concurrent_requests`, 64). And limits on connections, so that
/// no client takes what the others need: how many may be open, how long one may sit idle, and
/// what the calls of one may hold of the budget and for how long.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Games in one `SubmitGames` request.
    pub max_games_per_request: usize,
    /// Moves of all games in one `SubmitGames` request.
    pub max_moves_per_request: usize,
    /// Largest message the server decodes; larger ones fail in tonic with RESOURCE_EXHAUSTED.
    /// A worker's batch of 16 games of 600 plies with full searches is about 7 MiB.
    pub max_message_bytes: usize,
    /// Largest model `PublishModel` accepts.
    pub max_model_bytes: usize,
    /// Request handlers running at once; further requests wait for one to finish.
    pub max_concurrent_requests: usize,
    /// Bytes of request messages in flight, by the length each message declares before it is
    /// read; further requests wait. One larger than this takes all of it.
    pub max_request_bytes_in_flight: usize,
    /// Streams (calls) open at once on one HTTP/2 connection; a client's further calls wait in
    /// its own queue.
    pub max_streams_per_connection: u32,
    /// Bytes a client may send on one stream before the server reads them (its HTTP/2 window).
    /// The connection's window is this times `max_streams_per_connection`, so calls that wait
    /// unread for a handler or for the byte budget can never take the whole connection's window
    /// and stall the calls on it that are being read.
    pub stream_window_bytes: u32,
    /// Longest a request handler may run (a model upload included) before it is cancelled.
    pub request_timeout: Duration,
    /// Longest the server waits at shutdown for its connections to close before it stops anyway:
    /// a client that keeps an idle connection open would otherwise hold the shutdown forever.
    pub drain_timeout: Duration,
    /// How long a worker may be silent before it is counted lost (logged once, and no longer
    /// counted alive); workers send a heartbeat every 5 s.
    pub alive_window: Duration,
    /// Connections open at once (each may buffer up to `stream_window_bytes *
    /// max_streams_per_connection` of request data); past it the coordinator accepts no more
    /// until one closes, and further clients wait to connect. A worker keeps one connection.
    pub max_connections: usize,
    /// A connection with no call open for this long is closed (a socket that sends nothing, or
    /// only answers pings, cannot hold one of the `max_connections`), and one whose peer does not
    /// answer an HTTP/2 ping within it is dropped. A call that stays open, such as a worker's
    /// model watch, keeps its connection; a client whose connection was closed reconnects at
    /// its next call.
    pub idle_timeout: Duration,
    /// Calls one connection may have in flight, from their arrival until their answers begin;
    /// further calls are refused with UNAVAILABLE (which workers retry after a pause).
    pub max_calls_per_connection: usize,
    /// Bytes of `max_request_bytes_in_flight` that the calls of one connection may hold (a
    /// message larger than this takes all of it); a call whose message would pass it is refused
    /// with UNAVAILABLE, so that one client cannot hold the whole budget.
    pub max_request_bytes_per_connection: usize,
    /// Longest a request's message prefix may take to arrive, and each of its messages after the
    /// request got its bytes (or after the message before); a request past it is ended with
    /// DEADLINE_EXCEEDED and gives its bytes back, so a slow or stalled upload holds them no
    /// longer than this.
    pub upload_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_games_per_request: 256,
            max_moves_per_request: 256 * 400,
            max_message_bytes: 16 << 20,
            max_model_bytes: 2 << 30,
            max_concurrent_requests: 64,
            max_request_bytes_in_flight: 64 << 20,
            max_streams_per_connection: 16,
            stream_window_bytes: 512 << 10,
            request_timeout: Duration::from_secs(300),
            drain_timeout: Duration::from_secs(15),
            alive_window: Duration::from_secs(60),
            max_connections: 256,
            idle_timeout: Duration::from_secs(60),
            max_calls_per_connection: 4,
            max_request_bytes_per_connection: 16 << 20,
            upload_timeout: Duration::from_secs(30),
        }
    }
}

/// Everything [`serve`] needs.
#[derive(Clone, Debug)]
pub struct CoordinatorConfig {
    /// The gRPC address (port 0 picks a free one; see [`Running::addr`]).
    pub listen: SocketAddr,
    /// The HTTP address, if any: Prometheus metrics at `/metrics`, the [dashboard] at `/`.
    pub metrics: Option<SocketAddr>,
    /// The run folder (of `xqz run`) whose `trainer/metrics.csv` and `strength.csv` the
    /// dashboard plots, if the coordinator shares one with the trainer.
    pub run_folder: Option<PathBuf>,
    /// The data folder: models, settings history, idempotency log and, unless `dataset` says
    /// otherwise, the dataset (`<data_dir>/dataset`).
    pub data_dir: PathBuf,
    /// Where the games' dataset lives, if not in `<data_dir>/dataset`: another folder or an
    /// object store prefix (`s3://bucket/prefix`), which this coordinator then holds the writer
    /// lease of while it runs (a second coordinator on the prefix refuses to start).
    pub dataset: Option<DatasetLocation>,
    /// Where the coordinator keeps a copy of its models, settings history and worker-id key
    /// (an object store prefix or a folder), if anywhere: a data folder without them is filled
    /// from it at start-up, and every publication is copied to it.
    pub backup: Option<DatasetLocation>,
    /// The bearer token every coordinator call must carry, if any (the workers' credential).
    pub token: Option<String>,
    /// The trainer's credential, if publishing is kept to it: with one, only calls that carry it
    /// may publish models (and it serves for every other call too); without, any caller that
    /// passes the `token` check may.
    pub publisher_token: Option<String>,
    /// TLS, if the coordinator serves it (clients then use `https://` addresses).
    pub tls: Option<ServerTls>,
    /// How games are played and adjudicated (checked when the coordinator starts), before the
    /// schedule.
    pub settings: PlaySettings,
    /// How the settings change with each published model.
    pub schedule: PlaySchedule,
    /// The opening suite that `settings.opening_share` of games start from, handed to workers
    /// as they register; the only starts besides the standard one that games may have.
    pub openings: Option<Arc<OpeningSuite>>,
    /// Request size limits.
    pub limits: Limits,
    /// The matches queued for each published model, the gate and the share of pairs audited.
    pub evaluation: Evaluation,
    /// Workers whose quarantine by an audit is lifted at start (their ids); see
    /// docs/SECURITY.md.
    pub lift_quarantine: Vec<String>,
}

impl CoordinatorConfig {
    /// A configuration with default settings and limits, no token and no HTTP port.
    pub fn new(listen: SocketAddr, data_dir: impl Into<PathBuf>) -> CoordinatorConfig {
        CoordinatorConfig {
            listen,
            metrics: None,
            run_folder: None,
            data_dir: data_dir.into(),
            dataset: None,
            backup: None,
            token: None,
            publisher_token: None,
            tls: None,
            settings: PlaySettings::default(),
            schedule: PlaySchedule::default(),
            openings: None,
            limits: Limits::default(),
            evaluation: Evaluation::default(),
            lift_quarantine: Vec::new(),
        }
    }
}

/// The coordinator's TLS material, PEM-encoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerTls {
    /// Its certificate chain.
    pub cert_pem: Vec<u8>,
    /// Its private key.
    pub key_pem: Vec<u8>,
    /// The CA that client certificates must chain to, if clients must present one.
    pub client_ca_pem: Option<Vec<u8>>,
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

    /// The bound HTTP address (metrics and dashboard), if served.
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

/// What a caller's credential allows, attached to each request by [`check_token`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// Register, submit games, follow and download models, read stats.
    Worker,
    /// All that, and publish models.
    Publisher,
}

/// The interceptor that demands `authorization: Bearer <token>` when a token is configured and
/// tells the handlers which [`Role`] the credential carries.
fn check_token(
    token: Option<Arc<str>>,
    publisher: Option<Arc<str>>,
) -> impl FnMut(Request<()>) -> Result<Request<()>, Status> + Clone {
    move |mut request: Request<()>| {
        let header = request.metadata().get("authorization").and_then(|v| v.to_str().ok());
        let given = header.and_then(|h| h.strip_prefix("Bearer "));
        let is = |secret: &Option<Arc<str>>| matches!((secret, given), (Some(s), Some(g)) if same_secret(g.as_bytes(), s.as_bytes()));
        let role = if is(&publisher) || (publisher.is_none() && (token.is_none() || is(&token))) {
            Role::Publisher
        } else if token.is_none() || is(&token) {
            Role::Worker
        } else if header.is_some() {
            return Err(Status::unauthenticated("wrong bearer token"));
        } else {
            return Err(Status::unauthenticated("missing `authorization: Bearer <token>` metadata"));
        };
        request.extensions_mut().insert(role);
        Ok(request)
    }
}

/// What a coordinator keeps in its data folder, opened (and first filled from the backup, if
/// one is configured): the settings history, the game store, the model registry, the worker ids
/// and the backup.
type Opened = (SettingsHistory, Store, Registry, WorkerIds, Option<Backup>, Board);

/// Opens the data folder of `config` (creating it), on a blocking thread.
fn open_data(config: &CoordinatorConfig) -> Result<Opened, CoordinatorError> {
    let data = &config.data_dir;
    let folder = CoordinatorFolder::new(data);
    let dataset = config.dataset.clone().unwrap_or_else(|| DatasetLocation::Local(folder.dataset_dir()));
    // The idempotency log is worth keeping only with games that outlive the data folder.
    let key_logs = match &dataset {
        DatasetLocation::Local(path) => !path.starts_with(data),
        DatasetLocation::Object(_) => true,
    };
    std::fs::create_dir_all(data).at(data)?;
    let backup = match config.backup.clone() {
        Some(location) => {
            let (backup, restored) = Backup::restore(location, data, key_logs)?;
            if restored != Restored::default() {
                tracing::info!(
                    backup = %backup.location(),
                    models = restored.models,
                    settings = restored.settings,
                    worker_key = restored.worker_key,
                    key_logs = restored.key_logs,
                    matches = restored.matches,
                    "data folder filled from the backup"
                );
            }
            Some(backup)
        }
        None => None,
    };
    let registry = Registry::open(&folder.models_dir())?;
    let history = SettingsHistory::open(data, &config.settings, config.schedule, registry.latest_version())?;
    let ids = WorkerIds::open(data).at(folder.worker_id_key())?;
    let mut board = Board::open_audited(data, config.evaluation.audit_share)?;
    for worker in &config.lift_quarantine {
        match board.lift(worker, crate::service::now_ms())? {
            true => tracing::info!(worker, "quarantine lifted"),
            false => tracing::warn!(worker, "no quarantine to lift: the worker is not quarantined"),
        }
    }
    // A backup that cannot be written stops the start, not a later publication.
    if let Some(backup) = &backup {
        backup.copy(board.files()?)?;
    }
    Ok((history, Store::open(data, dataset, crate::store::Memory::default())?, registry, ids, backup, board))
}

/// Logs workers that fell silent as lost every `every`, even while nobody calls, and settles the
/// models held without a gating match ([`evaluation::settle_gates`]), until `stop`.
async fn sweep(state: Arc<State>, every: Duration, mut stop: watch::Receiver<bool>) {
    let mut every = tokio::time::interval(every);
    loop {
        tokio::select! {
            _ = every.tick() => {}
            _ = stop.wait_for(|s| *s) => return,
        }
        state.sweep();
        // A held model whose gating match could not be queued is queued again.
        let settle = state.clone();
        let _ = tokio::task::spawn_blocking(move || evaluation::settle_gates(&settle)).await;
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
    config.evaluation.validate()?;
    if config.settings.opening_share > 0.0 && config.openings.is_none() {
        return Err(CoordinatorError::NoOpenings { share: config.settings.opening_share });
    }
    let opened = tokio::task::spawn_blocking({
        let config = config.clone();
        move || open_data(&config)
    })
    .await??;
    let (history, store, registry, ids, backup, board) = opened;
    let kept = (backup, board, config.evaluation.clone());
    let state =
        Arc::new(State::new(history, config.openings.clone(), config.limits.clone(), store, registry, ids, kept));
    evaluation::settle_gates(&state);
    let listener = TcpListener::bind(config.listen).await.at(config.listen.to_string())?;
    let addr = listener.local_addr().at(config.listen.to_string())?;
    let (stop_tx, stop_rx) = watch::channel(false);
    tokio::spawn(sweep(state.clone(), service::sweep_every(config.limits.alive_window), stop_rx.clone()));
    let (token, publisher) = (config.token.map(Arc::<str>::from), config.publisher_token.map(Arc::<str>::from));
    let metrics_addr = match config.metrics {
        Some(at) => {
            let listener = TcpListener::bind(at).await.at(at.to_string())?;
            let bound = listener.local_addr().at(at.to_string())?;
            let tokens: http::Tokens = token.iter().chain(&publisher).cloned().collect();
            let dashboard = dashboard::routes(state.clone(), config.run_folder.clone());
            tokio::spawn(http::serve(listener, http::router(dashboard, state.clone(), tokens), stop_rx.clone()));
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
    let mut builder = tonic::transport::Server::builder();
    if let Some(tls) = &config.tls {
        let mut server_tls = ServerTlsConfig::new().identity(Identity::from_pem(&tls.cert_pem, &tls.key_pem));
        if let Some(ca) = &tls.client_ca_pem {
            server_tls = server_tls.client_ca_root(Certificate::from_pem(ca));
        }
        builder = builder.tls_config(server_tls).map_err(CoordinatorError::Tls)?;
    }
    let limits = &config.limits;
    let router = builder
        .max_concurrent_streams(limits.max_streams_per_connection)
        .initial_stream_window_size(limits.stream_window_bytes)
        .initial_connection_window_size(limits.stream_window_bytes.saturating_mul(limits.max_streams_per_connection))
        .timeout(limits.request_timeout)
        .http2_keepalive_interval(Some(limits.idle_timeout))
        .http2_keepalive_timeout(Some(limits.idle_timeout))
        // Outermost first: a call takes a slot of its connection, then its bytes, then a handler,
        // so that one refused or slow to send holds nothing the next steps give out.
        .layer(connections::CallsLayer)
        .layer(budget::ByteBudgetLayer::new(limits.max_request_bytes_in_flight, limits.upload_timeout))
        .layer(tower::limit::GlobalConcurrencyLimitLayer::new(limits.max_concurrent_requests.max(1)))
        .add_service(health_service)
        .add_service(reflection)
        .add_service(InterceptedService::new(coordinator, check_token(token, publisher)));
    let mut drained = stop_tx.subscribe();
    let drain_timeout = config.limits.drain_timeout;
    let incoming = connections::Incoming::new(listener, &config.limits);
    let signal = async move {
        shutdown.await;
        // Ends the watch and download streams, which would otherwise keep the drain waiting.
        let _ = stop_tx.send(true);
    };
    let task = tokio::spawn(async move {
        let serve = router.serve_with_incoming_shutdown(incoming, signal);
        let deadline = async move {
            if drained.wait_for(|stopping| *stopping).await.is_err() {
                return std::future::pending().await;
            }
            tokio::time::sleep(drain_timeout).await;
        };
        let served = tokio::select! {
            served = serve => served,
            () = deadline => {
                // A request still running finds the store closed below and stores nothing.
                tracing::warn!(drain_s = drain_timeout.as_secs_f64(), "connections still open after the drain time; stopping anyway");
                Ok(())
            }
        };
        let closed = tokio::task::spawn_blocking(move || {
            let closed = state.store.lock().unwrap_or_else(|e| e.into_inner()).close();
            // The keys answered since the last publication, for a successor on a new volume.
            if let Err(e) = state.copy_to_backup() {
                tracing::warn!(error = %e, "stopped, but the last copy to the backup failed");
            }
            closed
        })
        .await;
        served?;
        closed?
    });
    Ok(Running { addr, metrics_addr, task })
}
