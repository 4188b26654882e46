//! Reading a book: the moves of a position, found from either mirror side.

use std::path::{Path, PathBuf};

use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags, OptionalExtension};
use xiangqi::{Move, Position};

use crate::canon::{Canonical, KeyFn, zobrist};
use crate::error::{BookError, Result};
use crate::schema;

/// A book move's counts, in the frame of the probed position.
#[derive(Clone, Debug, PartialEq)]
pub struct BookMove {
    /// The move, legal in the probed position.
    pub mv: Move,
    /// Games that played it here.
    pub games: u64,
    /// Of those, won by the side to move.
    pub wins: u64,
    /// Drawn.
    pub draws: u64,
    /// Lost by the side to move.
    pub losses: u64,
    /// The mean length in plies of those games.
    pub avg_plies: f64,
    /// The earliest ply at which it was played here.
    pub min_ply: u32,
    /// A searched value for the side to move, when a search has filled it.
    pub value: Option<f64>,
    /// The visits behind `value`.
    pub visits: Option<u64>,
    /// A network prior, when one was filled.
    pub prior: Option<f64>,
}

impl BookMove {
    /// The side to move's score in its games, (wins + draws / 2) / games; `None` for a move that
    /// only a search put in the book.
    pub fn score(&self) -> Option<f64> {
        (self.games > 0).then(|| (self.wins as f64 + self.draws as f64 / 2.0) / self.games as f64)
    }
}

/// What the book knows of a position.
#[derive(Clone, Debug, PartialEq)]
pub struct Entry {
    /// The position as stored (the book frame, counters reset).
    pub fen: String,
    /// The ECCO code of the opening line that reaches it, if named.
    pub ecco: Option<String>,
    /// The opening's Chinese name.
    pub opening: Option<String>,
    /// Its moves, most played first, then most visited by a search.
    pub moves: Vec<BookMove>,
}

/// How [`Book::suite`] picks opening positions for evaluation matches.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct SuiteConfig {
    /// The ply at which a position is first reached in the book's games.
    pub ply: u32,
    /// Positions wanted (fewer if the book has fewer that qualify).
    pub count: usize,
    /// Largest distance of the side to move's score from 0.5: a position one side wins most of
    /// the time says little about two players.
    pub balance: f64,
    /// Fewest games through a position.
    pub min_games: u64,
}

impl Default for SuiteConfig {
    fn default() -> SuiteConfig {
        SuiteConfig { ply: 8, count: 50, balance: 0.15, min_games: 2 }
    }
}

/// A position of an opening suite.
#[derive(Clone, Debug, PartialEq)]
pub struct SuiteEntry {
    /// The position (the book frame, counters reset).
    pub fen: String,
    /// The ECCO code of its opening line, if named.
    pub ecco: Option<String>,
    /// The opening's Chinese name.
    pub opening: Option<String>,
    /// Games through it.
    pub games: u64,
    /// The side to move's score in them.
    pub score: f64,
}

const SUITE: &str = "SELECT p.fen, p.ecco, p.opening, SUM(m.games), SUM(m.wins), SUM(m.draws) FROM positions p \
JOIN moves m ON m.position_id = p.id GROUP BY p.id HAVING MIN(m.min_ply) = ?1 AND SUM(m.games) >= ?2";

/// How a book file is opened.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    /// Probes and exports.
    Read,
    /// Growing it in place.
    Write,
}

/// A book file opened for reading.
///
/// ```no_run
/// let book = xqz_book::Book::open("book.sqlite")?;
/// if let Some(entry) = book.probe(&xiangqi::Position::startpos())? {
///     for m in &entry.moves {
///         println!("{} {} games, score {:?}, value {:?}", m.mv, m.games, m.score(), m.value);
///     }
/// }
/// # Ok::<(), xqz_book::BookError>(())
/// ```
pub struct Book {
    path: PathBuf,
    conn: Connection,
    key: KeyFn,
}

/// A position's row with its moves (none: one row of NULL moves).
const PROBE: &str = "SELECT p.fen, p.ecco, p.opening, m.move, m.games, m.wins, m.draws, m.losses, m.avg_plies, \
m.min_ply, m.value, m.visits, m.prior FROM positions p LEFT JOIN moves m ON m.position_id = p.id WHERE p.id = ?1";

/// Where a position lies in the `positions` table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Slot {
    /// Its row's id.
    Found(i64),
    /// Not there: the id a row for it would take.
    Free(i64),
}

impl Book {
    /// Opens a book read-only and checks its format and schema version.
    pub fn open(path: impl AsRef<Path>) -> Result<Book> {
        Book::open_with_key(path.as_ref(), zobrist, Access::Read)
    }

    /// Opens a book whose positions were keyed with `key` (tests force collisions with it).
    pub(crate) fn open_with_key(path: &Path, key: KeyFn, access: Access) -> Result<Book> {
        let path = path.to_path_buf();
        if let Err(source) = std::fs::metadata(&path) {
            return Err(BookError::Io { path, source });
        }
        let not_a_book = |message: String| BookError::NotABook { path: path.clone(), message };
        let flags = match access {
            Access::Read => OpenFlags::SQLITE_OPEN_READ_ONLY,
            Access::Write => OpenFlags::SQLITE_OPEN_READ_WRITE,
        };
        let conn = Connection::open_with_flags(&path, flags | OpenFlags::SQLITE_OPEN_NO_MUTEX)
            .map_err(|source| BookError::Sqlite { path: path.clone(), source })?;
        let version = schema::stored_version(&conn, not_a_book)?;
        if version.as_deref() != Some(schema::VERSION.to_string().as_str()) {
            return Err(not_a_book(format!(
                "schema version {} (this build reads {}): upgrade it with `xqz book migrate BOOK --out NEW` \
                 (from versions {:?}), or build it again with `xqz book build`",
                version.as_deref().unwrap_or("none"),
                schema::VERSION,
                crate::MIGRATES_FROM,
            )));
        }
        // Probes are many small look-ups: the file is mapped rather than read page by page, and
        // the planner keeps its plan for every key (SQLite built with STAT4 otherwise re-prepares
        // the statement whenever a new key is bound). A reader keeps one read transaction open
        // (no file lock per probe): the book it sees does not change under it, and a `grow`
        // writing the same file waits for it (up to the busy timeout) to commit.
        let setup = match access {
            Access::Read => "PRAGMA mmap_size = 1073741824; PRAGMA cache_size = -65536; BEGIN;",
            Access::Write => "PRAGMA mmap_size = 1073741824; PRAGMA cache_size = -65536;",
        };
        conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)
            .and_then(|_| conn.execute_batch(setup))
            .and_then(|()| conn.busy_timeout(std::time::Duration::from_secs(10)))
            .map_err(|source| BookError::Sqlite { path: path.clone(), source })?;
        Ok(Book { path, conn, key })
    }

    /// The book frame of `pos` and the key it is stored under.
    pub(crate) fn locate(&self, pos: &Position) -> (Canonical, u64) {
        let canonical = Canonical::of(pos);
        let key = if canonical.mirrored { (self.key)(&pos.mirror()) } else { (self.key)(pos) };
        (canonical, key)
    }

    /// The file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// A `meta` value (`games`, `max_ply`, ...).
    pub fn meta(&self, name: &str) -> Result<Option<String>> {
        self.conn
            .query_row("SELECT value FROM meta WHERE key = ?1", [name], |row| row.get(0))
            .optional()
            .map_err(|source| self.sqlite(source))
    }

    /// The open connection (for the exports).
    pub(crate) fn connection(&self) -> &Connection {
        &self.conn
    }

    pub(crate) fn sqlite(&self, source: rusqlite::Error) -> BookError {
        BookError::Sqlite { path: self.path.clone(), source }
    }

    /// An opening suite: positions first reached at `config.ply`, through at least
    /// `config.min_games` games, whose side to move scores within `config.balance` of 0.5; taken
    /// in turn from each ECCO family (A to E, then unnamed), most played first, so that the
    /// suite spreads over the kinds of openings rather than the most common line's variations.
    pub fn suite(&self, config: SuiteConfig) -> Result<Vec<SuiteEntry>> {
        let mut statement = self.conn.prepare(SUITE).map_err(|e| self.sqlite(e))?;
        let rows = statement
            .query_map(rusqlite::params![config.ply, config.min_games as i64], |row| {
                let (games, wins, draws): (i64, i64, i64) = (row.get(3)?, row.get(4)?, row.get(5)?);
                Ok(SuiteEntry {
                    fen: row.get(0)?,
                    ecco: row.get(1)?,
                    opening: row.get(2)?,
                    games: games as u64,
                    score: (wins as f64 + draws as f64 / 2.0) / games.max(1) as f64,
                })
            })
            .map_err(|e| self.sqlite(e))?;
        let mut families: std::collections::BTreeMap<char, Vec<SuiteEntry>> = std::collections::BTreeMap::new();
        for entry in rows {
            let entry = entry.map_err(|e| self.sqlite(e))?;
            if (entry.score - 0.5).abs() <= config.balance {
                let family = entry.ecco.as_deref().and_then(|c| c.chars().next()).unwrap_or('~');
                families.entry(family).or_default().push(entry);
            }
        }
        for family in families.values_mut() {
            // Least played first, so that `pop` takes the most played; ties by position.
            family.sort_by(|a, b| a.games.cmp(&b.games).then_with(|| b.fen.cmp(&a.fen)));
        }
        let mut suite = Vec::new();
        while suite.len() < config.count && families.values().any(|f| !f.is_empty()) {
            for family in families.values_mut() {
                if suite.len() < config.count
                    && let Some(entry) = family.pop()
                {
                    suite.push(entry);
                }
            }
        }
        Ok(suite)
    }

    /// Where the position of book-frame `fen` under `key` lies: the ids from the key on, up to
    /// the first with no row, are the only places it can be.
    pub(crate) fn slot(&self, key: u64, fen: &str) -> Result<Slot> {
        let mut statement =
            self.conn.prepare_cached("SELECT fen FROM positions WHERE id = ?1").map_err(|e| self.sqlite(e))?;
        let mut id = key as i64;
        loop {
            let stored: Option<String> =
                statement.query_row([id], |row| row.get(0)).optional().map_err(|e| self.sqlite(e))?;
            match stored {
                None => return Ok(Slot::Free(id)),
                Some(stored) if stored == fen => return Ok(Slot::Found(id)),
                Some(_) => id = schema::next_slot(id),
            }
        }
    }

    /// The book's entry for `pos` or for its mirror image, with moves in `pos`'s frame.
    pub fn probe(&self, pos: &Position) -> Result<Option<Entry>> {
        let (canonical, key) = self.locate(pos);
        let fen = canonical.fen();
        let mut statement = self.conn.prepare_cached(PROBE).map_err(|e| self.sqlite(e))?;
        let mut id = key as i64;
        // One query in all but a hash collision: the row at the key's own id is the position.
        let mut entry = loop {
            let mut rows = statement.query([id]).map_err(|e| self.sqlite(e))?;
            let Some(row) = rows.next().map_err(|e| self.sqlite(e))? else { return Ok(None) };
            let stored: String = row.get(0).map_err(|e| self.sqlite(e))?;
            if stored != fen {
                id = schema::next_slot(id);
                continue;
            }
            let mut entry = Entry {
                fen: stored,
                ecco: row.get(1).map_err(|e| self.sqlite(e))?,
                opening: row.get(2).map_err(|e| self.sqlite(e))?,
                moves: Vec::new(),
            };
            let mut next = Some(row);
            while let Some(row) = next {
                if let Some(book_move) = self.book_move(row, &canonical)? {
                    entry.moves.push(book_move);
                }
                next = rows.next().map_err(|e| self.sqlite(e))?;
            }
            if entry.moves.is_empty() {
                return Ok(None);
            }
            break entry;
        };
        entry.moves.sort_by(|a, b| {
            b.games.cmp(&a.games).then(b.visits.cmp(&a.visits)).then(a.mv.to_u16().cmp(&b.mv.to_u16()))
        });
        Ok(Some(entry))
    }

    /// The move of a [`PROBE`] row, in the frame of `canonical`'s position; none in the row of a
    /// position without moves.
    fn book_move(&self, row: &rusqlite::Row<'_>, canonical: &Canonical) -> Result<Option<BookMove>> {
        let Some(text) = row.get::<_, Option<String>>(3).map_err(|e| self.sqlite(e))? else { return Ok(None) };
        let mv: Move = text
            .parse()
            .map_err(|_| BookError::NotABook { path: self.path.clone(), message: format!("bad move {text:?}") })?;
        let get_u64 = |i| row.get::<_, i64>(i).map(|n| n as u64);
        (|| {
            Ok::<_, rusqlite::Error>(BookMove {
                mv: canonical.move_from_book(mv),
                games: get_u64(4)?,
                wins: get_u64(5)?,
                draws: get_u64(6)?,
                losses: get_u64(7)?,
                avg_plies: row.get(8)?,
                min_ply: row.get(9)?,
                value: row.get(10)?,
                visits: row.get::<_, Option<i64>>(11)?.map(|n| n as u64),
                prior: row.get(12)?,
            })
        })()
        .map(Some)
        .map_err(|e| self.sqlite(e))
    }
}
