//! The coordinator's own files kept at a second location (an object store prefix, or a folder),
//! so that a coordinator whose data folder does not outlive it (a pod's volume) loses nothing it
//! published: each model's weights and metadata, then the registry listing them, the settings
//! history and the worker-id key. A data folder that lacks them is filled from the backup before
//! the coordinator opens it; one that has them keeps its own.
//!
//! The match jobs go with them: `matches.json`, then the match table (`games.arrow`) and its
//! listing (`games.pgn`, both in `eval/` in the folder), read together under the board's lock
//! ([`Board::files`](crate::matches::Board::files)), so that a restored folder has the jobs
//! with the pairs they were judged from; a job restored running goes on from its counted pairs,
//! and one the restored table shows decided is judged at the start.
//!
//! The backup holds flat names: `v<N>.safetensors` and `v<N>.json` (as in `models/`),
//! `registry.json`, `settings.json`, `worker-ids.key`, `matches.json`, `games.arrow` and
//! `games.pgn`. The registry is copied after the models it lists, so a backup's registry always
//! names complete files; the jobs file before the table, so that a copy cut short leaves no
//! pair of a job that the jobs file lacks (which a later job of the same id would count). A light state
//! (`xqz state light`) has this layout with the weights of the latest model alone: the others'
//! are not restored, and a download of one is answered NOT_FOUND.
//!
//! Where the dataset lives outside the data folder (and so outlives it), the two generations of
//! the idempotency log (`idempotency.log.1`, `idempotency.log`) are copied too. The log is
//! appended at every commit, so it is copied at the same times as the rest and at a clean stop,
//! not as it grows: after a lost folder, the keys answered since the last copy are gone, and a
//! retry of theirs is recognised by its game ids instead (docs/SECURITY.md). With the dataset in
//! the data folder the log is never restored: a lost folder lost those games too, and a retry
//! must be able to store them again.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use xqz_arena::records;
use xqz_dataset::DatasetLocation;
use xqz_run_folder::CoordinatorFolder;

use crate::error::{CoordinatorError, IoAt};
use crate::registry::{self, write_atomic};
use crate::worker_ids;

const REGISTRY_FILE: &str = CoordinatorFolder::REGISTRY;
const SETTINGS_FILE: &str = CoordinatorFolder::SETTINGS;
const KEY_FILE: &str = CoordinatorFolder::WORKER_ID_KEY;
const KEY_LOG: &str = CoordinatorFolder::KEY_LOG;
const OLD_KEY_LOG: &str = CoordinatorFolder::OLD_KEY_LOG;
const MATCHES_FILE: &str = CoordinatorFolder::MATCHES;
/// The match table's files, in `eval/` in the folder and flat in the backup.
const TABLE_FILES: [&str; 2] = [records::TABLE_FILE, records::PGN_FILE];

/// The coordinator's part of a light state of the stopped coordinator whose data folder is
/// `data`, as (name, contents) in the order to store them: every model's metadata, the latest
/// model's weights, the registry, the settings history. The worker-id key and the idempotency
/// log stay behind (a light state may be committed to a repository; its workers register anew).
pub fn light_state_files(data: &Path) -> Result<Vec<(String, Vec<u8>)>, CoordinatorError> {
    let folder = CoordinatorFolder::new(data);
    let models = folder.models_dir();
    let read = |path: &Path| std::fs::read(path).at(path);
    let mut files = Vec::new();
    let registry_path = folder.registry_file();
    if registry_path.exists() {
        let listing = read(&registry_path)?;
        let listed = registry::listed_files(&listing)
            .map_err(|message| CoordinatorError::Corrupt { path: registry_path.clone(), message })?;
        for (i, (weights, metadata)) in listed.iter().enumerate() {
            files.push((metadata.clone(), read(&models.join(metadata))?));
            if i + 1 == listed.len() {
                files.push((weights.clone(), read(&models.join(weights))?));
            }
        }
        files.push((REGISTRY_FILE.to_string(), listing));
    }
    files.push((SETTINGS_FILE.to_string(), read(&folder.settings_file())?));
    Ok(files)
}

/// What [`Backup::restore`] copied into the data folder.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Restored {
    /// Models restored (their registry came from the backup).
    pub models: usize,
    /// Whether the settings history came from the backup.
    pub settings: bool,
    /// Whether the worker-id key came from the backup.
    pub worker_key: bool,
    /// Idempotency log generations that came from the backup (0 to 2).
    pub key_logs: usize,
    /// Whether the match jobs and their match table came from the backup.
    pub matches: bool,
}

/// A coordinator's backup location, the data folder it copies from and the newest model known to
/// be in it.
pub(crate) struct Backup {
    location: DatasetLocation,
    data: PathBuf,
    /// Versions `1..=backed_up` are in the backup with a registry that lists them.
    backed_up: Mutex<u64>,
    /// Whether the idempotency log is kept too (the dataset is not in the data folder).
    key_logs: bool,
}

fn failed(location: &DatasetLocation) -> impl Fn(xqz_dataset::DatasetError) -> CoordinatorError + '_ {
    move |e| CoordinatorError::Backup { location: location.to_string(), message: e.to_string() }
}

impl Backup {
    /// Fills the data folder `data` from `location` where it lacks the registry, the settings
    /// history or the worker-id key that the backup has, and, with `key_logs` (the dataset
    /// outlives the folder), the idempotency log; then the backup can be kept up.
    pub fn restore(
        location: DatasetLocation,
        data: &Path,
        key_logs: bool,
    ) -> Result<(Backup, Restored), CoordinatorError> {
        let get = |name: &str| location.get_file(name).map_err(failed(&location));
        let mut restored = Restored::default();
        let models = CoordinatorFolder::new(data).models_dir();
        let mut backed_up = 0;
        if let Some(listing) = get(REGISTRY_FILE)? {
            let listed = registry::listed_files(&listing).map_err(|message| CoordinatorError::Backup {
                location: location.to_string(),
                message: format!("{REGISTRY_FILE}: {message}"),
            })?;
            backed_up = listed.len() as u64;
            if !models.join(REGISTRY_FILE).exists() {
                std::fs::create_dir_all(&models).at(&models)?;
                for (i, (weights, metadata)) in listed.iter().enumerate() {
                    // A light state keeps every model's metadata, but the latest model's weights alone.
                    let latest = i + 1 == listed.len();
                    for name in [metadata, weights] {
                        match get(name)? {
                            Some(bytes) => write_atomic(&models.join(name), &bytes)?,
                            None if name == weights && !latest => {}
                            None => {
                                return Err(CoordinatorError::Backup {
                                    location: location.to_string(),
                                    message: format!("{REGISTRY_FILE} lists {name}, which is missing"),
                                });
                            }
                        }
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
        // The table first, the jobs file last: a restore cut short is done again at the next start.
        if !data.join(MATCHES_FILE).exists()
            && let Some(jobs) = get(MATCHES_FILE)?
        {
            let table = data.join(records::RECORDS_DIR);
            std::fs::create_dir_all(&table).at(&table)?;
            for name in TABLE_FILES {
                if let Some(bytes) = get(name)? {
                    write_atomic(&table.join(name), &bytes)?;
                }
            }
            if let Some(bytes) = get(crate::matches::LEDGER_FILE)? {
                write_atomic(&data.join(CoordinatorFolder::AUDIT_LEDGER), &bytes)?;
            }
            write_atomic(&data.join(MATCHES_FILE), &jobs)?;
            restored.matches = true;
        }
        // Both generations or neither: a folder with a log of its own knows its keys best.
        if key_logs && !data.join(KEY_LOG).exists() && !data.join(OLD_KEY_LOG).exists() {
            for name in [OLD_KEY_LOG, KEY_LOG] {
                if let Some(bytes) = get(name)? {
                    write_atomic(&data.join(name), &bytes)?;
                    restored.key_logs += 1;
                }
            }
        }
        Ok((Backup { location, data: data.to_path_buf(), backed_up: Mutex::new(backed_up), key_logs }, restored))
    }

    /// Copies what the backup lacks of the data folder: the models published since the last
    /// copy, then the registry, and the settings history and the worker-id key, which are small,
    /// the idempotency log where it is kept, and the board's `matches` files
    /// ([`Board::files`](crate::matches::Board::files)). Called once the folder is opened, after
    /// each publication and after the store is closed.
    pub fn copy(&self, matches: Vec<(String, Vec<u8>)>) -> Result<(), CoordinatorError> {
        let mut backed_up = self.backed_up.lock().unwrap_or_else(|e| e.into_inner());
        let data = &self.data;
        let models = CoordinatorFolder::new(data).models_dir();
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
        if self.key_logs {
            // The current generation first: a rotation between the two reads then copies one
            // generation twice rather than dropping the newer.
            for name in [KEY_LOG, OLD_KEY_LOG] {
                let path = data.join(name);
                match std::fs::read(&path) {
                    Ok(mut log) => {
                        // Complete lines only: the store may be appending one right now.
                        log.truncate(log.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1));
                        files.push((name.to_string(), log));
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(source) => return Err(CoordinatorError::Io { path, source }),
                }
            }
        }
        files.extend(matches);
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
    use crate::matches::{self, Board};
    use crate::registry::Registry;
    use crate::settings::SettingsHistory;
    use crate::store::tests::{game, submission};
    use crate::store::{Ingested, Memory, Store};
    use crate::worker_ids::WorkerIds;
    use xqz_mcts::{PlaySchedule, PlaySettings};
    use xqz_proto::v1;

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
        let (backup, restored) = Backup::restore(location.clone(), first.path(), false).unwrap();
        assert_eq!(restored, Restored::default(), "an empty backup restores nothing");
        let (registry, _, ids) = open(first.path());
        backup.copy(Vec::new()).unwrap();
        let id = ids.issue("box");
        for n in 0..2 {
            let (metadata, weights) = registry::tests::checkpoint(n);
            registry.publish(&metadata, "trainer", &weights, 1, false).unwrap();
            backup.copy(Vec::new()).unwrap();
        }

        // A new, empty data folder gets the two models, the settings and the key.
        let second = tempfile::tempdir().unwrap();
        let (backup, restored) = Backup::restore(location.clone(), second.path(), false).unwrap();
        assert_eq!(restored, Restored { models: 2, settings: true, worker_key: true, key_logs: 0, matches: false });
        let (registry, settings, ids) = open(second.path());
        assert_eq!(registry.latest_version(), 2);
        let weights = std::fs::read(registry.weights_path(2)).unwrap();
        assert_eq!(weights, registry::tests::checkpoint(1).1);
        assert_eq!(settings.current().0, 1);
        assert!(ids.check(&id), "ids issued before the loss are still taken");

        // The third model goes to the backup beside the restored two.
        let (metadata, weights) = registry::tests::checkpoint(2);
        registry.publish(&metadata, "trainer", &weights, 1, false).unwrap();
        backup.copy(Vec::new()).unwrap();
        let third = tempfile::tempdir().unwrap();
        assert_eq!(Backup::restore(location.clone(), third.path(), false).unwrap().1.models, 3);

        // A folder that has its own models keeps them.
        assert_eq!(Backup::restore(location, second.path(), false).unwrap().1, Restored::default());
    }

    #[test]
    fn the_match_jobs_and_their_counted_pairs_come_back_with_the_registry() {
        let (first, backup_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let location = DatasetLocation::Local(backup_dir.path().to_path_buf());
        let (backup, _) = Backup::restore(location.clone(), first.path(), false).unwrap();
        open(first.path());
        let mut board = Board::open(first.path()).unwrap();
        board.submit(matches::tests::spec(3), None, 1).unwrap();
        board.submit(matches::tests::spec(1), Some(2), 2).unwrap();
        let taken: Vec<_> =
            (0..4).map(|_| board.take("w", &[], &|_| true).map(|a| (a.match_id, a.pair)).unwrap()).collect();
        assert_eq!(taken, [(1, 0), (1, 1), (1, 2), (2, 0)]);
        for (id, pair) in [(1, 0), (1, 1), (2, 0)] {
            board.count(id, pair, "w", matches::tests::play(&matches::tests::spec(3), pair)).unwrap();
        }
        backup.copy(board.files().unwrap()).unwrap();
        let before: Vec<_> = [1, 2].map(|id| board.get(id).unwrap()).into();

        let second = tempfile::tempdir().unwrap();
        let (_, restored) = Backup::restore(location.clone(), second.path(), false).unwrap();
        assert!(restored.matches && restored.models == 0, "{restored:?}");
        let board = Board::open(second.path()).unwrap();
        for (id, before) in [1, 2].into_iter().zip(&before) {
            let after = board.get(id).unwrap();
            // The leases are gone, as after any restart.
            assert_eq!(after, v1::MatchJob { pairs_in_flight: 0, ..before.clone() });
        }
        assert_eq!(
            (before[0].state, before[1].state),
            (v1::MatchState::Running as i32, v1::MatchState::Finished as i32)
        );
        assert_eq!(board.ended_gates().collect::<Vec<_>>(), [(2, false)], "one pair with no SPRT passes nothing");
        assert_eq!(xqz_arena::records::read_games(second.path()).unwrap().len(), 6);
        let listing = second.path().join(records::RECORDS_DIR).join(records::PGN_FILE);
        assert_eq!(std::fs::read(listing).unwrap(), std::fs::read(first.path().join("eval/games.pgn")).unwrap());

        // A folder with jobs of its own keeps them.
        assert!(!Backup::restore(location, second.path(), false).unwrap().1.matches);
    }

    #[test]
    fn keys_answered_before_the_last_copy_survive_a_lost_folder_when_the_dataset_does() {
        let (first, backup_dir, datasets) =
            (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let location = DatasetLocation::Local(backup_dir.path().to_path_buf());
        let dataset = DatasetLocation::Local(datasets.path().join("dataset"));
        let memory = Memory { keys_per_log: 4, dedup_games: 1 };
        let (backup, _) = Backup::restore(location.clone(), first.path(), true).unwrap();
        open(first.path());
        let mut store = Store::open(first.path(), dataset.clone(), memory).unwrap();
        let games: Vec<_> = (0..6).map(game).collect();
        let ingest = |store: &mut Store, i: usize| {
            store.ingest(vec![submission(&format!("k{i}"), &[&games[i]])]).unwrap();
        };
        // k0 to k3 rotate into idempotency.log.1; k4 is in idempotency.log, then k5.
        (0..5).for_each(|i| ingest(&mut store, i));
        backup.copy(Vec::new()).unwrap();
        ingest(&mut store, 5);
        // A line being appended while the copy reads is left out of it.
        let mut log = std::fs::OpenOptions::new().append(true).open(first.path().join(KEY_LOG)).unwrap();
        std::io::Write::write_all(&mut log, b"{\"key\":\"k6\",\"acc").unwrap();
        backup.copy(Vec::new()).unwrap();
        store.close().unwrap();
        let copied = std::fs::read_to_string(backup_dir.path().join(KEY_LOG)).unwrap();
        assert_eq!(copied.lines().count(), 2, "{copied}");
        assert!(copied.ends_with('\n'));

        let second = tempfile::tempdir().unwrap();
        assert_eq!(Backup::restore(location.clone(), second.path(), true).unwrap().1.key_logs, 2);
        let store = Store::open(second.path(), dataset, memory).unwrap();
        let content = |i: usize| submission("", &[&games[i]]).content;
        for i in [1, 5] {
            let answer = store.keys().replayed(&format!("k{i}"), &content(i)).unwrap();
            assert_eq!(answer, Some(Ingested { accepted: 1, duplicates: 0 }), "k{i} is answered as before");
        }

        // With the dataset lost alongside, the games of a retry must be stored again.
        let third = tempfile::tempdir().unwrap();
        assert_eq!(Backup::restore(location, third.path(), false).unwrap().1.key_logs, 0);
        assert!(!third.path().join(KEY_LOG).exists() && !third.path().join(OLD_KEY_LOG).exists());
    }

    #[test]
    fn a_backup_whose_registry_names_missing_files_is_refused_by_name() {
        let (data, backup_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let location = DatasetLocation::Local(backup_dir.path().to_path_buf());
        let (backup, _) = Backup::restore(location.clone(), data.path(), false).unwrap();
        let (registry, _, _) = open(data.path());
        let (metadata, weights) = registry::tests::checkpoint(0);
        registry.publish(&metadata, "trainer", &weights, 1, false).unwrap();
        backup.copy(Vec::new()).unwrap();
        std::fs::remove_file(backup_dir.path().join("v1.safetensors")).unwrap();
        let err = Backup::restore(location, tempfile::tempdir().unwrap().path(), false).err().unwrap();
        assert!(err.to_string().contains("registry.json lists v1.safetensors, which is missing"), "{err}");
    }
}
