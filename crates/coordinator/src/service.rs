//! The `xqz.v1.Coordinator` service.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, VecDeque};
use std::pin::Pin;
use std::sync::mpsc::{SyncSender, sync_channel};
use std::sync::{Arc, Mutex, MutexGuard, RwLock, RwLockReadGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use tokio::io::{AsyncReadExt, AsyncSeekExt};
use tokio::sync::{mpsc, watch};
use tokio_stream::Stream;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Code, Request, Response, Status, Streaming};
use tracing::{debug, error, info, warn};
use xqz_mcts::OpeningSuite;
use xqz_proto::v1::coordinator_server::Coordinator;
use xqz_proto::v1::publish_model_chunk::Part;
use xqz_proto::v1::*;

use crate::Limits;
use crate::backup::Backup;
use crate::matches::{Board, Evaluation};
use crate::metrics::Metrics;
use crate::registry::{PublishError, Registry};
use crate::settings::SettingsHistory;
use crate::store::{Ingested, KeyIndex, KeyReused, Store, Stored, Submission, content_digest};
use crate::validate::{Against, check_request, check_worker_id, validate_games};
use crate::worker_ids::WorkerIds;

/// How often the coordinator looks for workers that fell silent (at most every 5 s, and at least
/// four times per `alive_window`), so that a lost worker is logged even while no other worker calls.
pub(crate) fn sweep_every(alive_window: Duration) -> Duration {
    (alive_window / 4).clamp(Duration::from_millis(100), Duration::from_secs(5))
}
/// Longest text a client chose (an id, a key, a name) that a log line quotes.
const LOGGED_BYTES: usize = 96;
/// Size of a `DownloadModel` chunk.
const CHUNK_BYTES: usize = 1 << 20;
/// Most requests committed together. Each is bounded by [`Limits`], so this bounds a group's
/// memory and the size of its shard.
const MAX_GROUP: usize = 64;

/// A request waiting to be committed, and where its answer goes.
type Queued = (Submission, SyncSender<Result<Stored, String>>);

/// The status for an idempotency key that arrives with other games than it first carried.
fn key_reused(key: &str) -> Status {
    Status::already_exists(format!(
        "idempotency key {key:?} was used before for other games; a retry must resend the same games, new games \
         need a new key"
    ))
}

/// At most the first [`LOGGED_BYTES`] bytes of `text`, cut at a character boundary: a client
/// may send megabytes where a short id is expected, and the log quotes only enough to recognise it.
fn clip(text: &str) -> &str {
    let mut end = text.len().min(LOGGED_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    &text[..end]
}

/// Removes from `workers` those last heard from more than `window` before `now`, and returns
/// them: each worker is lost once, and counts as new if it is heard from again.
fn forget_silent(
    workers: &mut HashMap<String, WorkerSeen>,
    now: Instant,
    window: Duration,
) -> Vec<(String, WorkerSeen)> {
    let silent: Vec<String> = workers
        .iter()
        .filter(|(_, seen)| now.saturating_duration_since(seen.last_seen) > window)
        .map(|(id, _)| id.clone())
        .collect();
    silent.into_iter().filter_map(|id| workers.remove_entry(&id)).collect()
}

/// What this coordinator has heard from a live worker.
#[derive(Copy, Clone, Debug)]
pub(crate) struct WorkerSeen {
    /// When it was first heard from since it last counted as alive (or since the start).
    pub first_seen: Instant,
    pub last_seen: Instant,
    /// Games and samples it got stored since `first_seen`.
    pub games: u64,
    pub samples: u64,
}

/// Everything the handlers share.
pub(crate) struct State {
    /// Written only when a published model changes the settings, under the same lock as the
    /// publication, so that no announcement of the model goes out with the settings before it.
    pub settings: RwLock<SettingsHistory>,
    /// The opening suite, and its wire form that Register hands out (built once: it may be
    /// megabytes).
    openings: Option<(Arc<OpeningSuite>, xqz_proto::v1::OpeningSuite)>,
    pub limits: Limits,
    pub store: Mutex<Store>,
    /// The store's idempotency keys, looked up without waiting for its lock.
    keys: KeyIndex,
    pub registry: Registry,
    pub metrics: Metrics,
    workers: Mutex<HashMap<String, WorkerSeen>>,
    pub worker_ids: WorkerIds,
    /// Requests waiting for the store, oldest first (see [`State::commit`]).
    commits: Mutex<VecDeque<Queued>>,
    /// The backup of the models, the settings and (where kept) the idempotency log.
    pub backup: Option<Backup>,
    /// The match jobs.
    pub matches: Mutex<Board>,
    /// The matches queued for each published model, and the gate.
    pub evaluation: Evaluation,
}

// The guarded structures are updated in one step after all fallible work, so a panic elsewhere
// cannot leave them inconsistent.
pub(crate) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

pub(crate) fn read<T>(lock: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    lock.read().unwrap_or_else(|e| e.into_inner())
}

/// The wall clock in Unix milliseconds.
pub(crate) fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

impl State {
    pub fn new(
        settings: SettingsHistory,
        openings: Option<Arc<OpeningSuite>>,
        limits: Limits,
        store: Store,
        registry: Registry,
        worker_ids: WorkerIds,
        (backup, matches, evaluation): (Option<Backup>, Board, Evaluation),
    ) -> State {
        State {
            settings: RwLock::new(settings),
            openings: openings.map(|suite| {
                let wire = xqz_proto::wire::suite_to_wire(&suite);
                (suite, wire)
            }),
            limits,
            keys: store.keys(),
            store: Mutex::new(store),
            registry,
            metrics: Metrics::default(),
            workers: Mutex::new(HashMap::new()),
            worker_ids,
            commits: Mutex::new(VecDeque::new()),
            backup,
            matches: Mutex::new(matches),
            evaluation,
        }
    }

    /// The live workers, after forgetting (and logging) those silent for longer than the alive
    /// window, so that the map holds only live workers whatever ids clients send.
    fn live(&self) -> MutexGuard<'_, HashMap<String, WorkerSeen>> {
        let mut workers = lock(&self.workers);
        let window = self.limits.alive_window;
        for (worker, seen) in forget_silent(&mut workers, Instant::now(), window) {
            warn!(
                worker = %worker,
                silent_s = seen.last_seen.elapsed().as_secs(),
                games = seen.games,
                "worker lost: not heard from within {}s",
                window.as_secs_f64()
            );
        }
        workers
    }

    /// Copies what the backup lacks, if one is kept, with the board's files read under its lock.
    pub fn copy_to_backup(&self) -> Result<(), crate::error::CoordinatorError> {
        let Some(backup) = &self.backup else { return Ok(()) };
        let matches = lock(&self.matches).files()?;
        backup.copy(matches)
    }

    /// Forgets the workers that fell silent (logging each once); run every [`sweep_every`].
    pub fn sweep(&self) {
        drop(self.live());
    }

    /// Notes a worker that Register just issued `worker_id` to.
    fn joined(&self, worker_id: &str) {
        info!(worker = %worker_id, name = %WorkerIds::name_of(worker_id), "worker joined");
        self.note(worker_id, 0, 0, true);
    }

    /// Notes that `worker_id` was heard from.
    pub fn touch(&self, worker_id: &str) {
        self.note(worker_id, 0, 0, false);
    }

    /// [`State::touch`], crediting the worker with stored games and samples.
    fn heard(&self, worker_id: &str, games: u64, samples: u64) {
        self.note(worker_id, games, samples, false);
    }

    /// Notes a call from `worker_id`. One not counted as alive that did not just register (back
    /// after a silence, or after a restart of the coordinator) is logged.
    fn note(&self, worker_id: &str, games: u64, samples: u64, registered: bool) {
        if worker_id.is_empty() {
            return;
        }
        let now = Instant::now();
        let mut workers = self.live();
        let seen = match workers.entry(worker_id.to_string()) {
            Entry::Occupied(entry) => entry.into_mut(),
            Entry::Vacant(entry) => {
                if !registered {
                    info!(worker = %clip(worker_id), "worker back: heard from again after a silence or a restart");
                }
                entry.insert(WorkerSeen { first_seen: now, last_seen: now, games: 0, samples: 0 })
            }
        };
        seen.last_seen = now;
        seen.games += games;
        seen.samples += samples;
    }

    /// Workers heard from within the last minute.
    pub fn workers_alive(&self) -> u64 {
        self.live().len() as u64
    }

    /// The workers heard from within the last minute, by id.
    pub fn live_workers(&self) -> Vec<(String, WorkerSeen)> {
        let mut live: Vec<_> = self.live().iter().map(|(id, w)| (id.clone(), *w)).collect();
        live.sort_by(|a, b| a.0.cmp(&b.0));
        live
    }

    /// Stores `submission` durably, together with the requests queued beside it (group commit):
    /// every request queues itself, then takes the store's lock and commits up to [`MAX_GROUP`]
    /// queued requests, its own or others'. While one group is flushed the next one gathers, and
    /// each request's turn at the lock commits at least one queued request, so none waits
    /// forever. Blocking.
    fn commit(&self, submission: Submission) -> Result<Stored, String> {
        let (reply, answer) = sync_channel(1);
        lock(&self.commits).push_back((submission, reply));
        {
            let mut store = lock(&self.store);
            let (group, replies): (Vec<_>, Vec<_>) = {
                let mut queue = lock(&self.commits);
                let n = queue.len().min(MAX_GROUP);
                queue.drain(..n).unzip()
            };
            if !group.is_empty() {
                self.metrics.commits.inc();
                match store.ingest(group) {
                    Ok(answers) => replies.iter().zip(answers).for_each(|(reply, answer)| drop(reply.send(Ok(answer)))),
                    Err(e) => replies.iter().for_each(|reply| drop(reply.send(Err(e.to_string())))),
                }
            }
        }
        // A closed channel: the commit that took this request panicked.
        answer.recv().unwrap_or_else(|_| Err("the commit of this request failed".into()))
    }

    fn reject(&self, games: usize) {
        self.metrics.batches_rejected.inc();
        self.metrics.games_rejected.inc_by(games as u64);
    }
}

/// The tonic service; cheap to clone.
#[derive(Clone)]
pub struct CoordinatorService {
    pub(crate) state: Arc<State>,
    /// Turns true at shutdown, ending the long-lived streams so that the server can drain.
    stop: watch::Receiver<bool>,
}

impl CoordinatorService {
    pub(crate) fn new(state: Arc<State>, stop: watch::Receiver<bool>) -> CoordinatorService {
        CoordinatorService { state, stop }
    }

    /// The settings in force, as announced.
    fn settings(&self) -> SelfPlaySettings {
        let history = read(&self.state.settings);
        let (version, settings) = history.current();
        xqz_proto::wire::settings_to_wire(settings, version)
    }

    /// `model` announced with the settings in force.
    fn announce(&self, mut model: ModelAnnouncement) -> ModelAnnouncement {
        model.settings = Some(self.settings());
        model
    }

    async fn submit(&self, req: SubmitGamesRequest) -> Result<SubmitGamesResponse, Status> {
        let state = &self.state;
        if let Err(status) = check_request(&req, &state.limits, &state.worker_ids) {
            state.reject(req.games.len());
            return Err(status);
        }
        state.touch(&req.worker_id);
        let (worker, key) = (req.worker_id.clone(), req.idempotency_key.clone());
        let replayed = |done: Ingested| SubmitGamesResponse {
            accepted: done.accepted,
            duplicates: done.duplicates,
            replayed_batch: true,
        };
        let count = req.games.len();
        let checker = self.state.clone();
        // The key lookup does not wait for a commit's flush (validation runs beside it); a retry
        // that commits meanwhile is found again under the store's lock.
        let content = content_digest(req.games.iter().map(|g| g.game_id.as_slice()));
        let checked = tokio::task::spawn_blocking(move || {
            match checker.keys.replayed(&req.idempotency_key, &content) {
                Ok(Some(done)) => return Ok(Err(Ok(done))),
                Ok(None) => {}
                Err(KeyReused) => return Ok(Err(Err(KeyReused))),
            }
            let settings = read(&checker.settings);
            let against = Against {
                settings: &settings,
                openings: checker.openings.as_ref().map(|(suite, _)| &**suite),
                latest_model: checker.registry.latest_version(),
                now_ms: now_ms(),
            };
            validate_games(&req, &against).map(|r| Ok((content, r)))
        })
        .await
        .map_err(|e| Status::internal(format!("validation task: {e}")))?;
        let (content, records) = match checked {
            Ok(Ok(ok)) => ok,
            Ok(Err(Ok(done))) => return Ok(replayed(done)),
            Ok(Err(Err(KeyReused))) => {
                state.reject(count);
                return Err(key_reused(&key));
            }
            Err(status) => {
                state.reject(count);
                return Err(status);
            }
        };
        let (writer, stored_key) = (self.state.clone(), key.clone());
        let submission = Submission { key: stored_key, content, games: records };
        let stored = tokio::task::spawn_blocking(move || writer.commit(submission))
            .await
            .map_err(|e| Status::internal(format!("storage task: {e}")))?
            .map_err(|e| Status::internal(format!("storing the games failed: {e}")))?;
        let (done, was_replay, samples) = match stored {
            Ok(stored) => stored,
            Err(KeyReused) => {
                state.reject(count);
                return Err(key_reused(&key));
            }
        };
        if was_replay {
            return Ok(replayed(done));
        }
        state.heard(&worker, u64::from(done.accepted), samples);
        state.metrics.samples_accepted.inc_by(samples);
        state.metrics.games_accepted.inc_by(u64::from(done.accepted));
        state.metrics.duplicates.inc_by(u64::from(done.duplicates));
        Ok(SubmitGamesResponse { accepted: done.accepted, duplicates: done.duplicates, replayed_batch: false })
    }

    /// Stores a published model and announces it (`PublishModel` without its log line on failure).
    async fn publish(&self, request: Request<Streaming<PublishModelChunk>>) -> Result<PublishModelResponse, Status> {
        publisher_only(&request, "publish models")?;
        let mut stream = request.into_inner();
        let header = match stream.message().await? {
            Some(PublishModelChunk { part: Some(Part::Header(h)) }) => h,
            _ => return Err(Status::invalid_argument("the first PublishModel message must be the header")),
        };
        let limit = self.state.limits.max_model_bytes;
        let mut weights = Vec::new();
        while let Some(chunk) = stream.message().await? {
            match chunk.part {
                Some(Part::Data(data)) => {
                    if weights.len() + data.len() > limit {
                        return Err(Status::resource_exhausted(format!("model larger than {limit} bytes")));
                    }
                    weights.extend_from_slice(&data);
                }
                _ => return Err(Status::invalid_argument("only weight chunks may follow the header")),
            }
        }
        let state = self.state.clone();
        let published = tokio::task::spawn_blocking(move || {
            let mut settings = state.settings.write().unwrap_or_else(|e| e.into_inner());
            let previous = state.registry.latest().map(|m| m.version);
            // The first model has nothing to be gated against.
            let held = state.evaluation.gate.is_some() && previous.is_some();
            let model = state.registry.publish(&header.metadata_json, &header.publisher, &weights, now_ms(), held)?;
            let changed = match held {
                true => Ok((settings.current().0, false)),
                false => settings.on_model(model.version).map(|changed| (settings.current().0, changed)),
            };
            // The gating match is queued under the settings' lock too, so that settle_gates, which
            // queues one for a held model that has none, never sees a model between the two.
            let queued = lock(&state.matches).queue_for(&state.evaluation, model.version, previous, now_ms());
            // The upload must not hold up the validation of games, which reads the settings.
            drop(settings);
            if let Err(e) = queued {
                warn!(version = model.version, error = %e, "the model is held; its gating match is queued again at the next sweep");
            }
            if let Err(e) = state.copy_to_backup() {
                // The model stands and is announced; the next publication copies it again.
                warn!(version = model.version, error = %e, "model published, but not copied to the backup yet");
            }
            Ok::<_, PublishError>((model, held, changed))
        })
        .await
        .map_err(|e| Status::internal(format!("publish task: {e}")))?;
        match published {
            Ok((model, held, Ok((settings_version, settings_changed)))) => {
                let (version, publisher, bytes) = (model.version, clip(&model.published_by), model.weights_bytes);
                if held {
                    info!(version, publisher = %publisher, bytes, "model published, held until it wins its gating match");
                } else {
                    info!(version, settings_version, settings_changed, publisher = %publisher, bytes, "model published and announced");
                }
                Ok(PublishModelResponse { version: model.version })
            }
            // The model stands; the settings stay as they were until the next model tries again.
            Ok((model, _, Err(e))) => Err(Status::internal(format!(
                "model v{} is published, but the settings it brings could not be stored: {e}",
                model.version
            ))),
            Err(PublishError::Invalid(message)) => Err(Status::invalid_argument(message)),
            Err(PublishError::Storage(e)) => Err(Status::internal(format!("storing the model failed: {e}"))),
        }
    }
}

/// Refuses a call that only the trainer's credential may make (`what`: "publish models").
pub(crate) fn publisher_only<T>(request: &Request<T>, what: &str) -> Result<(), Status> {
    if request.extensions().get::<crate::Role>() == Some(&crate::Role::Publisher) {
        return Ok(());
    }
    Err(Status::permission_denied(format!("this credential may not {what}: that takes the trainer's token")))
}

type BoxStream<T> = Pin<Box<dyn Stream<Item = Result<T, Status>> + Send + 'static>>;

#[tonic::async_trait]
impl Coordinator for CoordinatorService {
    async fn register(&self, request: Request<RegisterRequest>) -> Result<Response<RegisterResponse>, Status> {
        let worker_id = self.state.worker_ids.issue(&request.into_inner().name);
        self.state.joined(&worker_id);
        Ok(Response::new(RegisterResponse {
            worker_id,
            current_model: self.state.registry.latest().map(|m| self.announce(m)),
            settings: Some(self.settings()),
            openings: self.state.openings.as_ref().map(|(_, wire)| wire.clone()),
        }))
    }

    async fn heartbeat(&self, request: Request<HeartbeatRequest>) -> Result<Response<HeartbeatResponse>, Status> {
        check_worker_id(&self.state.worker_ids, &request.get_ref().worker_id)?;
        self.state.touch(&request.get_ref().worker_id);
        Ok(Response::new(HeartbeatResponse { latest_model_version: self.state.registry.latest_version() }))
    }

    type WatchModelsStream = BoxStream<ModelAnnouncement>;

    async fn watch_models(
        &self,
        request: Request<WatchModelsRequest>,
    ) -> Result<Response<Self::WatchModelsStream>, Status> {
        let state = self.state.clone();
        let service = self.clone();
        let mut stop = self.stop.clone();
        // Subscribed before reading the list, so that a model published in between is not lost.
        let mut updates = state.registry.subscribe();
        let mut last = request.get_ref().after_version;
        let (tx, rx) = mpsc::channel(16);
        tokio::spawn(async move {
            let mut pending = state.registry.after(last);
            loop {
                for model in pending.drain(..) {
                    if model.version > last {
                        last = model.version;
                        if tx.send(Ok(service.announce(model))).await.is_err() {
                            return;
                        }
                    }
                }
                tokio::select! {
                    update = updates.recv() => match update {
                        Ok(model) => pending.push(model),
                        // Missed announcements are still in the registry.
                        Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => pending = state.registry.after(last),
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                    },
                    _ = tx.closed() => return,
                    _ = stop.wait_for(|s| *s) => return,
                }
            }
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }

    type DownloadModelStream = BoxStream<ModelChunk>;

    async fn download_model(
        &self,
        request: Request<DownloadModelRequest>,
    ) -> Result<Response<Self::DownloadModelStream>, Status> {
        let DownloadModelRequest { version, offset } = request.into_inner();
        let model =
            self.state.registry.get(version).ok_or_else(|| Status::not_found(format!("no model version {version}")))?;
        let total = model.weights_bytes;
        if offset > total {
            return Err(Status::out_of_range(format!("offset {offset} is past the {total} bytes of model {version}")));
        }
        let path = self.state.registry.weights_path(version);
        let mut file = tokio::fs::File::open(&path).await.map_err(|e| match e.kind() {
            // A run resumed from a light state keeps the latest model's weights alone.
            std::io::ErrorKind::NotFound => Status::not_found(format!(
                "model {version}'s weights are not kept here (a run resumed from a light state keeps the latest \
                 model's alone)"
            )),
            _ => Status::internal(format!("model {version} weights: {e}")),
        })?;
        file.seek(std::io::SeekFrom::Start(offset))
            .await
            .map_err(|e| Status::internal(format!("model {version} weights: {e}")))?;
        let (tx, rx) = mpsc::channel(4);
        let mut stop = self.stop.clone();
        tokio::spawn(async move {
            let mut at = offset;
            loop {
                let want = (total - at).min(CHUNK_BYTES as u64) as usize;
                let mut data = vec![0u8; want];
                if let Err(e) = file.read_exact(&mut data).await {
                    let _ = tx.send(Err(Status::internal(format!("model {version} weights: {e}")))).await;
                    return;
                }
                let chunk = ModelChunk { offset: at, data, total_bytes: total };
                tokio::select! {
                    sent = tx.send(Ok(chunk)) => if sent.is_err() { return },
                    _ = stop.wait_for(|s| *s) => return,
                }
                at += want as u64;
                // One (possibly empty) chunk is always sent, so that the client learns the size.
                if at >= total {
                    return;
                }
            }
        });
        Ok(Response::new(Box::pin(ReceiverStream::new(rx))))
    }

    async fn submit_games(
        &self,
        request: Request<SubmitGamesRequest>,
    ) -> Result<Response<SubmitGamesResponse>, Status> {
        let started = Instant::now();
        let request = request.into_inner();
        let (worker, key, games) = (request.worker_id.clone(), request.idempotency_key.clone(), request.games.len());
        let result = self.submit(request).await;
        self.state.metrics.observe_ingest(started.elapsed());
        match &result {
            Ok(done) => debug!(
                worker = %clip(&worker),
                key = %clip(&key),
                accepted = done.accepted,
                duplicates = done.duplicates,
                replayed_batch = done.replayed_batch,
                "batch stored"
            ),
            // Our failure, not the batch's: the worker keeps it and retries.
            Err(status) if status.code() == Code::Internal => {
                error!(worker = %clip(&worker), key = %clip(&key), games, reason = status.message(), "batch not stored")
            }
            Err(status) => warn!(
                worker = %clip(&worker),
                key = %clip(&key),
                games,
                code = ?status.code(),
                reason = status.message(),
                "batch rejected"
            ),
        }
        result.map(Response::new)
    }

    async fn publish_model(
        &self,
        request: Request<Streaming<PublishModelChunk>>,
    ) -> Result<Response<PublishModelResponse>, Status> {
        let answer = self.publish(request).await;
        match &answer {
            Err(status) if status.code() == Code::Internal => {
                error!(code = ?status.code(), reason = status.message(), "model not published")
            }
            Err(status) => warn!(code = ?status.code(), reason = status.message(), "model refused"),
            Ok(_) => {}
        }
        answer.map(Response::new)
    }

    async fn get_stats(&self, _request: Request<GetStatsRequest>) -> Result<Response<Stats>, Status> {
        let state = self.state.clone();
        let counts = tokio::task::spawn_blocking(move || lock(&state.store).counts().clone())
            .await
            .map_err(|e| Status::internal(format!("stats task: {e}")))?;
        Ok(Response::new(Stats {
            games: counts.games,
            samples: counts.samples,
            rejected_batches: self.state.metrics.batches_rejected.get(),
            workers_alive: self.state.workers_alive(),
            latest_model_version: self.state.registry.latest_version(),
            games_by_model: counts
                .by_model
                .into_iter()
                .map(|(model_version, games)| ModelGames { model_version, games })
                .collect(),
            duplicate_games: self.state.metrics.duplicates.get(),
        }))
    }

    async fn submit_match(&self, request: Request<SubmitMatchRequest>) -> Result<Response<MatchJob>, Status> {
        let answer = CoordinatorService::submit_match(self, request).await;
        if let Err(status) = &answer {
            warn!(code = ?status.code(), reason = status.message(), "match refused");
        }
        answer.map(Response::new)
    }

    async fn list_matches(
        &self,
        request: Request<ListMatchesRequest>,
    ) -> Result<Response<ListMatchesResponse>, Status> {
        CoordinatorService::list_matches(self, request.into_inner()).map(Response::new)
    }

    async fn take_pair(&self, request: Request<TakePairRequest>) -> Result<Response<TakePairResponse>, Status> {
        CoordinatorService::take_pair(self, request.into_inner()).await.map(Response::new)
    }

    async fn submit_pair(&self, request: Request<SubmitPairRequest>) -> Result<Response<SubmitPairResponse>, Status> {
        let request = request.into_inner();
        let (worker, id, pair) = (request.worker_id.clone(), request.match_id, request.pair);
        let answer = CoordinatorService::submit_pair(self, request).await;
        match &answer {
            Ok(done) => debug!(worker = %clip(&worker), match_id = id, pair, counted = done.counted, "pair handed in"),
            Err(status) => {
                warn!(worker = %clip(&worker), match_id = id, pair, code = ?status.code(), reason = status.message(), "pair refused")
            }
        }
        answer.map(Response::new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_worker_silent_past_the_window_is_lost_once() {
        let start = Instant::now();
        let at = |s: u64| start + Duration::from_secs(s);
        let seen = |last: Instant| WorkerSeen { first_seen: start, last_seen: last, games: 3, samples: 90 };
        let mut workers = HashMap::from([("quiet".to_string(), seen(at(0))), ("busy".to_string(), seen(at(50)))]);
        let window = Duration::from_secs(60);

        let lost = forget_silent(&mut workers, at(61), window);
        assert_eq!(lost.iter().map(|(id, w)| (id.as_str(), w.games)).collect::<Vec<_>>(), [("quiet", 3)]);
        assert!(forget_silent(&mut workers, at(61), window).is_empty(), "a lost worker is reported once");
        // Silent for exactly the window still counts as alive.
        assert!(forget_silent(&mut workers, at(110), window).is_empty());
        assert_eq!(forget_silent(&mut workers, at(111), window).len(), 1);
        assert!(workers.is_empty());
    }

    #[test]
    fn logged_client_text_is_clipped_at_a_character_boundary() {
        assert_eq!(clip("box1-00ab.cd"), "box1-00ab.cd");
        let long = "é".repeat(LOGGED_BYTES);
        assert_eq!(clip(&long).len(), LOGGED_BYTES);
        let odd = format!("x{long}");
        assert_eq!(clip(&odd).len(), LOGGED_BYTES - 1, "a two-byte character is not cut in half");
    }
}
