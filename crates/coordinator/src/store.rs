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

use serde::{Deserialize, Serialize};
use xqz_dataset::{Dataset, DatasetLocation, DatasetWriter, GameId, GameRecord, SampleRecord, WriterConfig};

use crate::error::{CoordinatorError, IoAt};

const KEY_LOG: &str = "idempotency.log";

/// How many of the latest stored games the store keeps in memory, for the dashboard.
pub(crate) const RECENT_GAMES: usize = 100;

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
    known: HashSet<GameId>,
    keys: HashMap<String, (Ingested, Option<String>)>,
    key_log: File,
    counts: StoreCounts,
    /// The latest [`RECENT_GAMES`] stored games, oldest first.
    recent: VecDeque<GameRecord>,
    /// Set by [`Store::close`]: a request still running at shutdown must not open the dataset again.
    closed: bool,
}

fn writer_config() -> WriterConfig {
    // Flushed explicitly once per request: never mid-request, never on a timer.
    WriterConfig {
        shard_rows: usize::MAX,
        flush_interval: None,
        writer_name: "xqz-coordinator".into(),
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
    /// `<data>/idempotency.log`, rebuilding the set of stored game ids.
    pub fn open(data: &Path, location: DatasetLocation) -> Result<Store, CoordinatorError> {
        fs::create_dir_all(data).at(data)?;
        let (writer, _report) = DatasetWriter::open_at(location.clone(), writer_config())?;
        let dataset = Dataset::open_at(location.clone())?;
        let bytes = dataset.shards().iter().map(|s| s.games_bytes + s.samples_bytes).sum();
        let mut counts = StoreCounts { games: 0, samples: dataset.num_samples(), bytes, by_model: BTreeMap::new() };
        let mut known = HashSet::new();
        let mut recent = VecDeque::with_capacity(RECENT_GAMES + 1);
        for game in dataset.games()? {
            known.insert(game.game_id);
            counts.games += 1;
            *counts.by_model.entry(game.model_version).or_default() += 1;
            remember(&mut recent, game);
        }
        let log_path = data.join(KEY_LOG);
        let keys = load_keys(&log_path)?;
        let key_log = OpenOptions::new().create(true).append(true).open(&log_path).at(&log_path)?;
        sync_dir(data)?;
        Ok(Store {
            dataset: location,
            key_log_path: log_path,
            writer: Some(writer),
            known,
            keys,
            key_log,
            counts,
            recent,
            closed: false,
        })
    }

    /// The earlier answer to `key`, if it was seen with the same `content` (a retry); an error if
    /// it was seen with other content.
    pub fn replayed(&self, key: &str, content: &str) -> Result<Option<Ingested>, KeyReused> {
        replayed(self.keys.get(key), key, content)
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
        for Submission { key, content, games } in group {
            // Checked again under the lock: a concurrent retry may have committed since the first look.
            let seen = logged.get(&key).or_else(|| self.keys.get(&key));
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
        if !fresh.is_empty() {
            self.write(&fresh)?;
        }
        if !lines.is_empty() {
            self.key_log.write_all(&lines).and_then(|()| self.key_log.sync_data()).at(&self.key_log_path)?;
            self.keys.extend(logged);
        }
        Ok(answers)
    }

    /// Appends and flushes `games` as one shard; on failure no row of them stays buffered.
    fn write(&mut self, games: &[(GameRecord, Vec<SampleRecord>)]) -> Result<(), CoordinatorError> {
        if self.closed {
            return Err(CoordinatorError::Stopping);
        }
        let writer = match self.writer.as_mut() {
            Some(w) => w,
            None => self.writer.insert(DatasetWriter::open_at(self.dataset.clone(), writer_config())?.0),
        };
        let written = games
            .iter()
            .try_for_each(|(g, s)| writer.append(g.clone(), s.clone()).map(drop))
            .and_then(|()| writer.flush());
        match written {
            Ok(shard) => {
                self.counts.bytes += shard.map_or(0, |s| s.games_bytes + s.samples_bytes);
                self.record(games);
                Ok(())
            }
            Err(err) => {
                if writer.pending_games() == 0 {
                    // The manifest lists the shard although a later step failed: the games are
                    // stored, so a retry must see them as duplicates.
                    self.record(games);
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

    fn record(&mut self, games: &[(GameRecord, Vec<SampleRecord>)]) {
        for (game, samples) in games {
            self.known.insert(game.game_id);
            self.counts.games += 1;
            self.counts.samples += samples.len() as u64;
            *self.counts.by_model.entry(game.model_version).or_default() += 1;
            remember(&mut self.recent, game.clone());
        }
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
mod tests {
    use rand::SeedableRng;
    use xqz_dataset::synthetic::{SyntheticConfig, random_game};

    use super::*;

    fn game(id: u128) -> (GameRecord, Vec<SampleRecord>) {
        random_game(&mut rand::rngs::StdRng::seed_from_u64(id as u64), id, &SyntheticConfig::default())
    }

    fn submission(key: &str, games: &[&(GameRecord, Vec<SampleRecord>)]) -> Submission {
        let content = content_digest(games.iter().map(|(g, _)| g.game_id.0.as_slice()));
        Submission { key: key.into(), content, games: games.iter().map(|&g| g.clone()).collect() }
    }

    #[test]
    fn a_group_is_one_shard_whose_requests_see_each_other_in_order() {
        let dir = tempfile::tempdir().unwrap();
        let location = DatasetLocation::Local(dir.path().join("dataset"));
        let mut store = Store::open(dir.path(), location.clone()).unwrap();
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
        let store = Store::open(dir.path(), location).unwrap();
        let k2 = submission("k2", &[&b, &c]).content;
        assert_eq!(store.replayed("k2", &k2).unwrap(), Some(answer(1, 1)));
        assert!(store.replayed("k1", &k2).is_err());
    }
}
