//! Match jobs: matches that the workers play pair by pair between their self-play games.
//!
//! A job is its [`MatchSpec`] and its state, kept in `matches.json` in the data folder
//! (rewritten atomically at each change of state). Its games go to the data folder's match table
//! (`eval/games.arrow` and `eval/games.pgn`, [`xqz_arena::records`]) under the match id
//! `job-<id>`, both games of a pair in one write, before the pair is acknowledged; the counts are
//! rebuilt from that table at start-up, so that a restart loses no counted pair and counts none
//! twice, and `xqz eval results` / `xqz eval ladder` read the games as they read any match's.
//!
//! Pairs are handed out lowest first, each under a lease to the worker it was handed to; a pair
//! counts once, and only from the worker that holds its lease (after
//! [`replay_pair`](xqz_arena::job::replay_pair) checked it): a pair never handed out, or handed to
//! another worker, is refused and changes nothing, so that a worker cannot decide a match with
//! games nobody asked it for. A pair whose worker fell silent is handed out again (its lease
//! passes to the new worker); one handed out [`MAX_HANDED`] times without a result fails its job.
//! Leases live in memory: after a restart the pairs in flight are handed out again, and a pair
//! played under a lease from before the restart is refused.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use xqz_arena::MatchResult;
use xqz_arena::job::{Contestant, JobError, MAX_PLAYOUTS, MatchSpec};
use xqz_arena::records::{MatchLog, read_games};
use xqz_arena::stats::{Pentanomial, Sprt, SprtState};
use xqz_arena::tournament::MatchGame;
use xqz_proto::v1;

use crate::audit::{Audit, Intake};
use crate::error::CoordinatorError;
use crate::registry::write_atomic;

/// The jobs file in the data folder.
const MATCHES_FILE: &str = xqz_run_folder::CoordinatorFolder::MATCHES;
/// Times a pair is handed out without a result before its job fails: a pair that makes every
/// worker fail (an engine that crashes on its opening) must not go round for ever.
pub(crate) const MAX_HANDED: u32 = 5;
/// Jobs a coordinator keeps, finished ones included; submissions beyond are refused.
pub(crate) const MAX_JOBS: usize = 10_000;

/// Where a job stands.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", content = "why", rename_all = "snake_case")]
pub(crate) enum JobState {
    /// Pairs are handed out.
    Running,
    /// The SPRT accepted H1.
    H1,
    /// The SPRT accepted H0.
    H0,
    /// Every pair counted, the test (if any) undecided.
    Finished,
    /// A pair could not be played.
    Failed(String),
}

/// A job as `matches.json` keeps it.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct StoredJob {
    id: u64,
    spec: MatchSpec,
    created_ms: i64,
    /// The model whose announcement waits for this match (`--gate`).
    gates_model: Option<u64>,
    state: JobState,
}

#[derive(Default, Serialize, Deserialize)]
struct JobsFile {
    jobs: Vec<StoredJob>,
}

/// The matches a coordinator queues by itself for each published model: the `[evaluation]`
/// section of a settings file, as in
///
/// ```toml
/// [evaluation]
/// previous_pairs = 100
/// anchor = "rung:R1"
/// playouts = 200
/// gate = { elo0 = 0.0, elo1 = 10.0, alpha = 0.05, beta = 0.05, model = "logistic" }
/// audit_share = 0.05
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Evaluation {
    /// Each new model against the newest announced one before it, this many pairs (0: none).
    pub previous_pairs: u32,
    /// Each new model against this anchor (a rung or a built-in player), `previous_pairs` pairs
    /// (or 100 if that is 0); by its name (`rung:R1`, `material@64`).
    #[serde(with = "by_name", skip_serializing_if = "Option::is_none")]
    pub anchor: Option<Contestant>,
    /// Playouts of the models in these matches.
    pub playouts: u32,
    /// Game length cap of these matches (0: [`MatchSpec::new`]'s).
    pub max_plies: u32,
    /// Material adjudication at the cap ([`MatchSpec::material_adjudication`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub material_adjudication: Option<u32>,
    /// With a gate, a new model is announced to self-play only once its match against the newest
    /// announced model accepts H1 of this test; if it accepts H0 or runs out of pairs, never.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gate: Option<Sprt>,
    /// The share of pairs of every match (these and those submitted) that another worker plays
    /// again to check them ([`crate::audit`]); 0 to 1.
    pub audit_share: f64,
}

impl Default for Evaluation {
    /// No matches, no gate; 200 playouts where matches are asked for.
    fn default() -> Evaluation {
        Evaluation {
            previous_pairs: 0,
            anchor: None,
            playouts: 200,
            max_plies: 0,
            material_adjudication: None,
            gate: None,
            audit_share: crate::audit::DEFAULT_SHARE,
        }
    }
}

/// A player as its name in a settings file.
mod by_name {
    use serde::{Deserialize, Deserializer, Serializer};
    use xqz_arena::job::Contestant;

    pub fn serialize<S: Serializer>(player: &Option<Contestant>, s: S) -> Result<S::Ok, S::Error> {
        match player {
            Some(Contestant::Rung { name }) => s.serialize_str(&format!("rung:{name}")),
            Some(player) => s.serialize_str(&player.name()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Contestant>, D::Error> {
        let text = Option::<String>::deserialize(d)?;
        text.map(|t| t.parse().map_err(serde::de::Error::custom)).transpose()
    }
}

impl Evaluation {
    /// Checks the playouts, the anchor (a rung or a built-in player, not a model) and the audit
    /// share.
    ///
    /// # Errors
    /// The first setting out of range, named.
    pub fn validate(&self) -> Result<(), JobError> {
        if self.playouts == 0 || self.playouts > MAX_PLAYOUTS {
            return Err(JobError::Spec(format!("playouts must be 1 to {MAX_PLAYOUTS}, not {}", self.playouts)));
        }
        if !(0.0..=1.0).contains(&self.audit_share) {
            return Err(JobError::Spec(format!("audit_share must be 0 to 1, not {}", self.audit_share)));
        }
        if let Some(anchor) = &self.anchor {
            anchor.validate()?;
            if anchor.model().is_some() {
                return Err(JobError::Spec(format!("the anchor {anchor} must be a rung or a built-in player")));
            }
        }
        Ok(())
    }

    /// Pairs of a gating or anchor match.
    fn pairs(&self) -> u32 {
        if self.previous_pairs > 0 { self.previous_pairs } else { 100 }
    }

    /// The matches to queue for `model` (its gating match first), with the model each gates.
    pub(crate) fn matches_for(&self, model: u64, previous: Option<u64>) -> Vec<(MatchSpec, Option<u64>)> {
        let playouts = self.playouts;
        let terms = |spec: MatchSpec| MatchSpec {
            max_plies: if self.max_plies > 0 { self.max_plies } else { spec.max_plies },
            material_adjudication: self.material_adjudication,
            ..spec
        };
        let new = Contestant::Model { version: model, playouts };
        let mut matches = Vec::new();
        if let Some(previous) = previous
            && (self.gate.is_some() || self.previous_pairs > 0)
        {
            let old = Contestant::Model { version: previous, playouts };
            let spec = MatchSpec { sprt: self.gate, ..MatchSpec::new(new.clone(), old, self.pairs()) };
            matches.push((terms(spec), self.gate.map(|_| model)));
        }
        if let Some(anchor) = &self.anchor {
            matches.push((terms(MatchSpec::new(new, anchor.clone(), self.pairs())), None));
        }
        matches
    }
}

/// A pair handed out and not yet counted.
struct Lease {
    worker: String,
}

struct Job {
    stored: StoredJob,
    /// Counted pairs: the first player's scores in its two games.
    counted: BTreeMap<u32, [f64; 2]>,
    games: MatchResult,
    pairs: Pentanomial,
    leases: BTreeMap<u32, Lease>,
    /// Times each pair was handed out.
    handed: BTreeMap<u32, u32>,
    /// No pair below this was never handed out (since the start).
    fresh: u32,
    /// The match table, opened at the first pair counted.
    log: Option<MatchLog>,
}

impl Job {
    fn new(stored: StoredJob) -> Job {
        Job {
            stored,
            counted: BTreeMap::new(),
            games: MatchResult::default(),
            pairs: Pentanomial::default(),
            leases: BTreeMap::new(),
            handed: BTreeMap::new(),
            fresh: 0,
            log: None,
        }
    }

    fn match_id(&self) -> String {
        match_id(self.stored.id)
    }

    fn add(&mut self, pair: u32, scores: [f64; 2]) {
        scores.iter().for_each(|&score| self.games.record_score(score));
        self.pairs.add_pair(scores[0], scores[1]);
        self.counted.insert(pair, scores);
    }

    /// The next pair to hand out: one whose worker fell silent, else the lowest never handed out
    /// and not `held` for its audit.
    fn next_pair(&mut self, alive: &dyn Fn(&str) -> bool, held: &dyn Fn(u32) -> bool) -> Option<u32> {
        if let Some(pair) = self.leases.iter().find(|(_, lease)| !alive(&lease.worker)).map(|(&p, _)| p) {
            return Some(pair);
        }
        while self.fresh < self.stored.spec.pairs
            && (self.counted.contains_key(&self.fresh) || self.leases.contains_key(&self.fresh) || held(self.fresh))
        {
            self.fresh += 1;
        }
        (self.fresh < self.stored.spec.pairs).then_some(self.fresh)
    }

    /// Takes `pairs` out of the counts, to be handed out again; returns their scores.
    fn uncount(&mut self, pairs: &BTreeSet<u32>) -> Vec<(u32, [f64; 2])> {
        let gone: Vec<(u32, [f64; 2])> = pairs.iter().filter_map(|&p| Some((p, self.counted.remove(&p)?))).collect();
        let kept = std::mem::take(&mut self.counted);
        (self.games, self.pairs) = Default::default();
        kept.into_iter().for_each(|(pair, scores)| self.add(pair, scores));
        self.fresh = self.fresh.min(pairs.first().copied().unwrap_or(u32::MAX));
        gone
    }

    fn wants(&self, pair: u32) -> bool {
        self.stored.state == JobState::Running && !self.counted.contains_key(&pair)
    }

    /// The state the counts call for, from Running.
    fn judged(&self) -> JobState {
        let spec = &self.stored.spec;
        match spec.sprt.map(|sprt| sprt.decide(&self.pairs)) {
            Some(SprtState::AcceptH1) => JobState::H1,
            Some(SprtState::AcceptH0) => JobState::H0,
            _ if self.counted.len() as u32 >= spec.pairs => JobState::Finished,
            _ => JobState::Running,
        }
    }

    fn to_wire(&self) -> v1::MatchJob {
        let spec = &self.stored.spec;
        let state = match &self.stored.state {
            JobState::Running => v1::MatchState::Running,
            JobState::H1 => v1::MatchState::H1,
            JobState::H0 => v1::MatchState::H0,
            JobState::Finished => v1::MatchState::Finished,
            JobState::Failed(_) => v1::MatchState::Failed,
        };
        let elo = (self.pairs.pairs() > 0).then(|| self.pairs.elo());
        let finite = |x: f64| if x.is_finite() { x } else { 0.0 };
        let (llr, (lower, upper)) = match &spec.sprt {
            Some(sprt) => (sprt.llr(&self.pairs), sprt.bounds()),
            None => (0.0, (0.0, 0.0)),
        };
        v1::MatchJob {
            id: self.stored.id,
            spec: Some(xqz_proto::matches::spec_to_wire(spec)),
            state: state.into(),
            a_name: spec.a.name(),
            b_name: spec.b.name(),
            wins: self.games.wins,
            draws: self.games.draws,
            losses: self.games.losses,
            pentanomial: self.pairs.counts.iter().map(|&c| u64::from(c)).collect(),
            // An interval that a perfect or zero score leaves open is infinite on that side.
            elo: elo.map_or(0.0, |e| e.elo),
            elo_lower: elo.map_or(0.0, |e| e.lower),
            elo_upper: elo.map_or(0.0, |e| e.upper),
            llr: finite(llr),
            llr_lower: lower,
            llr_upper: upper,
            pairs_in_flight: self.leases.len() as u32,
            failure: match &self.stored.state {
                JobState::Failed(why) => why.clone(),
                _ => String::new(),
            },
            created_ms: self.stored.created_ms,
            gates_model: self.stored.gates_model.unwrap_or(0),
            // The workers and the audits: the board's (`Board::view`).
            ..Default::default()
        }
    }
}

/// Where job `id` (1, 2, ...) is in the board's list.
fn index(id: u64) -> Option<usize> {
    usize::try_from(id).ok()?.checked_sub(1)
}

/// The match id of job `id` in the match table.
pub fn match_id(id: u64) -> String {
    format!("job-{id}")
}

/// A pair handed to a worker.
#[derive(Clone, Debug)]
pub(crate) struct Assignment {
    pub match_id: u64,
    pub pair: u32,
    pub spec: MatchSpec,
}

/// What [`Board::take`] did: the pair handed out, if any, and the gated models whose match failed
/// on the way (refused).
#[derive(Clone, Debug)]
pub(crate) struct Taken {
    pub assignment: Option<Assignment>,
    pub failed_gates: Vec<(u64, bool)>,
}

/// What counting a pair did.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Counted {
    /// False: the pair was counted before.
    pub counted: bool,
    /// A gated model whose match just ended, and whether it passed.
    pub gate: Option<(u64, bool)>,
}

/// Why a pair is not counted.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CountError {
    /// No job has this id.
    #[error("no match {0}")]
    NoJob(u64),
    /// The games could not be written.
    #[error("match {id}: writing its games: {source}")]
    Records {
        /// The job.
        id: u64,
        /// Why.
        source: xqz_arena::records::RecordsError,
    },
    /// The pair is not leased to the worker that hands it in.
    #[error("match {id}, pair {pair}: {reason}")]
    NotLeased {
        /// The job.
        id: u64,
        /// The pair.
        pair: u32,
        /// Whose lease it is, if anyone's.
        reason: String,
    },
    /// An audit quarantined the worker.
    #[error(
        "worker {worker} is quarantined: {why}; its match pairs are refused (docs/SECURITY.md says how to lift it)"
    )]
    Quarantined {
        /// The worker.
        worker: String,
        /// The audit's verdict.
        why: String,
    },
    /// The jobs file or the audit ledger could not be written.
    #[error(transparent)]
    Store(#[from] CoordinatorError),
}

/// Every match job of a data folder.
pub(crate) struct Board {
    data_dir: PathBuf,
    jobs: Vec<Job>,
    audit: Audit,
}

impl Board {
    /// Opens the jobs of `data_dir` without audits (the board's own rules under test).
    #[cfg(test)]
    pub fn open(data_dir: &Path) -> Result<Board, CoordinatorError> {
        Board::open_audited(data_dir, 0.0)
    }

    /// Opens the jobs of `data_dir` and counts their games in its match table, auditing
    /// `audit_share` of their pairs ([`crate::audit`]: the audits are rebuilt from its ledger).
    pub fn open_audited(data_dir: &Path, audit_share: f64) -> Result<Board, CoordinatorError> {
        let path = data_dir.join(MATCHES_FILE);
        let corrupt = |message: String| CoordinatorError::Corrupt { path: path.clone(), message };
        let file: JobsFile = match fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| corrupt(e.to_string()))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => JobsFile::default(),
            Err(source) => return Err(CoordinatorError::Io { path, source }),
        };
        let mut jobs: Vec<Job> = Vec::with_capacity(file.jobs.len());
        for (i, stored) in file.jobs.into_iter().enumerate() {
            if stored.id != i as u64 + 1 {
                return Err(corrupt(format!("job {} is listed as {}", i + 1, stored.id)));
            }
            stored.spec.validate().map_err(|e| corrupt(format!("job {}: {e}", stored.id)))?;
            jobs.push(Job::new(stored));
        }
        let mut audit = Audit::open(data_dir, audit_share)?;
        if !jobs.is_empty() {
            let rows = read_games(data_dir).map_err(|e| corrupt(format!("its games: {e}")))?;
            let mut scores: BTreeMap<(&str, u32), Vec<f64>> = BTreeMap::new();
            for row in &rows {
                scores.entry((row.match_id.as_str(), row.pair)).or_default().push(row.a_score);
            }
            for job in &mut jobs {
                let id = job.match_id();
                for (&(_, pair), scores) in scores.range((id.as_str(), 0)..=(id.as_str(), u32::MAX)) {
                    // Both games of a pair are written together, so a pair has two rows.
                    if let [first, second] = scores[..] {
                        job.add(pair, [first, second]);
                        audit.credit((job.stored.id, pair), [first, second]);
                    }
                }
            }
        }
        let mut board = Board { data_dir: data_dir.to_path_buf(), jobs, audit };
        let void = board.audit.take_void();
        for job in board.jobs.iter().map(|j| j.stored.id).collect::<Vec<_>>() {
            let pairs = void.range((job, 0)..=(job, u32::MAX)).map(|&(_, pair)| pair).collect();
            board
                .discard(job, &pairs)
                .map_err(|e| CoordinatorError::Corrupt { path: path.clone(), message: e.to_string() })?;
        }
        Ok(board)
    }

    fn store(&self) -> Result<(), CoordinatorError> {
        let file = JobsFile { jobs: self.jobs.iter().map(|j| j.stored.clone()).collect() };
        write_atomic(&self.data_dir.join(MATCHES_FILE), &serde_json::to_vec_pretty(&file).expect("jobs serialise"))
    }

    /// Queues a checked match; `gates_model` names the model whose announcement waits for it.
    pub fn submit(
        &mut self,
        spec: MatchSpec,
        gates_model: Option<u64>,
        now_ms: i64,
    ) -> Result<v1::MatchJob, SubmitError> {
        if self.jobs.len() >= MAX_JOBS {
            return Err(SubmitError::Full);
        }
        let stored = StoredJob {
            id: self.jobs.len() as u64 + 1,
            spec,
            created_ms: now_ms,
            gates_model,
            state: JobState::Running,
        };
        self.jobs.push(Job::new(stored));
        if let Err(e) = self.store() {
            self.jobs.pop();
            return Err(SubmitError::Store(e));
        }
        Ok(self.jobs.last().expect("just pushed").to_wire())
    }

    /// Hands `worker` the next pair of the oldest running job it can play (`can_play`), where
    /// `alive` tells which workers still hold their leases. A job whose pair was handed out too
    /// often fails (and so does the gate it was for: the second value).
    pub fn take(
        &mut self,
        worker: &str,
        can_play: &[String],
        alive: &dyn Fn(&str) -> bool,
    ) -> Result<Taken, CoordinatorError> {
        if let Some(copy) = self.take_copy(worker, alive) {
            return Ok(Taken { assignment: Some(copy), failed_gates: Vec::new() });
        }
        let mut failed_gates = Vec::new();
        let mut changed = false;
        let mut found = None;
        let audit = &self.audit;
        for job in self.jobs.iter_mut().filter(|j| j.stored.state == JobState::Running) {
            if !job.stored.spec.needs().all(|need| can_play.iter().any(|c| c == need)) {
                continue;
            }
            let id = job.stored.id;
            let Some(pair) = job.next_pair(alive, &|pair| audit.holds(id, pair)) else { continue };
            let handed = job.handed.entry(pair).or_default();
            if *handed >= MAX_HANDED {
                job.stored.state =
                    JobState::Failed(format!("pair {pair} was handed out {MAX_HANDED} times and never came back"));
                job.leases.clear();
                failed_gates.extend(job.stored.gates_model.map(|model| (model, false)));
                changed = true;
                continue;
            }
            *handed += 1;
            job.leases.insert(pair, Lease { worker: worker.to_string() });
            found = Some(Assignment { match_id: job.stored.id, pair, spec: job.stored.spec.clone() });
            break;
        }
        if changed {
            self.store()?;
        }
        Ok(Taken { assignment: found, failed_gates })
    }

    /// Ends `worker`'s lease of pair `pair` of job `id`, which it could not play, so that the pair
    /// goes out again (to whoever asks next, which may be `worker`). Another worker's lease stays.
    pub fn give_back(&mut self, worker: &str, id: u64, pair: u32) {
        self.audit.give_back(worker, id, pair);
        if let Some(job) = self.job_mut(id)
            && job.leases.get(&pair).is_some_and(|lease| lease.worker == worker)
        {
            job.leases.remove(&pair);
            job.fresh = job.fresh.min(pair);
        }
    }

    /// The spec of job `id`.
    pub fn spec(&self, id: u64) -> Option<&MatchSpec> {
        self.job(id).map(|j| &j.stored.spec)
    }

    fn job(&self, id: u64) -> Option<&Job> {
        self.jobs.get(index(id)?)
    }

    fn job_mut(&mut self, id: u64) -> Option<&mut Job> {
        self.jobs.get_mut(index(id)?)
    }

    /// Whether pair `pair` of job `id` would count: its job still runs and it was not counted.
    pub fn wants(&self, id: u64, pair: u32) -> bool {
        self.job(id).is_some_and(|j| j.wants(pair))
    }

    /// Refuses pair `pair` of job `id` from `worker` unless `worker` holds its lease, naming whose
    /// lease it is.
    pub fn check_lease(&self, id: u64, pair: u32, worker: &str) -> Result<(), CountError> {
        let job = self.job(id).ok_or(CountError::NoJob(id))?;
        if let Some(why) = self.audit.quarantined(worker) {
            return Err(CountError::Quarantined { worker: worker.to_string(), why: why.to_string() });
        }
        if self.audit.may_hand_in(id, pair, worker) {
            return Ok(());
        }
        let reason = match job.leases.get(&pair) {
            Some(lease) if lease.worker == worker => return Ok(()),
            Some(_) => format!("leased to another worker, not to {worker}"),
            None if job.handed.contains_key(&pair) => {
                format!("{worker} holds no lease on it (its lease ended: given back, or lost in a restart)")
            }
            None => format!("never handed out, so {worker} holds no lease on it"),
        };
        Err(CountError::NotLeased { id, pair, reason })
    }

    /// Counts pair `pair` of job `id` from `worker` (checked games, the first player as Red
    /// first) unless it was counted before or its job has ended: writes both games to the match
    /// table, then updates the counts and, where the test decided or the pairs ran out, the job's
    /// state. A job's counts stop where it ended, so a pair in flight at a decision changes
    /// nothing. A pair still wanted but not leased to `worker` is refused.
    pub fn count(&mut self, id: u64, pair: u32, worker: &str, games: [MatchGame; 2]) -> Result<Counted, CountError> {
        let data_dir = self.data_dir.clone();
        if !self.job(id).ok_or(CountError::NoJob(id))?.wants(pair) {
            return Ok(Counted { counted: false, gate: None });
        }
        self.check_lease(id, pair, worker)?;
        let Some((worker, games)) = self.audited(id, pair, worker, games)? else {
            return Ok(Counted { counted: true, gate: None });
        };
        self.audit.attribute((id, pair), &worker)?;
        let job = self.job_mut(id).ok_or(CountError::NoJob(id))?;
        if job.log.is_none() {
            let (a, b) = (job.stored.spec.a.name(), job.stored.spec.b.name());
            let log = MatchLog::open_as(&data_dir, &job.match_id(), &a, &b, (None, None))
                .map_err(|source| CountError::Records { id, source })?;
            job.log = Some(log);
        }
        let log = job.log.as_mut().expect("opened above");
        log.append_all(&games).map_err(|source| CountError::Records { id, source })?;
        job.leases.remove(&pair);
        let scores = games.each_ref().map(MatchGame::first_score);
        job.add(pair, scores);
        let mut gate = None;
        let state = job.judged();
        if state != JobState::Running {
            gate = job.stored.gates_model.map(|model| (model, state == JobState::H1));
            job.stored.state = state;
            job.leases.clear();
            self.store()?;
        }
        self.audit.credit((id, pair), scores);
        Ok(Counted { counted: true, gate })
    }

    /// Job `id` as the API shows it.
    pub fn get(&self, id: u64) -> Option<v1::MatchJob> {
        self.job(id).map(|job| self.view(job))
    }

    /// Every job, newest first.
    pub fn list(&self) -> Vec<v1::MatchJob> {
        self.jobs.iter().rev().map(|job| self.view(job)).collect()
    }

    /// `job` as the API shows it, with its workers and audits.
    fn view(&self, job: &Job) -> v1::MatchJob {
        let mut wire = job.to_wire();
        self.audit.annotate(&mut wire);
        wire
    }

    /// Queues the matches `evaluation` asks for once `model` is published; `previous` is the
    /// newest model announced before it.
    pub fn queue_for(&mut self, evaluation: &Evaluation, model: u64, previous: Option<u64>, now_ms: i64) {
        for (spec, gates) in evaluation.matches_for(model, previous) {
            let (a, b) = (spec.a.name(), spec.b.name());
            match self.submit(spec, gates, now_ms) {
                Ok(job) => {
                    tracing::info!(match_id = job.id, a, b, gate = gates.is_some(), "match queued for the new model")
                }
                Err(e) => tracing::warn!(a, b, error = %e, "the new model's match could not be queued"),
            }
        }
    }

    /// Gated models whose match is still running.
    pub fn gating(&self) -> impl Iterator<Item = u64> + '_ {
        self.jobs.iter().filter(|j| j.stored.state == JobState::Running).filter_map(|j| j.stored.gates_model)
    }
}

/// The board's side of the audits ([`crate::audit`]): copies handed out, pairs held, verdicts
/// carried out on the jobs and the match table.
impl Board {
    /// Why `worker` is quarantined, if it is: its match calls are refused.
    pub fn quarantined(&self, worker: &str) -> Option<String> {
        self.audit
            .quarantined(worker)
            .map(|why| CountError::Quarantined { worker: worker.into(), why: why.into() }.to_string())
    }

    /// Lifts `worker`'s quarantine; false if it was not quarantined.
    pub fn lift(&mut self, worker: &str, now_ms: i64) -> Result<bool, CoordinatorError> {
        self.audit.lift(worker, now_ms)
    }

    fn running(jobs: &[Job], id: u64) -> bool {
        index(id).and_then(|i| jobs.get(i)).is_some_and(|j| j.stored.state == JobState::Running)
    }

    /// A copy of a held pair for `worker` to play, if one waits; held pairs that nobody could
    /// play a copy of any more go back to be played again.
    fn take_copy(&mut self, worker: &str, alive: &dyn Fn(&str) -> bool) -> Option<Assignment> {
        self.audit.observe(worker, alive);
        let jobs = &self.jobs;
        let running = |id| Board::running(jobs, id);
        let stranded = self.audit.release_stranded(alive, &running);
        let copy = self.audit.next_copy(worker, alive, &running);
        for (id, pair) in stranded {
            if let Some(job) = self.job_mut(id) {
                job.fresh = job.fresh.min(pair);
            }
        }
        let (match_id, pair) = copy?;
        Some(Assignment { match_id, pair, spec: self.job(match_id)?.stored.spec.clone() })
    }

    /// What the audit makes of pair `pair` of job `id` from `worker`: the games to count and
    /// whose they are, or none while the pair is held.
    fn audited(
        &mut self,
        id: u64,
        pair: u32,
        worker: &str,
        games: [MatchGame; 2],
    ) -> Result<Option<(String, [MatchGame; 2])>, CountError> {
        let reproducible = self.job(id).ok_or(CountError::NoJob(id))?.stored.spec.reproducible();
        match self.audit.intake((id, pair), worker, games, reproducible)? {
            Intake::Count(worker, games) => Ok(Some((worker, games))),
            Intake::Held => {
                if let Some(job) = self.job_mut(id) {
                    job.leases.remove(&pair);
                }
                Ok(None)
            }
            Intake::Again => Ok(None),
            Intake::Quarantine { worker, why, count } => {
                self.quarantine(&worker, (id, pair), why)?;
                Ok(Some(count))
            }
        }
    }

    /// Quarantines `worker` for its copy of `pair` of job `id`: its leases end, and its counted
    /// pairs of running jobs and its held copies go back to be played again.
    fn quarantine(&mut self, worker: &str, pair: (u64, u32), why: String) -> Result<(), CountError> {
        let counted: BTreeMap<u64, BTreeSet<u32>> = (self.jobs.iter())
            .filter(|j| j.stored.state == JobState::Running)
            .map(|j| (j.stored.id, j.counted.keys().copied().collect()))
            .collect();
        let (discarded, released) = self.audit.quarantine(worker, pair, why, &counted)?;
        for job in &mut self.jobs {
            let before = job.leases.len();
            job.leases.retain(|_, lease| lease.worker != worker);
            if job.leases.len() < before {
                job.fresh = 0;
            }
        }
        for (id, pair) in released {
            if let Some(job) = self.job_mut(id) {
                job.fresh = job.fresh.min(pair);
            }
        }
        for id in counted.keys() {
            let pairs = discarded.iter().filter(|(job, _)| job == id).map(|&(_, pair)| pair).collect();
            self.discard(*id, &pairs)?;
        }
        Ok(())
    }

    /// Takes `pairs` of job `id` out of its counts and the match table, to be played again.
    fn discard(&mut self, id: u64, pairs: &BTreeSet<u32>) -> Result<(), CountError> {
        if pairs.is_empty() {
            return Ok(());
        }
        let job = self.jobs.get_mut(index(id).ok_or(CountError::NoJob(id))?).ok_or(CountError::NoJob(id))?;
        xqz_arena::records::discard_pairs(&self.data_dir, &job.match_id(), pairs)
            .map_err(|source| CountError::Records { id, source })?;
        // Its log holds the old rows: opened again at the next pair.
        job.log = None;
        for (pair, scores) in job.uncount(pairs) {
            self.audit.debit((id, pair), scores);
        }
        Ok(())
    }
}

/// Why a job is not queued.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SubmitError {
    /// [`MAX_JOBS`] jobs are kept already.
    #[error("the coordinator keeps {MAX_JOBS} matches already")]
    Full,
    /// The jobs file could not be written.
    #[error(transparent)]
    Store(CoordinatorError),
}

#[cfg(test)]
mod audit_tests;

#[cfg(test)]
mod tests {
    use xqz_arena::job::{Contestant, play_pair};
    use xqz_arena::player::SearchPlayer;
    use xqz_arena::stats::{EloModel, Sprt};
    use xqz_mcts::{MaterialEvaluator, SearchConfig, UniformEvaluator};

    use super::*;

    fn spec(pairs: u32) -> MatchSpec {
        MatchSpec {
            max_plies: 40,
            material_adjudication: Some(1),
            ..MatchSpec::new(Contestant::Material { playouts: 4 }, Contestant::Uniform { playouts: 4 }, pairs)
        }
    }

    /// Plays a pair of `spec`, whose first player is material counting and second the bare rules.
    fn play(spec: &MatchSpec, pair: u32) -> [MatchGame; 2] {
        let search = SearchConfig::default();
        let playouts = |c: &Contestant| match c {
            Contestant::Material { playouts } | Contestant::Uniform { playouts } => *playouts,
            _ => unreachable!("built-in players only"),
        };
        let mut a = SearchPlayer::new(&spec.a.name(), MaterialEvaluator, playouts(&spec.a), search);
        let mut b = SearchPlayer::new(&spec.b.name(), UniformEvaluator, playouts(&spec.b), search);
        play_pair(spec, pair, &mut a, &mut b).unwrap()
    }

    #[test]
    fn evaluation_settings_out_of_range_are_named() {
        assert!(Evaluation::default().validate().is_ok());
        let anchored = Evaluation { anchor: Some("rung:R1".parse().unwrap()), ..Evaluation::default() };
        assert!(anchored.validate().is_ok());
        let cases = [
            (Evaluation { playouts: 0, ..Evaluation::default() }, "playouts must be 1"),
            (Evaluation { anchor: Some("v2@8".parse().unwrap()), ..Evaluation::default() }, "rung or a built-in"),
            (Evaluation { audit_share: 1.5, ..Evaluation::default() }, "audit_share must be 0 to 1"),
        ];
        for (evaluation, expected) in cases {
            let error = evaluation.validate().unwrap_err().to_string();
            assert!(error.contains(expected), "{error}");
        }
    }

    #[test]
    fn pairs_go_out_lowest_first_come_back_from_silent_workers_and_count_once_across_restarts() {
        let dir = tempfile::tempdir().unwrap();
        let mut board = Board::open(dir.path()).unwrap();
        let job = board.submit(spec(3), None, 1).unwrap();
        assert_eq!((job.id, job.state), (1, v1::MatchState::Running as i32));
        let all_alive = |_: &str| true;
        let take = |board: &mut Board, worker: &str, alive: &dyn Fn(&str) -> bool| {
            board.take(worker, &[], alive).unwrap().assignment.map(|a| (a.match_id, a.pair))
        };
        assert_eq!(take(&mut board, "w1", &all_alive), Some((1, 0)));
        assert_eq!(take(&mut board, "w2", &all_alive), Some((1, 1)));
        // w1 falls silent: its pair goes to w3 before the last fresh one.
        let w1_gone = |w: &str| w != "w1";
        assert_eq!(take(&mut board, "w3", &w1_gone), Some((1, 0)));
        assert_eq!(take(&mut board, "w2", &w1_gone), Some((1, 2)));
        assert_eq!(take(&mut board, "w2", &w1_gone), None, "every pair is out");

        let games = play(&spec(3), 0);
        // Pair 0 passed from w1, silent, to w3: only w3's copy counts.
        let refused = board.count(1, 0, "w1", games.clone()).unwrap_err().to_string();
        assert!(refused.contains("leased to another worker, not to w1"), "{refused}");
        assert!(board.count(1, 0, "w3", games.clone()).unwrap().counted);
        assert!(!board.count(1, 0, "w3", games.clone()).unwrap().counted, "a second copy counts nothing");
        let before = board.get(1).unwrap();
        assert_eq!(before.wins + before.draws + before.losses, 2);
        drop(board);

        // A restart rebuilds the counts from the match table and keeps the job running.
        let mut board = Board::open(dir.path()).unwrap();
        assert_eq!(board.get(1).unwrap().pentanomial, before.pentanomial);
        assert!(!board.count(1, 0, "w3", games).unwrap().counted, "counted before the restart");
        let lost = board.count(1, 2, "w2", play(&spec(3), 2)).unwrap_err().to_string();
        assert!(lost.contains("w2 holds no lease on it"), "the leases died with the restart: {lost}");
        assert_eq!(take(&mut board, "w4", &all_alive), Some((1, 1)), "leases are gone, counted pairs stay");
        assert_eq!(take(&mut board, "w4", &all_alive), Some((1, 2)));
        for pair in 1..3 {
            board.count(1, pair, "w4", play(&spec(3), pair)).unwrap();
        }
        let done = board.get(1).unwrap();
        assert_eq!((done.state, done.pairs_in_flight), (v1::MatchState::Finished as i32, 0));
        assert_eq!(take(&mut board, "w4", &all_alive), None);
        let rows = read_games(dir.path()).unwrap();
        assert_eq!(rows.len(), 6);
        assert!(rows.iter().all(|r| r.match_id == "job-1" && r.a == "material@4"));
    }

    #[test]
    fn the_test_ends_a_job_and_decides_its_gate_and_a_pair_that_never_returns_fails_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut board = Board::open(dir.path()).unwrap();
        // Material against the bare rules with every game adjudicated by material: H1 soon.
        let sprt = Sprt { elo0: 0.0, elo1: 50.0, alpha: 0.2, beta: 0.2, model: EloModel::Logistic };
        let strong = MatchSpec { a: Contestant::Material { playouts: 32 }, sprt: Some(sprt), ..spec(40) };
        board.submit(strong.clone(), Some(7), 1).unwrap();
        let never = board.count(1, 0, "w", play(&strong, 0)).unwrap_err().to_string();
        assert!(never.contains("pair 0: never handed out"), "{never}");
        assert_eq!(board.get(1).unwrap().pentanomial, [0; 5], "a refused pair changes nothing");
        let mut gate = None;
        for pair in 0..40 {
            assert_eq!(board.take("w", &[], &|_| true).unwrap().assignment.map(|a| a.pair), Some(pair));
            let counted = board.count(1, pair, "w", play(&strong, pair)).unwrap();
            if counted.gate.is_some() {
                gate = counted.gate;
                break;
            }
        }
        assert_eq!(gate, Some((7, true)));
        assert_eq!(board.get(1).unwrap().state, v1::MatchState::H1 as i32);
        assert_eq!(
            board.take("w", &[], &|_| true).unwrap().assignment.map(|a| a.pair),
            None,
            "a decided job hands out nothing"
        );
        let late = board.get(1).unwrap();
        let counted = board.count(1, 39, "w", play(&strong, 39)).unwrap();
        assert!(!counted.counted && counted.gate.is_none(), "a pair in flight at the decision counts nothing");
        assert_eq!(board.get(1).unwrap(), late);
        assert!(read_games(dir.path()).unwrap().iter().all(|r| r.pair != 39));

        // A rung's match goes only to workers with Fairy-Stockfish.
        let rung = MatchSpec::new("R0".parse().unwrap(), "material@4".parse().unwrap(), 1);
        board.submit(rung, Some(8), 2).unwrap();
        assert!(board.take("w", &[], &|_| true).unwrap().assignment.is_none());
        let can = ["fairy-stockfish".to_string()];
        let mut gates = Vec::new();
        for _ in 0..=MAX_HANDED {
            let Taken { assignment, failed_gates } = board.take("w", &can, &|_| false).unwrap();
            gates.extend(failed_gates);
            assert!(assignment.is_none_or(|a| (a.match_id, a.pair) == (2, 0)));
        }
        assert_eq!(gates, [(8, false)]);

        // A pair given back by the worker that could not play it goes out again at once, and
        // counts towards the times it may go out.
        let other = tempfile::tempdir().unwrap();
        let mut board = Board::open(other.path()).unwrap();
        board.submit(spec(2), None, 3).unwrap();
        let take =
            |board: &mut Board, worker: &str| board.take(worker, &[], &|_| true).unwrap().assignment.map(|a| a.pair);
        assert_eq!(take(&mut board, "w1"), Some(0));
        board.give_back("w2", 1, 0);
        assert_eq!(take(&mut board, "w2"), Some(1), "another worker's lease stays");
        board.give_back("w1", 1, 0);
        assert_eq!(take(&mut board, "w2"), Some(0));
        for _ in 0..MAX_HANDED - 2 {
            board.give_back("w2", 1, 0);
            assert_eq!(take(&mut board, "w2"), Some(0));
        }
        board.give_back("w2", 1, 0);
        assert_eq!(take(&mut board, "w2"), None, "handed out {MAX_HANDED} times: the job fails");
        assert_eq!(board.get(1).unwrap().state, v1::MatchState::Failed as i32);
        let failed = Board::open(dir.path()).unwrap().get(2).unwrap();
        assert_eq!(failed.state, v1::MatchState::Failed as i32);
        assert!(failed.failure.contains("handed out 5 times"), "{}", failed.failure);
    }
}
