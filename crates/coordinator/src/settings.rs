//! The versions of the play settings a coordinator has dictated, kept in `settings.json` in its
//! data folder, so that a game is validated under exactly the settings it was played under, also
//! when it arrives after the coordinator restarted with other settings (a worker's spool).
//!
//! Version 1 is the first settings a data folder saw; a start with settings that differ from the
//! latest version adds the next version. The file is replaced atomically, as the registry's are.

use std::fs;
use std::path::Path;

use serde::{Deserialize, Serialize};
use xqz_mcts::PlaySettings;

use crate::error::CoordinatorError;
use crate::registry::write_atomic;

/// The history file's name in the data folder.
pub const SETTINGS_FILE: &str = "settings.json";

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
pub(crate) struct SettingsHistory {
    history: History,
}

impl SettingsHistory {
    /// Opens the history of `data_dir` with `current` in force: the latest version if it has
    /// these settings, else a new version that is stored before this returns.
    pub fn open(data_dir: &Path, current: &PlaySettings) -> Result<SettingsHistory, CoordinatorError> {
        let path = data_dir.join(SETTINGS_FILE);
        let mut history: History = match fs::read(&path) {
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
        if history.versions.last().map(|v| &v.settings) != Some(current) {
            let version = history.versions.len() as u64 + 1;
            history.versions.push(Version { version, settings: current.clone() });
            store(&path, &history)?;
        }
        Ok(SettingsHistory { history })
    }

    /// A history of one version, kept in memory only.
    #[cfg(test)]
    pub fn single(settings: PlaySettings) -> SettingsHistory {
        SettingsHistory { history: History { versions: vec![Version { version: 1, settings }] } }
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

    #[test]
    fn a_change_adds_a_version_and_the_old_ones_stay() {
        let dir = tempfile::tempdir().unwrap();
        let first = PlaySettings::default();
        let history = SettingsHistory::open(dir.path(), &first).unwrap();
        assert_eq!(history.current().0, 1);
        // The same settings again: the same version.
        assert_eq!(SettingsHistory::open(dir.path(), &first).unwrap().current().0, 1);
        let second = PlaySettings { playouts: 64, ..first.clone() };
        let history = SettingsHistory::open(dir.path(), &second).unwrap();
        assert_eq!(history.current(), (2, &second));
        assert_eq!(history.get(1), Some(&first));
        assert_eq!((history.get(0), history.get(3)), (None, None));
        // Back to the first settings: a third version, not a rewrite of history.
        assert_eq!(SettingsHistory::open(dir.path(), &first).unwrap().current().0, 3);
    }

    #[test]
    fn a_damaged_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(SETTINGS_FILE), "{").unwrap();
        let error = SettingsHistory::open(dir.path(), &PlaySettings::default()).unwrap_err();
        assert!(error.to_string().contains(SETTINGS_FILE), "{error}");
    }
}
