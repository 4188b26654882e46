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

use arrow_array::RecordBatch;
use arrow_ipc::writer::{FileWriter, IpcWriteOptions};

use crate::dataset::{IgnoredReason, RecoveryReport, scan};
use crate::error::{ArrowContext, DatasetError, Result};
use crate::manifest::{Manifest, ShardEntry, ShardKind, TMP_SUFFIX, parse_shard_file_name};
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
}

impl Default for WriterConfig {
    fn default() -> WriterConfig {
        WriterConfig {
            shard_rows: 32_768,
            flush_interval: Some(Duration::from_secs(60)),
            compression: Compression::Zstd,
            batch_rows: 8_192,
            writer_name: "xqz".to_string(),
        }
    }
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
        // Checked again: the lease may have lapsed while the shard was uploading.
        match self.lock.check().and_then(|()| manifest.commit(&self.location, &self.manifest_version)) {
            Ok(version) => self.manifest_version = version,
            Err(err) => {
                // The rename (or PUT) may have happened before the failure: trust what is stored.
                if let Ok((stored, version)) = Manifest::read(&self.location)
                    && stored == manifest
                {
                    self.manifest = manifest;
                    self.manifest_version = version;
                    self.clear();
                }
                return Err(err);
            }
        }
        self.manifest = manifest;
        self.clear();
        Ok(Some(entry))
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
            writer: format!("xqz-dataset {} ({})", env!("CARGO_PKG_VERSION"), self.config.writer_name),
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
        })
    }

    /// Encodes `batch` as the Arrow IPC file `name`.
    fn encode(&self, name: &str, batch: &RecordBatch) -> Result<Vec<u8>> {
        let context = || format!("writing {}", self.location.file(name).display());
        let options =
            IpcWriteOptions::default().try_with_compression(self.config.compression.arrow()).arrow(context)?;
        let mut writer = FileWriter::try_new_with_options(Vec::new(), batch.schema_ref(), options).arrow(context)?;
        let rows = batch.num_rows();
        let mut offset = 0;
        while offset < rows {
            let len = self.config.batch_rows.min(rows - offset);
            writer.write(&batch.slice(offset, len)).arrow(context)?;
            offset += len;
        }
        writer.into_inner().arrow(context)
    }
}
