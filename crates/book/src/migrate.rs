//! Upgrading a book of an earlier schema to this build's. A grown book holds searches that took
//! hours and that no dataset can rebuild, so an upgrade copies it rather than asking for a
//! rebuild.

use std::fs;
use std::path::Path;

use rusqlite::{Connection, OpenFlags, params};
use xiangqi::Position;

use crate::canon::{Canonical, zobrist};
use crate::error::{BookError, Result};
use crate::schema;

/// The schema versions [`migrate`] upgrades from.
pub const MIGRATES_FROM: [u32; 1] = [1];

/// What [`migrate`] carried over.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Migrated {
    /// The schema version of the book read.
    pub from_version: u32,
    /// Positions copied.
    pub positions: u64,
    /// Position-move rows copied (their searched values, visits and priors too).
    pub moves: u64,
}

/// Copies the book at `from`, written by an earlier schema (see [`MIGRATES_FROM`]), to `to` in
/// this build's schema; `to` is refused if it exists unless `replace` (it may be `from` itself).
/// Every row and meta value is carried over; each position's key is computed again from its
/// FEN, which must be a legal position in the book's frame. The new file is written under a
/// temporary name and renamed into place, so a failed migration leaves `from` as it was and no
/// partial book.
///
/// ```
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("book.sqlite");
/// xqz_book::BookBuilder::new(Default::default()).write(&path, false)?;
/// let err = xqz_book::migrate(&path, &dir.path().join("new.sqlite"), false).unwrap_err();
/// assert!(err.to_string().contains("already schema version 2"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn migrate(from: &Path, to: &Path, replace: bool) -> Result<Migrated> {
    if to.exists() && !replace {
        return Err(BookError::Exists { path: to.to_path_buf() });
    }
    let sqlite = |path: &Path| {
        let path = path.to_path_buf();
        move |source| BookError::Sqlite { path: path.clone(), source }
    };
    let not_a_book = |message: String| BookError::NotABook { path: from.to_path_buf(), message };
    if let Err(source) = fs::metadata(from) {
        return Err(BookError::Io { path: from.to_path_buf(), source });
    }
    let old = Connection::open_with_flags(from, OpenFlags::SQLITE_OPEN_READ_ONLY).map_err(sqlite(from))?;
    let version = schema::stored_version(&old, not_a_book)?;
    let from_version = match version.as_deref().map(str::parse::<u32>) {
        Some(Ok(v)) if MIGRATES_FROM.contains(&v) => v,
        Some(Ok(v)) if v == schema::VERSION => {
            return Err(not_a_book(format!("already schema version {v}: nothing to migrate")));
        }
        _ => {
            return Err(not_a_book(format!(
                "schema version {} (this build migrates from {MIGRATES_FROM:?} to {})",
                version.as_deref().unwrap_or("none"),
                schema::VERSION
            )));
        }
    };
    let order = keyed_ids(&old, from)?;
    drop(old);

    let (positions, moves) = xqz_run_folder::write_atomic_with(to, |tmp| {
        crate::builder::remove_stale(tmp)?;
        let (copied, stored) = copy_rows(from, tmp, &order, from_version).map_err(sqlite(to))?;
        // A move whose position is missing has no place in the new book: refused, not dropped.
        if copied.1 != stored {
            return Err(not_a_book(format!("{} of its {stored} moves belong to no position", stored - copied.1)));
        }
        Ok(copied)
    })?;
    Ok(Migrated { from_version, positions, moves })
}

/// The old book's positions as (key, old id), in the order of their new ids: each FEN read,
/// checked to be in the book frame, and keyed as [`crate::BookBuilder`] keys it.
fn keyed_ids(old: &Connection, path: &Path) -> Result<Vec<(i64, i64)>> {
    let sqlite = |source| BookError::Sqlite { path: path.to_path_buf(), source };
    let mut rows = old.prepare("SELECT id, fen FROM positions").map_err(sqlite)?;
    let mut rows = rows.query([]).map_err(sqlite)?;
    let mut order = Vec::new();
    while let Some(row) = rows.next().map_err(sqlite)? {
        let id: i64 = row.get(0).map_err(sqlite)?;
        let fen: String = row.get(1).map_err(sqlite)?;
        let bad = |message: String| BookError::NotABook {
            path: path.to_path_buf(),
            message: format!("position {id} ({fen:?}): {message}"),
        };
        let pos = Position::from_fen(&fen).map_err(|e| bad(e.to_string()))?;
        let canonical = Canonical::of(&pos);
        if canonical.mirrored {
            return Err(bad("stored as the mirror of the book's frame".into()));
        }
        order.push((zobrist(&pos) as i64, id));
    }
    order.sort_unstable();
    Ok(order)
}

/// Writes the new book at `tmp` from the old one at `from` (of schema `version`), the positions
/// under the ids their keys take; returns the positions and moves copied, and the moves stored.
fn copy_rows(from: &Path, tmp: &Path, order: &[(i64, i64)], version: u32) -> rusqlite::Result<((u64, u64), u64)> {
    let mut conn = Connection::open(tmp)?;
    conn.execute_batch(schema::NEW_FILE)?;
    conn.execute("ATTACH DATABASE ?1 AS old", [from.to_string_lossy()])?;
    let tx = conn.transaction()?;
    tx.execute_batch(schema::CREATE)?;
    tx.execute_batch("CREATE TEMP TABLE ids (old INTEGER PRIMARY KEY, new INTEGER NOT NULL)")?;
    {
        let mut insert = tx.prepare("INSERT INTO temp.ids (old, new) VALUES (?1, ?2)")?;
        let ids = schema::slots(order.iter().map(|&(key, _)| key));
        for (&(_, old), new) in order.iter().zip(ids) {
            insert.execute(params![old, new])?;
        }
    }
    tx.execute(
        "INSERT INTO main.meta (key, value) SELECT key, value FROM old.meta \
         WHERE key NOT IN ('schema_version', 'key', 'migrated_from')",
        [],
    )?;
    for (key, value) in [
        ("schema_version", schema::VERSION.to_string()),
        ("key", schema::KEY.to_string()),
        ("migrated_from", format!("schema version {version}")),
    ] {
        tx.execute("INSERT INTO main.meta (key, value) VALUES (?1, ?2)", params![key, value])?;
    }
    let positions = tx.execute(
        "INSERT INTO main.positions (id, fen, games, ecco, opening) \
         SELECT i.new, p.fen, p.games, p.ecco, p.opening FROM old.positions p JOIN temp.ids i ON i.old = p.id \
         ORDER BY i.new",
        [],
    )?;
    let moves = tx.execute(
        "INSERT INTO main.moves \
         (position_id, move, games, wins, draws, losses, avg_plies, min_ply, value, visits, prior) \
         SELECT i.new, m.move, m.games, m.wins, m.draws, m.losses, m.avg_plies, m.min_ply, m.value, m.visits, \
         m.prior FROM old.moves m JOIN temp.ids i ON i.old = m.position_id ORDER BY i.new, m.move",
        [],
    )?;
    let stored: i64 = tx.query_row("SELECT count(*) FROM old.moves", [], |row| row.get(0))?;
    tx.commit()?;
    conn.execute_batch("DETACH DATABASE old")?;
    conn.close().map_err(|(_, e)| e)?;
    Ok(((positions as u64, moves as u64), stored as u64))
}
