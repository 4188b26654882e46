//! The manifest (`manifest.json`): the list of committed shards, replaced atomically.
//!
//! A dataset folder holds `manifest.json`, pairs of shard files `games-00000001.arrow` and
//! `samples-00000001.arrow`, and while a writer is open its `writer.lock`. Only the shards the
//! manifest lists exist for readers; anything else (a `.tmp` file left by a crash, a shard
//! renamed into place whose manifest update never happened) is ignored and reported.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{DatasetError, IoContext, Result};
use crate::schema::SCHEMA_VERSION;

/// The manifest's file name.
pub const MANIFEST_FILE: &str = "manifest.json";
/// The writer's lock file name.
pub const LOCK_FILE: &str = "writer.lock";
/// Suffix of files being written.
pub const TMP_SUFFIX: &str = ".tmp";
/// The value of [`Manifest::format`].
pub const FORMAT: &str = "xqz-dataset";

/// The two files of a shard.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ShardKind {
    /// `games-<id>.arrow`.
    Games,
    /// `samples-<id>.arrow`.
    Samples,
}

impl ShardKind {
    /// `games` or `samples`.
    pub const fn name(self) -> &'static str {
        match self {
            ShardKind::Games => "games",
            ShardKind::Samples => "samples",
        }
    }

    /// The file name of shard `id` of this kind.
    pub fn file_name(self, id: u64) -> String {
        format!("{}-{id:08}.arrow", self.name())
    }
}

/// Parses a shard file name (`games-00000003.arrow`) into its kind and id.
pub fn parse_shard_file_name(name: &str) -> Option<(ShardKind, u64)> {
    let stem = name.strip_suffix(".arrow")?;
    let (kind, id) = stem.split_once('-')?;
    let kind = match kind {
        "games" => ShardKind::Games,
        "samples" => ShardKind::Samples,
        _ => return None,
    };
    if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((kind, id.parse().ok()?))
}

/// One committed shard: a games file and a samples file written together.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardEntry {
    /// The shard's number (increasing in write order).
    pub id: u64,
    /// The games file name, relative to the dataset folder.
    pub games_file: String,
    /// The samples file name.
    pub samples_file: String,
    /// Rows in the games file.
    pub games: u64,
    /// Rows in the samples file.
    pub samples: u64,
    /// Size of the games file in bytes.
    pub games_bytes: u64,
    /// Size of the samples file in bytes.
    pub samples_bytes: u64,
    /// Lowest model version in the shard.
    pub model_version_min: u64,
    /// Highest model version in the shard.
    pub model_version_max: u64,
    /// The rulesets of its games.
    pub rulesets: Vec<String>,
    /// When it was written, Unix milliseconds.
    pub created_unix_ms: i64,
}

/// The list of committed shards, oldest first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// Always [`FORMAT`].
    pub format: String,
    /// The schema version of the shards ([`SCHEMA_VERSION`]).
    pub schema_version: u32,
    /// The id the next shard gets.
    pub next_shard_id: u64,
    /// Committed shards, in write order.
    pub shards: Vec<ShardEntry>,
}

impl Default for Manifest {
    fn default() -> Manifest {
        Manifest { format: FORMAT.to_string(), schema_version: SCHEMA_VERSION, next_shard_id: 1, shards: Vec::new() }
    }
}

impl Manifest {
    /// Reads `dir/manifest.json`; an absent manifest is an empty dataset.
    pub fn load(dir: &Path) -> Result<Manifest> {
        let path = dir.join(MANIFEST_FILE);
        let text = match fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Manifest::default()),
            Err(source) => return Err(DatasetError::Io { path, source }),
        };
        let manifest: Manifest = serde_json::from_str(&text)
            .map_err(|e| DatasetError::Manifest { path: path.clone(), message: e.to_string() })?;
        if manifest.format != FORMAT {
            return Err(DatasetError::Manifest { path, message: format!("format is {:?}", manifest.format) });
        }
        if manifest.schema_version != SCHEMA_VERSION {
            return Err(DatasetError::Manifest {
                path,
                message: format!("schema version {} (this build reads {SCHEMA_VERSION})", manifest.schema_version),
            });
        }
        Ok(manifest)
    }

    /// Replaces `dir/manifest.json` atomically: writes a temporary file, fsyncs it, renames it
    /// over the manifest and fsyncs the folder.
    pub fn store(&self, dir: &Path) -> Result<()> {
        let mut text = serde_json::to_string_pretty(self).map_err(|e| DatasetError::Manifest {
            path: dir.join(MANIFEST_FILE),
            message: format!("cannot serialise: {e}"),
        })?;
        text.push('\n');
        write_atomically(dir, MANIFEST_FILE, text.as_bytes())
    }

    /// Total rows of games.
    pub fn games(&self) -> u64 {
        self.shards.iter().map(|s| s.games).sum()
    }

    /// Total rows of samples.
    pub fn samples(&self) -> u64 {
        self.shards.iter().map(|s| s.samples).sum()
    }
}

/// The temporary name a file is written under before its rename.
pub fn tmp_name(name: &str) -> String {
    format!("{name}{TMP_SUFFIX}")
}

/// Creates `dir/<name>.tmp` for writing (failing if it exists).
pub(crate) fn create_tmp(dir: &Path, name: &str) -> Result<(PathBuf, File)> {
    let path = dir.join(tmp_name(name));
    let file = OpenOptions::new().write(true).create_new(true).open(&path).at(&path)?;
    Ok((path, file))
}

/// fsyncs a folder so that renames inside it are durable.
pub(crate) fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir).and_then(|d| d.sync_all()).at(dir)
}

/// Writes `bytes` to `dir/name` through a temporary file, fsync and rename, then fsyncs `dir`.
pub(crate) fn write_atomically(dir: &Path, name: &str, bytes: &[u8]) -> Result<()> {
    let tmp = dir.join(tmp_name(name));
    let result = (|| {
        let mut file = File::create(&tmp).at(&tmp)?;
        file.write_all(bytes).at(&tmp)?;
        file.sync_all().at(&tmp)?;
        drop(file);
        let target = dir.join(name);
        fs::rename(&tmp, &target).at(&target)?;
        sync_dir(dir)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_names_parse() {
        assert_eq!(parse_shard_file_name(&ShardKind::Games.file_name(3)), Some((ShardKind::Games, 3)));
        assert_eq!(parse_shard_file_name("samples-00000012.arrow"), Some((ShardKind::Samples, 12)));
        assert_eq!(parse_shard_file_name("samples-00000012.arrow.tmp"), None);
        assert_eq!(parse_shard_file_name("games-x.arrow"), None);
        assert_eq!(parse_shard_file_name("other-1.arrow"), None);
    }

    #[test]
    fn manifest_round_trips_atomically() -> Result<()> {
        let dir = tempfile::tempdir().at(Path::new("tempdir"))?;
        assert_eq!(Manifest::load(dir.path())?, Manifest::default());
        let m = Manifest { next_shard_id: 9, ..Manifest::default() };
        m.store(dir.path())?;
        assert_eq!(Manifest::load(dir.path())?, m);
        assert!(!dir.path().join(tmp_name(MANIFEST_FILE)).exists());
        fs::write(dir.path().join(MANIFEST_FILE), "{ \"format\": \"xqz-data").at(dir.path())?;
        assert!(matches!(Manifest::load(dir.path()), Err(DatasetError::Manifest { .. })));
        Ok(())
    }
}
