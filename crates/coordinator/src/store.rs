//! The game store: the dataset writer, the ids of stored games and the idempotency log.
//!
//! A request's games are appended and flushed in a shard before anything else records them, so
//! an OK means the games are on disk. Requests that arrive while a flush is under way are
//! committed together, as one shard and one log append ([`Store::ingest`]). The idempotency key is logged (one fsynced JSON line) only
//! after that flush; a crash in between leaves the games stored and the key unknown, and the
//! retry is then answered by game-id dedup (all duplicates), so nothing is stored twice.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard};

use serde::{Deserialize, Serialize};
use xqz_dataset::{
    Compaction, Dataset, DatasetLocation, DatasetWriter, GameId, GameRecord, SampleRecord, ShardEntry, WriterConfig,
};

use xqz_run_folder::CoordinatorFolder;

use crate::error::{CoordinatorError, IoAt};

/// The idempotency log, in the data folder.
const KEY_LOG: &str = CoordinatorFolder::KEY_LOG;
/// The previous generation of the idempotency log.
const OLD_KEY_LOG: &str = CoordinatorFolder::OLD_KEY_LOG;

/// How many of the latest stored games the store keeps in memory, for the dashboard.
pub(crate) const RECENT_GAMES: usize = 100;

/// What the store remembers of the past, which bounds its memory and its start-up whatever the
/// number of stored games.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Memory {
    /// Keys per generation of the idempotency log: at this many the log is rotated
    /// (`idempotency.log` becomes `idempotency.log.1`, dropping the one before), so the keys of
    /// the latest `keys_per_log` to `2 * keys_per_log` keyed requests are known.
    pub keys_per_log: usize,
    /// Game ids of the latest stored games kept for finding duplicates (those of a retry whose
    /// key the log never got, after a crash between the flush and the log append).
    pub dedup_games: usize,
}

impl Default for Memory {
    fn default() -> Memory {
        // At most 2 x 32,768 keys of up to 128 bytes, and 65,536 ids of 16 bytes: about 20 MB.
        Memory { keys_per_log: 32_768, dedup_games: 65_536 }
    }
}

/// A stored game's id, its number of samples and its model version.
type Summary = (GameId, u64, u64);

/// The ids of the latest stored games, at most `cap` of them.
struct RecentIds {
    set: HashSet<GameId>,
    order: VecDeque<GameId>,
    cap: usize,
}

impl RecentIds {
    fn new(cap: usize) -> RecentIds {
        RecentIds { set: HashSet::new(), order: VecDeque::new(), cap }
    }

    fn contains(&self, id: &GameId) -> bool {
        self.set.contains(id)
    }

    /// Adds the id of a game stored after every one held, forgetting the oldest beyond the cap.
    fn push(&mut self, id: GameId) {
        if self.cap == 0 || !self.set.insert(id) {
            return;
        }
        self.order.push_back(id);
        if self.order.len() > self.cap
            && let Some(old) = self.order.pop_front()
        {
            self.set.remove(&old);
        }
    }

    /// Adds the id of a game stored before every one held, if there is room.
    fn push_older(&mut self, id: GameId) -> bool {
        if self.order.len() >= self.cap {
            return false;
        }
        if self.set.insert(id) {
            self.order.push_front(id);
        }
        true
    }
}

/// The known idempotency keys: this generation's (also in the log file) and the previous one's.
#[derive(Default)]
struct Keys {
    current: HashMap<String, (Ingested, Option<String>)>,
    previous: HashMap<String, (Ingested, Option<String>)>,
}

impl Keys {
    fn get(&self, key: &str) -> Option<&(Ingested, Option<String>)> {
        self.current.get(key).or_else(|| self.previous.get(key))
    }
}

/// The store's known idempotency keys, readable while the store is locked for a commit: a
/// request's early look for a replay must not wait for a flush (requests are validated while
/// others are written). Only the store changes them, after the games they answer are stored.
#[derive(Clone, Default)]
pub(crate) struct KeyIndex(Arc<RwLock<Keys>>);

impl KeyIndex {
    /// The earlier answer to `key`, if it was seen with the same `content` (a retry); an error if
    /// it was seen with other content.
    pub fn replayed(&self, key: &str, content: &str) -> Result<Option<Ingested>, KeyReused> {
        replayed(self.read().get(key), key, content)
    }

    fn read(&self) -> RwLockReadGuard<'_, Keys> {
        self.0.read().unwrap_or_else(|e| e.into_inner())
    }

    fn write(&self) -> RwLockWriteGuard<'_, Keys> {
        self.0.write().unwrap_or_else(|e| e.into_inner())
    }
}

/// The answer to a `SubmitGames` request, as the idempotency log keeps it.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Ingested {
    pub accepted: u32,
    pub duplicates: u32,
}

#[derive(Serialize, Deserialize)]
struct KeyLine {
    key: String,
    accepted: u32,
    duplicates: u32,
    /// [`content_digest`] of the request that first used the key (absent in older logs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    content: Option<String>,
}

/// What identifies a request's content: the sha256 of its game ids in order. A retry carries the
/// same games; a key reused for other games is not a retry.
pub(crate) fn content_digest<'a>(game_ids: impl IntoIterator<Item = &'a [u8]>) -> String {
    use sha2::{Digest, Sha256};
    let mut hasher = Sha256::new();
    for id in game_ids {
        hasher.update((id.len() as u32).to_le_bytes());
        hasher.update(id);
    }
    format!("{:x}", hasher.finalize())
}

/// A key seen before with other content.
#[derive(Debug)]
pub(crate) struct KeyReused;

/// One `SubmitGames` request's part in a group commit: its idempotency key (empty: none), the
/// [`content_digest`] of its games, and its validated games.
pub(crate) struct Submission {
    pub key: String,
    pub content: String,
    pub games: Vec<(GameRecord, Vec<SampleRecord>)>,
}

/// A request's answer from [`Store::ingest`]: the answer, whether it replays its key, and the
/// samples stored; or the key was used before with other content.
pub(crate) type Stored = Result<(Ingested, bool, u64), KeyReused>;

/// The earlier answer to `key`, whose log entry is `seen`, if that was for the same `content`.
fn replayed(
    seen: Option<&(Ingested, Option<String>)>,
    key: &str,
    content: &str,
) -> Result<Option<Ingested>, KeyReused> {
    match seen {
        _ if key.is_empty() => Ok(None),
        None => Ok(None),
        Some((_, Some(first))) if first != content => Err(KeyReused),
        Some((done, _)) => Ok(Some(*done)),
    }
}

/// What the store holds, for statistics.
#[derive(Clone, Debug, Default)]
pub(crate) struct StoreCounts {
    pub games: u64,
    pub samples: u64,
    /// Bytes of the dataset's shard files.
    pub bytes: u64,
    pub by_model: BTreeMap<u64, u64>,
}

pub(crate) struct Store {
    dataset: DatasetLocation,
    /// The idempotency log's path.
    key_log_path: PathBuf,
    /// `None` after a failed write whose buffered rows had to be dropped and reopening failed.
    writer: Option<DatasetWriter>,
    known: RecentIds,
    keys: KeyIndex,
    key_log: File,
    memory: Memory,
    counts: StoreCounts,
    /// The latest [`RECENT_GAMES`] stored games, oldest first.
    recent: VecDeque<GameRecord>,
    /// Set by [`Store::close`]: a request still running at shutdown must not open the dataset again.
    closed: bool,
}

fn writer_config() -> WriterConfig {
    // Flushed explicitly once per group commit: never mid-request, never on a timer; the small
    // shards that makes are merged as they pile up.
    WriterConfig {
        shard_rows: usize::MAX,
        flush_interval: None,
        writer_name: "xqz-coordinator".into(),
        compaction: Some(Compaction::default()),
        ..WriterConfig::default()
    }
}

fn sync_dir(dir: &Path) -> Result<(), CoordinatorError> {
    File::open(dir).and_then(|d| d.sync_all()).at(dir)
}

/// Reads the idempotency log, cutting a torn last line (a crash mid-append) off the file.
fn load_keys(path: &Path) -> Result<HashMap<String, (Ingested, Option<String>)>, CoordinatorError> {
    let text = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(source) => return Err(CoordinatorError::Io { path: path.into(), source }),
    };
    let complete = text.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    if complete < text.len() {
        let file = OpenOptions::new().write(true).open(path).at(path)?;
        file.set_len(complete as u64).at(path)?;
        file.sync_all().at(path)?;
    }
    let mut keys = HashMap::new();
    for (n, line) in text[..complete].split(|&b| b == b'\n').enumerate().filter(|(_, l)| !l.is_empty()) {
        let line: KeyLine = serde_json::from_slice(line)
            .map_err(|e| CoordinatorError::Corrupt { path: path.into(), message: format!("line {}: {e}", n + 1) })?;
        keys.insert(line.key, (Ingested { accepted: line.accepted, duplicates: line.duplicates }, line.content));
    }
    Ok(keys)
}

/// Adds `game` to the latest games, forgetting the oldest beyond [`RECENT_GAMES`].
fn remember(recent: &mut VecDeque<GameRecord>, game: GameRecord) {
    if recent.len() == RECENT_GAMES {
        recent.pop_front();
    }
    recent.push_back(game);
}

impl Store {
    /// Opens the dataset (for writing: it takes the dataset's lock or lease) and
    /// `<data>/idempotency.log`. It reads the manifest, the latest games (up to
    /// [`Memory::dedup_games`]) and the two generations of the log, so its time and memory do
    /// not grow with the number of stored games.
    pub fn open(data: &Path, location: DatasetLocation, memory: Memory) -> Result<Store, CoordinatorError> {
        fs::create_dir_all(data).at(data)?;
        let (writer, _report) = DatasetWriter::open_at(location.clone(), writer_config())?;
        let dataset = Dataset::open_at(location.clone())?;
        let bytes = dataset.shards().iter().map(ShardEntry::bytes).sum();
        let mut counts = StoreCounts {
            games: dataset.num_games(),
            samples: dataset.num_samples(),
            bytes,
            by_model: BTreeMap::new(),
        };
        let mut known = RecentIds::new(memory.dedup_games);
        let mut recent = VecDeque::with_capacity(RECENT_GAMES + 1);
        let (mut room, mut latest) = (true, Vec::new());
        // Newest first: the newest shards' games are the latest games, their ids fill the dedup
        // window (only that column is decoded), and older shards are read only if their per-model
        // counts predate the manifest's.
        for shard in dataset.shards().iter().rev() {
            let counted = !shard.games_by_model.is_empty() || shard.games == 0;
            if !counted || latest.len() < RECENT_GAMES {
                for game in dataset.read_games(shard)?.into_iter().rev() {
                    if !counted {
                        *counts.by_model.entry(game.model_version).or_default() += 1;
                    }
                    room = room && known.push_older(game.game_id);
                    if latest.len() < RECENT_GAMES {
                        latest.push(game);
                    }
                }
            } else if room {
                for id in dataset.read_game_ids(shard)?.into_iter().rev() {
                    room = room && known.push_older(id);
                }
            }
            for &[version, games] in &shard.games_by_model {
                *counts.by_model.entry(version).or_default() += games;
            }
        }
        latest.into_iter().rev().for_each(|game| remember(&mut recent, game));
        let log_path = data.join(KEY_LOG);
        let keys = Keys { current: load_keys(&log_path)?, previous: load_keys(&data.join(OLD_KEY_LOG))? };
        let keys = KeyIndex(Arc::new(RwLock::new(keys)));
        let key_log = OpenOptions::new().create(true).append(true).open(&log_path).at(&log_path)?;
        sync_dir(data)?;
        Ok(Store {
            dataset: location,
            key_log_path: log_path,
            writer: Some(writer),
            known,
            keys,
            key_log,
            memory,
            counts,
            recent,
            closed: false,
        })
    }

    /// The known idempotency keys, shared: they can be looked up while the store is busy.
    pub fn keys(&self) -> KeyIndex {
        self.keys.clone()
    }

    /// Game ids remembered for finding duplicates.
    #[cfg(test)]
    fn remembered_ids(&self) -> usize {
        self.known.order.len()
    }

    pub fn counts(&self) -> &StoreCounts {
        &self.counts
    }

    /// The latest stored games (at most [`RECENT_GAMES`]), oldest first.
    pub fn recent(&self) -> &VecDeque<GameRecord> {
        &self.recent
    }

    /// Stores the games of a group of requests that are not stored yet as one shard (one flush,
    /// one fsync), then logs their keys in one fsynced append: concurrent submissions share the
    /// cost of durability. Answers each request in order: its answer, whether it was a replay
    /// of its key (then nothing of it is stored) and the number of its samples stored. Requests
    /// of one group see each other as if they had come one after another. On an error no request
    /// of the group is answered; games already stored are then found as duplicates on a retry.
    pub fn ingest(&mut self, group: Vec<Submission>) -> Result<Vec<Stored>, CoordinatorError> {
        let mut answers = Vec::with_capacity(group.len());
        let mut fresh = Vec::new();
        let mut ids = HashSet::new();
        // Keys of this group, answered as the log will answer them once it is written.
        let mut logged: HashMap<String, (Ingested, Option<String>)> = HashMap::new();
        let mut lines = Vec::new();
        let known_keys = self.keys.read();
        for Submission { key, content, games } in group {
            // Checked again under the lock: a concurrent retry may have committed since the first look.
            let seen = logged.get(&key).or_else(|| known_keys.get(&key));
            match replayed(seen, &key, &content) {
                Ok(Some(done)) => {
                    answers.push(Ok((done, true, 0)));
                    continue;
                }
                Ok(None) => {}
                Err(reused) => {
                    answers.push(Err(reused));
                    continue;
                }
            }
            let mut result = Ingested::default();
            let mut samples = 0;
            for (game, game_samples) in games {
                if self.known.contains(&game.game_id) || !ids.insert(game.game_id) {
                    result.duplicates += 1;
                } else {
                    result.accepted += 1;
                    samples += game_samples.len() as u64;
                    fresh.push((game, game_samples));
                }
            }
            if !key.is_empty() {
                let line = KeyLine {
                    key: key.clone(),
                    accepted: result.accepted,
                    duplicates: result.duplicates,
                    content: Some(content.clone()),
                };
                serde_json::to_writer(&mut lines, &line).map_err(|e| CoordinatorError::Corrupt {
                    path: KEY_LOG.into(),
                    message: format!("cannot encode a key: {e}"),
                })?;
                lines.push(b'\n');
                logged.insert(key, (result, Some(content)));
            }
            answers.push(Ok((result, false, samples)));
        }
        drop(known_keys);
        if !fresh.is_empty() {
            self.write(fresh)?;
        }
        if !lines.is_empty() {
            self.key_log.write_all(&lines).and_then(|()| self.key_log.sync_data()).at(&self.key_log_path)?;
            let full = {
                let mut keys = self.keys.write();
                keys.current.extend(logged);
                keys.current.len() >= self.memory.keys_per_log
            };
            if full {
                self.rotate_key_log()?;
            }
        }
        Ok(answers)
    }

    /// Starts a new generation of the idempotency log; the one before the current is forgotten.
    fn rotate_key_log(&mut self) -> Result<(), CoordinatorError> {
        let dir = self.key_log_path.parent().unwrap_or(Path::new("."));
        let old = dir.join(OLD_KEY_LOG);
        // The rename replaces the older generation at once: a crash leaves one state or the other.
        fs::rename(&self.key_log_path, &old).at(&old)?;
        self.key_log = OpenOptions::new().create(true).append(true).open(&self.key_log_path).at(&self.key_log_path)?;
        sync_dir(dir)?;
        let mut keys = self.keys.write();
        keys.previous = std::mem::take(&mut keys.current);
        Ok(())
    }

    /// Appends and flushes `games` as one shard; on failure no row of them stays buffered.
    fn write(&mut self, games: Vec<(GameRecord, Vec<SampleRecord>)>) -> Result<(), CoordinatorError> {
        if self.closed {
            return Err(CoordinatorError::Stopping);
        }
        let writer = match self.writer.as_mut() {
            Some(w) => w,
            None => self.writer.insert(DatasetWriter::open_at(self.dataset.clone(), writer_config())?.0),
        };
        // What the store keeps of the games once they are stored: the writer takes the games
        // themselves, without a copy of their samples.
        let summary: Vec<Summary> = games.iter().map(|(g, s)| (g.game_id, s.len() as u64, g.model_version)).collect();
        let latest: Vec<GameRecord> =
            games[games.len().saturating_sub(RECENT_GAMES)..].iter().map(|(g, _)| g.clone()).collect();
        let written =
            games.into_iter().try_for_each(|(g, s)| writer.append(g, s).map(drop)).and_then(|()| writer.flush());
        match written {
            Ok(shard) => {
                self.counts.bytes += shard.map_or(0, |s| s.bytes());
                self.record(&summary, latest);
                self.compact();
                Ok(())
            }
            Err(err) => {
                if writer.pending_games() == 0 {
                    // The manifest lists the shard although a later step failed: the games are
                    // stored, so a retry must see them as duplicates.
                    self.record(&summary, latest);
                } else {
                    // Dropping the writer is the only way to discard its buffered rows, which
                    // must not reach a later shard as half of a rejected request.
                    self.writer = None;
                    self.writer = Some(DatasetWriter::open_at(self.dataset.clone(), writer_config())?.0);
                }
                Err(err.into())
            }
        }
    }

    /// Merges the newest shards where they have piled up. The games are stored whatever
    /// happens here: a merge that fails leaves the shards as they were, for a later commit.
    fn compact(&mut self) {
        let Some(writer) = self.writer.as_mut() else { return };
        match writer.compact() {
            Ok(merged) if !merged.is_empty() => {
                let shards = &writer.manifest().shards;
                self.counts.bytes = shards.iter().map(ShardEntry::bytes).sum();
                tracing::debug!(merged = merged.len(), shards = shards.len(), "merged shards");
            }
            Ok(_) => {}
            Err(err) => tracing::warn!(error = %err, "merging shards failed; they stay as they are for now"),
        }
    }

    /// Counts stored games and remembers their ids and the latest of them.
    fn record(&mut self, games: &[Summary], latest: Vec<GameRecord>) {
        for &(id, samples, model_version) in games {
            self.known.push(id);
            self.counts.games += 1;
            self.counts.samples += samples;
            *self.counts.by_model.entry(model_version).or_default() += 1;
        }
        latest.into_iter().for_each(|game| remember(&mut self.recent, game));
    }

    /// Flushes whatever is buffered (nothing, normally) and releases the dataset.
    pub fn close(&mut self) -> Result<(), CoordinatorError> {
        self.closed = true;
        if let Some(writer) = self.writer.take() {
            writer.finish()?;
        }
        Ok(())
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use rand::SeedableRng;
    use xqz_dataset::synthetic::{SyntheticConfig, random_game};

    use super::*;

    /// A synthetic game with id `id`.
    pub(crate) fn game(id: u128) -> (GameRecord, Vec<SampleRecord>) {
        random_game(&mut rand::rngs::StdRng::seed_from_u64(id as u64), id, &SyntheticConfig::default())
    }

    /// A request's games under `key`.
    pub(crate) fn submission(key: &str, games: &[&(GameRecord, Vec<SampleRecord>)]) -> Submission {
        let content = content_digest(games.iter().map(|(g, _)| g.game_id.0.as_slice()));
        Submission { key: key.into(), content, games: games.iter().map(|&g| g.clone()).collect() }
    }

    /// Game `id`, played by model `id % 3`.
    fn game_of_model(id: u128) -> (GameRecord, Vec<SampleRecord>) {
        let (mut game, mut samples) = game(id);
        game.model_version = (id % 3) as u64;
        samples.iter_mut().for_each(|s| s.model_version = game.model_version);
        (game, samples)
    }

    #[test]
    fn the_store_remembers_only_the_latest_keys_and_game_ids_across_restarts() {
        let dir = tempfile::tempdir().unwrap();
        let location = DatasetLocation::Local(dir.path().join("dataset"));
        let memory = Memory { keys_per_log: 4, dedup_games: 5 };
        let games: Vec<_> = (0..12).map(game_of_model).collect();
        let mut store = Store::open(dir.path(), location.clone(), memory).unwrap();
        for (i, g) in games.iter().enumerate() {
            store.ingest(vec![submission(&format!("k{i}"), &[g])]).unwrap();
        }
        assert_eq!(store.remembered_ids(), 5);
        store.close().unwrap();
        // The log rotated at 4 keys: k8 to k11 are in idempotency.log.1, the new log is empty.
        assert_eq!(fs::read_to_string(dir.path().join(KEY_LOG)).unwrap(), "");
        assert_eq!(fs::read_to_string(dir.path().join(OLD_KEY_LOG)).unwrap().lines().count(), 4);

        let mut store = Store::open(dir.path(), location, memory).unwrap();
        assert_eq!(store.remembered_ids(), 5);
        let content = |g: &(GameRecord, Vec<SampleRecord>)| submission("", &[g]).content;
        assert_eq!(
            store.keys().replayed("k11", &content(&games[11])).unwrap(),
            Some(Ingested { accepted: 1, duplicates: 0 })
        );
        assert_eq!(store.keys().replayed("k7", &content(&games[7])).unwrap(), None, "forgotten with its generation");
        let counts = store.counts().clone();
        assert_eq!((counts.games, counts.by_model.values().sum::<u64>()), (12, 12));
        assert_eq!(counts.by_model, BTreeMap::from([(0, 4), (1, 4), (2, 4)]));
        let recent: Vec<GameId> = store.recent().iter().map(|g| g.game_id).collect();
        assert_eq!(recent, games.iter().map(|(g, _)| g.game_id).collect::<Vec<_>>());
        // Game 11 is among the latest 5: a duplicate under any key. Game 3 is not: a fresh key
        // stores it again (the bound this memory buys, stated in docs/SECURITY.md).
        let answers =
            store.ingest(vec![submission("again-11", &[&games[11]]), submission("again-3", &[&games[3]])]).unwrap();
        assert_eq!(answers[0].as_ref().unwrap().0, Ingested { accepted: 0, duplicates: 1 });
        assert_eq!(answers[1].as_ref().unwrap().0, Ingested { accepted: 1, duplicates: 0 });
    }

    #[test]
    fn counts_and_latest_games_survive_merges_and_manifests_without_per_model_counts() {
        let dir = tempfile::tempdir().unwrap();
        let location = DatasetLocation::Local(dir.path().join("dataset"));
        let games: Vec<_> = (0..40).map(game_of_model).collect();
        let mut store = Store::open(dir.path(), location.clone(), Memory::default()).unwrap();
        for g in &games {
            store.ingest(vec![submission("", &[g])]).unwrap();
        }
        let before = store.counts().clone();
        store.close().unwrap();
        let dataset = Dataset::open_at(location.clone()).unwrap();
        // 40 commits: two merged shards of 16 and 8 single ones.
        assert_eq!(dataset.shards().iter().map(|s| s.level).collect::<Vec<_>>(), [1, 1, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(before.bytes, dataset.shards().iter().map(ShardEntry::bytes).sum::<u64>());

        // A manifest written before the per-model counts existed: the store counts from the games.
        let path = dir.path().join("dataset").join(xqz_dataset::layout::MANIFEST_FILE);
        let mut manifest: serde_json::Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
        for shard in manifest["shards"].as_array_mut().unwrap() {
            shard.as_object_mut().unwrap().remove("games_by_model").expect("counted");
        }
        fs::write(&path, serde_json::to_vec(&manifest).unwrap()).unwrap();
        let store = Store::open(dir.path(), location, Memory::default()).unwrap();
        let after = store.counts();
        assert_eq!((after.games, after.samples, after.bytes), (before.games, before.samples, before.bytes));
        assert_eq!(after.by_model, BTreeMap::from([(0, 14), (1, 13), (2, 13)]));
        let recent: Vec<GameId> = store.recent().iter().map(|g| g.game_id).collect();
        assert_eq!(recent, games.iter().map(|(g, _)| g.game_id).collect::<Vec<_>>());
        assert_eq!(store.remembered_ids(), 40);
    }

    #[test]
    fn a_group_is_one_shard_whose_requests_see_each_other_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let location = DatasetLocation::Local(dir.path().join("dataset"));
        let mut store = Store::open(dir.path(), location.clone(), Memory::default()).unwrap();
        let (a, b, c) = (game(1), game(2), game(3));
        let answers = store
            .ingest(vec![
                submission("k1", &[&a, &b]),
                // b was stored by the request before.
                submission("k2", &[&b, &c]),
                // A retry of k1 in the same group is a replay.
                submission("k1", &[&a, &b]),
                // k1 with other games is refused.
                submission("k1", &[&c]),
                // Without a key, nothing is logged; c is a duplicate.
                submission("", &[&c]),
            ])
            .unwrap();
        let samples = |g: &(GameRecord, Vec<SampleRecord>)| g.1.len() as u64;
        let answer = |accepted, duplicates| Ingested { accepted, duplicates };
        assert_eq!(answers[0].as_ref().unwrap(), &(answer(2, 0), false, samples(&a) + samples(&b)));
        assert_eq!(answers[1].as_ref().unwrap(), &(answer(1, 1), false, samples(&c)));
        assert_eq!(answers[2].as_ref().unwrap(), &(answer(2, 0), true, 0));
        assert!(answers[3].is_err());
        assert_eq!(answers[4].as_ref().unwrap(), &(answer(0, 1), false, 0));
        store.close().unwrap();

        let dataset = Dataset::open_at(location.clone()).unwrap();
        assert_eq!(dataset.shards().len(), 1, "one group, one shard");
        assert_eq!(dataset.games().unwrap().len(), 3);
        // The keys are durable: after a restart, k2 replays and k1 still refuses other games.
        let store = Store::open(dir.path(), location, Memory::default()).unwrap();
        let k2 = submission("k2", &[&b, &c]).content;
        assert_eq!(store.keys().replayed("k2", &k2).unwrap(), Some(answer(1, 1)));
        assert!(store.keys().replayed("k1", &k2).is_err());
    }
}
