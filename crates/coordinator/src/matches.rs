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
//! passes to the new worker), and so is one its worker gives back: when it stops, untried, or
//! because it could not play it, with the reason why. Only those reported failures count: a pair
//! that [`MAX_FAILURES`] workers reported they could not play fails its job, with the last reason
//! in the job's `failure`; a lease that passed on from a silent worker, or a pair given back
//! untried, does not count, so that pre-empted or stopped workers never fail a match (nor refuse
//! the model it gates).
//! Leases live in memory: after a restart the pairs in flight are handed out again, and a pair
//! played under a lease from before the restart is refused.
//!
//! Each job keeps its standing as the API shows it ([`v1::MatchJob`]: counts, Elo, LLR), rebuilt
//! only when a pair is counted or its state changes, so that listing the jobs (the dashboard, `xqz
//! eval jobs`) solves no job's statistics again.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use xqz_arena::MatchResult;
use xqz_arena::job::{Contestant, JobError, MAX_PAIRS, MAX_PLAYOUTS, MatchSpec};
use xqz_arena::records::{MatchLog, PGN_FILE, RECORDS_DIR, TABLE_FILE, read_games};
use xqz_arena::stats::{MODEL_MATCHES, Pentanomial, Sprt, SprtState};
use xqz_arena::tournament::MatchGame;
use xqz_proto::v1;

use crate::audit::{Audit, Intake};
use crate::error::CoordinatorError;
use crate::registry::write_atomic;

/// The jobs file in the data folder.
const MATCHES_FILE: &str = xqz_run_folder::CoordinatorFolder::MATCHES;
/// Times workers report that they could not play a pair before its job fails: a pair that makes
/// every worker fail (an engine that crashes on its opening) must not go round for ever.
pub(crate) const MAX_FAILURES: u32 = 5;
/// The audit ledger's name in a backup: its file name in the data folder.
pub(crate) const LEDGER_FILE: &str = "audit.jsonl";
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
    /// announced model accepts H1 of this test, never if it accepts H0. The match plays
    /// [`Evaluation::gate_pairs`] pairs at most; one still undecided then passes if its LLR is
    /// positive ([`Sprt::decide_truncated`]).
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

    /// Pairs of an anchor match, or of the match against the previous model without a gate.
    fn pairs(&self) -> u32 {
        if self.previous_pairs > 0 { self.previous_pairs } else { 100 }
    }

    /// The most pairs of a gating match: sized to its test, not to `previous_pairs` (unless that
    /// is more), so that a real gain is not refused for want of pairs: [`Sprt::truncation`] on
    /// the shape of the project's model matches ([`MODEL_MATCHES`]), three times the pairs the
    /// SPRT takes on average when H1 holds, at most [`MAX_PAIRS`]. None without a gate.
    pub fn gate_pairs(&self) -> Option<u32> {
        let sized = |sprt: &Sprt| sprt.truncation(&MODEL_MATCHES).min(u64::from(MAX_PAIRS)) as u32;
        self.gate.as_ref().map(|sprt| sized(sprt).max(self.previous_pairs.min(MAX_PAIRS)))
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
            let pairs = self.gate_pairs().unwrap_or_else(|| self.pairs());
            let spec = MatchSpec { sprt: self.gate, ..MatchSpec::new(new.clone(), old, pairs) };
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
    /// Pairs handed out at least once (since the start).
    handed: BTreeSet<u32>,
    /// Times workers reported that they could not play each pair.
    failures: BTreeMap<u32, u32>,
    /// The job as the API shows it, but for `pairs_in_flight` (see [`Job::to_wire`]).
    view: v1::MatchJob,
    /// No pair below this was never handed out (since the start).
    fresh: u32,
    /// The match table, opened at the first pair counted.
    log: Option<MatchLog>,
}

impl Job {
    fn new(stored: StoredJob) -> Job {
        let mut job = Job {
            stored,
            counted: BTreeMap::new(),
            games: MatchResult::default(),
            pairs: Pentanomial::default(),
            leases: BTreeMap::new(),
            handed: BTreeSet::new(),
            failures: BTreeMap::new(),
            view: v1::MatchJob::default(),
            fresh: 0,
            log: None,
        };
        job.refresh();
        job
    }

    fn match_id(&self) -> String {
        match_id(self.stored.id)
    }

    /// Counts a pair's scores (the view is rebuilt by the caller, once for many pairs).
    fn add(&mut self, pair: u32, scores: [f64; 2]) {
        scores.iter().for_each(|&score| self.games.record_score(score));
        self.pairs.add_pair(scores[0], scores[1]);
        self.counted.insert(pair, scores);
    }

    /// Moves the job to `state`: no pair is in flight once it no longer runs.
    fn set_state(&mut self, state: JobState) {
        if state != JobState::Running {
            self.leases.clear();
        }
        self.stored.state = state;
        self.refresh();
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

    /// Whether the model this job gates passes, once the job has ended: H1, or its pairs ran out
    /// with a positive LLR ([`Sprt::decide_truncated`]); H0 and a failed job refuse it.
    fn passes(&self) -> bool {
        match self.stored.state {
            JobState::H1 => true,
            JobState::Finished => self.stored.spec.sprt.is_some_and(|sprt| sprt.llr(&self.pairs) > 0.0),
            JobState::Running | JobState::H0 | JobState::Failed(_) => false,
        }
    }

    /// The job as the API shows it: the cached view with the pairs in flight now.
    fn to_wire(&self) -> v1::MatchJob {
        v1::MatchJob { pairs_in_flight: self.leases.len() as u32, ..self.view.clone() }
    }

    /// Rebuilds the cached view from the counts and the state.
    fn refresh(&mut self) {
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
        self.view = v1::MatchJob {
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
            pairs_in_flight: 0,
            failure: match &self.stored.state {
                JobState::Failed(why) => why.clone(),
                _ => String::new(),
            },
            created_ms: self.stored.created_ms,
            gates_model: self.stored.gates_model.unwrap_or(0),
            // The workers and the audits: the board's (`Board::view`).
            ..Default::default()
        };
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
                job.refresh();
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
        board.judge_running()
    }

    /// The board with every running job judged from its counts: a crash between the write of a
    /// deciding pair and the save of its job's state left it running. Its gate is settled by
    /// [`settle_gates`](crate::evaluation::settle_gates), as every ended gate is at the start.
    fn judge_running(mut self) -> Result<Board, CoordinatorError> {
        let mut changed = false;
        for job in self.jobs.iter_mut().filter(|j| j.stored.state == JobState::Running) {
            let state = job.judged();
            if state != JobState::Running {
                tracing::info!(match_id = job.stored.id, state = ?state, "a match decided before a restart is ended");
                job.set_state(state);
                changed = true;
            }
        }
        if changed {
            self.store()?;
        }
        Ok(self)
    }

    /// The files that keep the board, as (name, contents) in the order a backup stores them:
    /// the jobs file, then the match table, its listing and the audit ledger (which worker played
    /// each pair, and the quarantines), those that exist. Read under the
    /// board's lock, they agree: the table holds every pair the jobs file's states were judged
    /// from, and no pair of a job the jobs file lacks.
    pub fn files(&self) -> Result<Vec<(String, Vec<u8>)>, CoordinatorError> {
        let records = self.data_dir.join(RECORDS_DIR);
        let mut files = Vec::new();
        for (name, path) in [
            (MATCHES_FILE, self.data_dir.join(MATCHES_FILE)),
            (TABLE_FILE, records.join(TABLE_FILE)),
            (PGN_FILE, records.join(PGN_FILE)),
            (LEDGER_FILE, self.data_dir.join(xqz_run_folder::CoordinatorFolder::AUDIT_LEDGER)),
        ] {
            match fs::read(&path) {
                Ok(bytes) => files.push((name.to_string(), bytes)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(source) => return Err(CoordinatorError::Io { path, source }),
            }
        }
        Ok(files)
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
    /// `alive` tells which workers still hold their leases; a pair held for its audit goes to
    /// another worker first.
    pub fn take(&mut self, worker: &str, can_play: &[String], alive: &dyn Fn(&str) -> bool) -> Option<Assignment> {
        if let Some(copy) = self.take_copy(worker, alive) {
            return Some(copy);
        }
        let audit = &self.audit;
        for job in self.jobs.iter_mut().filter(|j| j.stored.state == JobState::Running) {
            if !job.stored.spec.needs().all(|need| can_play.iter().any(|c| c == need)) {
                continue;
            }
            let id = job.stored.id;
            let Some(pair) = job.next_pair(alive, &|pair| audit.holds(id, pair)) else { continue };
            job.handed.insert(pair);
            job.leases.insert(pair, Lease { worker: worker.to_string() });
            return Some(Assignment { match_id: job.stored.id, pair, spec: job.stored.spec.clone() });
        }
        None
    }

    /// Ends `worker`'s lease of pair `pair` of job `id`, so that the pair goes out again (to
    /// whoever asks next, which may be `worker`); another worker's lease stays. With a `failure`
    /// (why `worker` could not play it) the pair's reported failures grow, and at
    /// [`MAX_FAILURES`] its job fails with that reason; without one (a worker that stops gives
    /// back a pair it has not played) nothing is counted. Returns the model whose gating match
    /// failed, refused (the second value false), if one did.
    pub fn give_back(
        &mut self,
        worker: &str,
        id: u64,
        pair: u32,
        failure: Option<&str>,
    ) -> Result<Option<(u64, bool)>, CoordinatorError> {
        self.audit.give_back(worker, id, pair);
        let Some(job) = self.job_mut(id) else { return Ok(None) };
        if job.leases.get(&pair).is_none_or(|lease| lease.worker != worker) {
            return Ok(None);
        }
        job.leases.remove(&pair);
        job.fresh = job.fresh.min(pair);
        let Some(reason) = failure else { return Ok(None) };
        let failures = job.failures.entry(pair).or_default();
        *failures += 1;
        if *failures < MAX_FAILURES {
            return Ok(None);
        }
        let why = format!("pair {pair} failed on workers {MAX_FAILURES} times; the last, {worker}: {reason}");
        job.set_state(JobState::Failed(why));
        let gate = job.stored.gates_model.map(|model| (model, false));
        self.store()?;
        Ok(gate)
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
            None if job.handed.contains(&pair) => {
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
        let state = job.judged();
        let gate = if state == JobState::Running {
            job.refresh();
            None
        } else {
            job.set_state(state);
            let gate = job.stored.gates_model.map(|model| (model, job.passes()));
            self.store()?;
            gate
        };
        self.audit.credit((id, pair), scores);
        Ok(Counted { counted: true, gate })
    }

    /// Job `id` as the API shows it.
    pub fn get(&self, id: u64) -> Option<v1::MatchJob> {
        self.job(id).map(|job| self.view(job))
    }

    /// Up to `size` jobs, newest first, from job `from` down (`None`: from the newest), and the
    /// job the next page starts from (`None`: this page holds the oldest).
    pub fn page(&self, from: Option<u64>, size: usize) -> (Vec<v1::MatchJob>, Option<u64>) {
        let end = from.map_or(self.jobs.len(), |id| (id as usize).min(self.jobs.len()));
        let start = end.saturating_sub(size);
        let jobs = self.jobs[start..end].iter().rev().map(|job| self.view(job)).collect();
        (jobs, (start > 0).then_some(start as u64))
    }

    /// How many jobs there are, finished ones included.
    pub fn len(&self) -> usize {
        self.jobs.len()
    }

    /// `job` as the API shows it, with its workers and audits.
    fn view(&self, job: &Job) -> v1::MatchJob {
        let mut wire = job.to_wire();
        self.audit.annotate(&mut wire);
        wire
    }

    /// Queues the matches `evaluation` asks for once `model` is published; `previous` is the
    /// newest model announced before it. A match that cannot be queued is logged and left out;
    /// the error is returned if it is the gating match, which
    /// [`settle_gates`](crate::evaluation::settle_gates) queues again.
    pub fn queue_for(
        &mut self,
        evaluation: &Evaluation,
        model: u64,
        previous: Option<u64>,
        now_ms: i64,
    ) -> Result<(), SubmitError> {
        let mut gating = Ok(());
        for (spec, gates) in evaluation.matches_for(model, previous) {
            let (a, b) = (spec.a.name(), spec.b.name());
            match self.submit(spec, gates, now_ms) {
                Ok(job) => {
                    tracing::info!(match_id = job.id, a, b, gate = gates.is_some(), "match queued for the new model")
                }
                Err(e) => {
                    tracing::warn!(a, b, error = %e, "the new model's match could not be queued");
                    if gates.is_some() {
                        gating = Err(e);
                    }
                }
            }
        }
        gating
    }

    /// Queues the gating match of the held `model` against `previous` (the newest model announced
    /// before it) alone: the match it should have had. None when `evaluation` has no gate.
    pub fn queue_gate(
        &mut self,
        evaluation: &Evaluation,
        model: u64,
        previous: u64,
        now_ms: i64,
    ) -> Result<Option<u64>, SubmitError> {
        let matches = evaluation.matches_for(model, Some(previous));
        let Some((spec, gates)) = matches.into_iter().find(|(_, gates)| gates.is_some()) else {
            return Ok(None);
        };
        self.submit(spec, gates, now_ms).map(|job| Some(job.id))
    }

    /// Gated models whose match is still running.
    pub fn gating(&self) -> impl Iterator<Item = u64> + '_ {
        self.jobs.iter().filter(|j| j.stored.state == JobState::Running).filter_map(|j| j.stored.gates_model)
    }

    /// The gated models whose match ended, with whether it passed them, newest match first.
    pub fn ended_gates(&self) -> impl Iterator<Item = (u64, bool)> + '_ {
        let ended = self.jobs.iter().rev().filter(|j| j.stored.state != JobState::Running);
        ended.filter_map(|j| j.stored.gates_model.map(|model| (model, j.passes())))
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
        let gone = job.uncount(pairs);
        job.refresh();
        for (pair, scores) in gone {
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
pub(crate) mod tests {
    use xqz_arena::job::{Contestant, play_pair};
    use xqz_arena::player::SearchPlayer;
    use xqz_arena::stats::{EloModel, Sprt};
    use xqz_mcts::{MaterialEvaluator, SearchConfig, UniformEvaluator};

    use super::*;

    /// `pairs` pairs of material counting against the bare rules, 4 playouts, 40-ply games.
    pub(crate) fn spec(pairs: u32) -> MatchSpec {
        MatchSpec {
            max_plies: 40,
            material_adjudication: Some(1),
            ..MatchSpec::new(Contestant::Material { playouts: 4 }, Contestant::Uniform { playouts: 4 }, pairs)
        }
    }

    /// Plays a pair of `spec`, whose first player is material counting and second the bare rules.
    pub(crate) fn play(spec: &MatchSpec, pair: u32) -> [MatchGame; 2] {
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
    fn the_ledgers_name_in_a_backup_is_its_file_name_in_the_data_folder() {
        let ledger = std::path::Path::new(xqz_run_folder::CoordinatorFolder::AUDIT_LEDGER);
        assert_eq!(ledger.file_name().and_then(|n| n.to_str()), Some(LEDGER_FILE));
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
    fn a_gating_match_is_sized_to_its_test_not_to_the_previous_pairs() {
        let gate: Sprt = "0,10".parse().unwrap();
        let documented = Evaluation { previous_pairs: 100, gate: Some(gate), ..Evaluation::default() };
        let expected = gate.expected_pairs(&MODEL_MATCHES);
        assert!((1000.0..2500.0).contains(&expected), "{expected}");
        let pairs = documented.gate_pairs().unwrap();
        assert_eq!(pairs, (3.0 * expected).ceil() as u32);
        let queued = documented.matches_for(2, Some(1));
        assert_eq!((queued[0].0.pairs, queued[0].1), (pairs, Some(2)));
        // More pairs than the test's own cap are kept; a test too narrow to end is cut at the most.
        let longer = Evaluation { previous_pairs: 20_000, ..documented.clone() };
        assert_eq!(longer.gate_pairs(), Some(20_000));
        let narrow = Evaluation { gate: Some("0,0.1".parse().unwrap()), ..documented.clone() };
        assert_eq!(narrow.gate_pairs(), Some(MAX_PAIRS));
        // Without a gate the match against the previous model plays the previous pairs.
        let ungated = Evaluation { gate: None, ..documented };
        assert_eq!(ungated.gate_pairs(), None);
        let (previous, gates) = &ungated.matches_for(2, Some(1))[0];
        assert_eq!((previous.pairs, previous.sprt, *gates), (100, None, None));
    }

    #[test]
    fn a_gating_match_cut_at_its_cap_passes_its_model_only_on_a_positive_llr() {
        // SPRT(0, 10): four pairs reach no bound.
        let gate: Sprt = "0,10".parse().unwrap();
        let ended = |scores: &[[f64; 2]], state: Option<JobState>| {
            let spec = MatchSpec { sprt: Some(gate), ..spec(scores.len() as u32) };
            let stored = StoredJob { id: 1, spec, created_ms: 0, gates_model: Some(2), state: JobState::Running };
            let mut job = Job::new(stored);
            for (pair, scores) in scores.iter().enumerate() {
                job.add(pair as u32, *scores);
            }
            job.stored.state = state.unwrap_or_else(|| job.judged());
            job
        };
        let ahead = ended(&[[1.0, 0.5], [0.5, 0.5], [0.5, 0.0], [1.0, 0.5]], None);
        assert_eq!(ahead.stored.state, JobState::Finished);
        assert!(gate.llr(&ahead.pairs) > 0.0 && ahead.passes());
        let behind = ended(&[[0.0, 0.5], [0.5, 0.5], [0.5, 1.0], [0.0, 0.5]], None);
        assert_eq!(behind.stored.state, JobState::Finished);
        assert!(gate.llr(&behind.pairs) < 0.0 && !behind.passes());
        // A failed match refuses its model whatever its pairs say; H0 too, H1 passes.
        let scores = [[1.0, 0.5], [0.5, 0.5]];
        assert!(!ended(&scores, Some(JobState::Failed("lost".into()))).passes());
        assert!(!ended(&scores, Some(JobState::H0)).passes());
        assert!(ended(&[[0.0, 0.0]], Some(JobState::H1)).passes());
        assert!(!ended(&scores, Some(JobState::Running)).passes(), "a running match decides nothing");
    }

    #[test]
    fn a_job_decided_by_a_pair_written_before_a_crash_is_judged_at_the_start() {
        let dir = tempfile::tempdir().unwrap();
        let mut board = Board::open(dir.path()).unwrap();
        let sprt = Sprt { elo0: 0.0, elo1: 50.0, alpha: 0.2, beta: 0.2, model: EloModel::Logistic };
        let strong = MatchSpec { a: Contestant::Material { playouts: 32 }, sprt: Some(sprt), ..spec(40) };
        board.submit(strong.clone(), Some(7), 1).unwrap();
        // The jobs file is saved at the decision only: this is it before the deciding pair.
        let running = std::fs::read(dir.path().join(MATCHES_FILE)).unwrap();
        let mut decided = None;
        while decided.is_none() {
            let pair = board.take("w", &[], &|_| true).unwrap().pair;
            decided = board.count(1, pair, "w", play(&strong, pair)).unwrap().gate;
        }
        assert_eq!(decided, Some((7, true)));
        let counts = board.get(1).unwrap().pentanomial;
        drop(board);

        // The crash came after the deciding pair's games were written, before the job was saved.
        std::fs::write(dir.path().join(MATCHES_FILE), &running).unwrap();
        let board = Board::open(dir.path()).unwrap();
        let judged = board.get(1).unwrap();
        assert_eq!((judged.state, judged.pentanomial), (v1::MatchState::H1 as i32, counts));
        assert_eq!(board.gating().count(), 0);
        assert_eq!(board.ended_gates().collect::<Vec<_>>(), [(7, true)]);
        let stored = std::fs::read_to_string(dir.path().join(MATCHES_FILE)).unwrap();
        assert!(stored.contains("\"h1\""), "the judgement is saved: {stored}");
    }

    #[test]
    fn pairs_go_out_lowest_first_come_back_from_silent_workers_and_count_once_across_restarts() {
        let dir = tempfile::tempdir().unwrap();
        let mut board = Board::open(dir.path()).unwrap();
        let job = board.submit(spec(3), None, 1).unwrap();
        assert_eq!((job.id, job.state), (1, v1::MatchState::Running as i32));
        let all_alive = |_: &str| true;
        let take = |board: &mut Board, worker: &str, alive: &dyn Fn(&str) -> bool| {
            board.take(worker, &[], alive).map(|a| (a.match_id, a.pair))
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
    fn the_test_ends_a_job_and_decides_its_gate_and_a_rung_goes_only_to_workers_with_the_engine() {
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
            assert_eq!(board.take("w", &[], &|_| true).map(|a| a.pair), Some(pair));
            let counted = board.count(1, pair, "w", play(&strong, pair)).unwrap();
            if counted.gate.is_some() {
                gate = counted.gate;
                break;
            }
        }
        assert_eq!(gate, Some((7, true)));
        assert_eq!(board.get(1).unwrap().state, v1::MatchState::H1 as i32);
        assert_eq!(board.take("w", &[], &|_| true).map(|a| a.pair), None, "a decided job hands out nothing");
        let late = board.get(1).unwrap();
        let counted = board.count(1, 39, "w", play(&strong, 39)).unwrap();
        assert!(!counted.counted && counted.gate.is_none(), "a pair in flight at the decision counts nothing");
        assert_eq!(board.get(1).unwrap(), late);
        assert!(read_games(dir.path()).unwrap().iter().all(|r| r.pair != 39));

        // A rung's match goes only to workers with Fairy-Stockfish.
        let rung = MatchSpec::new("R0".parse().unwrap(), "material@4".parse().unwrap(), 1);
        board.submit(rung, Some(8), 2).unwrap();
        assert!(board.take("w", &[], &|_| true).is_none());
        let can = ["fairy-stockfish".to_string()];
        assert_eq!(board.take("w", &can, &|_| true).map(|a| (a.match_id, a.pair)), Some((2, 0)));
    }

    /// Takes the next pair of `board` for `worker`, every worker alive.
    fn take(board: &mut Board, worker: &str) -> Option<u32> {
        board.take(worker, &[], &|_| true).map(|a| a.pair)
    }

    #[test]
    fn a_pair_given_back_by_a_stopping_worker_or_lost_to_a_silent_one_never_fails_its_job() {
        let dir = tempfile::tempdir().unwrap();
        let mut board = Board::open(dir.path()).unwrap();
        board.submit(spec(2), Some(7), 1).unwrap();
        for round in 0..3 * MAX_FAILURES {
            assert_eq!(take(&mut board, "w1"), Some(0), "round {round}");
            if round % 2 == 0 {
                // The worker stops and gives the pair back untried.
                assert_eq!(board.give_back("w1", 1, 0, None).unwrap(), None);
            } else {
                // The worker falls silent: its lease passes on.
                assert_eq!(board.take("w2", &[], &|w| w != "w1").map(|a| a.pair), Some(0));
                assert_eq!(board.give_back("w2", 1, 0, None).unwrap(), None);
            }
        }
        let job = board.get(1).unwrap();
        assert_eq!((job.state, job.failure.as_str()), (v1::MatchState::Running as i32, ""));
        assert_eq!(take(&mut board, "w1"), Some(0));
        assert!(board.count(1, 0, "w1", play(&spec(2), 0)).unwrap().counted);
    }

    #[test]
    fn five_reported_failures_fail_the_job_and_its_gate_with_the_last_reason() {
        let dir = tempfile::tempdir().unwrap();
        let mut board = Board::open(dir.path()).unwrap();
        board.submit(spec(2), Some(7), 1).unwrap();
        assert_eq!(take(&mut board, "w1"), Some(0));
        assert_eq!(board.give_back("w2", 1, 0, Some("not mine")).unwrap(), None);
        assert_eq!(take(&mut board, "w2"), Some(1), "another worker's give-back leaves the lease");
        for n in 1..MAX_FAILURES {
            let reason = format!("model v3 would not download ({n})");
            assert_eq!(board.give_back("w1", 1, 0, Some(&reason)).unwrap(), None);
            assert_eq!(take(&mut board, "w1"), Some(0), "a failed pair goes out again at once");
        }
        assert_eq!(board.get(1).unwrap().state, v1::MatchState::Running as i32);
        let gate = board.give_back("w1", 1, 0, Some("the engine crashed on its opening")).unwrap();
        assert_eq!(gate, Some((7, false)), "the gated model is refused");
        let failed = board.get(1).unwrap();
        assert_eq!((failed.state, failed.pairs_in_flight), (v1::MatchState::Failed as i32, 0));
        assert!(failed.failure.contains("pair 0 failed on workers 5 times"), "{}", failed.failure);
        assert!(failed.failure.ends_with("w1: the engine crashed on its opening"), "{}", failed.failure);
        assert_eq!(take(&mut board, "w1"), None);
        assert!(!board.count(1, 1, "w2", play(&spec(2), 1)).unwrap().counted, "its pairs in flight count nothing");
        drop(board);
        let reopened = Board::open(dir.path()).unwrap();
        assert_eq!(reopened.get(1).unwrap(), failed, "the failure is kept");
        assert_eq!(reopened.ended_gates().collect::<Vec<_>>(), [(7, false)]);
    }

    #[test]
    fn pages_list_the_jobs_newest_first_with_their_standing_as_it_changes() {
        let dir = tempfile::tempdir().unwrap();
        let mut board = Board::open(dir.path()).unwrap();
        for created in 1..=5 {
            board.submit(spec(2), None, created).unwrap();
        }
        let ids = |page: &[v1::MatchJob]| page.iter().map(|j| j.id).collect::<Vec<_>>();
        let (first, next) = board.page(None, 2);
        assert_eq!((ids(&first), next), (vec![5, 4], Some(3)));
        let (second, next) = board.page(next, 2);
        assert_eq!((ids(&second), next), (vec![3, 2], Some(1)));
        let (last, next) = board.page(next, 2);
        assert_eq!((ids(&last), next), (vec![1], None));
        assert_eq!(ids(&board.page(None, 10).0), [5, 4, 3, 2, 1]);
        assert_eq!(ids(&board.page(Some(99), 1).0), [5], "a start past the newest starts at the newest");

        // The standing follows the pairs in flight and the counts.
        assert_eq!(take(&mut board, "w"), Some(0));
        assert_eq!(board.page(Some(1), 1).0[0].pairs_in_flight, 1);
        board.count(1, 0, "w", play(&spec(2), 0)).unwrap();
        let job = board.get(1).unwrap();
        assert_eq!((job.pairs_in_flight, job.wins + job.draws + job.losses), (0, 2));
        assert_eq!(job.pentanomial.iter().sum::<u64>(), 1);
        assert_eq!(Board::open(dir.path()).unwrap().get(1).unwrap(), job, "rebuilt the same from the table");
    }
}
