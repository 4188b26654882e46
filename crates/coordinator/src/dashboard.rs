//! The dashboard: one page (`GET /`, embedded in the binary, no outside resources) that polls the
//! JSON endpoints below every two seconds. All are read-only and bounded in size.
//!
//! | Endpoint | Answer |
//! |---|---|
//! | `GET /api/overview` | [`Overview`]: stored games and samples, rates, live workers, latest model |
//! | `GET /api/models?limit=N` | [`Models`]: the latest N published models (default 100, at most 1000) |
//! | `GET /api/games?limit=N` | [`GameList`]: the latest N stored games (default 20, at most 100) |
//! | `GET /api/games/{id}` | [`GameView`]: one of the latest 100 games, move by move |
//! | `GET /api/training` | [`Training`]: the trainer's `metrics.csv`, thinned to at most 1000 points |
//! | `GET /api/strength` | [`Strength`]: the strength matches' `strength.csv` |
//! | `GET /api/matches?limit=N` | [`Matches`]: the latest N match jobs (default 50, at most 1000) |
//!
//! The last two read the run folder named by
//! [`CoordinatorConfig::run_folder`](crate::CoordinatorConfig::run_folder) and answer
//! `available: false` without one. Errors are [`ApiError`] with a 4xx or 5xx status.

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::rejection::QueryRejection;
use axum::extract::{Path as UrlPath, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::de::IgnoredAny;
use serde::{Deserialize, Serialize};
use xiangqi::notation::Chinese;
use xqz_dataset::{GameId, GameRecord};
use xqz_proto::v1::ModelAnnouncement;
use xqz_run_folder::{MetricsRow, Row, RowError, RowReader, RunFolder, StrengthRow};

use crate::service::{self, lock, now_ms, read};
use crate::store::RECENT_GAMES;

/// The page, with its style and script.
const PAGE: &str = include_str!("dashboard/index.html");
/// Most points of a curve: enough for a chart as wide as a screen.
const MAX_POINTS: usize = 1000;
/// Most bytes of a CSV file read per request; a longer file is caught up with over several.
const MAX_CSV_READ: u64 = 8 << 20;
/// The window of the overall rates.
const RATE_WINDOW: Duration = Duration::from_secs(60);
/// How often a point of the overall counters is kept for the rates.
const RATE_STEP: Duration = Duration::from_secs(5);

/// An error answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApiError {
    /// What went wrong, for people.
    pub error: String,
}

/// `GET /api/overview`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Overview {
    /// The coordinator's clock, Unix milliseconds.
    pub now_ms: i64,
    /// When this coordinator process started, Unix milliseconds.
    pub started_ms: i64,
    /// Games stored in the data folder (across restarts).
    pub games: u64,
    /// Samples (positions) stored.
    pub samples: u64,
    /// Bytes of the dataset's shard files.
    pub dataset_bytes: u64,
    /// Games stored per second over the last minute (or since the start, if shorter).
    pub games_per_second: f64,
    /// Samples stored per second, likewise.
    pub samples_per_second: f64,
    /// Requests refused since the start.
    pub rejected_batches: u64,
    /// Games skipped as already stored since the start.
    pub duplicate_games: u64,
    /// The version of the play settings in force.
    pub settings_version: u64,
    /// Workers heard from in the last minute.
    pub workers: Vec<WorkerView>,
    /// The newest model, if any is published.
    pub latest_model: Option<ModelView>,
}

/// A live worker in [`Overview`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WorkerView {
    /// Its id (from `Register`).
    pub id: String,
    /// Milliseconds since it was last heard from.
    pub last_seen_ms_ago: u64,
    /// Games it got stored since this coordinator first heard from it (while it stays alive).
    pub games: u64,
    /// Samples, likewise.
    pub samples: u64,
    /// `games` per second since then.
    pub games_per_second: f64,
    /// `samples` per second since then.
    pub samples_per_second: f64,
}

/// A published model.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelView {
    /// Its version (1, 2, ...).
    pub version: u64,
    /// When it was published, Unix milliseconds.
    pub published_ms: i64,
    /// Who published it (the trainer's name for itself).
    pub published_by: String,
    /// Size of its weights.
    pub weights_bytes: u64,
    /// The training steps behind it, from its metadata.
    pub training_steps: Option<u64>,
    /// Stored games it played.
    pub games: u64,
}

/// `GET /api/models`: newest first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Models {
    /// Models published in all.
    pub total: u64,
    /// The latest, newest first.
    pub models: Vec<ModelView>,
}

/// A stored game without its moves.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GameSummary {
    /// The game id, 32 hex digits.
    pub id: String,
    /// `red`, `black` (the winner) or `draw`.
    pub result: String,
    /// Why it ended (`checkmate`, `perpetual_check`, `max_length`, ...).
    pub reason: String,
    /// The article of the rules behind the ruling (`4.1.1`, ...).
    pub article: String,
    /// The ruleset it was adjudicated under.
    pub ruleset: String,
    /// Plies played.
    pub plies: usize,
    /// The model version that played it.
    pub model_version: u64,
    /// The worker that played it.
    pub worker_id: String,
    /// The play settings version it was played under.
    pub settings_version: u64,
    /// Start and end, Unix milliseconds.
    pub start_ms: i64,
    /// See `start_ms`.
    pub end_ms: i64,
}

/// `GET /api/games`: newest first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GameList {
    /// Games stored in all.
    pub total: u64,
    /// The latest games, newest first.
    pub games: Vec<GameSummary>,
}

/// One move of a [`GameView`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MoveView {
    /// In coordinates (`h2e2`).
    pub iccs: String,
    /// In Chinese notation (`炮二平五`).
    pub chinese: String,
    /// The position after it, in FEN.
    pub fen: String,
}

/// `GET /api/games/{id}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct GameView {
    /// The game's facts.
    #[serde(flatten)]
    pub summary: GameSummary,
    /// The start position in FEN.
    pub start_fen: String,
    /// The moves in order.
    pub moves: Vec<MoveView>,
}

/// `GET /api/training`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Training {
    /// Whether the coordinator knows the run folder; without it the rest is empty.
    pub available: bool,
    /// Rows in the file (read so far).
    pub rows: u64,
    /// Every k-th row and the last, in step order, at most 1000.
    pub points: Vec<MetricsRow>,
}

/// One strength match of a model against the anchor, a row of `strength.csv`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StrengthPoint {
    /// The model version.
    pub version: u64,
    /// Its training steps.
    pub steps: u64,
    /// When it was published, Unix seconds.
    pub published_unix: u64,
    /// The anchor it played (`material@32`).
    pub opponent: String,
    /// Games won.
    pub wins: u32,
    /// Games drawn.
    pub draws: u32,
    /// Games lost.
    pub losses: u32,
    /// Score, 0 to 1.
    pub score: f64,
    /// Elo difference to the anchor; null when unbounded (a perfect or zero score).
    pub elo: Option<f64>,
    /// Lower end of its 95% interval, null when unbounded.
    pub elo_lower: Option<f64>,
    /// Upper end, null when unbounded.
    pub elo_upper: Option<f64>,
}

/// `GET /api/strength`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Strength {
    /// Whether the coordinator knows the run folder; without it the rest is empty.
    pub available: bool,
    /// Rows in the file (read so far).
    pub rows: u64,
    /// Every k-th match and the last, at most 1000.
    pub points: Vec<StrengthPoint>,
}

/// `GET /api/matches`: the match jobs, newest first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Matches {
    /// Jobs in all.
    pub total: u64,
    /// The latest ones.
    pub matches: Vec<MatchView>,
}

/// One match job, as the Matches view shows it (fishtest's columns).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MatchView {
    /// Its id.
    pub id: u64,
    /// The first player's name in the match table (scores are its).
    pub a: String,
    /// The second player's.
    pub b: String,
    /// `running`, `H1`, `H0`, `finished` or `failed`.
    pub state: String,
    /// Pairs at most.
    pub pairs: u32,
    /// Pairs handed out and not yet back.
    pub pairs_in_flight: u32,
    /// The first player's wins, draws and losses.
    pub wins: u32,
    /// Draws.
    pub draws: u32,
    /// Losses.
    pub losses: u32,
    /// Pairs by the first player's points, 0 to 2 in halves.
    pub pentanomial: Vec<u64>,
    /// The first player's Elo and its 95% interval; `None` where unbounded (a perfect or zero
    /// score).
    pub elo: Option<f64>,
    /// Lower end.
    pub elo_lower: Option<f64>,
    /// Upper end.
    pub elo_upper: Option<f64>,
    /// The SPRT's bounds (`ELO0`, `ELO1`) and LLR with its bounds; `None` without a test.
    pub sprt: Option<SprtView>,
    /// The model this match gates, if any.
    pub gates_model: Option<u64>,
    /// Why it failed, if it did.
    pub failure: Option<String>,
    /// When it was queued, Unix milliseconds.
    pub created_ms: i64,
    /// Each worker's share of the counted pairs.
    pub workers: Vec<MatchWorkerView>,
    /// Audited pairs whose copies agreed.
    pub pairs_audited: u32,
    /// Pairs held for a copy.
    pub pairs_held: u32,
    /// Audits whose copies all differed.
    pub audits_inconclusive: u32,
    /// Workers quarantined on this match's pairs, or whose pairs of it were discarded.
    pub quarantines: Vec<QuarantineView>,
}

/// A worker's share of a [`MatchView`] (fishtest's residuals).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MatchWorkerView {
    /// Its id.
    pub worker: String,
    /// Its counted pairs by the first player's points.
    pub pentanomial: Vec<u64>,
    /// Its score against the match's, in standard errors.
    pub residual: f64,
    /// Past [`RESIDUAL_MARK`](crate::RESIDUAL_MARK) standard errors either way.
    pub marked: bool,
    /// Quarantined by an audit.
    pub quarantined: bool,
}

/// A quarantine shown with a [`MatchView`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct QuarantineView {
    /// The worker.
    pub worker: String,
    /// What the audit found.
    pub why: String,
    /// Its pairs of this match that were discarded.
    pub pairs_discarded: u32,
    /// When, Unix milliseconds.
    pub at_ms: i64,
}

/// The test of a [`MatchView`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SprtView {
    /// Elo of H0 and H1.
    pub elo0: f64,
    /// Elo of H1.
    pub elo1: f64,
    /// The log-likelihood ratio.
    pub llr: f64,
    /// Its lower bound (H0 accepted at or below).
    pub lower: f64,
    /// Its upper bound (H1 accepted at or above).
    pub upper: f64,
}

/// A failed request: its status and message.
struct Failure(StatusCode, String);

impl IntoResponse for Failure {
    fn into_response(self) -> Response {
        (self.0, Json(ApiError { error: self.1 })).into_response()
    }
}

type Answer<T> = Result<Json<T>, Failure>;

/// What the handlers share.
struct Dashboard {
    state: Arc<service::State>,
    started_ms: i64,
    rates: Mutex<Rates>,
    training: Mutex<Option<CsvTail<MetricsRow>>>,
    strength: Mutex<Option<CsvTail<StrengthRow>>>,
}

/// The dashboard's routes.
pub(crate) fn routes(state: Arc<service::State>, run_folder: Option<PathBuf>) -> Router {
    let run_folder = run_folder.map(RunFolder::new);
    let shared = Dashboard {
        state,
        training: Mutex::new(run_folder.as_ref().map(|run| CsvTail::new(run.trainer().metrics_csv()))),
        strength: Mutex::new(run_folder.as_ref().map(|run| CsvTail::new(run.strength_csv()))),
        started_ms: now_ms(),
        rates: Mutex::new(Rates::new(Instant::now())),
    };
    Router::new()
        .route("/", get(page))
        .route("/api/overview", get(overview))
        .route("/api/models", get(models))
        .route("/api/games", get(games))
        .route("/api/games/{id}", get(game))
        .route("/api/training", get(training))
        .route("/api/strength", get(strength))
        .route("/api/matches", get(matches))
        .with_state(Arc::new(shared))
}

/// Runs `work` off the async workers: the store's lock may be held through a flush, and files
/// are read.
async fn blocking<T: Send + 'static>(work: impl FnOnce() -> Result<T, Failure> + Send + 'static) -> Answer<T> {
    match tokio::task::spawn_blocking(work).await {
        Ok(answer) => answer.map(Json),
        Err(e) => Err(Failure(StatusCode::INTERNAL_SERVER_ERROR, format!("dashboard task: {e}"))),
    }
}

async fn page() -> Response {
    ([(header::CACHE_CONTROL, "no-store")], Html(PAGE)).into_response()
}

/// The query of the list endpoints.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListQuery {
    limit: Option<usize>,
    /// The page's credential, checked before the handler runs.
    #[serde(rename = "token")]
    _token: Option<IgnoredAny>,
}

/// The `limit` of a list query: `default` if absent, refused outside 1 to `max`.
fn limit(query: Result<Query<ListQuery>, QueryRejection>, default: usize, max: usize) -> Result<usize, Failure> {
    let Query(query) = query.map_err(|e| Failure(StatusCode::BAD_REQUEST, e.body_text()))?;
    match query.limit.unwrap_or(default) {
        n if (1..=max).contains(&n) => Ok(n),
        n => Err(Failure(StatusCode::BAD_REQUEST, format!("limit {n} is out of range: give 1 to {max}"))),
    }
}

/// The overall rates: the counters now and as they were about a minute ago.
struct Rates {
    /// (when, games, samples), oldest first, one every [`RATE_STEP`]; the first is the base of
    /// the rates, at most [`RATE_WINDOW`] plus a step old once the coordinator has run that long.
    points: VecDeque<(Instant, u64, u64)>,
}

impl Rates {
    fn new(start: Instant) -> Rates {
        Rates { points: VecDeque::from([(start, 0, 0)]) }
    }

    /// Games and samples per second, given the counters `now`.
    fn update(&mut self, now: Instant, games: u64, samples: u64) -> (f64, f64) {
        if self.points.back().is_none_or(|p| now.duration_since(p.0) >= RATE_STEP) {
            self.points.push_back((now, games, samples));
        }
        while self.points.get(1).is_some_and(|p| now.duration_since(p.0) >= RATE_WINDOW) {
            self.points.pop_front();
        }
        let (then, games_then, samples_then) = self.points[0];
        let secs = now.duration_since(then).as_secs_f64().max(1.0);
        ((games - games_then) as f64 / secs, (samples - samples_then) as f64 / secs)
    }
}

/// The part of a model's metadata the dashboard shows.
#[derive(Deserialize)]
struct Metadata {
    info: Option<MetadataInfo>,
}

#[derive(Deserialize)]
struct MetadataInfo {
    training_steps: Option<u64>,
}

fn model_view(model: &ModelAnnouncement, games: u64) -> ModelView {
    let metadata = serde_json::from_str::<Metadata>(&model.metadata_json).ok();
    ModelView {
        version: model.version,
        published_ms: model.published_ms,
        published_by: model.published_by.clone(),
        weights_bytes: model.weights_bytes,
        training_steps: metadata.and_then(|m| m.info).and_then(|i| i.training_steps),
        games,
    }
}

async fn overview(State(dash): State<Arc<Dashboard>>) -> Answer<Overview> {
    blocking(move || {
        let state = &dash.state;
        let latest = state.registry.latest();
        // Only what the answer shows is read under the store's lock: the per-model counts grow
        // with the run.
        let (stored, latest_games) = {
            let store = lock(&state.store);
            let counts = store.counts();
            let latest_games = latest.as_ref().and_then(|m| counts.by_model.get(&m.version).copied());
            ((counts.games, counts.samples, counts.bytes), latest_games.unwrap_or(0))
        };
        let (games, samples) = (state.metrics.games_accepted.get(), state.metrics.samples_accepted.get());
        let now = Instant::now();
        let (games_per_second, samples_per_second) = lock(&dash.rates).update(now, games, samples);
        let workers = state
            .live_workers()
            .into_iter()
            .map(|(id, seen)| {
                let secs = now.duration_since(seen.first_seen).as_secs_f64().max(1.0);
                WorkerView {
                    id,
                    last_seen_ms_ago: now.duration_since(seen.last_seen).as_millis() as u64,
                    games: seen.games,
                    samples: seen.samples,
                    games_per_second: seen.games as f64 / secs,
                    samples_per_second: seen.samples as f64 / secs,
                }
            })
            .collect();
        let latest_model = latest.map(|m| model_view(&m, latest_games));
        let (games_stored, samples_stored, dataset_bytes) = stored;
        Ok(Overview {
            now_ms: now_ms(),
            started_ms: dash.started_ms,
            games: games_stored,
            samples: samples_stored,
            dataset_bytes,
            games_per_second,
            samples_per_second,
            rejected_batches: state.metrics.batches_rejected.get(),
            duplicate_games: state.metrics.duplicates.get(),
            settings_version: read(&state.settings).current().0,
            workers,
            latest_model,
        })
    })
    .await
}

async fn models(State(dash): State<Arc<Dashboard>>, query: Result<Query<ListQuery>, QueryRejection>) -> Answer<Models> {
    let limit = limit(query, 100, 1000)?;
    blocking(move || {
        let by_model = lock(&dash.state.store).counts().by_model.clone();
        let all = dash.state.registry.after(0);
        let models = all
            .iter()
            .rev()
            .take(limit)
            .map(|m| model_view(m, by_model.get(&m.version).copied().unwrap_or(0)))
            .collect();
        Ok(Models { total: all.len() as u64, models })
    })
    .await
}

fn match_view(job: &xqz_proto::v1::MatchJob) -> MatchView {
    let spec = job.spec.clone().unwrap_or_default();
    MatchView {
        id: job.id,
        a: job.a_name.clone(),
        b: job.b_name.clone(),
        state: xqz_proto::matches::state_name(job.state).into(),
        pairs: spec.pairs,
        pairs_in_flight: job.pairs_in_flight,
        wins: job.wins,
        draws: job.draws,
        losses: job.losses,
        pentanomial: job.pentanomial.clone(),
        elo: Some(job.elo).filter(|x| x.is_finite()),
        elo_lower: Some(job.elo_lower).filter(|x| x.is_finite()),
        elo_upper: Some(job.elo_upper).filter(|x| x.is_finite()),
        sprt: spec.sprt.map(|s| SprtView {
            elo0: s.elo0,
            elo1: s.elo1,
            llr: job.llr,
            lower: job.llr_lower,
            upper: job.llr_upper,
        }),
        gates_model: (job.gates_model > 0).then_some(job.gates_model),
        failure: (!job.failure.is_empty()).then(|| job.failure.clone()),
        created_ms: job.created_ms,
        workers: (job.workers.iter())
            .map(|w| MatchWorkerView {
                worker: w.worker_id.clone(),
                pentanomial: w.pentanomial.clone(),
                residual: w.residual,
                marked: w.residual.abs() > crate::RESIDUAL_MARK,
                quarantined: w.quarantined,
            })
            .collect(),
        pairs_audited: job.pairs_audited,
        pairs_held: job.pairs_held,
        audits_inconclusive: job.audits_inconclusive,
        quarantines: (job.quarantines.iter())
            .map(|q| QuarantineView {
                worker: q.worker_id.clone(),
                why: q.why.clone(),
                pairs_discarded: q.pairs_discarded,
                at_ms: q.at_ms,
            })
            .collect(),
    }
}

async fn matches(
    State(dash): State<Arc<Dashboard>>,
    query: Result<Query<ListQuery>, QueryRejection>,
) -> Answer<Matches> {
    let limit = limit(query, 50, 1000)?;
    blocking(move || {
        let board = lock(&dash.state.matches);
        let (jobs, _) = board.page(None, limit);
        Ok(Matches { total: board.len() as u64, matches: jobs.iter().map(match_view).collect() })
    })
    .await
}

fn summary(game: &GameRecord) -> GameSummary {
    GameSummary {
        id: game.game_id.to_string(),
        result: game.result.name().to_string(),
        reason: game.reason.clone(),
        article: game.article.clone(),
        ruleset: game.ruleset.name().to_string(),
        plies: game.moves.len(),
        model_version: game.model_version,
        worker_id: game.worker_id.clone(),
        settings_version: game.settings_version,
        start_ms: game.start_time_ms,
        end_ms: game.end_time_ms,
    }
}

async fn games(
    State(dash): State<Arc<Dashboard>>,
    query: Result<Query<ListQuery>, QueryRejection>,
) -> Answer<GameList> {
    let limit = limit(query, 20, RECENT_GAMES)?;
    blocking(move || {
        let store = lock(&dash.state.store);
        let games = store.recent().iter().rev().take(limit).map(summary).collect();
        Ok(GameList { total: store.counts().games, games })
    })
    .await
}

/// A stored game move by move, with each move in Chinese notation and the position after it.
fn game_view(game: &GameRecord) -> Result<GameView, String> {
    let mut position = game.start_position().map_err(|e| e.to_string())?;
    let mut moves = Vec::with_capacity(game.moves.len());
    for (ply, &mv) in game.moves.iter().enumerate() {
        let chinese = Chinese::from_move(&position, mv).map_err(|e| format!("ply {}: {e}", ply + 1))?;
        position.play(mv).map_err(|e| format!("ply {}: {e}", ply + 1))?;
        moves.push(MoveView { iccs: mv.to_string(), chinese: chinese.to_string(), fen: position.to_string() });
    }
    Ok(GameView { summary: summary(game), start_fen: game.start_fen.clone(), moves })
}

async fn game(State(dash): State<Arc<Dashboard>>, UrlPath(id): UrlPath<String>) -> Answer<GameView> {
    let id: GameId =
        id.parse().map_err(|_| Failure(StatusCode::BAD_REQUEST, format!("{id:?} is not a game id (32 hex digits)")))?;
    blocking(move || {
        let record = lock(&dash.state.store).recent().iter().find(|g| g.game_id == id).cloned();
        let record = record.ok_or_else(|| {
            Failure(StatusCode::NOT_FOUND, format!("game {id} is not among the latest {RECENT_GAMES} stored games"))
        })?;
        // Stored games were replayed through the rules when they arrived.
        game_view(&record).map_err(|e| Failure(StatusCode::INTERNAL_SERVER_ERROR, format!("stored game {id}: {e}")))
    })
    .await
}

impl From<StrengthRow> for StrengthPoint {
    fn from(r: StrengthRow) -> StrengthPoint {
        let finite = |x: f64| x.is_finite().then_some(x);
        StrengthPoint {
            version: r.version,
            steps: r.steps,
            published_unix: r.published_unix,
            opponent: r.opponent,
            wins: r.wins,
            draws: r.draws,
            losses: r.losses,
            score: r.score,
            elo: finite(r.elo),
            elo_lower: finite(r.elo_lower),
            elo_upper: finite(r.elo_upper),
        }
    }
}

/// A CSV file of the run folder, read from where the last read stopped, its rows thinned to
/// every `stride`-th (doubling as needed) so that at most [`MAX_POINTS`] stay.
struct CsvTail<R> {
    reader: RowReader<R>,
    /// (row index, row) of the kept rows.
    kept: Vec<(u64, R)>,
    last: Option<R>,
    rows: u64,
    stride: u64,
}

impl<R: Row + Clone> CsvTail<R> {
    fn new(path: PathBuf) -> CsvTail<R> {
        CsvTail { reader: RowReader::new(path), kept: Vec::new(), last: None, rows: 0, stride: 1 }
    }

    /// Reads what was appended since the last call, at most [`MAX_CSV_READ`] bytes of it.
    fn update(&mut self) -> Result<(), RowError> {
        let appended = self.reader.read_appended(MAX_CSV_READ)?;
        if appended.restarted {
            (self.kept, self.last, self.rows, self.stride) = (Vec::new(), None, 0, 1);
        }
        for row in appended.rows {
            self.push(row);
        }
        Ok(())
    }

    fn push(&mut self, row: R) {
        if self.rows.is_multiple_of(self.stride) {
            self.kept.push((self.rows, row.clone()));
            if self.kept.len() > MAX_POINTS - 1 {
                self.stride *= 2;
                let stride = self.stride;
                self.kept.retain(|(i, _)| i.is_multiple_of(stride));
            }
        }
        self.last = Some(row);
        self.rows += 1;
    }

    /// The kept rows and the last one, in order.
    fn points<P: From<R>>(&self) -> Vec<P> {
        let last_kept = self.kept.last().map(|(i, _)| i + 1) == Some(self.rows);
        let tail = if last_kept { None } else { self.last.clone() };
        self.kept.iter().map(|(_, r)| r.clone()).chain(tail).map(P::from).collect()
    }
}

/// A file of the run folder, read up to date: its row count and points; `None` without a run folder.
fn read_curve<R, P>(tail: &Mutex<Option<CsvTail<R>>>) -> Result<Option<(u64, Vec<P>)>, Failure>
where
    R: Row + Clone,
    P: From<R>,
{
    let mut tail = lock(tail);
    let Some(tail) = tail.as_mut() else { return Ok(None) };
    tail.update().map_err(|e| Failure(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
    Ok(Some((tail.rows, tail.points())))
}

async fn training(State(dash): State<Arc<Dashboard>>) -> Answer<Training> {
    blocking(move || {
        Ok(match read_curve(&dash.training)? {
            Some((rows, points)) => Training { available: true, rows, points },
            None => Training { available: false, rows: 0, points: Vec::new() },
        })
    })
    .await
}

async fn strength(State(dash): State<Arc<Dashboard>>) -> Answer<Strength> {
    blocking(move || {
        Ok(match read_curve(&dash.strength)? {
            Some((rows, points)) => Strength { available: true, rows, points },
            None => Strength { available: false, rows: 0, points: Vec::new() },
        })
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_growing_csv_is_thinned_and_keeps_its_last_row() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("strength.csv");
        let row = |version: u64| StrengthRow { version, elo_upper: f64::INFINITY, ..StrengthRow::default() };
        let mut tail = CsvTail::<StrengthRow>::new(path.clone());
        tail.update().unwrap();
        assert_eq!(tail.rows, 0, "a missing file has no rows");
        let mut writer = xqz_run_folder::RowWriter::open(&path).unwrap();
        writer.append(&row(1)).unwrap();
        tail.update().unwrap();
        let points: Vec<StrengthPoint> = tail.points();
        assert_eq!((points[0].elo, points[0].elo_upper), (Some(0.0), None), "an unbounded Elo is null");
        for version in 2..=2500 {
            writer.append(&row(version)).unwrap();
        }
        tail.update().unwrap();
        let points: Vec<StrengthPoint> = tail.points();
        assert_eq!(tail.rows, 2500);
        assert!(points.len() <= MAX_POINTS, "{}", points.len());
        assert!(points.len() > MAX_POINTS / 4, "{}", points.len());
        assert_eq!(points[0].version, 1);
        assert_eq!(points.last().unwrap().version, 2500, "the last row is always shown");
        assert!(points.windows(2).all(|w| w[0].version < w[1].version));

        drop(writer);
        std::fs::remove_file(&path).unwrap();
        xqz_run_folder::RowWriter::open(&path).unwrap().append(&row(7)).unwrap();
        tail.update().unwrap();
        assert_eq!(tail.rows, 1, "another file starts over");
        std::fs::write(&path, "version,elo\n7,120\n").unwrap();
        let error = tail.update().unwrap_err().to_string();
        assert!(error.contains("strength.csv"), "{error}");
    }

    #[test]
    fn rates_cover_the_last_minute() {
        let start = Instant::now();
        let mut rates = Rates::new(start);
        // A game a second for a minute, then ten; two samples a game.
        let games = |t: u64| if t <= 60 { t } else { 60 + 10 * (t - 60) };
        for t in (5..=120).step_by(5) {
            rates.update(start + Duration::from_secs(t), games(t), 2 * games(t));
        }
        let (per_second, samples) = rates.update(start + Duration::from_secs(125), games(125), 2 * games(125));
        assert!((per_second - 10.0).abs() < 1e-9 && (samples - 20.0).abs() < 1e-9, "{per_second} {samples}");
        assert!(rates.points.len() <= 14, "{} points kept", rates.points.len());
        let mut fresh = Rates::new(start);
        assert_eq!(fresh.update(start + Duration::from_secs(10), 10, 20), (1.0, 2.0), "since the start at first");
    }
}
