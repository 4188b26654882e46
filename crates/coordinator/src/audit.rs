//! Audits of match pairs: a lease holder could send legal games that are not the match's (its
//! model blundering on purpose) and pass or fail a gate; the players of a match are
//! deterministic ([`MatchSpec::reproducible`]), so a second worker that plays the same pair must
//! play the same moves.
//!
//! A share of the pairs of each reproducible match ([`Evaluation::audit_share`](crate::Evaluation),
//! drawn from the job and pair number alone, so the same pairs on every start) is held when it
//! comes in and handed, unmarked, to another live worker. Copies that agree move for move count
//! once; two that differ go to a third worker, and the odd one out is quarantined (all three
//! different: inconclusive, nobody blamed, the lease holder's copy counts). A quarantined worker's
//! counted pairs of running matches are discarded (from the counts and the match table) and played
//! again, and its `TakePair` and `SubmitPair` are refused with `PERMISSION_DENIED`. Where no other
//! live worker could play a copy (a cluster of one), a pair counts unaudited, and a held pair
//! whose auditors all fell silent goes back to be played again.
//!
//! Each counted pair remembers the worker that played it, for the per-worker figures of a match
//! (fishtest's: each worker's pentanomial and its residual,
//! [`Pentanomial::residual`](xqz_arena::stats::Pentanomial::residual)).
//!
//! What is decided is kept in the audit ledger, `eval/audit.jsonl` of the data folder
//! ([`CoordinatorFolder::audit_ledger`](xqz_run_folder::CoordinatorFolder::audit_ledger)): one
//! JSON line per event, appended and synced before the event takes effect; a torn last line (a
//! crash mid-write) is skipped and cut off. Who played each pair, the audits' verdicts and the
//! quarantines are rebuilt from it at start-up; held copies live in memory, like leases, and
//! after a restart their pairs are played again.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};
use xqz_arena::stats::Pentanomial;
use xqz_arena::tournament::MatchGame;
use xqz_proto::v1;
use xqz_run_folder::CoordinatorFolder;

use crate::error::{CoordinatorError, IoAt};

/// The share of pairs audited unless the settings say otherwise.
pub const DEFAULT_SHARE: f64 = 0.05;

/// A worker's residual past this many standard errors is marked in the views.
pub const RESIDUAL_MARK: f64 = 3.0;

/// Whether pair `pair` of job `job` is audited at `share`: a hash of the two against the share,
/// the same on every start and for every worker.
pub(crate) fn drawn(share: f64, job: u64, pair: u32) -> bool {
    // SplitMix64's finalizer over the job and pair: well mixed, and any share is exact in mean.
    let mut z = job.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ (u64::from(pair) << 1 | 1);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    share >= 1.0 || ((z >> 11) as f64 / (1u64 << 53) as f64) < share
}

/// Pairs by job and pair number.
type PairList = Vec<(u64, u32)>;

/// One line of the ledger.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Entry {
    /// Pair `pair` of job `job` is being counted from `worker`'s games (written before the match
    /// table; the last line of a pair is the one that counts).
    Counted { job: u64, pair: u32, worker: String },
    /// Two copies agreed.
    Agreed { job: u64, pair: u32, workers: Vec<String> },
    /// Three copies all differed.
    Inconclusive { job: u64, pair: u32, workers: Vec<String> },
    /// `worker` was quarantined for its copy of `pair` of `job`; its counted pairs of running
    /// jobs, `discarded`, no longer count (until a later `Counted` of the pair).
    Quarantined { worker: String, job: u64, pair: u32, why: String, at_ms: i64, discarded: Vec<(u64, u32)> },
    /// The operator lifted `worker`'s quarantine.
    Lifted { worker: String, at_ms: i64 },
}

/// The ledger file, appended line by line.
struct Ledger {
    path: PathBuf,
    /// Opened at the first append.
    file: Option<File>,
}

impl Ledger {
    /// Reads the ledger of `data_dir`, cutting off a torn last line.
    fn open(data_dir: &Path) -> Result<(Ledger, Vec<Entry>), CoordinatorError> {
        let path = CoordinatorFolder::new(data_dir).audit_ledger();
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
            Err(source) => return Err(CoordinatorError::Io { path, source }),
        };
        let whole = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |at| at + 1);
        let mut entries = Vec::new();
        for (number, line) in bytes[..whole].split(|&b| b == b'\n').enumerate().filter(|(_, l)| !l.is_empty()) {
            let entry = serde_json::from_slice(line).map_err(|e| CoordinatorError::Corrupt {
                path: path.clone(),
                message: format!("line {}: {e}", number + 1),
            })?;
            entries.push(entry);
        }
        if whole < bytes.len() {
            tracing::warn!(path = %path.display(), bytes = bytes.len() - whole, "the audit ledger's torn last line is skipped");
            let file = OpenOptions::new().write(true).open(&path).at(&path)?;
            file.set_len(whole as u64).and_then(|()| file.sync_all()).at(&path)?;
        }
        Ok((Ledger { path, file: None }, entries))
    }

    /// Appends `entry` and syncs it; on a failure the ledger is cut back to what it held.
    fn append(&mut self, entry: &Entry) -> Result<(), CoordinatorError> {
        let path = &self.path;
        if self.file.is_none() {
            let dir = path.parent().expect("the ledger is in a folder");
            fs::create_dir_all(dir).at(dir)?;
            let created = !path.exists();
            self.file = Some(OpenOptions::new().create(true).append(true).open(path).at(path)?);
            if created {
                File::open(dir).and_then(|d| d.sync_all()).at(dir)?;
            }
        }
        let file = self.file.as_mut().expect("opened above");
        let before = file.metadata().at(path)?.len();
        let mut line = serde_json::to_vec(entry).expect("ledger entries serialise");
        line.push(b'\n');
        let written = file.write_all(&line).and_then(|()| file.sync_data());
        if written.is_err() {
            // A partial line would glue onto the next one.
            drop(file.set_len(before));
        }
        written.at(path)
    }
}

/// A copy of a held pair and who played it.
struct Copy {
    worker: String,
    games: [MatchGame; 2],
}

/// A pair held for its audit.
struct Held {
    /// One or two copies that disagree.
    copies: Vec<Copy>,
    /// The worker playing the next copy.
    lease: Option<String>,
}

/// What to do with a pair that came in ([`Audit::intake`]).
pub(crate) enum Intake {
    /// Count these games, played by this worker.
    Count(String, [MatchGame; 2]),
    /// Held for another worker's copy; nothing counts yet.
    Held,
    /// A copy this worker handed in before: nothing changes.
    Again,
    /// Quarantine `worker` (why), then count the games the other two agreed on.
    Quarantine { worker: String, why: String, count: (String, [MatchGame; 2]) },
}

/// The audits of a coordinator's matches; see the module docs.
pub(crate) struct Audit {
    share: f64,
    ledger: Ledger,
    /// Who played each pair counted (or being counted).
    played_by: BTreeMap<(u64, u32), String>,
    /// Each job's counted pairs by the worker that played them.
    per_worker: BTreeMap<u64, BTreeMap<String, Pentanomial>>,
    /// Quarantined workers and why.
    quarantined: BTreeMap<String, String>,
    /// Each job's quarantines, as shown.
    verdicts: BTreeMap<u64, Vec<v1::Quarantine>>,
    agreed: BTreeMap<u64, u32>,
    inconclusive: BTreeMap<u64, u32>,
    held: BTreeMap<(u64, u32), Held>,
    /// Workers that asked for pairs and were alive when the last one asked.
    live: BTreeSet<String>,
    /// Pairs discarded by a quarantine and not counted since, as the ledger says at start-up.
    void: BTreeSet<(u64, u32)>,
}

impl Audit {
    /// The audits of `data_dir` at `share`, rebuilt from its ledger.
    pub fn open(data_dir: &Path, share: f64) -> Result<Audit, CoordinatorError> {
        let (ledger, entries) = Ledger::open(data_dir)?;
        let mut audit = Audit {
            share,
            ledger,
            played_by: BTreeMap::new(),
            per_worker: BTreeMap::new(),
            quarantined: BTreeMap::new(),
            verdicts: BTreeMap::new(),
            agreed: BTreeMap::new(),
            inconclusive: BTreeMap::new(),
            held: BTreeMap::new(),
            live: BTreeSet::new(),
            void: BTreeSet::new(),
        };
        for entry in entries {
            audit.apply(entry);
        }
        Ok(audit)
    }

    /// Takes an entry's effect on the state (at start-up, or once it is in the ledger).
    fn apply(&mut self, entry: Entry) {
        match entry {
            Entry::Counted { job, pair, worker } => {
                self.void.remove(&(job, pair));
                self.played_by.insert((job, pair), worker);
            }
            Entry::Agreed { job, .. } => *self.agreed.entry(job).or_default() += 1,
            Entry::Inconclusive { job, .. } => *self.inconclusive.entry(job).or_default() += 1,
            Entry::Quarantined { worker, job, pair: _, why, at_ms, discarded } => {
                let mut by_job: BTreeMap<u64, u32> = BTreeMap::from([(job, 0)]);
                for &(job, pair) in &discarded {
                    *by_job.entry(job).or_default() += 1;
                    self.void.insert((job, pair));
                }
                for (job, pairs_discarded) in by_job {
                    let verdict =
                        v1::Quarantine { worker_id: worker.clone(), why: why.clone(), pairs_discarded, at_ms };
                    self.verdicts.entry(job).or_default().push(verdict);
                }
                self.live.remove(&worker);
                self.quarantined.insert(worker, why);
            }
            Entry::Lifted { worker, .. } => {
                self.quarantined.remove(&worker);
            }
        }
    }

    /// Writes `entry` to the ledger, then takes its effect.
    fn record(&mut self, entry: Entry) -> Result<(), CoordinatorError> {
        self.ledger.append(&entry)?;
        self.apply(entry);
        Ok(())
    }

    /// The pairs that a quarantine discarded and that the match table may still hold (a crash
    /// between the ledger and the table), once, at start-up.
    pub fn take_void(&mut self) -> BTreeSet<(u64, u32)> {
        std::mem::take(&mut self.void)
    }

    /// Why `worker` is quarantined, if it is.
    pub fn quarantined(&self, worker: &str) -> Option<&str> {
        self.quarantined.get(worker).map(String::as_str)
    }

    /// Lifts `worker`'s quarantine (the operator's call: its pairs that were discarded stay so).
    /// False if it was not quarantined.
    pub fn lift(&mut self, worker: &str, now_ms: i64) -> Result<bool, CoordinatorError> {
        if !self.quarantined.contains_key(worker) {
            return Ok(false);
        }
        self.record(Entry::Lifted { worker: worker.to_string(), at_ms: now_ms })?;
        Ok(true)
    }

    /// Notes that `worker` asked for a pair, and forgets the askers no longer `alive`.
    pub fn observe(&mut self, worker: &str, alive: &dyn Fn(&str) -> bool) {
        self.live.insert(worker.to_string());
        self.live.retain(|w| alive(w));
    }

    /// Whether some live worker other than those of `copies` could play a copy.
    fn auditor_for(&self, played: &[&str]) -> bool {
        self.live.iter().any(|w| !played.contains(&w.as_str()) && !self.quarantined.contains_key(w))
    }

    /// Whether pair `pair` of job `job` is held for its audit (not to be handed out as a pair).
    pub fn holds(&self, job: u64, pair: u32) -> bool {
        self.held.contains_key(&(job, pair))
    }

    /// Whether `worker` may hand in pair `pair` of job `job` as a copy: it holds the copy's lease,
    /// or handed in a copy of it before (a retry).
    pub fn may_hand_in(&self, job: u64, pair: u32, worker: &str) -> bool {
        self.held
            .get(&(job, pair))
            .is_some_and(|held| held.lease.as_deref() == Some(worker) || held.copies.iter().any(|c| c.worker == worker))
    }

    /// Gives back `worker`'s lease of a copy it could not play.
    pub fn give_back(&mut self, worker: &str, job: u64, pair: u32) {
        if let Some(held) = self.held.get_mut(&(job, pair))
            && held.lease.as_deref() == Some(worker)
        {
            held.lease = None;
        }
    }

    /// A held pair for `worker` to play a copy of, its lease passed to it: one of a `running` job
    /// that it has not played and whose copy nobody `alive` is playing.
    pub fn next_copy(
        &mut self,
        worker: &str,
        alive: &dyn Fn(&str) -> bool,
        running: &dyn Fn(u64) -> bool,
    ) -> Option<(u64, u32)> {
        let (&key, held) = self.held.iter_mut().find(|((job, _), held)| {
            running(*job)
                && held.copies.iter().all(|c| c.worker != worker)
                && held.lease.as_deref().is_none_or(|l| l == worker || !alive(l))
        })?;
        held.lease = Some(worker.to_string());
        Some(key)
    }

    /// Drops the held pairs of jobs no longer `running`, and those that no live worker could play
    /// a copy of any more; returns the latter, to be played again from the start.
    pub fn release_stranded(&mut self, alive: &dyn Fn(&str) -> bool, running: &dyn Fn(u64) -> bool) -> Vec<(u64, u32)> {
        let stranded: Vec<(u64, u32)> = self
            .held
            .iter()
            .filter(|&(&(job, _), held)| {
                let played: Vec<&str> = held.copies.iter().map(|c| c.worker.as_str()).collect();
                !running(job) || (held.lease.as_deref().is_none_or(|l| !alive(l)) && !self.auditor_for(&played))
            })
            .map(|(&key, _)| key)
            .collect();
        for key in &stranded {
            self.held.remove(key);
        }
        stranded.into_iter().filter(|&(job, _)| running(job)).collect()
    }

    /// What to do with pair `pair` of job `job`, whose games (checked) `worker` hands in: the
    /// lease holder's first copy, or a copy of a held pair. `reproducible`: the match's players
    /// are ([`MatchSpec::reproducible`](xqz_arena::job::MatchSpec::reproducible)).
    pub fn intake(
        &mut self,
        (job, pair): (u64, u32),
        worker: &str,
        games: [MatchGame; 2],
        reproducible: bool,
    ) -> Result<Intake, CoordinatorError> {
        let Some(held) = self.held.get(&(job, pair)) else {
            let audited = reproducible && drawn(self.share, job, pair) && self.auditor_for(&[worker]);
            if !audited {
                return Ok(Intake::Count(worker.to_string(), games));
            }
            let copy = Copy { worker: worker.to_string(), games };
            self.held.insert((job, pair), Held { copies: vec![copy], lease: None });
            return Ok(Intake::Held);
        };
        if held.copies.iter().any(|c| c.worker == worker) {
            return Ok(Intake::Again);
        }
        let same = |copy: &Copy| copy.games.iter().zip(&games).all(|(a, b)| a.moves == b.moves);
        let agrees: Vec<bool> = held.copies.iter().map(same).collect();
        let mut workers: Vec<String> = held.copies.iter().map(|c| c.worker.clone()).collect();
        workers.push(worker.to_string());
        if held.copies.len() == 1 && !agrees[0] {
            let played: Vec<&str> = workers.iter().map(String::as_str).collect();
            if self.auditor_for(&played) {
                let held = self.held.get_mut(&(job, pair)).expect("found above");
                held.copies.push(Copy { worker: worker.to_string(), games });
                held.lease = None;
                tracing::info!(match_id = job, pair, workers = ?workers, "two copies of an audited pair differ; a third worker plays it");
                return Ok(Intake::Held);
            }
        }
        let held = self.held.remove(&(job, pair)).expect("found above");
        let mut copies = held.copies.into_iter();
        let first = copies.next().expect("a held pair has a copy");
        let (odd, kept) = match (copies.next(), agrees.as_slice()) {
            (None, [true]) => {
                self.record(Entry::Agreed { job, pair, workers })?;
                return Ok(Intake::Count(first.worker, first.games));
            }
            (Some(second), [true, false]) => (second.worker, first),
            (Some(second), [false, true]) => (first.worker, second),
            // Three different copies, or two with nobody left to play a third.
            _ => {
                tracing::warn!(match_id = job, pair, workers = ?workers, "an audit is inconclusive: the copies differ; the lease holder's counts");
                self.record(Entry::Inconclusive { job, pair, workers })?;
                return Ok(Intake::Count(first.worker, first.games));
            }
        };
        let why = format!(
            "its copy of pair {pair} of match {job} differs from those of {} and {worker}, which agree move for move",
            kept.worker
        );
        Ok(Intake::Quarantine { worker: odd, why, count: (kept.worker, kept.games) })
    }

    /// Quarantines `worker` for its copy of pair `pair` of job `job`, discarding its pairs among
    /// `counted` (the counted pairs of the running jobs). Returns the pairs discarded and the held
    /// pairs let go (its first copies), each to be played again.
    pub fn quarantine(
        &mut self,
        worker: &str,
        (job, pair): (u64, u32),
        why: String,
        counted: &BTreeMap<u64, BTreeSet<u32>>,
    ) -> Result<(PairList, PairList), CoordinatorError> {
        let now_ms = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64);
        let discarded: Vec<(u64, u32)> = self
            .played_by
            .iter()
            .filter(|&(&(job, pair), w)| w == worker && counted.get(&job).is_some_and(|pairs| pairs.contains(&pair)))
            .map(|(&key, _)| key)
            .collect();
        tracing::warn!(
            worker,
            match_id = job,
            pair,
            why,
            discarded = discarded.len(),
            "worker quarantined by an audit"
        );
        let entry = Entry::Quarantined {
            worker: worker.to_string(),
            job,
            pair,
            why,
            at_ms: now_ms,
            discarded: discarded.clone(),
        };
        self.record(entry)?;
        // The caller discards them now; the void is for a start-up after a crash in between.
        self.void.clear();
        let mut released = Vec::new();
        self.held.retain(|&key, held| {
            held.copies.retain(|c| c.worker != worker);
            if held.lease.as_deref() == Some(worker) {
                held.lease = None;
            }
            let keep = !held.copies.is_empty();
            if !keep {
                released.push(key);
            }
            keep
        });
        Ok((discarded, released))
    }

    /// Notes before its games are written that pair `pair` of job `job` counts as `worker`'s.
    pub fn attribute(&mut self, (job, pair): (u64, u32), worker: &str) -> Result<(), CoordinatorError> {
        self.record(Entry::Counted { job, pair, worker: worker.to_string() })
    }

    /// Adds a counted pair (the first player's `scores`) to its worker's figures.
    pub fn credit(&mut self, (job, pair): (u64, u32), scores: [f64; 2]) {
        if let Some(worker) = self.played_by.get(&(job, pair)) {
            let figures = self.per_worker.entry(job).or_default().entry(worker.clone()).or_default();
            figures.add_pair(scores[0], scores[1]);
        }
    }

    /// Takes a discarded pair out of its worker's figures.
    pub fn debit(&mut self, (job, pair): (u64, u32), scores: [f64; 2]) {
        let mut one = Pentanomial::default();
        one.add_pair(scores[0], scores[1]);
        if let Some(worker) = self.played_by.get(&(job, pair))
            && let Some(figures) = self.per_worker.get_mut(&job).and_then(|w| w.get_mut(worker))
        {
            figures.counts.iter_mut().zip(one.counts).for_each(|(count, less)| *count = count.saturating_sub(less));
        }
    }

    /// Adds the per-worker figures and the audits to `job` as the API shows it.
    pub fn annotate(&self, job: &mut v1::MatchJob) {
        let id = job.id;
        let mut whole = Pentanomial::default();
        whole.counts.iter_mut().zip(&job.pentanomial).for_each(|(count, &n)| *count = n as u32);
        job.workers = self
            .per_worker
            .get(&id)
            .into_iter()
            .flatten()
            .filter(|(_, figures)| figures.pairs() > 0)
            .map(|(worker, figures)| v1::MatchWorker {
                worker_id: worker.clone(),
                pentanomial: figures.counts.iter().map(|&c| u64::from(c)).collect(),
                residual: figures.residual(&whole),
                quarantined: self.quarantined.contains_key(worker),
            })
            .collect();
        job.pairs_audited = self.agreed.get(&id).copied().unwrap_or(0);
        job.pairs_held = self.held.range((id, 0)..=(id, u32::MAX)).count() as u32;
        job.audits_inconclusive = self.inconclusive.get(&id).copied().unwrap_or(0);
        job.quarantines = self.verdicts.get(&id).cloned().unwrap_or_default();
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use xqz_arena::job::{Contestant, MatchSpec, play_pair};
    use xqz_arena::player::SearchPlayer;
    use xqz_mcts::{MaterialEvaluator, SearchConfig, UniformEvaluator};
    use xqz_test_support::forger::Blunderer;

    use super::*;

    /// A match of `pairs` pairs between material counting and the bare rules, 4 playouts each.
    pub(crate) fn spec(pairs: u32) -> MatchSpec {
        MatchSpec {
            max_plies: 40,
            material_adjudication: Some(1),
            ..MatchSpec::new(Contestant::Material { playouts: 4 }, Contestant::Uniform { playouts: 4 }, pairs)
        }
    }

    /// Pair `pair` of `spec` as an honest worker plays it (material against the bare rules).
    pub(crate) fn honest(spec: &MatchSpec, pair: u32) -> [MatchGame; 2] {
        let search = SearchConfig::default();
        let mut a = SearchPlayer::new(&spec.a.name(), MaterialEvaluator, 4, search);
        let mut b = SearchPlayer::new(&spec.b.name(), UniformEvaluator, 4, search);
        play_pair(spec, pair, &mut a, &mut b).unwrap()
    }

    /// Pair `pair` as a worker that forges it: legal games, but the second player blunders.
    pub(crate) fn fabricated(spec: &MatchSpec, pair: u32) -> [MatchGame; 2] {
        let mut a = SearchPlayer::new(&spec.a.name(), MaterialEvaluator, 4, SearchConfig::default());
        let games = play_pair(spec, pair, &mut a, &mut Blunderer::new(&spec.b.name())).unwrap();
        assert_ne!(games[0].moves, honest(spec, pair)[0].moves, "pair {pair}: a fabrication that shows");
        games
    }

    #[test]
    fn the_pairs_audited_are_the_share_asked_for_and_the_same_on_every_start() {
        let count = |share: f64| {
            (1..=10u64)
                .flat_map(|job| (0..1000).map(move |pair| (job, pair)))
                .filter(|&(job, pair)| drawn(share, job, pair))
                .count()
        };
        assert_eq!((count(0.0), count(1.0)), (0, 10_000));
        let some = count(0.05);
        assert!((400..=600).contains(&some), "{some} of 10,000 at 5%");
        assert_eq!(count(0.05), some);
    }

    #[test]
    fn the_ledger_skips_a_torn_last_line_and_refuses_a_corrupt_one() {
        let dir = tempfile::tempdir().unwrap();
        let mut audit = Audit::open(dir.path(), 1.0).unwrap();
        audit.attribute((1, 0), "w1").unwrap();
        audit.attribute((1, 1), "w2").unwrap();
        let path = CoordinatorFolder::new(dir.path()).audit_ledger();
        let whole = fs::read(&path).unwrap();
        fs::write(&path, [&whole[..], br#"{"kind":"counted","job":1,"pa"#].concat()).unwrap();
        let mut reopened = Audit::open(dir.path(), 1.0).unwrap();
        assert_eq!(reopened.played_by.len(), 2, "the complete lines stay");
        assert_eq!(fs::read(&path).unwrap(), whole, "the torn tail is cut off");
        reopened.attribute((1, 2), "w3").unwrap();
        assert_eq!(Audit::open(dir.path(), 1.0).unwrap().played_by.len(), 3, "appends after the cut read back");
        fs::write(&path, [&b"not json\n"[..], &whole[..]].concat()).unwrap();
        let corrupt = Audit::open(dir.path(), 1.0).err().unwrap().to_string();
        assert!(corrupt.contains("line 1"), "{corrupt}");
    }

    #[test]
    fn copies_that_agree_count_once_and_three_different_copies_blame_nobody() {
        let dir = tempfile::tempdir().unwrap();
        let mut audit = Audit::open(dir.path(), 1.0).unwrap();
        let spec = spec(2);
        for worker in ["w1", "w2", "w3", "w4"] {
            audit.observe(worker, &|_| true);
        }
        let (games, forged) = (honest(&spec, 0), fabricated(&spec, 0));
        assert!(matches!(audit.intake((1, 0), "w1", games.clone(), true).unwrap(), Intake::Held));
        assert!(matches!(audit.intake((1, 0), "w1", games.clone(), true).unwrap(), Intake::Again), "a retry");
        assert_eq!(audit.next_copy("w1", &|_| true, &|_| true), None, "not to the worker that played it");
        assert_eq!(audit.next_copy("w2", &|_| true, &|_| true), Some((1, 0)));
        assert_eq!(audit.next_copy("w3", &|_| true, &|_| true), None, "w2 plays the copy");
        let Intake::Count(worker, counted) = audit.intake((1, 0), "w2", games.clone(), true).unwrap() else {
            panic!("copies that agree count")
        };
        assert_eq!((worker.as_str(), &counted[0].moves), ("w1", &games[0].moves));
        assert!(!audit.holds(1, 0));

        // Unreproducible players are not audited.
        assert!(matches!(audit.intake((2, 0), "w1", games.clone(), false).unwrap(), Intake::Count(..)));
        // Three different copies: inconclusive, the lease holder's counts, nobody is quarantined.
        let other = honest(&spec, 1);
        assert!(matches!(audit.intake((3, 0), "w1", games.clone(), true).unwrap(), Intake::Held));
        assert_eq!(audit.next_copy("w2", &|_| true, &|_| true), Some((3, 0)));
        assert!(matches!(audit.intake((3, 0), "w2", forged, true).unwrap(), Intake::Held), "a third worker decides");
        assert_eq!(audit.next_copy("w2", &|_| true, &|_| true), None);
        assert_eq!(audit.next_copy("w3", &|_| true, &|_| true), Some((3, 0)));
        let Intake::Count(worker, _) = audit.intake((3, 0), "w3", other, true).unwrap() else { panic!("inconclusive") };
        assert_eq!(worker, "w1");
        assert!(["w1", "w2", "w3"].iter().all(|w| audit.quarantined(w).is_none()));
        let mut job = v1::MatchJob { id: 3, ..Default::default() };
        audit.annotate(&mut job);
        assert_eq!((job.audits_inconclusive, job.pairs_held), (1, 0));
        let mut job = v1::MatchJob { id: 1, ..Default::default() };
        audit.annotate(&mut job);
        assert_eq!(job.pairs_audited, 1);

        // With nobody else alive, a pair counts unaudited, and a held pair whose auditors left goes back.
        let mut alone = Audit::open(tempfile::tempdir().unwrap().path(), 1.0).unwrap();
        alone.observe("w1", &|_| true);
        assert!(matches!(alone.intake((1, 0), "w1", games.clone(), true).unwrap(), Intake::Count(..)));
        alone.observe("w2", &|_| true);
        assert!(matches!(alone.intake((1, 1), "w1", games, true).unwrap(), Intake::Held));
        alone.observe("w1", &|w| w == "w1");
        assert_eq!(alone.release_stranded(&|w| w == "w1", &|_| true), [(1, 1)]);
        assert!(!alone.holds(1, 1));
    }

    /// Writes the ledger line of `worker`'s quarantine for its copy of `pair` of job 1 that
    /// discarded `discarded` of job 1, as a coordinator that crashed before the table did.
    pub(crate) fn ledger_quarantine(dir: &Path, worker: &str, pair: u32, discarded: &[u32]) {
        let entry = Entry::Quarantined {
            worker: worker.into(),
            job: 1,
            pair,
            why: "a test".into(),
            at_ms: 1,
            discarded: discarded.iter().map(|&p| (1, p)).collect(),
        };
        Ledger::open(dir).unwrap().0.append(&entry).unwrap();
    }
}
