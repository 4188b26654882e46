//! The two Arrow schemas (games and samples), their column names and the schema metadata that
//! makes every shard self-describing.
//!
//! Both schemas carry `xqz.schema_version` ([`SCHEMA_VERSION`]) and `xqz.kind` (`games` or
//! `samples`), the encodings of boards and policies, and per shard the ruleset(s), the range of
//! model versions and the writer (see [`ShardMetadata`]).
//!
//! ```
//! use xqz_dataset::schema::{self, meta};
//! let samples = schema::samples_schema();
//! assert_eq!(samples.metadata()[meta::SCHEMA_VERSION], schema::SCHEMA_VERSION.to_string());
//! assert_eq!(samples.field_with_name("board")?.data_type(), &arrow_schema::DataType::FixedSizeBinary(90));
//! # Ok::<(), arrow_schema::ArrowError>(())
//! ```

use std::collections::HashMap;
use std::sync::Arc;

use arrow_schema::{DataType, Field, Fields, Schema, TimeUnit};

/// Version of the two schemas. Readers refuse shards with another version.
///
/// Version 2 added `quiet_plies` and `repetitions` to the samples schema; version 3
/// `settings_version` to the games schema.
pub const SCHEMA_VERSION: u32 = 3;

/// Number of bytes of an encoded board.
pub const BOARD_BYTES: usize = 90;

/// Bytes of a game id.
pub const GAME_ID_BYTES: usize = 16;

/// Description of the board encoding stored in `xqz.board_encoding`.
pub const BOARD_ENCODING: &str = "raw90-v1: 90 bytes, one per point, index rank*9+file (rank 0 = Red's back \
rank, file 0 = file a, as in xiangqi::Square); 0 = empty, else 1 + piece index: Red K A B N R C P = 1..7, \
Black k a b n r c p = 8..14; absolute orientation (not flipped for the side to move), side_to_move separate \
(0 = Red, 1 = Black). The network crate turns it into input planes.";

/// Description of the policy encoding stored in `xqz.policy_encoding`.
pub const POLICY_ENCODING: &str = "move-u16-v1: sparse list of (move, p); move = from | to << 7 with points \
indexed rank*9+file (xiangqi::Move::to_u16), in the stored board's orientation; p = root visit fraction, the \
entries of a sample summing to 1. The network crate maps move codes to its policy index.";

/// Description of the value targets stored in `xqz.value_encoding`.
pub const VALUE_ENCODING: &str = "root_wdl = search estimate [win, draw, loss] for the side to move; result = \
final game result for the side to move (1 win, 0 draw, -1 loss).";

/// Schema metadata keys.
pub mod meta {
    /// The schema version ([`super::SCHEMA_VERSION`]), decimal.
    pub const SCHEMA_VERSION: &str = "xqz.schema_version";
    /// `games` or `samples`.
    pub const KIND: &str = "xqz.kind";
    /// See [`super::BOARD_ENCODING`].
    pub const BOARD_ENCODING: &str = "xqz.board_encoding";
    /// See [`super::POLICY_ENCODING`].
    pub const POLICY_ENCODING: &str = "xqz.policy_encoding";
    /// See [`super::VALUE_ENCODING`].
    pub const VALUE_ENCODING: &str = "xqz.value_encoding";
    /// The shard's number in its dataset.
    pub const SHARD_ID: &str = "xqz.shard_id";
    /// Rulesets of the shard's games, comma separated (usually one, e.g. `chinese2011`).
    pub const RULESET: &str = "xqz.ruleset";
    /// Lowest model version in the shard.
    pub const MODEL_VERSION_MIN: &str = "xqz.model_version_min";
    /// Highest model version in the shard.
    pub const MODEL_VERSION_MAX: &str = "xqz.model_version_max";
    /// The program that wrote the shard (`xqz-dataset 0.1.0`, plus the writer's name).
    pub const WRITER: &str = "xqz.writer";
    /// When the shard was written, Unix milliseconds.
    pub const CREATED_UNIX_MS: &str = "xqz.created_unix_ms";
}

/// The value of `xqz.kind` for games shards.
pub const KIND_GAMES: &str = "games";
/// The value of `xqz.kind` for samples shards.
pub const KIND_SAMPLES: &str = "samples";

/// Column names of the games schema.
pub mod games {
    /// `fixed_size_binary(16)`: the game id.
    pub const GAME_ID: &str = "game_id";
    /// `utf8`: the start position in FEN.
    pub const START_FEN: &str = "start_fen";
    /// `list<utf8>`: the moves in coordinate notation (`h2e2`).
    pub const MOVES: &str = "moves";
    /// `utf8`: `red`, `black` (the winner) or `draw`.
    pub const RESULT: &str = "result";
    /// `utf8`: the termination reason (`checkmate`, `perpetual_check`, ...; `xiangqi::game::Reason`).
    pub const REASON: &str = "reason";
    /// `utf8`: the rule article that applied (`4.1.1`, ...).
    pub const ARTICLE: &str = "article";
    /// `utf8`: the ruleset (`chinese2011`, `chinese1999`, `wxf`, `simple`).
    pub const RULESET: &str = "ruleset";
    /// `uint32`: number of plies.
    pub const LENGTH: &str = "length";
    /// `uint64`: the model version that played the game.
    pub const MODEL_VERSION: &str = "model_version";
    /// `utf8`: the worker that played it.
    pub const WORKER_ID: &str = "worker_id";
    /// `uint64`: the worker's random seed for the game.
    pub const SEED: &str = "seed";
    /// `timestamp[ms, UTC]`: when the game started.
    pub const START_TIME: &str = "start_time";
    /// `timestamp[ms, UTC]`: when it ended.
    pub const END_TIME: &str = "end_time";
    /// `uint64`: the version of the coordinator's play settings it was played and validated
    /// under (0: played locally, outside a coordinator).
    pub const SETTINGS_VERSION: &str = "settings_version";
}

/// Column names of the samples schema.
pub mod samples {
    /// `fixed_size_binary(16)`: the game the position comes from.
    pub const GAME_ID: &str = "game_id";
    /// `uint32`: plies played before the position (0 = the start position).
    pub const PLY: &str = "ply";
    /// `fixed_size_binary(90)`: the board, see [`super::BOARD_ENCODING`].
    pub const BOARD: &str = "board";
    /// `uint8`: 0 = Red to move, 1 = Black.
    pub const SIDE_TO_MOVE: &str = "side_to_move";
    /// `list<struct<move: uint16, p: float32>>`: the policy target, see [`super::POLICY_ENCODING`].
    pub const POLICY: &str = "policy";
    /// `fixed_size_list<float32, 3>`: the root's [win, draw, loss] estimate for the side to move.
    pub const ROOT_WDL: &str = "root_wdl";
    /// `int8`: the game's result for the side to move (1, 0, -1).
    pub const RESULT: &str = "result";
    /// `uint32`: plies from this position to the end of the game.
    pub const PLIES_TO_END: &str = "plies_to_end";
    /// `uint64`: the model version whose search produced the targets.
    pub const MODEL_VERSION: &str = "model_version";
    /// `bool`: whether the search was a full one (its policy is a training target) or a cheap one.
    pub const FULL_SEARCH: &str = "full_search";
    /// `uint16`: plies since the last capture (the position's halfmove clock, counting the start
    /// FEN's), saturated at 65535.
    pub const QUIET_PLIES: &str = "quiet_plies";
    /// `uint8`: how many times the position occurred earlier in the game since the last capture
    /// (`xiangqi::game::Game::repetitions`; 0 for a new position), saturated at 255.
    pub const REPETITIONS: &str = "repetitions";
    /// Field name of a policy entry's move code.
    pub const POLICY_MOVE: &str = "move";
    /// Field name of a policy entry's probability.
    pub const POLICY_P: &str = "p";
}

/// The timestamp type of `start_time` and `end_time`.
pub fn timestamp_type() -> DataType {
    DataType::Timestamp(TimeUnit::Millisecond, Some("UTC".into()))
}

/// The fields of one policy entry, `struct<move: uint16, p: float32>`.
pub fn policy_entry_fields() -> Fields {
    Fields::from(vec![
        Field::new(samples::POLICY_MOVE, DataType::UInt16, false),
        Field::new(samples::POLICY_P, DataType::Float32, false),
    ])
}

/// The list item field of `policy`.
pub fn policy_item_field() -> Arc<Field> {
    Arc::new(Field::new("item", DataType::Struct(policy_entry_fields()), false))
}

/// The list item field of `moves`.
pub fn moves_item_field() -> Arc<Field> {
    Arc::new(Field::new("item", DataType::Utf8, false))
}

/// The item field of `root_wdl`.
pub fn wdl_item_field() -> Arc<Field> {
    Arc::new(Field::new("item", DataType::Float32, false))
}

fn base_metadata(kind: &str) -> HashMap<String, String> {
    let mut m = HashMap::new();
    m.insert(meta::SCHEMA_VERSION.to_string(), SCHEMA_VERSION.to_string());
    m.insert(meta::KIND.to_string(), kind.to_string());
    m.insert(meta::BOARD_ENCODING.to_string(), BOARD_ENCODING.to_string());
    m.insert(meta::POLICY_ENCODING.to_string(), POLICY_ENCODING.to_string());
    m.insert(meta::VALUE_ENCODING.to_string(), VALUE_ENCODING.to_string());
    m
}

/// The games schema with its static metadata (version, kind, encodings); no column is nullable.
pub fn games_schema() -> Schema {
    use games::*;
    Schema::new_with_metadata(
        vec![
            Field::new(GAME_ID, DataType::FixedSizeBinary(GAME_ID_BYTES as i32), false),
            Field::new(START_FEN, DataType::Utf8, false),
            Field::new(MOVES, DataType::List(moves_item_field()), false),
            Field::new(RESULT, DataType::Utf8, false),
            Field::new(REASON, DataType::Utf8, false),
            Field::new(ARTICLE, DataType::Utf8, false),
            Field::new(RULESET, DataType::Utf8, false),
            Field::new(LENGTH, DataType::UInt32, false),
            Field::new(MODEL_VERSION, DataType::UInt64, false),
            Field::new(WORKER_ID, DataType::Utf8, false),
            Field::new(SEED, DataType::UInt64, false),
            Field::new(START_TIME, timestamp_type(), false),
            Field::new(END_TIME, timestamp_type(), false),
            Field::new(SETTINGS_VERSION, DataType::UInt64, false),
        ],
        base_metadata(KIND_GAMES),
    )
}

/// The samples schema with its static metadata (version, kind, encodings); no column is nullable.
pub fn samples_schema() -> Schema {
    use samples::*;
    Schema::new_with_metadata(
        vec![
            Field::new(GAME_ID, DataType::FixedSizeBinary(GAME_ID_BYTES as i32), false),
            Field::new(PLY, DataType::UInt32, false),
            Field::new(BOARD, DataType::FixedSizeBinary(BOARD_BYTES as i32), false),
            Field::new(SIDE_TO_MOVE, DataType::UInt8, false),
            Field::new(POLICY, DataType::List(policy_item_field()), false),
            Field::new(ROOT_WDL, DataType::FixedSizeList(wdl_item_field(), 3), false),
            Field::new(RESULT, DataType::Int8, false),
            Field::new(PLIES_TO_END, DataType::UInt32, false),
            Field::new(MODEL_VERSION, DataType::UInt64, false),
            Field::new(FULL_SEARCH, DataType::Boolean, false),
            Field::new(QUIET_PLIES, DataType::UInt16, false),
            Field::new(REPETITIONS, DataType::UInt8, false),
        ],
        base_metadata(KIND_SAMPLES),
    )
}

/// What a shard says about itself beyond the static schema metadata.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardMetadata {
    /// The shard's number in its dataset.
    pub shard_id: u64,
    /// The distinct rulesets of its games, sorted.
    pub rulesets: Vec<String>,
    /// Lowest model version among its games and samples.
    pub model_version_min: u64,
    /// Highest model version among its games and samples.
    pub model_version_max: u64,
    /// `xqz-dataset <version>` and the writer's name.
    pub writer: String,
    /// Creation time, Unix milliseconds.
    pub created_unix_ms: i64,
}

impl ShardMetadata {
    /// `schema` with this shard's metadata added.
    pub fn apply(&self, schema: Schema) -> Schema {
        let mut m = schema.metadata().clone();
        m.insert(meta::SHARD_ID.to_string(), self.shard_id.to_string());
        m.insert(meta::RULESET.to_string(), self.rulesets.join(","));
        m.insert(meta::MODEL_VERSION_MIN.to_string(), self.model_version_min.to_string());
        m.insert(meta::MODEL_VERSION_MAX.to_string(), self.model_version_max.to_string());
        m.insert(meta::WRITER.to_string(), self.writer.clone());
        m.insert(meta::CREATED_UNIX_MS.to_string(), self.created_unix_ms.to_string());
        schema.with_metadata(m)
    }
}

/// How a shard's schema differs from the one this version reads.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SchemaMismatch {
    /// `xqz.schema_version` or `xqz.kind` differs.
    #[error("metadata {key} is {actual:?}, expected {expected:?}")]
    Metadata {
        /// The metadata key.
        key: &'static str,
        /// Its value in the shard.
        actual: Option<String>,
        /// The value this version reads.
        expected: Option<String>,
    },
    /// Another number of columns.
    #[error("{actual} columns, expected {expected}")]
    Columns {
        /// The shard's.
        actual: usize,
        /// This version's.
        expected: usize,
    },
    /// A column differs in name, type or nullability.
    #[error(
        "column {:?} is {} (nullable {}), expected {:?} {} (nullable {})",
        actual.name(), actual.data_type(), actual.is_nullable(), expected.name(), expected.data_type(), expected.is_nullable()
    )]
    Column {
        /// The shard's column.
        actual: Box<arrow_schema::Field>,
        /// This version's column in its place.
        expected: Box<arrow_schema::Field>,
    },
}

/// Checks that `actual` has `expected`'s columns (names, types, nullability, in order) and the
/// same `xqz.schema_version` and `xqz.kind`; the error is the first difference.
pub fn check_compatible(expected: &Schema, actual: &Schema) -> Result<(), SchemaMismatch> {
    for key in [meta::SCHEMA_VERSION, meta::KIND] {
        let want = expected.metadata().get(key);
        let got = actual.metadata().get(key);
        if want != got {
            return Err(SchemaMismatch::Metadata { key, actual: got.cloned(), expected: want.cloned() });
        }
    }
    if expected.fields().len() != actual.fields().len() {
        return Err(SchemaMismatch::Columns { actual: actual.fields().len(), expected: expected.fields().len() });
    }
    for (want, got) in expected.fields().iter().zip(actual.fields().iter()) {
        if want.name() != got.name() || want.data_type() != got.data_type() || want.is_nullable() != got.is_nullable() {
            return Err(SchemaMismatch::Column {
                actual: Box::new((**got).clone()),
                expected: Box::new((**want).clone()),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_are_self_compatible_and_versioned() {
        for schema in [games_schema(), samples_schema()] {
            assert_eq!(check_compatible(&schema, &schema), Ok(()));
            assert_eq!(schema.metadata()[meta::SCHEMA_VERSION], "3");
        }
        let err = check_compatible(&games_schema(), &samples_schema()).unwrap_err();
        assert!(matches!(err, SchemaMismatch::Metadata { key: meta::KIND, .. }), "{err}");
        assert!(err.to_string().contains("xqz.kind"), "{err}");
    }

    #[test]
    fn shard_metadata_is_added() {
        let m = ShardMetadata {
            shard_id: 7,
            rulesets: vec!["chinese2011".into()],
            model_version_min: 3,
            model_version_max: 5,
            writer: "test".into(),
            created_unix_ms: 1,
        };
        let s = m.apply(samples_schema());
        assert_eq!(s.metadata()[meta::SHARD_ID], "7");
        assert_eq!(s.metadata()[meta::MODEL_VERSION_MAX], "5");
        assert_eq!(check_compatible(&samples_schema(), &s), Ok(()));
    }
}
