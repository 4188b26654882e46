//! Opening a dataset (a folder or an object store prefix): the committed shards, the files that are ignored, and reading rows.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::fs;
use std::io::Cursor;
use std::path::{Path, PathBuf};

use arrow_array::RecordBatch;
use arrow_ipc::reader::FileReader;
use arrow_schema::{Schema, SchemaRef};

use crate::error::{ArrowContext, DatasetError, IoContext, Result};
use crate::layout::{LOCK_FILE, MANIFEST_FILE, TMP_SUFFIX};
use crate::manifest::{Manifest, ShardEntry, ShardKind, parse_shard_file_name};
use crate::record::{Columns, GameId, GameRecord, SampleRecord, batch_to_games, batch_to_samples};
use crate::schema::{self, GAME_ID_BYTES, meta};
use crate::storage::DatasetLocation;

/// Why a file in the dataset folder is not read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IgnoredReason {
    /// A `.tmp` file: being written right now, or torn by a crash before its rename.
    Temporary,
    /// A complete-looking shard file that the manifest does not list (the writer died between
    /// the rename and the manifest update).
    Unlisted,
    /// A file the manifest lists is absent; its shard is skipped.
    Missing,
    /// A listed file's size differs from the manifest's; its shard is skipped.
    SizeMismatch {
        /// Bytes according to the manifest.
        expected: u64,
        /// Bytes on disk.
        actual: u64,
    },
}

impl fmt::Display for IgnoredReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IgnoredReason::Temporary => f.write_str("temporary file (in progress or torn by a crash)"),
            IgnoredReason::Unlisted => f.write_str("not listed in the manifest (uncommitted)"),
            IgnoredReason::Missing => f.write_str("listed in the manifest but missing; shard skipped"),
            IgnoredReason::SizeMismatch { expected, actual } => {
                write!(f, "{actual} bytes but the manifest says {expected}; shard skipped")
            }
        }
    }
}

/// A file that readers ignore, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IgnoredFile {
    /// The file (its object's URL, for a dataset in an object store).
    pub path: PathBuf,
    /// Why it is ignored.
    pub reason: IgnoredReason,
}

impl fmt::Display for IgnoredFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.reason)
    }
}

/// What opening a dataset found besides the committed shards.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// Files that are not read, in name order.
    pub ignored: Vec<IgnoredFile>,
}

impl RecoveryReport {
    /// Whether nothing was ignored.
    pub fn is_clean(&self) -> bool {
        self.ignored.is_empty()
    }
}

impl fmt::Display for RecoveryReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.ignored.is_empty() {
            return f.write_str("no ignored files");
        }
        writeln!(f, "{} ignored file(s):", self.ignored.len())?;
        for file in &self.ignored {
            writeln!(f, "  {file}")?;
        }
        Ok(())
    }
}

/// Lists the files of `location` that readers ignore and the manifest's shards whose files are
/// sound.
pub(crate) fn scan(location: &DatasetLocation, manifest: &Manifest) -> Result<(Vec<ShardEntry>, RecoveryReport)> {
    let mut ignored = Vec::new();
    let listed: HashSet<&str> =
        manifest.shards.iter().flat_map(|s| [s.games_file.as_str(), s.samples_file.as_str()]).collect();
    // A merged shard's old files are still there on purpose (see `Retired`).
    let retired: HashSet<u64> = manifest.retired.iter().flat_map(|r| r.shards.iter().copied()).collect();
    let files = location.list()?;
    for (name, _) in &files {
        if name == MANIFEST_FILE || name == LOCK_FILE {
            continue;
        }
        let reason = if name.ends_with(TMP_SUFFIX) {
            IgnoredReason::Temporary
        } else if parse_shard_file_name(name).is_some_and(|(_, id)| !retired.contains(&id))
            && !listed.contains(name.as_str())
        {
            IgnoredReason::Unlisted
        } else {
            continue;
        };
        ignored.push(IgnoredFile { path: location.file(name), reason });
    }
    let sizes: HashMap<&str, u64> = files.iter().map(|(name, size)| (name.as_str(), *size)).collect();
    let mut shards = Vec::with_capacity(manifest.shards.len());
    for shard in &manifest.shards {
        let mut sound = true;
        for (name, expected) in [(&shard.games_file, shard.games_bytes), (&shard.samples_file, shard.samples_bytes)] {
            let reason = match sizes.get(name.as_str()) {
                Some(&actual) if actual == expected => continue,
                Some(&actual) => IgnoredReason::SizeMismatch { expected, actual },
                None => IgnoredReason::Missing,
            };
            sound = false;
            ignored.push(IgnoredFile { path: location.file(name), reason });
        }
        if sound {
            shards.push(shard.clone());
        }
    }
    Ok((shards, RecoveryReport { ignored }))
}

/// The name of a shard's file of `kind`.
fn shard_file(shard: &ShardEntry, kind: ShardKind) -> &str {
    match kind {
        ShardKind::Games => &shard.games_file,
        ShardKind::Samples => &shard.samples_file,
    }
}

/// Reads one file of a listed shard at `location`, checked against the schema, the shard's id
/// and the manifest's row count; returns its path (for errors) and its batches.
pub(crate) fn read_shard(
    location: &DatasetLocation,
    shard: &ShardEntry,
    kind: ShardKind,
) -> Result<(PathBuf, ShardBatches)> {
    read_shard_columns(location, shard, kind, None)
}

/// [`read_shard`], decoding only the column named `column` if one is given.
fn read_shard_columns(
    location: &DatasetLocation,
    shard: &ShardEntry,
    kind: ShardKind,
    column: Option<&str>,
) -> Result<(PathBuf, ShardBatches)> {
    let name = shard_file(shard, kind);
    let path = location.file(name);
    let (expected, rows) = match kind {
        ShardKind::Games => (schema::games_schema(), shard.games),
        ShardKind::Samples => (schema::samples_schema(), shard.samples),
    };
    let batches = decode_ipc(location.read(name)?, &path, &expected, Some(shard.id), column)?;
    if batches.num_rows() as u64 != rows {
        let message = format!("{} rows, the manifest says {rows}", batches.num_rows());
        return Err(DatasetError::Shard { path, message });
    }
    Ok((path, batches))
}

/// The record batches of one shard file, with the file's schema (and its metadata).
#[derive(Clone, Debug)]
pub struct ShardBatches {
    /// The schema as stored, including the shard's metadata.
    pub schema: SchemaRef,
    /// The batches.
    pub batches: Vec<RecordBatch>,
}

impl ShardBatches {
    /// Total rows.
    pub fn num_rows(&self) -> usize {
        self.batches.iter().map(RecordBatch::num_rows).sum()
    }
}

/// Reads one Arrow IPC file, checking its schema against `expected` and its shard id.
pub fn read_ipc_file(path: &Path, expected: &Schema, shard_id: Option<u64>) -> Result<ShardBatches> {
    decode_ipc(fs::read(path).at(path)?, path, expected, shard_id, None)
}

/// Decodes one Arrow IPC file's `bytes` like [`read_ipc_file`], all columns or only `column`;
/// `path` names it in errors.
fn decode_ipc(
    bytes: Vec<u8>,
    path: &Path,
    expected: &Schema,
    shard_id: Option<u64>,
    column: Option<&str>,
) -> Result<ShardBatches> {
    let context = || format!("reading {}", path.display());
    let mut reader = FileReader::try_new(Cursor::new(&bytes[..]), None).arrow(context)?;
    let schema = reader.schema();
    schema::check_compatible(expected, &schema)
        .map_err(|source| DatasetError::Schema { path: path.to_path_buf(), source })?;
    if let Some(id) = shard_id {
        let stored = schema.metadata().get(meta::SHARD_ID);
        if stored.map(String::as_str) != Some(id.to_string().as_str()) {
            return Err(DatasetError::Shard {
                path: path.to_path_buf(),
                message: format!("metadata {} is {stored:?}, the manifest says {id}", meta::SHARD_ID),
            });
        }
    }
    if let Some(column) = column {
        // The footer is read again with the projection: only that column's buffers are decoded.
        let index = schema.index_of(column).arrow(context)?;
        reader = FileReader::try_new(Cursor::new(&bytes[..]), Some(vec![index])).arrow(context)?;
    }
    let batches = reader.collect::<Result<Vec<_>, _>>().arrow(context)?;
    Ok(ShardBatches { schema, batches })
}

/// A dataset opened for reading: the manifest's committed shards whose files are sound, and a
/// report of the files that are ignored. Opening never modifies the folder (or object store).
///
/// ```
/// use xqz_dataset::{Dataset, DatasetWriter, WriterConfig};
/// let dir = tempfile::tempdir()?;
/// let (writer, _report) = DatasetWriter::open(dir.path(), WriterConfig::default())?;
/// writer.finish()?;
/// let dataset = Dataset::open(dir.path())?;
/// assert_eq!(dataset.shards().len(), 0);
/// assert!(dataset.report().is_clean());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct Dataset {
    location: DatasetLocation,
    manifest: Manifest,
    shards: Vec<ShardEntry>,
    report: RecoveryReport,
}

impl Dataset {
    /// Opens the dataset in `dir` (which must exist; a folder without a manifest is empty).
    pub fn open(dir: impl AsRef<Path>) -> Result<Dataset> {
        Dataset::open_at(DatasetLocation::from(dir.as_ref()))
    }

    /// Opens the dataset at `location`: a folder as [`Dataset::open`], or an object store prefix
    /// (one without a manifest is an empty dataset).
    pub fn open_at(location: DatasetLocation) -> Result<Dataset> {
        Dataset::open_checked(location, false)
    }

    /// Opens the dataset at `location` as [`Dataset::open_at`] does, but refuses a location
    /// without a manifest ([`DatasetError::NoManifest`]), for readers to whom an empty dataset is
    /// a mistake rather than a run that has not stored anything yet.
    pub fn open_existing(location: DatasetLocation) -> Result<Dataset> {
        Dataset::open_checked(location, true)
    }

    fn open_checked(location: DatasetLocation, must_exist: bool) -> Result<Dataset> {
        if let Some(dir) = location.as_local()
            && !fs::metadata(dir).at(dir)?.is_dir()
        {
            return Err(DatasetError::Io {
                path: dir.to_path_buf(),
                source: std::io::Error::new(std::io::ErrorKind::NotADirectory, "not a dataset folder"),
            });
        }
        let manifest = match Manifest::read_optional(&location)? {
            Some((manifest, _)) => manifest,
            None if must_exist => return Err(DatasetError::NoManifest { location: location.to_string() }),
            None => Manifest::default(),
        };
        let (shards, report) = scan(&location, &manifest)?;
        Ok(Dataset { location, manifest, shards, report })
    }

    /// Where the dataset lives.
    pub fn location(&self) -> &DatasetLocation {
        &self.location
    }

    /// The manifest as read (it may list shards that [`Dataset::shards`] skips).
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// The readable committed shards, oldest first.
    pub fn shards(&self) -> &[ShardEntry] {
        &self.shards
    }

    /// The files that are ignored.
    pub fn report(&self) -> &RecoveryReport {
        &self.report
    }

    /// Games in the readable shards.
    pub fn num_games(&self) -> u64 {
        self.shards.iter().map(|s| s.games).sum()
    }

    /// Samples in the readable shards.
    pub fn num_samples(&self) -> u64 {
        self.shards.iter().map(|s| s.samples).sum()
    }

    /// The path of a shard's file; for a dataset in an object store, its object's URL.
    pub fn shard_path(&self, shard: &ShardEntry, kind: ShardKind) -> PathBuf {
        self.location.file(shard_file(shard, kind))
    }

    /// The raw record batches of a shard's games file.
    pub fn games_batches(&self, shard: &ShardEntry) -> Result<ShardBatches> {
        Ok(read_shard(&self.location, shard, ShardKind::Games)?.1)
    }

    /// The raw record batches of a shard's samples file.
    pub fn samples_batches(&self, shard: &ShardEntry) -> Result<ShardBatches> {
        Ok(read_shard(&self.location, shard, ShardKind::Samples)?.1)
    }

    /// The games of one shard.
    pub fn read_games(&self, shard: &ShardEntry) -> Result<Vec<GameRecord>> {
        let (path, data) = read_shard(&self.location, shard, ShardKind::Games)?;
        let mut out = Vec::with_capacity(data.num_rows());
        for batch in &data.batches {
            out.extend(batch_to_games(batch, &path)?);
        }
        Ok(out)
    }

    /// The ids of one shard's games, in order, decoding only that column.
    pub fn read_game_ids(&self, shard: &ShardEntry) -> Result<Vec<GameId>> {
        let (path, data) = read_shard_columns(&self.location, shard, ShardKind::Games, Some(schema::games::GAME_ID))?;
        let mut ids = Vec::with_capacity(data.num_rows());
        for batch in &data.batches {
            let bytes = Columns::new(batch, &path).fixed_binary(schema::games::GAME_ID, GAME_ID_BYTES)?;
            ids.extend(bytes.chunks_exact(GAME_ID_BYTES).map(|id| GameId(id.try_into().expect("16 bytes"))));
        }
        Ok(ids)
    }

    /// The samples of one shard.
    pub fn read_samples(&self, shard: &ShardEntry) -> Result<Vec<SampleRecord>> {
        let (path, data) = read_shard(&self.location, shard, ShardKind::Samples)?;
        let mut out = Vec::with_capacity(data.num_rows());
        for batch in &data.batches {
            out.extend(batch_to_samples(batch, &path)?);
        }
        Ok(out)
    }

    /// All games, oldest shard first.
    pub fn games(&self) -> Result<Vec<GameRecord>> {
        let mut out = Vec::new();
        for shard in &self.shards {
            out.extend(self.read_games(shard)?);
        }
        Ok(out)
    }

    /// All samples, oldest shard first.
    pub fn samples(&self) -> Result<Vec<SampleRecord>> {
        let mut out = Vec::new();
        for shard in &self.shards {
            out.extend(self.read_samples(shard)?);
        }
        Ok(out)
    }
}
