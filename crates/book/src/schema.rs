//! The book file's tables; the crate docs describe them.

/// `meta.format`.
pub(crate) const FORMAT: &str = "xqz-book";

/// `meta.schema_version`: this build reads and writes only this version.
pub const VERSION: u32 = 1;

/// `meta.key`: how `positions.key` is computed.
pub(crate) const KEY: &str = "xiangqi Position::hash (Zobrist of pieces and side to move) of the book-frame position, \
as a signed 64-bit integer";

/// `meta.frame`: which of a position and its mirror image is stored.
pub(crate) const FRAME: &str = "the smaller by xqz_dataset::encode_board bytes (90 bytes, point rank*9+file, \
compared in order); moves are stored in that frame, and in a symmetric position a move and its mirror as the one \
with the smaller xiangqi::Move::to_u16 code";

pub(crate) const CREATE: &str = "
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE positions (
    id      INTEGER PRIMARY KEY,
    key     INTEGER NOT NULL,
    fen     TEXT NOT NULL,
    games   INTEGER NOT NULL,
    ecco    TEXT,
    opening TEXT
);
CREATE TABLE moves (
    position_id INTEGER NOT NULL REFERENCES positions(id),
    move        TEXT NOT NULL,
    games       INTEGER NOT NULL,
    wins        INTEGER NOT NULL,
    draws       INTEGER NOT NULL,
    losses      INTEGER NOT NULL,
    avg_plies   REAL NOT NULL,
    min_ply     INTEGER NOT NULL,
    value       REAL,
    visits      INTEGER,
    prior       REAL,
    PRIMARY KEY (position_id, move)
) WITHOUT ROWID;
";

/// Created after the rows: one sorted build instead of an index update per row.
pub(crate) const INDEXES: &str = "CREATE INDEX positions_key ON positions (key);";
