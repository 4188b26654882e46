//! The coordinator's own files kept at a second location (an object store prefix, or a folder),
//! so that a coordinator whose data folder does not outlive it (a pod's volume) loses nothing it
//! published: each model's weights and metadata, then the registry listing them, the settings
//! history and the worker-id key. A data folder that lacks them is filled from the backup before
//! the coordinator opens it; one that has them keeps its own.
//!
//! The backup holds flat names: `v<N>.safetensors` and `v<N>.json` (as in `models/`),
//! `registry.json`, `settings.json` and `worker-ids.key`. The registry is copied after the
//! models it lists, so a backup's registry always names complete files. The idempotency log is
//! not copied (it is appended at every commit): after a restore, a retried batch is recognised
//! by its game ids (docs/SECURITY.md).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use xqz_dataset::DatasetLocation;

use crate::error::{CoordinatorError, IoAt};
use crate::registry::{self, REGISTRY_FILE, write_atomic};
use crate::settings::SETTINGS_FILE;
use crate::worker_ids::{self, KEY_FILE};

/// What [`Backup::restore`] copied into the data folder.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Restored {
    /// Models restored (their registry came from the backup).
    pub models: usize,
    /// Whether the settings history came from the backup.
    pub settings: bool,
    /// Whether the worker-id key came from the backup.
    pub worker_key: bool,
}

/// A coordinator's backup location, the data folder it copies from and the newest model known to
/// be in it.
pub(crate) struct Backup {
    location: DatasetLocation,
    data: PathBuf,
    /// Versions `1..=backed_up` are in the backup with a registry that lists them.
    backed_up: Mutex<u64>,
}

fn failed(location: &DatasetLocation) -> impl Fn(xqz_dataset::DatasetError) -> CoordinatorError + '_ {
    move |e| CoordinatorError::Backup { location: location.to_string(), message: e.to_string() }
}

impl Backup {
    /// Fills the data folder `data` from `location` where it lacks the registry, the settings
    /// history or the worker-id key that the backup has; then the backup can be kept up.
    pub fn restore(location: DatasetLocation, data: &Path) -> Result<(Backup, Restored), CoordinatorError> {
        let get = |name: &str| location.get_file(name).map_err(failed(&location));
        let mut restored = Restored::default();
        let models = data.join("models");
        let mut backed_up = 0;
        if let Some(listing) = get(REGISTRY_FILE)? {
            let listed = registry::listed_files(&listing).map_err(|message| CoordinatorError::Backup {
                location: location.to_string(),
                message: format!("{REGISTRY_FILE}: {message}"),
            })?;
            backed_up = listed.len() as u64;
            if !models.join(REGISTRY_FILE).exists() {
                std::fs::create_dir_all(&models).at(&models)?;
                for (weights, metadata) in &listed {
                    for name in [weights, metadata] {
                        let bytes = get(name)?.ok_or_else(|| CoordinatorError::Backup {
                            location: location.to_string(),
                            message: format!("{REGISTRY_FILE} lists {name}, which is missing"),
                        })?;
                        write_atomic(&models.join(name), &bytes)?;
                    }
                }
                write_atomic(&models.join(REGISTRY_FILE), &listing)?;
                restored.models = listed.len();
            }
        }
        if !data.join(SETTINGS_FILE).exists()
            && let Some(bytes) = get(SETTINGS_FILE)?
        {
            write_atomic(&data.join(SETTINGS_FILE), &bytes)?;
            restored.settings = true;
        }
        if !data.join(KEY_FILE).exists()
            && let Some(bytes) = get(KEY_FILE)?
        {
            worker_ids::write_key(data, &bytes).at(data.join(KEY_FILE))?;
            restored.worker_key = true;
        }
        Ok((Backup { location, data: data.to_path_buf(), backed_up: Mutex::new(backed_up) }, restored))
    }

    /// Copies what the backup lacks of the data folder: the models published since the last
    /// copy, then the registry, and the settings history and the worker-id key, which are small.
    /// Called once the folder is opened and after each publication.
    pub fn copy(&self) -> Result<(), CoordinatorError> {
        let mut backed_up = self.backed_up.lock().unwrap_or_else(|e| e.into_inner());
        let data = &self.data;
        let models = data.join("models");
        let read = |path: &Path| std::fs::read(path).at(path);
        let listing = match std::fs::read(models.join(REGISTRY_FILE)) {
            Ok(bytes) => Some(bytes),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
            Err(source) => return Err(CoordinatorError::Io { path: models.join(REGISTRY_FILE), source }),
        };
        let mut files = Vec::new();
        let mut newest = *backed_up;
        if let Some(listing) = listing {
            let listed = registry::listed_files(&listing)
                .map_err(|message| CoordinatorError::Corrupt { path: models.join(REGISTRY_FILE), message })?;
            for (weights, metadata) in listed.iter().skip(*backed_up as usize) {
                files.push((weights.clone(), read(&models.join(weights))?));
                files.push((metadata.clone(), read(&models.join(metadata))?));
            }
            newest = listed.len() as u64;
            files.push((REGISTRY_FILE.to_string(), listing));
        }
        for name in [SETTINGS_FILE, KEY_FILE] {
            files.push((name.to_string(), read(&data.join(name))?));
        }
        self.location.put_files(files).map_err(failed(&self.location))?;
        *backed_up = newest;
        Ok(())
    }

    /// The backup location, for messages.
    pub fn location(&self) -> &DatasetLocation {
        &self.location
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::Registry;
    use crate::settings::SettingsHistory;
    use crate::worker_ids::WorkerIds;
    use xqz_mcts::{PlaySchedule, PlaySettings};

    fn open(data: &Path) -> (Registry, SettingsHistory, WorkerIds) {
        let registry = Registry::open(&data.join("models")).unwrap();
        let schedule = PlaySchedule { cap_growth: 0, cap_limit: 0 };
        let settings = SettingsHistory::open(data, &PlaySettings::default(), schedule, 0).unwrap();
        (registry, settings, WorkerIds::open(data).unwrap())
    }

    #[test]
    fn a_data_folder_lost_with_its_models_is_restored_from_the_backup() {
        let (first, backup_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let location = DatasetLocation::Local(backup_dir.path().join("coordinator"));
        let (backup, restored) = Backup::restore(location.clone(), first.path()).unwrap();
        assert_eq!(restored, Restored::default(), "an empty backup restores nothing");
        let (registry, _, ids) = open(first.path());
        backup.copy().unwrap();
        let id = ids.issue("box");
        for n in 0..2 {
            let (metadata, weights) = registry::tests::checkpoint(n);
            registry.publish(&metadata, "trainer", &weights, 1).unwrap();
            backup.copy().unwrap();
        }

        // A new, empty data folder gets the two models, the settings and the key.
        let second = tempfile::tempdir().unwrap();
        let (backup, restored) = Backup::restore(location.clone(), second.path()).unwrap();
        assert_eq!(restored, Restored { models: 2, settings: true, worker_key: true });
        let (registry, settings, ids) = open(second.path());
        assert_eq!(registry.latest_version(), 2);
        let weights = std::fs::read(registry.weights_path(2)).unwrap();
        assert_eq!(weights, registry::tests::checkpoint(1).1);
        assert_eq!(settings.current().0, 1);
        assert!(ids.check(&id), "ids issued before the loss are still taken");

        // The third model goes to the backup beside the restored two.
        let (metadata, weights) = registry::tests::checkpoint(2);
        registry.publish(&metadata, "trainer", &weights, 1).unwrap();
        backup.copy().unwrap();
        let third = tempfile::tempdir().unwrap();
        assert_eq!(Backup::restore(location.clone(), third.path()).unwrap().1.models, 3);

        // A folder that has its own models keeps them.
        assert_eq!(Backup::restore(location, second.path()).unwrap().1, Restored::default());
    }

    #[test]
    fn a_backup_whose_registry_names_missing_files_is_refused_by_name() {
        let (data, backup_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let location = DatasetLocation::Local(backup_dir.path().to_path_buf());
        let (backup, _) = Backup::restore(location.clone(), data.path()).unwrap();
        let (registry, _, _) = open(data.path());
        let (metadata, weights) = registry::tests::checkpoint(0);
        registry.publish(&metadata, "trainer", &weights, 1).unwrap();
        backup.copy().unwrap();
        std::fs::remove_file(backup_dir.path().join("v1.safetensors")).unwrap();
        let err = Backup::restore(location, tempfile::tempdir().unwrap().path()).err().unwrap();
        assert!(err.to_string().contains("registry.json lists v1.safetensors, which is missing"), "{err}");
    }
}
