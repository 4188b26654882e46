//! Self-play for a coordinator (`xqz worker`): register, fetch the current model, play, spool
//! and upload finished games, and switch to each newly published model without stopping.
//!
//! Tasks of a running worker:
//! - self-play on a blocking thread, playing with the [`ModelHost`]'s evaluator; each finished
//!   game is encoded for the wire straight from what was played (`play`), credited to the model
//!   version current when it *finished* (a game that spans a switch was played partly by the
//!   older model);
//! - a batcher that groups finished games into `SubmitGamesRequest`s (up to
//!   [`RemoteConfig::batch_games`] games or every [`RemoteConfig::batch_interval`]), gives each its
//!   idempotency key and appends it to the [`Spool`] (fsynced) before it counts as played
//!   (`batcher`);
//! - an uploader that sends spooled batches oldest first, forgets a batch only once the coordinator
//!   acknowledged it (or said it had it already), retries transient failures with [`Backoff`] and
//!   sets a rejected batch aside in `rejected/` (`upload`; what a failed call means: `client`);
//! - a model watcher that follows `WatchModels`, downloads each new model (resuming a broken
//!   download from the bytes it has) and hands it to [`ModelHost::install`]; games in progress
//!   go on with the new network from their next evaluation. Each announcement carries the play
//!   settings in force: games that start afterwards play under them (games in progress finish
//!   under theirs), and each game names the settings version it was played under (`models`,
//!   the settings switch in `play`);
//! - heartbeats (`heartbeat`);
//! - with [`RemoteConfig::eval_share`] above 0, pairs of the coordinator's evaluation matches
//!   (`matches`): with a share of 1 only those, one at a time per thread, and no self-play.
//!
//! On shutdown no new game starts, games in progress get [`RemoteConfig::drain`] to finish (then
//! the rest are dropped), finished games are spooled and the uploader gets [`SHUTDOWN_GRACE`] to
//! send them. What it cannot send stays in the spool and is sent by the next run. Match loops give
//! back the pair each holds, so that it goes out again at once.

mod batcher;
mod client;
mod heartbeat;
mod matches;
mod models;
mod play;
mod upload;

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::mpsc;
use tonic::Status;
use tracing::{error, info, warn};
use xqz_mcts::{EvalError, Evaluator, LiveConfig, OpeningSuite, PlaySettings, SelfPlayConfig, self_play_live};
use xqz_proto::v1::coordinator_client::CoordinatorClient;
use xqz_proto::v1::{ModelAnnouncement, RegisterRequest};
use xqz_proto::wire::{WireError, settings_from_wire, suite_from_wire};

use self::batcher::{Batcher, batch_games};
pub use self::client::{Auth, Client};
use self::client::{Failure, call, classify, wait};
use self::matches::MatchLoops;
pub use self::matches::capabilities;
use crate::backoff::Backoff;
use crate::metrics::WorkerMetrics;
use crate::spool::{Spool, SpoolError};

/// How long a stopping worker keeps trying to upload its finished games.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

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
    /// Share of the wall time (0 to 1) spent on the coordinator's evaluation matches: 0 none,
    /// 1 nothing else (no self-play).
    pub eval_share: f64,
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
    /// The evaluator of a match's player: a network of its own for `checkpoint`, beside the one
    /// self-play uses. Called on a blocking thread.
    type Player: Evaluator + Send + 'static;
    /// Loads `checkpoint` (a metadata file) for a match's player.
    fn load_player(&self, checkpoint: &Path) -> Result<Self::Player, InstallError>;
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
        models::download(self.client.clone(), &self.config.dir.join("models"), model).await
    }

    /// The search settings: the coordinator's play settings and their version, its opening
    /// suite, this worker's threads and a fresh seed (workers must not replay each other's games).
    pub fn self_play_config(&self) -> SelfPlayConfig {
        play::self_play_config(&self.settings, self.openings.clone(), &self.config)
    }

    /// Plays until `shutdown` resolves (or `max_games` are uploaded), with `host`'s network, which
    /// is model `model_version` now, and match pairs as [`RemoteConfig::eval_share`] says.
    /// Returns the number of games uploaded.
    pub async fn run<H: ModelHost>(
        self,
        host: Arc<H>,
        model_version: u64,
        shutdown: impl Future<Output = ()>,
    ) -> Result<u64, RemoteError> {
        let share = self.config.eval_share.clamp(0.0, 1.0);
        if share >= 1.0 {
            return Ok(self.play_matches_only(host, shutdown).await);
        }
        let matches =
            (share > 0.0).then(|| MatchLoops::start(1, &self.client, &self.config, &self.worker_id, &host, share));
        let uploaded = self.self_play(host, model_version, shutdown).await;
        if let Some(matches) = matches {
            matches.stop().await;
        }
        uploaded
    }

    /// Match pairs only, one loop per thread, until `shutdown`: a pair in progress is dropped and
    /// given back, so that the coordinator hands it out again at once. Returns 0 (no games
    /// uploaded).
    async fn play_matches_only<H: ModelHost>(self, host: Arc<H>, shutdown: impl Future<Output = ()>) -> u64 {
        let threads = self.config.threads.max(1);
        let loops = MatchLoops::start(threads, &self.client, &self.config, &self.worker_id, &host, 1.0);
        let heartbeat = tokio::spawn(heartbeat::heartbeats(
            self.client.clone(),
            self.worker_id.clone(),
            self.config.heartbeat_interval,
            Arc::new(AtomicU64::new(0)),
            Arc::new(AtomicU64::new(0)),
        ));
        info!(loops = loops.len(), "playing evaluation matches only");
        shutdown.await;
        loops.stop().await;
        heartbeat.abort();
        0
    }

    /// Self-play, as [`run`](Self::run) describes it.
    async fn self_play<H: ModelHost>(
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
            let games = self.config.max_games.unwrap_or(u64::MAX);
            let metrics = metrics.clone();
            tokio::task::spawn_blocking(move || {
                self_play_live(&live, metrics.counting(host.evaluator()), games, &stop, |game| {
                    metrics.game_finished(game.plies.len());
                    let played_by = version.load(Ordering::SeqCst);
                    match play::submission(&game, played_by) {
                        Ok(submission) => {
                            finished.fetch_add(1, Ordering::Relaxed);
                            // The receiver lives until this closure is dropped.
                            let _ = games_tx.send(submission);
                        }
                        Err(e) => error!(game = game.index, error = %e, "a finished game cannot be submitted"),
                    }
                })
            })
        };
        let (spooled_tx, spooled_rx) = mpsc::unbounded_channel();
        let batcher = tokio::spawn(batch_games(self.batcher(), games_rx, spool.clone(), spooled_tx));
        let mut uploader = tokio::spawn(upload::upload(
            self.client.clone(),
            self.worker_id.clone(),
            self.config.dir.clone(),
            spool,
            spooled_rx,
            metrics,
        ));
        let watcher = tokio::spawn(models::watch_models(
            self.client.clone(),
            self.config.clone(),
            host,
            version.clone(),
            live.clone(),
        ));
        let heartbeat = tokio::spawn(heartbeat::heartbeats(
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
