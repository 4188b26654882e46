//! The shard writer: buffers whole games with their samples and commits them as shard pairs.
//!
//! A flush writes `games-<id>.arrow` and `samples-<id>.arrow` (Arrow IPC files, compressed) so
//! that each appears complete or not at all (in a folder: a `.tmp` file, fsync, rename, fsync of
//! the folder; in an object store: one PUT), and only then lists the pair in the manifest, which
//! is itself replaced atomically (on an object store by a conditional PUT). A crash at any point
//! leaves either the old manifest (the new files are then ignored and reported by readers) or
//! the new one; a game and its samples are always in the same shard, so a game is never
//! half-stored.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use arrow_array::{Array, RecordBatch, UInt64Array};
use arrow_ipc::writer::{FileWriter, IpcWriteOptions};
use arrow_schema::Schema;

use crate::dataset::{IgnoredReason, RecoveryReport, read_shard, scan};
use crate::error::{ArrowContext, DatasetError, Result};
use crate::layout::TMP_SUFFIX;
use crate::manifest::{Manifest, RETIRED_GRACE_MS, Retired, ShardEntry, ShardKind, parse_shard_file_name};
use crate::record::{GameRecord, SampleRecord, games_to_batch, samples_to_batch, validate};
use crate::schema::{self, ShardMetadata};
use crate::storage::{DatasetLocation, Version, WriterLock};

/// Compression of the record batches in shard files.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Compression {
    /// Zstandard (the default: small files, fast enough to decode).
    #[default]
    Zstd,
    /// LZ4 frames (faster, larger).
    Lz4,
    /// None.
    None,
}

impl Compression {
    fn arrow(self) -> Option<arrow_ipc::CompressionType> {
        match self {
            Compression::Zstd => Some(arrow_ipc::CompressionType::ZSTD),
            Compression::Lz4 => Some(arrow_ipc::CompressionType::LZ4_FRAME),
            Compression::None => None,
        }
    }
}

/// How a [`DatasetWriter`] sizes and writes shards.
#[derive(Clone, Debug)]
pub struct WriterConfig {
    /// A shard is written as soon as the buffered samples (or games) reach this many rows. Games
    /// are never split, so a shard can exceed it by one game's samples.
    pub shard_rows: usize,
    /// A shard is also written once the oldest buffered game has waited this long (checked by
    /// [`DatasetWriter::append`] and [`DatasetWriter::flush_if_due`]); `None` never.
    pub flush_interval: Option<Duration>,
    /// Compression of the IPC record batches.
    pub compression: Compression,
    /// Rows per record batch inside a shard file.
    pub batch_rows: usize,
    /// Who writes (stored in each shard's `xqz.writer` after the crate's name and version).
    pub writer_name: String,
    /// Whether and how [`DatasetWriter::compact`] merges small shards (`None`: it never does).
    pub compaction: Option<Compaction>,
}

/// Size-tiered merging of small shards, for a writer that flushes often (the coordinator writes
/// one shard per group commit): without it the manifest, rewritten at every commit, and the
/// folder grow by one shard per commit.
///
/// When the newest [`Compaction::fan_in`] shards of the manifest all have the same level, they
/// are merged into one shard of the next level, unless it would hold more than
/// [`Compaction::max_samples`] samples (such shards stay as they are for good). So the manifest
/// holds about `fan_in` shards per level plus one per `max_samples / fan_in` to `max_samples`
/// samples, whatever the number of commits, and a row is rewritten at most once per level.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Compaction {
    /// Shards of one level merged at a time.
    pub fan_in: usize,
    /// The most samples a merged shard may hold (it is read whole by the replay window).
    pub max_samples: u64,
}

impl Default for Compaction {
    fn default() -> Compaction {
        Compaction { fan_in: 16, max_samples: 131_072 }
    }
}

impl Default for WriterConfig {
    fn default() -> WriterConfig {
        WriterConfig {
            shard_rows: 32_768,
            flush_interval: Some(Duration::from_secs(60)),
            compression: Compression::Zstd,
            batch_rows: 8_192,
            writer_name: "xqz".to_string(),
            compaction: None,
        }
    }
}

/// Sums `[model version, games]` pairs by version.
fn games_by_model(counts: impl Iterator<Item = [u64; 2]>) -> Vec<[u64; 2]> {
    let mut by_model = std::collections::BTreeMap::new();
    for [version, games] in counts {
        *by_model.entry(version).or_insert(0) += games;
    }
    by_model.into_iter().map(|(version, games)| [version, games]).collect()
}

fn now_unix_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

/// Writes games and their samples into a dataset (a folder or an object store prefix), one shard
/// per flush.
///
/// Only one writer may have a dataset open (it holds `writer.lock`: an OS lock in a folder, a
/// lease in an object store, see [`DatasetLocation`]); readers need no lock. Rows still buffered
/// when the writer is dropped are lost: call [`DatasetWriter::finish`].
///
/// ```
/// use xiangqi::game::{Game, GameConfig};
/// use xqz_dataset::{Dataset, DatasetWriter, GameId, GameRecord, PlySearch, SampleRecord, WriterConfig};
///
/// let dir = tempfile::tempdir()?;
/// let (mut writer, report) = DatasetWriter::open(dir.path(), WriterConfig::default())?;
/// assert!(report.is_clean());
/// let mut game = Game::new(GameConfig { max_plies: Some(1), ..Default::default() });
/// game.push_str("h2e2")?;
/// let record = GameRecord::from_game(&game, GameId::from_u128(7))?;
/// let samples = SampleRecord::from_game(&record, &[PlySearch::full(vec![], [0.0, 1.0, 0.0], 0)])?;
/// writer.append(record, samples)?;
/// writer.finish()?;
///
/// let dataset = Dataset::open(dir.path())?;
/// assert_eq!((dataset.num_games(), dataset.num_samples()), (1, 1));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct DatasetWriter {
    location: DatasetLocation,
    config: WriterConfig,
    lock: WriterLock,
    manifest: Manifest,
    /// The manifest's version as this writer last read or wrote it (its next replacement is
    /// conditional on it).
    manifest_version: Version,
    next_id: u64,
    games: Vec<GameRecord>,
    samples: Vec<SampleRecord>,
    oldest: Option<Instant>,
}

impl DatasetWriter {
    /// Opens (creating if needed) the dataset in `dir` for appending. Returns the writer and what
    /// recovery found: temporary files left by a crash are deleted (the lock proves that no
    /// other writer is using them); unlisted shard files are left in place and never reused.
    pub fn open(dir: impl AsRef<Path>, config: WriterConfig) -> Result<(DatasetWriter, RecoveryReport)> {
        DatasetWriter::open_at(DatasetLocation::from(dir.as_ref()), config)
    }

    /// Opens the dataset at `location` for appending, as [`DatasetWriter::open`] does a folder;
    /// on an object store the writer takes the prefix's lease, and refuses with
    /// [`DatasetError::Leased`] while another writer holds it.
    pub fn open_at(location: DatasetLocation, config: WriterConfig) -> Result<(DatasetWriter, RecoveryReport)> {
        if config.shard_rows == 0 || config.batch_rows == 0 {
            return Err(DatasetError::Config("shard_rows and batch_rows must be positive".into()));
        }
        if config.compaction.is_some_and(|c| c.fan_in < 2) {
            return Err(DatasetError::Config("compaction fan_in must be at least 2".into()));
        }
        let lock = location.lock(&config.writer_name)?;
        let (manifest, manifest_version) = Manifest::read(&location)?;
        let (_, report) = scan(&location, &manifest)?;
        let mut next_id = manifest.next_shard_id.max(manifest.shards.iter().map(|s| s.id + 1).max().unwrap_or(1));
        for file in &report.ignored {
            let name = file.path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
            if let Some((_, id)) = parse_shard_file_name(name.strip_suffix(TMP_SUFFIX).unwrap_or(name)) {
                next_id = next_id.max(id + 1);
            }
            if file.reason == IgnoredReason::Temporary {
                location.remove(name)?;
            }
        }
        let writer = DatasetWriter {
            location,
            config,
            lock,
            manifest,
            manifest_version,
            next_id,
            games: Vec::new(),
            samples: Vec::new(),
            oldest: None,
        };
        Ok((writer, report))
    }

    /// Where the dataset lives.
    pub fn location(&self) -> &DatasetLocation {
        &self.location
    }

    /// The manifest as last committed.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// Buffered games not yet written.
    pub fn pending_games(&self) -> usize {
        self.games.len()
    }

    /// Buffered samples not yet written.
    pub fn pending_samples(&self) -> usize {
        self.samples.len()
    }

    /// Buffers a finished game with its samples (checked for consistency: same game id,
    /// increasing plies inside the game, results and plies-to-end matching the game, finite
    /// targets), then writes a shard if it is full or due. Returns the shard written, if any.
    pub fn append(&mut self, game: GameRecord, samples: Vec<SampleRecord>) -> Result<Option<ShardEntry>> {
        validate(&game, &samples)?;
        self.games.push(game);
        self.samples.extend(samples);
        self.oldest.get_or_insert_with(Instant::now);
        if self.samples.len() >= self.config.shard_rows || self.games.len() >= self.config.shard_rows {
            return self.flush();
        }
        self.flush_if_due()
    }

    /// Writes a shard if the oldest buffered game has waited longer than the flush interval.
    pub fn flush_if_due(&mut self) -> Result<Option<ShardEntry>> {
        match (self.oldest, self.config.flush_interval) {
            (Some(t), Some(interval)) if t.elapsed() >= interval => self.flush(),
            _ => Ok(None),
        }
    }

    /// Writes everything buffered as one shard and commits it to the manifest. Returns `None`
    /// when nothing was buffered. On error the rows stay buffered (unless the manifest already
    /// lists them) and the next flush uses a fresh shard id.
    pub fn flush(&mut self) -> Result<Option<ShardEntry>> {
        if self.games.is_empty() {
            return Ok(None);
        }
        self.lock.check()?;
        let id = self.next_id;
        self.next_id += 1;
        let entry = self.write_pair(id)?;
        let mut manifest = self.manifest.clone();
        manifest.shards.push(entry.clone());
        manifest.next_shard_id = self.next_id;
        let committed = self.commit(manifest);
        if self.manifest.shards.last().is_some_and(|s| s.id == id) {
            self.clear();
        }
        committed.map(|()| Some(entry))
    }

    /// Replaces the manifest with `manifest`; on success (or a failure after which the store
    /// holds it anyway) it becomes this writer's.
    fn commit(&mut self, manifest: Manifest) -> Result<()> {
        // Checked again: the lease may have lapsed while the shard was uploading.
        match self.lock.check().and_then(|()| manifest.commit(&self.location, &self.manifest_version)) {
            Ok(version) => {
                self.manifest = manifest;
                self.manifest_version = version;
                Ok(())
            }
            Err(err) => {
                // The rename (or PUT) may have happened before the failure: trust what is stored.
                if let Ok((stored, version)) = Manifest::read(&self.location)
                    && stored == manifest
                {
                    self.manifest = manifest;
                    self.manifest_version = version;
                }
                Err(err)
            }
        }
    }

    /// Merges the newest shards as [`WriterConfig::compaction`] says, level after level, and
    /// deletes the files of earlier merges once their grace has passed; returns the shards
    /// written. Call it after a flush, when nothing is buffered. Readers see the merged rows
    /// in the same order; a failure leaves the manifest as it was before the failed merge (its
    /// new files unlisted, reported by readers until deleted), and the writer usable.
    pub fn compact(&mut self) -> Result<Vec<ShardEntry>> {
        let Some(compaction) = self.config.compaction else {
            return Ok(Vec::new());
        };
        let mut merged = Vec::new();
        self.lock.check()?;
        self.delete_retired()?;
        loop {
            let shards = &self.manifest.shards;
            let Some(level) = shards.last().map(|s| s.level) else {
                break;
            };
            let tail = shards.iter().rev().take_while(|s| s.level == level).count();
            if tail < compaction.fan_in {
                break;
            }
            let run = shards.len() - compaction.fan_in..shards.len();
            if shards[run.clone()].iter().map(|s| s.samples).sum::<u64>() > compaction.max_samples {
                break;
            }
            merged.push(self.merge_run(run, level + 1)?);
        }
        Ok(merged)
    }

    /// Merges the shards at `run` in the manifest into one shard at `level`, in their place,
    /// and retires them.
    fn merge_run(&mut self, run: std::ops::Range<usize>, level: u32) -> Result<ShardEntry> {
        let group = self.manifest.shards[run.clone()].to_vec();
        let id = self.next_id;
        self.next_id += 1;
        let entry = self.merge(&group, id, level)?;
        let mut manifest = self.manifest.clone();
        manifest.shards.splice(run, [entry.clone()]);
        manifest.next_shard_id = self.next_id;
        manifest.retired.push(Retired { shards: group.iter().map(|s| s.id).collect(), retired_unix_ms: now_unix_ms() });
        self.commit(manifest)?;
        Ok(entry)
    }

    /// Merges every run of consecutive shards that fits in `max_samples` samples into one shard,
    /// anywhere in the dataset: [`DatasetWriter::compact`] merges only the newest shards as they
    /// are written, so a dataset written without compaction keeps its small shards until this.
    /// Readers see the rows in the same order; each merged shard's level is one above the
    /// highest it replaces; the replaced files are deleted by a later writer once their grace
    /// has passed (readers may still be reading them). Returns the shards written.
    pub fn compact_all(&mut self, max_samples: u64) -> Result<Vec<ShardEntry>> {
        if !self.games.is_empty() {
            return Err(DatasetError::Config("flush buffered games before merging shards".into()));
        }
        self.lock.check()?;
        self.delete_retired()?;
        let mut merged = Vec::new();
        let mut start = 0;
        while start < self.manifest.shards.len() {
            let shards = &self.manifest.shards[start..];
            let mut samples = 0;
            let run = shards.iter().take_while(|s| {
                samples += s.samples;
                samples <= max_samples
            });
            let end = start + run.count();
            if end - start < 2 {
                start += 1;
                continue;
            }
            let level = shards[..end - start].iter().map(|s| s.level).max().unwrap_or(0) + 1;
            merged.push(self.merge_run(start..end, level)?);
            start += 1;
        }
        Ok(merged)
    }

    /// Deletes the retired files whose grace has passed, then drops them from the manifest.
    fn delete_retired(&mut self) -> Result<()> {
        let now = now_unix_ms();
        let is_due = |r: &Retired| now - r.retired_unix_ms >= RETIRED_GRACE_MS;
        // Called at every commit: nothing is copied unless something is due.
        if !self.manifest.retired.iter().any(is_due) {
            return Ok(());
        }
        let (due, kept): (Vec<_>, Vec<_>) = self.manifest.retired.iter().cloned().partition(is_due);
        for file in due.iter().flat_map(Retired::files) {
            // Deleted before the manifest forgets it: a crash in between leaves an id without
            // files, which nothing reads, rather than files that no manifest accounts for.
            self.location.remove_if_present(&file)?;
        }
        let manifest = Manifest { retired: kept, ..self.manifest.clone() };
        self.commit(manifest)
    }

    /// Writes shard `id` at `level` with the rows of `group` (consecutive shards, oldest first).
    fn merge(&self, group: &[ShardEntry], id: u64, level: u32) -> Result<ShardEntry> {
        let rulesets: BTreeSet<String> = group.iter().flat_map(|s| s.rulesets.iter().cloned()).collect();
        let meta = ShardMetadata {
            shard_id: id,
            rulesets: rulesets.into_iter().collect(),
            model_version_min: group.iter().map(|s| s.model_version_min).min().unwrap_or(0),
            model_version_max: group.iter().map(|s| s.model_version_max).max().unwrap_or(0),
            writer: self.writer_label(),
            created_unix_ms: now_unix_ms(),
        };
        let mut files = Vec::new();
        let mut by_model = Vec::new();
        for (kind, schema) in
            [(ShardKind::Games, schema::games_schema()), (ShardKind::Samples, schema::samples_schema())]
        {
            let name = kind.file_name(id);
            let schema = Arc::new(meta.apply(schema));
            // One source shard in memory at a time: a merge's memory is its output (compressed)
            // and its largest input, not the sum of its inputs.
            let mut file = ShardFile::new(&self.location, &self.config, &name, &schema)?;
            for shard in group {
                for batch in read_shard(&self.location, shard, kind)?.1.batches {
                    if kind == ShardKind::Games {
                        // Counted from the rows: shards of older manifests lack the counts.
                        let versions = batch
                            .column_by_name(schema::games::MODEL_VERSION)
                            .and_then(|c| c.as_any().downcast_ref::<UInt64Array>())
                            .ok_or_else(|| DatasetError::Shard {
                                path: self.location.file(&name),
                                message: "no model_version column".into(),
                            })?;
                        by_model.extend(versions.values().iter().map(|&v| [v, 1]));
                    }
                    let batch = RecordBatch::try_new(Arc::clone(&schema), batch.columns().to_vec())
                        .arrow(|| format!("merging into {}", self.location.file(&name).display()))?;
                    file.write(&batch)?;
                }
            }
            files.push((name, file.finish()?));
        }
        let entry = ShardEntry {
            id,
            games_file: files[0].0.clone(),
            samples_file: files[1].0.clone(),
            games: group.iter().map(|s| s.games).sum(),
            samples: group.iter().map(|s| s.samples).sum(),
            games_bytes: files[0].1.len() as u64,
            samples_bytes: files[1].1.len() as u64,
            model_version_min: meta.model_version_min,
            model_version_max: meta.model_version_max,
            rulesets: meta.rulesets,
            created_unix_ms: meta.created_unix_ms,
            games_by_model: games_by_model(by_model.into_iter()),
            level,
        };
        let (names, bytes): (Vec<String>, Vec<Vec<u8>>) = files.into_iter().unzip();
        self.location.write_all(names.iter().map(String::as_str).zip(bytes).collect())?;
        Ok(entry)
    }

    fn writer_label(&self) -> String {
        format!("xqz-dataset {} ({})", env!("CARGO_PKG_VERSION"), self.config.writer_name)
    }

    /// Flushes and releases the folder.
    pub fn finish(mut self) -> Result<Option<ShardEntry>> {
        self.flush()
    }

    fn clear(&mut self) {
        self.games.clear();
        self.samples.clear();
        self.oldest = None;
    }

    fn write_pair(&self, id: u64) -> Result<ShardEntry> {
        let rulesets: BTreeSet<&str> = self.games.iter().map(|g| g.ruleset.name()).collect();
        let versions = self.games.iter().map(|g| g.model_version).chain(self.samples.iter().map(|s| s.model_version));
        let (min, max) = versions.fold((u64::MAX, 0), |(lo, hi), v| (lo.min(v), hi.max(v)));
        let meta = ShardMetadata {
            shard_id: id,
            rulesets: rulesets.iter().map(|s| s.to_string()).collect(),
            model_version_min: min,
            model_version_max: max,
            writer: self.writer_label(),
            created_unix_ms: now_unix_ms(),
        };
        let games = games_to_batch(&self.games, Arc::new(meta.apply(schema::games_schema())))?;
        let samples = samples_to_batch(&self.samples, Arc::new(meta.apply(schema::samples_schema())))?;
        let games_name = ShardKind::Games.file_name(id);
        let samples_name = ShardKind::Samples.file_name(id);
        let games_file = self.encode(&games_name, &games)?;
        let samples_file = self.encode(&samples_name, &samples)?;
        let (games_bytes, samples_bytes) = (games_file.len() as u64, samples_file.len() as u64);
        self.location.write_all(vec![(&games_name, games_file), (&samples_name, samples_file)])?;
        Ok(ShardEntry {
            id,
            games_file: games_name,
            samples_file: samples_name,
            games: self.games.len() as u64,
            samples: self.samples.len() as u64,
            games_bytes,
            samples_bytes,
            model_version_min: meta.model_version_min,
            model_version_max: meta.model_version_max,
            rulesets: meta.rulesets,
            created_unix_ms: meta.created_unix_ms,
            games_by_model: games_by_model(self.games.iter().map(|g| [g.model_version, 1])),
            level: 0,
        })
    }

    /// Encodes `batch` as the Arrow IPC file `name`.
    fn encode(&self, name: &str, batch: &RecordBatch) -> Result<Vec<u8>> {
        let mut file = ShardFile::new(&self.location, &self.config, name, batch.schema_ref())?;
        file.write(batch)?;
        file.finish()
    }
}

/// An Arrow IPC file being encoded in memory, in record batches of at most
/// [`WriterConfig::batch_rows`] rows.
struct ShardFile {
    writer: FileWriter<Vec<u8>>,
    batch_rows: usize,
    /// The file's path, for errors.
    path: std::path::PathBuf,
}

impl ShardFile {
    fn new(location: &DatasetLocation, config: &WriterConfig, name: &str, schema: &Schema) -> Result<ShardFile> {
        let path = location.file(name);
        let context = || format!("writing {}", path.display());
        let options = IpcWriteOptions::default().try_with_compression(config.compression.arrow()).arrow(context)?;
        let writer = FileWriter::try_new_with_options(Vec::new(), schema, options).arrow(context)?;
        Ok(ShardFile { writer, batch_rows: config.batch_rows, path })
    }

    fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        let (rows, mut offset) = (batch.num_rows(), 0);
        while offset < rows {
            let len = self.batch_rows.min(rows - offset);
            self.writer.write(&batch.slice(offset, len)).arrow(|| format!("writing {}", self.path.display()))?;
            offset += len;
        }
        Ok(())
    }

    fn finish(self) -> Result<Vec<u8>> {
        let path = self.path;
        self.writer.into_inner().arrow(|| format!("writing {}", path.display()))
    }
}
