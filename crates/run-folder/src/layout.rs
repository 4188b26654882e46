//! Where each file of a run lives. `xqz run` makes the folder; each role is handed the part it
//! writes (the coordinator its data folder, the trainer its own, each worker one) and knows
//! nothing of the rest.

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use crate::atomic::{IoError, write_atomic};
use crate::state::RunState;

/// A run folder, `runs/<name>/`:
///
/// ```text
/// settings.toml         the run's settings (every role reads its sections)
/// started_unix          when the run began, Unix seconds
/// coordinator/          the coordinator's data folder: dataset/, models/, ...
/// trainer/              the trainer's folder (see TrainerFolder)
/// worker-N/             worker N's folder
/// logs/                 ROLE.log of each role, roles.csv, settings.log, coordinator.ready
/// state                 the run's state location (`xqz run --state`), when it has one
/// strength.csv          the strength matches (StrengthRow)
/// eval/                 their games, with every `xqz eval match --out` of the run
/// losses.svg, strength.svg, ladder.svg   the plots
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunFolder {
    root: PathBuf,
}

impl RunFolder {
    /// The run folder at `root` (nothing is created).
    pub fn new(root: impl Into<PathBuf>) -> RunFolder {
        RunFolder { root: root.into() }
    }

    /// The folder itself.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Makes the folders the roles write into.
    pub fn create(&self) -> Result<(), IoError> {
        for dir in [self.coordinator_dir(), self.trainer().root().to_path_buf(), self.logs_dir()] {
            std::fs::create_dir_all(&dir).map_err(IoError::at(&dir))?;
        }
        Ok(())
    }

    /// The run's settings.
    pub fn settings_file(&self) -> PathBuf {
        self.root.join("settings.toml")
    }

    /// The coordinator's data folder.
    pub fn coordinator_dir(&self) -> PathBuf {
        self.coordinator().root().to_path_buf()
    }

    /// The coordinator's data folder and its files.
    pub fn coordinator(&self) -> CoordinatorFolder {
        CoordinatorFolder::new(self.root.join("coordinator"))
    }

    /// The games' dataset, inside the coordinator's data folder.
    pub fn dataset_dir(&self) -> PathBuf {
        self.coordinator().dataset_dir()
    }

    /// The published models (`vN.json`), inside the coordinator's data folder.
    pub fn models_dir(&self) -> PathBuf {
        self.coordinator().models_dir()
    }

    /// The trainer's folder.
    pub fn trainer(&self) -> TrainerFolder {
        TrainerFolder::new(self.root.join("trainer"))
    }

    /// Worker `index`'s folder.
    pub fn worker_dir(&self, index: usize) -> PathBuf {
        self.root.join(format!("worker-{index}"))
    }

    /// The logs.
    pub fn logs_dir(&self) -> PathBuf {
        self.root.join("logs")
    }

    /// The log of the role named `role` (`coordinator`, `trainer`, `worker-0`).
    pub fn log(&self, role: &str) -> PathBuf {
        self.logs_dir().join(format!("{role}.log"))
    }

    /// The record of how the roles started and stopped ([`RoleRow`](crate::RoleRow)).
    pub fn roles_csv(&self) -> PathBuf {
        self.logs_dir().join("roles.csv")
    }

    /// Where each change of the settings by `--override` is noted.
    pub fn settings_log(&self) -> PathBuf {
        self.logs_dir().join("settings.log")
    }

    /// The coordinator's [`Ready`](crate::Ready) file.
    pub fn ready_file(&self) -> PathBuf {
        self.logs_dir().join("coordinator.ready")
    }

    /// The strength matches' results ([`StrengthRow`](crate::StrengthRow)).
    pub fn strength_csv(&self) -> PathBuf {
        self.root.join("strength.csv")
    }

    /// The plot of the strength matches.
    pub fn strength_svg(&self) -> PathBuf {
        self.root.join("strength.svg")
    }

    /// The plot of the training losses.
    pub fn losses_svg(&self) -> PathBuf {
        self.root.join("losses.svg")
    }

    /// The plot of the ladder of the run's players.
    pub fn ladder_svg(&self) -> PathBuf {
        self.root.join("ladder.svg")
    }

    /// The plot of players' places on the ladder of rungs against hours of training.
    pub fn ladder_hours_svg(&self) -> PathBuf {
        self.root.join("ladder-hours.svg")
    }

    /// The file naming the run's state location.
    pub fn state_file(&self) -> PathBuf {
        self.root.join("state")
    }

    /// The run's state location, if it keeps one (`None` also for a folder that does not exist).
    pub fn state(&self) -> Result<Option<RunState>, IoError> {
        match std::fs::read_to_string(self.state_file()) {
            Ok(text) => Ok(Some(RunState::new(text.trim()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(IoError::at(&self.state_file())(e)),
        }
    }

    /// Notes the run's state location.
    pub fn set_state(&self, state: &RunState) -> Result<(), IoError> {
        write_atomic(&self.state_file(), format!("{}\n", state.location()).as_bytes())
    }

    /// The run's own files that its state keeps ([`RunState::RUN_FILES`]) as (name, contents),
    /// in the order to store them: the settings last, since their presence says a state holds a
    /// run. A file the run has not written yet is left out.
    pub fn state_files(&self) -> Result<Vec<(&'static str, Vec<u8>)>, IoError> {
        let mut files = Vec::new();
        for name in RunState::RUN_FILES.iter().rev() {
            let path = self.root.join(name);
            match std::fs::read(&path) {
                Ok(bytes) => files.push((*name, bytes)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(IoError::at(&path)(e)),
            }
        }
        Ok(files)
    }

    fn started_file(&self) -> PathBuf {
        self.root.join("started_unix")
    }

    /// Notes that the run begins now, unless it has begun before: plots count hours from it.
    pub fn record_start(&self) -> Result<(), IoError> {
        if self.started_file().exists() {
            return Ok(());
        }
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
        write_atomic(&self.started_file(), format!("{now}\n").as_bytes())
    }

    /// When the run began (Unix seconds), if it was noted: runs made before it was, and folders
    /// not made by `xqz run`, have none.
    pub fn started(&self) -> Option<u64> {
        std::fs::read_to_string(self.started_file()).ok()?.trim().parse().ok()
    }
}

/// A coordinator's data folder, the one place that names its files: each module of the
/// coordinator (store, registry, settings history, worker ids, match board, backup) and whatever
/// saves or restores a run's state finds them here.
///
/// ```text
/// dataset/              the games' dataset, unless the coordinator keeps it elsewhere (--dataset)
/// models/               the published models: vN.safetensors, vN.json and registry.json listing them
/// settings.json         every settings version the coordinator dictated
/// worker-ids.key        the key that signs worker ids
/// idempotency.log(.1)   the keys of the requests answered, two generations
/// matches.json          the match jobs (their games: the match table, eval/games.arrow and games.pgn)
/// eval/audit.jsonl      the audit ledger: who played each pair counted, audits, quarantines
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CoordinatorFolder {
    root: PathBuf,
}

impl CoordinatorFolder {
    /// The registry's name, in `models/` and in a backup.
    pub const REGISTRY: &str = "registry.json";
    /// The settings history's name, in the folder and in a backup.
    pub const SETTINGS: &str = "settings.json";
    /// The worker-id key's name, in the folder and in a backup.
    pub const WORKER_ID_KEY: &str = "worker-ids.key";
    /// The idempotency log's current generation, in the folder and in a backup.
    pub const KEY_LOG: &str = "idempotency.log";
    /// The idempotency log's previous generation, in the folder and in a backup.
    pub const OLD_KEY_LOG: &str = "idempotency.log.1";
    /// The match jobs' name, in the folder.
    pub const MATCHES: &str = "matches.json";
    /// The audit ledger's path in the folder, beside the match table.
    pub const AUDIT_LEDGER: &str = "eval/audit.jsonl";

    /// The data folder at `root`.
    pub fn new(root: impl Into<PathBuf>) -> CoordinatorFolder {
        CoordinatorFolder { root: root.into() }
    }

    /// The folder itself (where the match table is, too).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The games' dataset, when it is kept in the folder.
    pub fn dataset_dir(&self) -> PathBuf {
        self.root.join("dataset")
    }

    /// The published models.
    pub fn models_dir(&self) -> PathBuf {
        self.root.join("models")
    }

    /// The registry listing the published models.
    pub fn registry_file(&self) -> PathBuf {
        self.models_dir().join(Self::REGISTRY)
    }

    /// The settings history.
    pub fn settings_file(&self) -> PathBuf {
        self.root.join(Self::SETTINGS)
    }

    /// The worker-id key.
    pub fn worker_id_key(&self) -> PathBuf {
        self.root.join(Self::WORKER_ID_KEY)
    }

    /// The idempotency log's current generation.
    pub fn key_log(&self) -> PathBuf {
        self.root.join(Self::KEY_LOG)
    }

    /// The idempotency log's previous generation.
    pub fn old_key_log(&self) -> PathBuf {
        self.root.join(Self::OLD_KEY_LOG)
    }

    /// The match jobs.
    pub fn matches_file(&self) -> PathBuf {
        self.root.join(Self::MATCHES)
    }

    /// The audit ledger of the match pairs: who played each pair counted, the audits' verdicts
    /// and the quarantines (JSON lines, appended).
    pub fn audit_ledger(&self) -> PathBuf {
        self.root.join(Self::AUDIT_LEDGER)
    }
}

/// A trainer's folder: `checkpoints/` (`step-N.json` with its weights and optimizer state,
/// and `latest` naming the newest) and `metrics.csv` ([`MetricsRow`](crate::MetricsRow)). A
/// backup of it holds the same names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrainerFolder {
    root: PathBuf,
}

impl TrainerFolder {
    /// The name of the metrics file, in the folder and in its backup.
    pub const METRICS_CSV: &str = "metrics.csv";
    /// The name of the file naming the newest checkpoint, in the folder and in its backup.
    pub const LATEST: &str = "latest";

    /// The trainer's folder at `root`.
    pub fn new(root: impl Into<PathBuf>) -> TrainerFolder {
        TrainerFolder { root: root.into() }
    }

    /// The folder itself.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The metrics, a row now and then.
    pub fn metrics_csv(&self) -> PathBuf {
        self.root.join(Self::METRICS_CSV)
    }

    /// The checkpoints.
    pub fn checkpoints_dir(&self) -> PathBuf {
        self.root.join("checkpoints")
    }

    /// The file naming the newest checkpoint.
    pub fn latest_file(&self) -> PathBuf {
        self.checkpoints_dir().join(Self::LATEST)
    }

    /// The name of the checkpoint (its metadata file) after `steps` training steps.
    pub fn checkpoint_name(steps: u64) -> String {
        format!("step-{steps:08}.json")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_start_is_noted_once() {
        let dir = tempfile::tempdir().unwrap();
        let run = RunFolder::new(dir.path());
        assert_eq!(run.started(), None);
        std::fs::write(dir.path().join("started_unix"), "1700000000\n").unwrap();
        run.record_start().unwrap();
        assert_eq!(run.started(), Some(1_700_000_000), "a resumed run keeps its start");
        assert_eq!(TrainerFolder::checkpoint_name(12), "step-00000012.json");
    }
}
