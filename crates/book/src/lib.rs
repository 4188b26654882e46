//! xqzero opening books: the games of self-play datasets merged into one SQLite file of
//! positions and the moves played from them, with win/draw/loss counts and ECCO opening names.
//!
//! ```
//! use xiangqi::game::{Game, GameConfig};
//! use xqz_book::{Book, BookBuilder, BuildConfig};
//! use xqz_dataset::{GameId, GameRecord};
//!
//! // Two games: 炮二平五 马8进7 and its mirror image 炮八平五 马2进3.
//! let mut builder = BookBuilder::new(BuildConfig::default());
//! for (id, line) in [(1, ["h2e2", "h9g7"]), (2, ["b2e2", "b9c7"])] {
//!     let mut game = Game::new(GameConfig { max_plies: Some(2), ..Default::default() });
//!     for mv in line {
//!         game.push_str(mv)?;
//!     }
//!     builder.add_game(&GameRecord::from_game(&game, GameId::from_u128(id))?)?;
//! }
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("book.sqlite");
//! builder.write(&path, false)?;
//!
//! // Probed from Red's left-hand cannon, the mirror image merges in: 2 games.
//! let book = Book::open(&path)?;
//! let mut pos = xiangqi::Position::startpos();
//! pos.play("h2e2".parse()?)?;
//! let entry = book.probe(&pos)?.unwrap();
//! assert_eq!(entry.moves[0].mv.to_string(), "h9g7");
//! assert_eq!(entry.moves[0].games, 2);
//! assert_eq!(entry.ecco.as_deref(), Some("B00"));
//! assert_eq!(entry.opening.as_deref(), Some("中炮"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # The file
//!
//! A book is an SQLite 3 file in an open layout (in the spirit of the Open Opening Book Standard)
//! that any SQLite browser or `sqlite3` module reads. Three tables:
//!
//! - `meta (key TEXT PRIMARY KEY, value TEXT)`: `format` = `xqz-book`, `schema_version` = `2`
//!   ([`SCHEMA_VERSION`]; readers refuse other versions), `key` and `frame` (how positions are
//!   keyed and which mirror side is stored, in words), `games`, `max_ply`, `min_games`, `writer`,
//!   and `migrated_from` in a book that [`migrate`] wrote.
//! - `positions (id INTEGER PRIMARY KEY, fen TEXT, games INTEGER, ecco TEXT, opening TEXT)`: one
//!   row per position. `id` is the rules core's 64-bit Zobrist hash (`xiangqi::Position::hash`,
//!   pieces and side to move) as a signed integer, so a look-up is one read of the table's own
//!   B-tree, with no index to build or search. Two positions that share a hash never merge: the
//!   second takes the next free id (linear probing), so a look-up reads the ids from the hash on,
//!   up to the first id with no row, and `fen` (the position with counters reset,
//!   `... w - - 0 1`) tells which is which. `games` counts the games that played a move here;
//!   `ecco` and `opening` name the opening line that reaches the position ([`ecco`]), or are
//!   NULL. (Version 1 stored the hash in a `key` column with an index of its own and numbered
//!   the rows; readers refuse such a book, and [`migrate`] copies it into this layout.)
//! - `moves (position_id, move TEXT, games, wins, draws, losses INTEGER, avg_plies REAL,
//!   min_ply INTEGER, value REAL, visits INTEGER, prior REAL)`, keyed by `(position_id, move)`:
//!   `move` in coordinate notation (`h2e2`), wins/draws/losses from the view of the side to move,
//!   `avg_plies` the mean length of those games, `min_ply` the earliest ply the move was played at
//!   here. `value` (for the side to move, in [-1, 1]), `visits` and `prior` are NULL in a book
//!   built from games; they are the columns a search that grows the book fills ([`Grower`]). A
//!   move that only a search added has no games (`games`, the counts and `avg_plies` are 0).
//!
//! # Frames: a position and its mirror image are one entry
//!
//! Xiangqi is symmetric left-right, so a position and its mirror image are stored once, as the
//! smaller of the two by their 90-byte board encodings ([`xqz_dataset::encode_board`], compared
//! byte by byte), with its moves in that frame. [`Book::probe`] mirrors a position into the
//! book frame and the moves back, so either side finds the entry. In a position that is its own
//! mirror image (the start position) a move and its mirror lead to the same entry and are one
//! row, the one with the smaller `xiangqi::Move::to_u16` code (`b2e2` stands for `h2e2` too).
//! Transpositions merge by construction: rows are positions, not move sequences.
//!
//! # Building
//!
//! [`BookBuilder`] counts games, from datasets or PGN files ([`BookBuilder::add_pgn`]: games that
//! do not replay or have no result are reported and left out), in memory (hash maps keyed by the
//! Zobrist key, each entry confirmed by its board) and [`BookBuilder::write`] writes the file in one transaction, under
//! a temporary name that is renamed into place once complete. An existing book is refused unless
//! the caller asks for it to be replaced (`xqz book build --force`); books are not merged into,
//! since a rebuild from the datasets is cheap and never counts a game twice.
//!
//! # Growing, browsing
//!
//! [`Grower`] grows a book in place by search with any `xqz_mcts::Evaluator`, one position per
//! transaction, so the file is the whole state and growing resumes where it stopped (the `grow`
//! module's docs give the rule that picks the next position). [`Book::export_html`] writes the
//! book as static pages to browse, [`Book::export_parquet`] as one table.

mod book;
mod builder;
mod canon;
pub mod ecco;
mod error;
mod export;
mod grow;
mod html;
mod migrate;
mod schema;

pub use book::{Book, BookMove, Entry, SuiteConfig, SuiteEntry};
pub use builder::{BookBuilder, BuildConfig, BuildSummary, PgnImport, SkipReason, SkippedGame};
pub use error::{BookError, Result};
pub use grow::{GrowConfig, Grower, Grown};
pub use html::{HtmlConfig, HtmlSummary};
pub use migrate::{MIGRATES_FROM, Migrated, migrate};
pub use schema::VERSION as SCHEMA_VERSION;
