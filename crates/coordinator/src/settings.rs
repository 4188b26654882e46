//! The versions of the play settings a coordinator has dictated, kept in `settings.json` in its
//! data folder, so that a game is validated under exactly the settings it was played under, also
//! when it arrives after the coordinator restarted with other settings (a worker's spool).
//!
//! Version 1 is the first settings a data folder saw; a start with settings that differ from the
//! latest version adds the next version, and so does a published model after which the run's
//! [`PlaySchedule`] calls for other settings. The file is replaced atomically, as the registry's
//! are.

use std::fs;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use xqz_mcts::{PlaySchedule, PlaySettings};

use crate::error::CoordinatorError;
use crate::registry::write_atomic;

/// The history file's name in the data folder.
const SETTINGS_FILE: &str = xqz_run_folder::CoordinatorFolder::SETTINGS;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct Version {
    version: u64,
    settings: PlaySettings,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct History {
    versions: Vec<Version>,
}

/// Every settings version of a data folder; the last one is in force.
#[derive(Debug)]
pub struct SettingsHistory {
    history: History,
    /// The history file (`None`: kept in memory only).
    path: Option<PathBuf>,
    /// The run's settings before its schedule, and the schedule.
    base: PlaySettings,
    schedule: PlaySchedule,
}

impl SettingsHistory {
    /// Opens the history of `data_dir` with the settings that `schedule` makes of `base` after
    /// model `model_version` in force: the latest version if it has these settings, else a new
    /// version that is stored before this returns.
    pub fn open(
        data_dir: &Path,
        base: &PlaySettings,
        schedule: PlaySchedule,
        model_version: u64,
    ) -> Result<SettingsHistory, CoordinatorError> {
        let path = data_dir.join(SETTINGS_FILE);
        let history: History = match fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map_err(|e| CoordinatorError::Corrupt { path: path.clone(), message: e.to_string() })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => History::default(),
            Err(source) => return Err(CoordinatorError::Io { path, source }),
        };
        if history.versions.windows(2).any(|w| w[1].version != w[0].version + 1)
            || history.versions.first().is_some_and(|v| v.version != 1)
        {
            return Err(CoordinatorError::Corrupt { path, message: "versions are not 1, 2, 3, ...".into() });
        }
        let mut opened = SettingsHistory { history, path: Some(path), base: base.clone(), schedule };
        opened.on_model(model_version)?;
        Ok(opened)
    }

    /// A history of one version, kept in memory only (for checking games without a data folder).
    pub fn single(settings: PlaySettings) -> SettingsHistory {
        SettingsHistory {
            history: History { versions: vec![Version { version: 1, settings: settings.clone() }] },
            path: None,
            base: settings,
            schedule: PlaySchedule { cap_growth: 0, cap_limit: 0 },
        }
    }

    /// Brings the settings in force to what the schedule calls for once model `model_version`
    /// is published: a new version, stored before this returns, if they change. Returns whether
    /// they did.
    pub fn on_model(&mut self, model_version: u64) -> Result<bool, CoordinatorError> {
        let settings = self.schedule.settings_for(&self.base, model_version);
        if self.history.versions.last().map(|v| &v.settings) == Some(&settings) {
            return Ok(false);
        }
        let version = self.history.versions.len() as u64 + 1;
        self.history.versions.push(Version { version, settings });
        if let Some(path) = &self.path
            && let Err(e) = store(path, &self.history)
        {
            // Not in force unless stored: a game validated under it must find it after a restart.
            self.history.versions.pop();
            return Err(e);
        }
        Ok(true)
    }

    /// The version in force and its settings.
    pub fn current(&self) -> (u64, &PlaySettings) {
        let last = self.history.versions.last().expect("open adds a version");
        (last.version, &last.settings)
    }

    /// The settings of `version`, if there is one.
    pub fn get(&self, version: u64) -> Option<&PlaySettings> {
        let index = usize::try_from(version.checked_sub(1)?).ok()?;
        self.history.versions.get(index).map(|v| &v.settings)
    }
}

fn store(path: &Path, history: &History) -> Result<(), CoordinatorError> {
    write_atomic(path, &serde_json::to_vec_pretty(history).expect("settings serialise"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXED: PlaySchedule = PlaySchedule { cap_growth: 0, cap_limit: 0 };

    #[test]
    fn a_change_adds_a_version_and_the_old_ones_stay() {
        let dir = tempfile::tempdir().unwrap();
        let first = PlaySettings::default();
        let history = SettingsHistory::open(dir.path(), &first, FIXED, 0).unwrap();
        assert_eq!(history.current().0, 1);
        // The same settings again: the same version.
        assert_eq!(SettingsHistory::open(dir.path(), &first, FIXED, 5).unwrap().current().0, 1);
        let second = PlaySettings { playouts: 64, ..first.clone() };
        let history = SettingsHistory::open(dir.path(), &second, FIXED, 5).unwrap();
        assert_eq!(history.current(), (2, &second));
        assert_eq!(history.get(1), Some(&first));
        assert_eq!((history.get(0), history.get(3)), (None, None));
        // Back to the first settings: a third version, not a rewrite of history.
        assert_eq!(SettingsHistory::open(dir.path(), &first, FIXED, 5).unwrap().current().0, 3);
    }

    #[test]
    fn the_schedule_adds_a_version_per_model_that_changes_the_settings() {
        let dir = tempfile::tempdir().unwrap();
        let base = PlaySettings { max_plies: 80, ..PlaySettings::default() };
        let schedule = PlaySchedule { cap_growth: 10, cap_limit: 100 };
        let mut history = SettingsHistory::open(dir.path(), &base, schedule, 0).unwrap();
        assert_eq!(history.current(), (1, &base));
        assert!(history.on_model(1).unwrap());
        assert_eq!((history.current().0, history.current().1.max_plies), (2, 90));
        assert!(!history.on_model(1).unwrap(), "the same model twice changes nothing");
        assert!(history.on_model(2).unwrap());
        let ruled = history.current().1.clone();
        assert_eq!((ruled.max_plies, ruled.material_adjudication, ruled.repeater_loses), (0, 0, false));
        assert!(!history.on_model(3).unwrap(), "past the limit the settings stay");
        // A restart after model 3 finds the rules-alone settings in force, every version kept.
        let reopened = SettingsHistory::open(dir.path(), &base, schedule, 3).unwrap();
        assert_eq!(reopened.current(), (3, &ruled));
        assert_eq!(reopened.get(2).map(|s| s.max_plies), Some(90));
    }

    #[test]
    fn a_damaged_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(SETTINGS_FILE), "{").unwrap();
        let error = SettingsHistory::open(dir.path(), &PlaySettings::default(), FIXED, 0).unwrap_err();
        assert!(error.to_string().contains(SETTINGS_FILE), "{error}");
    }
}
