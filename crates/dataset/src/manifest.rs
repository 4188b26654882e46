//! The manifest (`manifest.json`): the list of committed shards, replaced atomically.
//!
//! A dataset folder (or object store prefix, [`crate::DatasetLocation`]) holds `manifest.json`,
//! pairs of shard files `games-00000001.arrow` and `samples-00000001.arrow`, and while a writer
//! is open its `writer.lock`. Only the shards the manifest lists exist for readers; anything else
//! (a `.tmp` file left by a crash, a shard renamed into place or uploaded whose manifest update
//! never happened) is ignored and reported.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::error::{DatasetError, Result};
use crate::layout::MANIFEST_FILE;
use crate::schema::SCHEMA_VERSION;
use crate::storage::{DatasetLocation, Version};

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
    /// `[model version, games]` for each model version of its games, by version (absent in
    /// manifests written before it was added: read the games then).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub games_by_model: Vec<[u64; 2]>,
    /// 0 for a shard written from buffered rows; `n + 1` for one merged from shards of level `n`
    /// ([`crate::Compaction`]).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub level: u32,
}

impl ShardEntry {
    /// Size of its two files in bytes.
    pub fn bytes(&self) -> u64 {
        self.games_bytes + self.samples_bytes
    }
}

fn is_zero(level: &u32) -> bool {
    *level == 0
}

/// The shards one merge replaced: no longer listed, their files kept for readers that read the
/// manifest before the merge, deleted by the writer once [`RETIRED_GRACE_MS`] have passed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Retired {
    /// The ids of the merged shards; their files are named by [`ShardKind::file_name`].
    pub shards: Vec<u64>,
    /// When the merge was committed, Unix milliseconds.
    pub retired_unix_ms: i64,
}

impl Retired {
    /// The names of the retired shards' files.
    pub fn files(&self) -> impl Iterator<Item = String> + '_ {
        self.shards.iter().flat_map(|&id| [ShardKind::Games.file_name(id), ShardKind::Samples.file_name(id)])
    }
}

/// How long a merged shard's old files outlive the merge: far longer than a reader takes between
/// reading the manifest and reading the shards it lists.
pub const RETIRED_GRACE_MS: i64 = 120_000;

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
    /// Shards merged into others, whose files are still present for a while ([`Retired`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub retired: Vec<Retired>,
}

impl Default for Manifest {
    fn default() -> Manifest {
        Manifest {
            format: FORMAT.to_string(),
            schema_version: SCHEMA_VERSION,
            next_shard_id: 1,
            shards: Vec::new(),
            retired: Vec::new(),
        }
    }
}

impl Manifest {
    /// Reads `dir/manifest.json`; an absent manifest is an empty dataset.
    pub fn load(dir: &Path) -> Result<Manifest> {
        Ok(Manifest::read(&DatasetLocation::from(dir))?.0)
    }

    /// Replaces `dir/manifest.json` atomically: writes a temporary file, fsyncs it, renames it
    /// over the manifest and fsyncs the folder.
    pub fn store(&self, dir: &Path) -> Result<()> {
        self.commit(&DatasetLocation::from(dir), &Version::default()).map(drop)
    }

    /// Reads the manifest of `location` and the version read; an absent manifest is an empty
    /// dataset.
    pub(crate) fn read(location: &DatasetLocation) -> Result<(Manifest, Version)> {
        Ok(Manifest::read_optional(location)?.unwrap_or_default())
    }

    /// The manifest of `location` and its version, `None` if there is none.
    pub(crate) fn read_optional(location: &DatasetLocation) -> Result<Option<(Manifest, Version)>> {
        let path = location.file(MANIFEST_FILE);
        let Some((bytes, version)) = location.read_optional(MANIFEST_FILE)? else {
            return Ok(None);
        };
        let manifest: Manifest = serde_json::from_slice(&bytes)
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
        Ok(Some((manifest, version)))
    }

    /// Replaces the manifest of `location` so that readers see the old or the new one, never a
    /// mix; on an object store only if it is still at `expected` (what this writer last read or
    /// wrote). Returns the new version.
    pub(crate) fn commit(&self, location: &DatasetLocation, expected: &Version) -> Result<Version> {
        let mut text = serde_json::to_string_pretty(self).map_err(|e| DatasetError::Manifest {
            path: location.file(MANIFEST_FILE),
            message: format!("cannot serialise: {e}"),
        })?;
        text.push('\n');
        location.replace(MANIFEST_FILE, text.into_bytes(), expected)
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

#[cfg(test)]
mod tests {
    use std::fs;

    use super::*;
    use crate::error::IoContext;
    use crate::layout::tmp_name;

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
