//! xqzero's self-play datasets: Arrow schemas for games and training samples, a crash-safe shard
//! writer, a reader that reports what it ignores, a replay window with mirror augmentation that
//! produces ready-to-train batches in a background thread, statistics and exports.
//!
//! # Layout
//!
//! A dataset is a folder of immutable shards. Each flush of the [`DatasetWriter`] writes one
//! shard: `games-<id>.arrow` and `samples-<id>.arrow`, Arrow IPC files with zstd (or lz4)
//! compressed batches, first under a `.tmp` name, fsynced, then renamed; only then is the pair
//! listed in `manifest.json`, which is replaced atomically (temporary file, fsync, rename, fsync
//! of the folder). Readers only read what the manifest lists: a torn `.tmp` file or a shard that
//! never made it into the manifest is ignored and listed in the [`RecoveryReport`]. A game and its
//! samples always share a shard, so a game is never half-stored. Shards carry their schema
//! version, kind, encodings, rulesets, model-version range and writer in the schema metadata
//! ([`schema::meta`]), so a single file is self-describing and readable by pyarrow, polars or
//! duckdb.
//!
//! The same layout lives in an object store under a prefix (`s3://bucket/prefix`, `gs://`,
//! `az://`) when the writer and readers are opened at a [`DatasetLocation`] (`open_at`): a PUT per
//! shard file in place of the temporary file and rename, a conditional PUT of the manifest, and a
//! lease object in place of the lock ([`storage`] describes the protocol).
//!
//! # Encodings
//!
//! Boards are stored raw (90 bytes, [`schema::BOARD_ENCODING`]) and policies sparsely over
//! `xiangqi::Move::to_u16` codes ([`schema::POLICY_ENCODING`]); the network crate turns boards into
//! input planes and move codes into its policy index.
//!
//! ```
//! use xiangqi::game::{Game, GameConfig};
//! use xqz_dataset::*;
//!
//! let dir = tempfile::tempdir()?;
//! let (mut writer, _report) = DatasetWriter::open(dir.path(), WriterConfig::default())?;
//! let mut game = Game::new(GameConfig { max_plies: Some(2), ..Default::default() });
//! for mv in ["h2e2", "h9g7"] {
//!     game.push_str(mv)?;
//! }
//! let mut record = GameRecord::from_game(&game, GameId::from_u128(42))?;
//! record.worker_id = "worker-1".into();
//! let searches: Vec<PlySearch> =
//!     record.moves.iter().map(|&mv| PlySearch::full(vec![PolicyEntry { mv, p: 1.0 }], [0.3, 0.4, 0.3], 1)).collect();
//! let samples = SampleRecord::from_game(&record, &searches)?;
//! writer.append(record.clone(), samples.clone())?;
//! writer.finish()?;
//!
//! let dataset = Dataset::open(dir.path())?;
//! assert_eq!(dataset.games()?, vec![record]);
//! assert_eq!(dataset.samples()?, samples);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod dataset;
mod error;
pub mod export;
pub mod layout;
pub mod manifest;
mod record;
mod replay;
pub mod schema;
pub mod stats;
pub mod storage;
pub mod synthetic;
mod writer;

pub use dataset::{Dataset, IgnoredFile, IgnoredReason, RecoveryReport, ShardBatches, read_ipc_file};
pub use error::{DatasetError, LocationError, Result};
pub use manifest::{Manifest, ShardEntry, ShardKind};
pub use record::{
    GameId, GameRecord, GameResult, MIRROR, ParseGameIdError, PlySearch, PolicyEntry, SampleRecord, decode_board,
    encode_board, games_to_batch, mirror_board, mirror_board_into, mirror_move_code, samples_to_batch,
};
pub use replay::{
    Batch, EpochBatches, GrowingWindow, MOVE_CODES, ReplayConfig, ReplayLoader, ReplayWindow, SampleColumns, WindowSize,
};
pub use stats::DatasetStats;
pub use storage::{DatasetLocation, ObjectPrefix};
pub use writer::{Compaction, Compression, DatasetWriter, WriterConfig};
