//! Self-play for a coordinator (`xqz worker`): register, fetch the current model, play, spool
//! and upload finished games, and switch to each newly published model without stopping.
//!
//! Tasks of a running worker:
//! - self-play on a blocking thread, playing with the [`ModelHost`]'s evaluator; each finished
//!   game is recorded with the model version current when it *finished* (a game that spans a
//!   switch was played partly by the older model);
//! - a batcher that groups finished games into `SubmitGamesRequest`s (up to
//!   [`RemoteConfig::batch_games`] games or every [`RemoteConfig::batch_interval`]), gives each its
//!   idempotency key and appends it to the [`Spool`] (fsynced) before it counts as played;
//! - an uploader that sends spooled batches oldest first, forgets a batch only once the coordinator
//!   acknowledged it (or said it had it already), retries transient failures with [`Backoff`] and
//!   sets a rejected batch aside in `rejected/`;
//! - a model watcher that follows `WatchModels`, downloads each new model (resuming a broken
//!   download from the bytes it has) and hands it to [`ModelHost::install`]; games in progress
//!   go on with the new network from their next evaluation. Each announcement carries the play
//!   settings in force: games that start afterwards play under them (games in progress finish
//!   under theirs), and each game names the settings version it was played under;
//! - heartbeats.
//!
//! On shutdown no new game starts, games in progress get [`RemoteConfig::drain`] to finish (then
//! the rest are dropped), finished games are spooled and the uploader gets [`SHUTDOWN_GRACE`] to
//! send them. What it cannot send stays in the spool and is sent by the next run.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sha2::{Digest, Sha256};
use tokio::io::AsyncWriteExt;
use tokio::sync::mpsc;
use tonic::metadata::{Ascii, MetadataValue};
use tonic::service::Interceptor;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;
use tonic::{Code, Status};
use tracing::{error, info, warn};
use xqz_mcts::{EvalError, Evaluator, LiveConfig, OpeningSuite, PlaySettings, SelfPlayConfig, self_play_live};
use xqz_proto::v1::coordinator_client::CoordinatorClient;
use xqz_proto::v1::{
    DownloadModelRequest, GameSubmission, HeartbeatRequest, ModelAnnouncement, RegisterRequest, SubmitGamesRequest,
    WatchModelsRequest,
};
use xqz_proto::wire::{WireError, settings_from_wire, suite_from_wire};

use crate::backoff::Backoff;
use crate::metrics::WorkerMetrics;
use crate::spool::{Spool, SpoolError};

/// How long a stopping worker keeps trying to upload its finished games.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// Longest wait for the answer to one unary call.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// Where and how a worker runs.
#[derive(Clone, Debug)]
pub struct RemoteConfig {
    /// The coordinator's URL (`http://host:port`).
    pub coordinator: String,
    /// Bearer token sent with every call.
    pub token: Option<String>,
    /// TLS settings, for an `https://` coordinator.
    pub tls: Option<xqz_proto::tls::ClientTls>,
    /// The worker's folder: `spool/`, `rejected/` and `models/` live here.
    pub dir: PathBuf,
    /// The name the worker registers under.
    pub name: String,
    /// Search threads.
    pub threads: usize,
    /// Games each thread plays at once.
    pub games_per_thread: usize,
    /// Stop after this many games are played and uploaded; `None` plays until shut down.
    pub max_games: Option<u64>,
    /// Most games in one upload.
    pub batch_games: usize,
    /// A partial batch is spooled after this long.
    pub batch_interval: Duration,
    /// Time between heartbeats.
    pub heartbeat_interval: Duration,
    /// On shutdown, how long games in progress may take to finish before they are dropped.
    pub drain: Duration,
    /// What the worker counts (its games, moves, evaluations, uploads, model version).
    pub metrics: WorkerMetrics,
}

/// The network a worker plays with, replaceable while games are in progress.
pub trait ModelHost: Send + Sync + 'static {
    /// The evaluator self-play uses; it must follow [`ModelHost::install`]s.
    type Evaluator: Evaluator + Clone + Send + 'static;
    /// A handle for self-play.
    fn evaluator(&self) -> Self::Evaluator;
    /// Loads the checkpoint whose metadata file is `checkpoint` and plays with it from now on.
    /// Called on a blocking thread.
    fn install(&self, checkpoint: &Path) -> Result<(), InstallError>;
}

/// Why a [`ModelHost`] could not install a model.
#[derive(Debug, thiserror::Error)]
#[error("installing {}: {source}", path.display())]
pub struct InstallError {
    /// The checkpoint's metadata file.
    pub path: PathBuf,
    /// The cause.
    #[source]
    pub source: Box<dyn std::error::Error + Send + Sync>,
}

/// Why a worker stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum RemoteError {
    /// The coordinator's address or the TLS settings cannot be used.
    #[error(transparent)]
    Endpoint(#[from] xqz_proto::tls::EndpointError),
    /// The token cannot be sent as metadata.
    #[error("the token must be printable ASCII")]
    Token,
    /// The coordinator refused a call for a reason that retrying does not fix.
    #[error("coordinator refused {call}: {status}")]
    Refused {
        /// The call.
        call: &'static str,
        /// Its status.
        status: Box<Status>,
    },
    /// The coordinator sent no self-play settings.
    #[error("the coordinator sent no self-play settings")]
    NoSettings,
    /// The coordinator's self-play settings cannot be used.
    #[error("coordinator settings: {0}")]
    Settings(#[from] WireError),
    /// A model could not be downloaded or stored.
    #[error("model v{version}: {message}")]
    Model {
        /// Its version.
        version: u64,
        /// What went wrong.
        message: String,
    },
    /// A downloaded model could not be installed.
    #[error("model v{version}: {source}")]
    Install {
        /// Its version.
        version: u64,
        /// Why.
        source: InstallError,
    },
    /// The spool failed.
    #[error(transparent)]
    Spool(#[from] SpoolError),
    /// The search's evaluator failed.
    #[error(transparent)]
    Eval(#[from] EvalError),
}

/// Adds `authorization: Bearer <token>` to every call.
#[derive(Clone, Debug)]
pub struct Auth(Option<MetadataValue<Ascii>>);

impl Interceptor for Auth {
    fn call(&mut self, mut request: tonic::Request<()>) -> Result<tonic::Request<()>, Status> {
        if let Some(value) = &self.0 {
            request.metadata_mut().insert("authorization", value.clone());
        }
        Ok(request)
    }
}

/// A coordinator client that authenticates every call.
pub type Client = CoordinatorClient<InterceptedService<Channel, Auth>>;

/// What to do after a failed call.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Failure {
    /// Try again later (network trouble, coordinator restarting or busy).
    Transient,
    /// The request itself is at fault: retrying it cannot succeed.
    Rejected,
    /// The worker cannot go on (wrong token, incompatible coordinator).
    Fatal,
}

fn classify(code: Code) -> Failure {
    match code {
        // AlreadyExists: the batch's key was bound to other games; resending cannot change that.
        Code::InvalidArgument | Code::ResourceExhausted | Code::AlreadyExists => Failure::Rejected,
        Code::Unauthenticated | Code::PermissionDenied | Code::Unimplemented => Failure::Fatal,
        _ => Failure::Transient,
    }
}

/// A unary call with a deadline; running out of time reads as `DEADLINE_EXCEEDED`.
async fn call<T>(fut: impl Future<Output = Result<tonic::Response<T>, Status>>) -> Result<T, Status> {
    match tokio::time::timeout(CALL_TIMEOUT, fut).await {
        Ok(answer) => answer.map(tonic::Response::into_inner),
        Err(_) => Err(Status::deadline_exceeded("no answer in time")),
    }
}

/// Sleeps for the next backoff delay.
async fn wait(backoff: &mut Backoff) {
    let delay = backoff.next_delay(&mut rand::rng());
    tokio::time::sleep(delay).await;
}

/// A registered worker, before it plays.
pub struct Session {
    client: Client,
    config: RemoteConfig,
    worker_id: String,
    /// The coordinator's settings and their version.
    settings: (PlaySettings, u64),
    /// The coordinator's opening suite, if it has one.
    openings: Option<Arc<OpeningSuite>>,
    current_model: Option<ModelAnnouncement>,
}

impl Session {
    /// Connects and registers, retrying while the coordinator is unreachable.
    pub async fn connect(config: RemoteConfig) -> Result<Session, RemoteError> {
        let endpoint =
            xqz_proto::tls::endpoint(&config.coordinator, config.tls.as_ref())?.connect_timeout(Duration::from_secs(5));
        let token = match &config.token {
            Some(token) => Some(format!("Bearer {token}").parse().map_err(|_| RemoteError::Token)?),
            None => None,
        };
        let mut client = CoordinatorClient::with_interceptor(endpoint.connect_lazy(), Auth(token))
            .max_decoding_message_size(64 << 20);
        let request = RegisterRequest {
            name: config.name.clone(),
            threads: u32::try_from(config.threads).unwrap_or(u32::MAX),
            program_version: env!("CARGO_PKG_VERSION").into(),
        };
        let mut backoff = Backoff::default();
        let answer = loop {
            match call(client.register(request.clone())).await {
                Ok(answer) => break answer,
                Err(status) if classify(status.code()) == Failure::Transient => {
                    warn!(code = ?status.code(), reason = status.message(), "register failed; retrying");
                    wait(&mut backoff).await;
                }
                Err(status) => return Err(RemoteError::Refused { call: "Register", status: Box::new(status) }),
            }
        };
        let settings = settings_from_wire(answer.settings.as_ref().ok_or(RemoteError::NoSettings)?)?;
        let openings = answer.openings.as_ref().map(suite_from_wire).transpose()?.map(Arc::new);
        if let Some(suite) = &openings {
            info!(suite = format!("{:016x}", suite.id()), positions = suite.len(), "opening suite");
        }
        Ok(Session {
            client,
            config,
            worker_id: answer.worker_id,
            settings,
            openings,
            current_model: answer.current_model,
        })
    }

    /// The id the coordinator gave this worker.
    pub fn worker_id(&self) -> &str {
        &self.worker_id
    }

    /// The model published when the worker registered, if any.
    pub fn current_model(&self) -> Option<&ModelAnnouncement> {
        self.current_model.as_ref()
    }

    /// Downloads a model into `<dir>/models` (or finds it there) and returns its metadata file.
    pub async fn download(&self, model: &ModelAnnouncement) -> Result<PathBuf, RemoteError> {
        download(self.client.clone(), &self.config.dir.join("models"), model).await
    }

    /// The search settings: the coordinator's play settings and their version, its opening
    /// suite, this worker's threads and a fresh seed (workers must not replay each other's games).
    pub fn self_play_config(&self) -> SelfPlayConfig {
        self_play_config(&self.settings, self.openings.clone(), &self.config)
    }

    /// Plays until `shutdown` resolves (or `max_games` are uploaded), with `host`'s network, which
    /// is model `model_version` now. Returns the number of games uploaded.
    pub async fn run<H: ModelHost>(
        self,
        host: Arc<H>,
        model_version: u64,
        shutdown: impl Future<Output = ()>,
    ) -> Result<u64, RemoteError> {
        let live = Arc::new(LiveConfig::new(self.self_play_config()));
        let dir = self.config.dir.clone();
        let spool = tokio::task::spawn_blocking(move || Spool::open(&dir.join("spool")))
            .await
            .expect("spool open does not panic")?;
        if spool.had_torn_tail() {
            warn!("dropped a half-written batch at the end of the spool");
        }
        for file in spool.quarantined() {
            warn!(moved_to = %file.display(), "a damaged stretch of the spool was set aside; the batches after it are kept");
        }
        if !spool.is_empty() {
            info!(batches = spool.len(), "batches from an earlier run are waiting for upload");
        }
        let spool = Arc::new(Mutex::new(spool));
        let version = Arc::new(AtomicU64::new(model_version));
        let metrics = self.config.metrics.clone();
        metrics.playing(model_version);
        let finished = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));

        let (games_tx, games_rx) = mpsc::unbounded_channel();
        let mut player = {
            let (host, version, finished, stop) = (host.clone(), version.clone(), finished.clone(), stop.clone());
            let live = live.clone();
            let worker_id = self.worker_id.clone();
            let games = self.config.max_games.unwrap_or(u64::MAX);
            let metrics = metrics.clone();
            tokio::task::spawn_blocking(move || {
                self_play_live(&live, metrics.counting(host.evaluator()), games, &stop, |game| {
                    metrics.game_finished(game.plies.len());
                    let played_by = version.load(Ordering::SeqCst);
                    match crate::record::to_records(&game, played_by, &worker_id) {
                        Ok((record, samples)) => {
                            finished.fetch_add(1, Ordering::Relaxed);
                            // The receiver lives until this closure is dropped.
                            let _ = games_tx.send(xqz_proto::wire::encode_game(&record, &samples));
                        }
                        Err(e) => error!(game = game.index, error = %e, "a finished game cannot be recorded"),
                    }
                })
            })
        };
        let (spooled_tx, spooled_rx) = mpsc::unbounded_channel();
        let batcher = tokio::spawn(batch_games(self.batcher(), games_rx, spool.clone(), spooled_tx));
        let mut uploader = tokio::spawn(upload(
            self.client.clone(),
            self.worker_id.clone(),
            self.config.dir.clone(),
            spool,
            spooled_rx,
            metrics,
        ));
        let watcher =
            tokio::spawn(watch_models(self.client.clone(), self.config.clone(), host, version.clone(), live.clone()));
        let heartbeat = tokio::spawn(heartbeats(
            self.client.clone(),
            self.worker_id.clone(),
            self.config.heartbeat_interval,
            finished,
            version,
        ));

        let uploaded = tokio::select! {
            uploaded = &mut uploader => Some(uploaded),
            () = shutdown => None,
        };
        let mut played = None;
        let uploaded = match uploaded {
            Some(uploaded) => {
                stop.store(true, Ordering::SeqCst);
                uploaded
            }
            None => {
                live.close();
                let drain = self.config.drain;
                info!(
                    drain_s = drain.as_secs_f64(),
                    "stopping: no new games, those in progress have the drain time to finish"
                );
                match tokio::time::timeout(drain, &mut player).await {
                    Ok(done) => played = Some(done),
                    Err(_) => {
                        warn!(drain_s = drain.as_secs_f64(), "games still in progress after the drain time are dropped")
                    }
                }
                stop.store(true, Ordering::SeqCst);
                match tokio::time::timeout(SHUTDOWN_GRACE, &mut uploader).await {
                    Ok(uploaded) => uploaded,
                    Err(_) => {
                        uploader.abort();
                        warn!("upload unfinished; the spool is sent on the next start");
                        Ok(Ok(0))
                    }
                }
            }
        };
        watcher.abort();
        heartbeat.abort();
        let played = match played {
            Some(done) => done,
            None => player.await,
        }
        .expect("self-play does not panic");
        batcher.await.expect("the batcher does not panic")?;
        let uploaded = uploaded.expect("the uploader does not panic")?;
        played?;
        Ok(uploaded)
    }

    fn batcher(&self) -> Batcher {
        Batcher {
            worker_id: self.worker_id.clone(),
            games: self.config.batch_games.max(1),
            interval: self.config.batch_interval,
        }
    }
}

/// How finished games are grouped.
struct Batcher {
    worker_id: String,
    games: usize,
    interval: Duration,
}

async fn with_spool<T: Send + 'static>(
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
async fn batch_games(
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
                        .expect("encode_game writes 16-byte ids");
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

/// Sends spooled batches oldest first until the batcher has ended and the spool is empty;
/// returns the number of games the coordinator took (stored or already had). Each goes under this
/// session's `worker_id`: a batch spooled by an earlier session carries that session's id, which
/// a coordinator whose data folder was replaced no longer knows.
async fn upload(
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

/// The self-play config of `settings` (and their version) with the coordinator's `openings` on
/// this worker.
fn self_play_config(
    settings: &(PlaySettings, u64),
    openings: Option<Arc<OpeningSuite>>,
    config: &RemoteConfig,
) -> SelfPlayConfig {
    SelfPlayConfig {
        settings_version: settings.1,
        openings,
        ..settings.0.self_play_config(config.threads, config.games_per_thread, rand::random())
    }
}

/// Games that start from now on play under the settings `model` announces, if they are new and
/// usable; unusable ones are reported and the settings in force kept.
fn follow_settings(model: &ModelAnnouncement, config: &RemoteConfig, live: &LiveConfig) {
    let Some(wire) = &model.settings else { return };
    if wire.version == live.current().settings_version {
        return;
    }
    match settings_from_wire(wire) {
        Ok(settings) => {
            info!(settings_version = settings.1, "new games play under the announced settings");
            // The suite is the coordinator's for the session; settings announced later keep it.
            live.replace(self_play_config(&settings, live.current().openings.clone(), config));
        }
        Err(e) => {
            warn!(
                kept = live.current().settings_version,
                announced = wire.version,
                error = %e,
                "keeping the settings in force: the announced ones cannot be used"
            )
        }
    }
}

/// Follows the published models and installs each new one, and the settings announced with it;
/// reconnects with backoff.
async fn watch_models<H: ModelHost>(
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

/// Says the worker is alive every `interval`; failures only delay the next one.
async fn heartbeats(
    mut client: Client,
    worker_id: String,
    interval: Duration,
    finished: Arc<AtomicU64>,
    version: Arc<AtomicU64>,
) {
    let mut tick = tokio::time::interval(interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut healthy = true;
    loop {
        tick.tick().await;
        let request = HeartbeatRequest {
            worker_id: worker_id.clone(),
            games_finished: finished.load(Ordering::Relaxed),
            model_version: version.load(Ordering::SeqCst),
        };
        match call(client.heartbeat(request)).await {
            Ok(_) => healthy = true,
            Err(status) if healthy => {
                healthy = false;
                warn!(code = ?status.code(), reason = status.message(), "heartbeat failed");
            }
            Err(_) => {}
        }
    }
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
async fn download(mut client: Client, cache: &Path, model: &ModelAnnouncement) -> Result<PathBuf, RemoteError> {
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
    let mut json: serde_json::Value =
        serde_json::from_str(&model.metadata_json).map_err(|e| fail(format!("metadata: {e}")))?;
    json.get_mut("weights")
        .and_then(serde_json::Value::as_object_mut)
        .ok_or_else(|| fail("metadata without weights".into()))?
        .insert("file".into(), format!("v{version}.safetensors").into());
    tokio::fs::rename(&part, &weights).await.map_err(|e| io(&weights, e))?;
    let tmp = cache.join(format!("v{version}.json.tmp"));
    let text = serde_json::to_string_pretty(&json).expect("JSON serialises");
    tokio::fs::write(&tmp, text).await.map_err(|e| io(&tmp, e))?;
    tokio::fs::rename(&tmp, &meta).await.map_err(|e| io(&meta, e))?;
    Ok(meta)
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

    #[test]
    fn failures_are_sorted_into_retry_reject_and_stop() {
        for code in [Code::Unavailable, Code::DeadlineExceeded, Code::Internal, Code::Unknown, Code::Aborted] {
            assert_eq!(classify(code), Failure::Transient, "{code:?}");
        }
        assert_eq!(classify(Code::InvalidArgument), Failure::Rejected);
        assert_eq!(classify(Code::ResourceExhausted), Failure::Rejected);
        assert_eq!(classify(Code::AlreadyExists), Failure::Rejected);
        assert_eq!(classify(Code::Unauthenticated), Failure::Fatal);
    }
}
