//! The book file's tables; the crate docs describe them.

/// `meta.format`.
pub(crate) const FORMAT: &str = "xqz-book";

/// `meta.schema_version`: this build reads and writes only this version.
pub const VERSION: u32 = 2;

/// `meta.key`: how `positions.id` is computed.
pub(crate) const KEY: &str = "xiangqi Position::hash (Zobrist of pieces and side to move) of the book-frame position, \
as a signed 64-bit integer, is the position's id; a position whose id is taken by another takes the next free one \
(linear probing), so a look-up reads ids from the key on, up to the first id with no row, and compares the FEN";

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

/// Set on the connection of a book file written whole (built or migrated) before it is renamed
/// into place: a failed write leaves no book, so no journal is needed. Pages of 16 KiB mean
/// fewer B-tree pages to set up per row than the default 4 KiB. Each move's position is inserted
/// before it, so the foreign-key look-up per move (on by default in this SQLite build) would only
/// cost time.
pub(crate) const NEW_FILE: &str = "PRAGMA page_size = 16384; PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; \
PRAGMA cache_size = -262144; PRAGMA temp_store = MEMORY; PRAGMA foreign_keys = OFF;";

/// The `meta.schema_version` of the book open on `conn`, once its `meta.format` shows it is an xqz
/// book; `not_a_book` words each refusal as the caller's error.
pub(crate) fn stored_version(
    conn: &rusqlite::Connection,
    not_a_book: impl Fn(String) -> crate::BookError,
) -> crate::Result<Option<String>> {
    use rusqlite::OptionalExtension;
    let meta = |name: &str| -> crate::Result<Option<String>> {
        conn.query_row("SELECT value FROM meta WHERE key = ?1", [name], |row| row.get(0))
            .optional()
            .map_err(|e| not_a_book(format!("no readable meta table ({e})")))
    };
    if meta("format")?.as_deref() != Some(FORMAT) {
        return Err(not_a_book(format!("meta.format is not {FORMAT:?}")));
    }
    meta("schema_version")
}

/// The row ids of positions with these keys, given in ascending order as signed integers (a
/// key under which several positions lie, once per position): each key's own id, or the next
/// after the id before it where that is taken. Inserted in this order, every key's positions lie
/// in the run of consecutive ids that starts at the key, as [`next_slot`] walks it.
pub(crate) fn slots(sorted_keys: impl Iterator<Item = i64>) -> Vec<i64> {
    let mut last: Option<i64> = None;
    sorted_keys
        .map(|key| {
            let id = match last {
                Some(last) if last >= key => next_slot(last),
                _ => key,
            };
            last = Some(id);
            id
        })
        .collect()
}

/// The id after `id` in a look-up's walk.
pub(crate) fn next_slot(id: i64) -> i64 {
    id.wrapping_add(1)
}
