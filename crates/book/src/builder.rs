//! Building a book: games counted in memory, then written to SQLite in one transaction.

use std::collections::HashMap;
use std::fs;
use std::hash::{BuildHasherDefault, Hasher};
use std::io::BufReader;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, params};
use xiangqi::notation::{PgnError, PgnErrorKind, PgnReader, PgnResult};
use xiangqi::{Color, Move, Position};
use xqz_dataset::{Dataset, DatasetLocation, GameRecord, GameResult, encode_board};

use crate::canon::{Canonical, KeyFn, zobrist};
use crate::ecco::{Classifier, OPENINGS};
use crate::error::{BookError, Result};
use crate::schema;

/// What goes into a book.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct BuildConfig {
    /// Only the first `max_ply` moves of each game are counted.
    pub max_ply: u32,
    /// Moves played in fewer games are left out of the file (and positions left without moves).
    pub min_games: u32,
}

impl Default for BuildConfig {
    fn default() -> BuildConfig {
        BuildConfig { max_ply: 40, min_games: 1 }
    }
}

/// What a written book holds.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct BuildSummary {
    /// Games counted.
    pub games: u64,
    /// Positions (plies) counted, before `min_games`.
    pub plies: u64,
    /// Positions written.
    pub positions: u64,
    /// Position-move rows written.
    pub moves: u64,
}

/// What [`BookBuilder::add_pgn`] read from one file.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct PgnImport {
    /// Games counted.
    pub imported: u64,
    /// Games left out (each reported as a [`SkippedGame`]).
    pub skipped: u64,
}

/// A game of a PGN file left out of the book.
#[derive(Debug, thiserror::Error)]
#[error("{}:{line}: {reason}", path.display())]
pub struct SkippedGame {
    /// The file.
    pub path: PathBuf,
    /// The line where the game, or what is wrong with it, is.
    pub line: usize,
    /// Why it was left out.
    pub reason: SkipReason,
}

/// Why a PGN game was left out of a book.
#[derive(Debug, thiserror::Error)]
pub enum SkipReason {
    /// It does not read or does not replay.
    #[error(transparent)]
    Pgn(PgnErrorKind),
    /// Its result is `*`: no win, draw or loss to count, so it would skew the move's scores.
    #[error("result * (unfinished or unknown): only games with a result are counted")]
    NoResult,
}

/// One move's counts in one position, in the book frame.
#[derive(Clone, Copy, Debug)]
struct Edge {
    mv: Move,
    games: u64,
    wins: u64,
    draws: u64,
    losses: u64,
    plies: u64,
    min_ply: u32,
}

/// One position in the book frame.
#[derive(Clone, Debug)]
struct Node {
    key: u64,
    board: [u8; 90],
    turn: Color,
    /// The next node with the same key (a hash collision), or `NONE`.
    next: u32,
    opening: Option<u16>,
    edges: Vec<Edge>,
}

const NONE: u32 = u32::MAX;

/// Positions per chunk handed from the thread that makes the rows to the one that inserts them.
const ROWS_PER_CHUNK: usize = 4096;

/// Positions' rows, ready to insert: their text is in one buffer, so a chunk is one allocation
/// to free on the inserting thread, not one per FEN and move.
#[derive(Default)]
struct RowChunk {
    text: String,
    positions: Vec<PositionRow>,
    /// The moves' rows, each position's in ascending text order (the order of the table's key,
    /// so each insert lands at the end of the B-tree): their text's end in `text`, and counts,
    /// copied, so that the inserting thread reads the chunk in order rather than the nodes.
    moves: Vec<(usize, Edge)>,
}

/// One position's row in a [`RowChunk`].
struct PositionRow {
    /// Its row id (see [`schema::slots`]).
    id: i64,
    /// Where its FEN ends in the chunk's text (it starts where the previous text ends).
    fen_end: usize,
    games: u64,
    opening: Option<u16>,
    /// Where its moves end in the chunk's moves.
    moves_end: usize,
}

/// Zobrist keys are already uniform: hashing them again buys nothing.
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// Counts games into positions and moves, merging transpositions and mirror images, and writes
/// the book.
///
/// ```
/// use xiangqi::game::{Game, GameConfig};
/// use xqz_book::{Book, BookBuilder, BuildConfig};
/// use xqz_dataset::{GameId, GameRecord};
///
/// let mut game = Game::new(GameConfig { max_plies: Some(2), ..Default::default() });
/// for mv in ["h2e2", "h9g7"] {
///     game.push_str(mv)?;
/// }
/// let mut builder = BookBuilder::new(BuildConfig::default());
/// builder.add_game(&GameRecord::from_game(&game, GameId::from_u128(1))?)?;
/// let dir = tempfile::tempdir()?;
/// let path = dir.path().join("book.sqlite");
/// let summary = builder.write(&path, false)?;
/// assert_eq!((summary.positions, summary.moves), (2, 2));
///
/// let book = Book::open(&path)?;
/// let entry = book.probe(&xiangqi::Position::startpos())?.unwrap();
/// assert_eq!(entry.moves[0].mv.to_string(), "b2e2"); // h2e2's mirror, the book's frame
/// assert_eq!(entry.moves[0].games, 1);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct BookBuilder {
    config: BuildConfig,
    key: KeyFn,
    nodes: Vec<Node>,
    index: HashMap<u64, u32, BuildHasherDefault<KeyHasher>>,
    games: u64,
    plies: u64,
    start_board: [u8; 90],
}

impl BookBuilder {
    /// An empty builder.
    pub fn new(config: BuildConfig) -> BookBuilder {
        BookBuilder::with_key(config, zobrist)
    }

    /// An empty builder keying positions with `key` (tests force collisions with it).
    pub(crate) fn with_key(config: BuildConfig, key: KeyFn) -> BookBuilder {
        BookBuilder {
            config,
            key,
            nodes: Vec::new(),
            index: HashMap::default(),
            games: 0,
            plies: 0,
            start_board: encode_board(&Position::startpos()),
        }
    }

    /// Games counted so far.
    pub fn games(&self) -> u64 {
        self.games
    }

    /// Positions (plies) counted so far.
    pub fn plies(&self) -> u64 {
        self.plies
    }

    /// Distinct positions so far (a position and its mirror image are one).
    pub fn positions(&self) -> usize {
        self.nodes.len()
    }

    /// Counts every game of the dataset at `location` (a folder or an object store prefix, which
    /// must hold a dataset); returns how many.
    pub fn add_dataset(&mut self, location: impl Into<DatasetLocation>) -> Result<u64> {
        let dataset = Dataset::open_existing(location.into())?;
        let mut count = 0;
        for shard in dataset.shards() {
            for game in dataset.read_games(shard)? {
                self.add_game(&game)?;
                count += 1;
            }
        }
        Ok(count)
    }

    /// Counts one game: each of its first `max_ply` positions with the move played there.
    pub fn add_game(&mut self, game: &GameRecord) -> Result<()> {
        self.add_moves(game.start_position()?, &game.moves, game.result, || game.game_id.to_string())
    }

    /// Counts every game of the PGN file at `path` (read streaming, one game at a time) and
    /// reports each game left out to `skipped`: games that do not read or replay
    /// ([`xiangqi::notation::PgnReader`]), and games without a result (`*`), which have no win,
    /// draw or loss to count. Only a failure to read the file is an error.
    ///
    /// ```
    /// use xqz_book::{BookBuilder, BuildConfig};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let pgn = dir.path().join("games.pgn");
    /// std::fs::write(&pgn, "[Result \"1-0\"]\n\n1. 炮二平五 马8进7 1-0\n\n[Result \"*\"]\n\n1. h2e2 *\n")?;
    /// let mut builder = BookBuilder::new(BuildConfig::default());
    /// let mut skipped = Vec::new();
    /// let import = builder.add_pgn(&pgn, |s| skipped.push(s.to_string()))?;
    /// assert_eq!((import.imported, import.skipped), (1, 1));
    /// assert!(skipped[0].ends_with("games.pgn:5: result * (unfinished or unknown): only games with a result are counted"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn add_pgn(&mut self, path: &Path, mut skipped: impl FnMut(SkippedGame)) -> Result<PgnImport> {
        let io = |source| BookError::Io { path: path.to_path_buf(), source };
        let file = fs::File::open(path).map_err(io)?;
        let mut import = PgnImport::default();
        for game in PgnReader::new(BufReader::new(file)) {
            let game = match game.and_then(|g| Ok((g.line, g.resolve()?))) {
                Ok(game) => game,
                Err(PgnError { kind: PgnErrorKind::Io(source), .. }) => return Err(io(source)),
                Err(PgnError { line, kind }) => {
                    import.skipped += 1;
                    skipped(SkippedGame { path: path.to_path_buf(), line, reason: SkipReason::Pgn(kind) });
                    continue;
                }
            };
            let (line, game) = game;
            let result = match game.result {
                PgnResult::RedWin => GameResult::RedWin,
                PgnResult::BlackWin => GameResult::BlackWin,
                PgnResult::Draw => GameResult::Draw,
                PgnResult::Unknown => {
                    import.skipped += 1;
                    skipped(SkippedGame { path: path.to_path_buf(), line, reason: SkipReason::NoResult });
                    continue;
                }
            };
            self.add_moves(game.start, &game.moves, result, || format!("{}:{line}", path.display()))?;
            import.imported += 1;
        }
        Ok(import)
    }

    /// Counts the game `moves` from `start`; `name` names it in an error.
    fn add_moves(
        &mut self,
        start: Position,
        moves: &[Move],
        result: GameResult,
        name: impl Fn() -> String,
    ) -> Result<()> {
        let mut pos = start;
        // The mirror is played along so that its hash is at hand when it is the book frame.
        let mut mirror = pos.mirror();
        let standard = pos.turn() == Color::Red && encode_board(&pos) == self.start_board;
        let mut classifier = standard.then(Classifier::new);
        let length = moves.len() as u64;
        for (ply, &mv) in moves.iter().enumerate().take(self.config.max_ply as usize) {
            if !pos.is_legal(mv) {
                return Err(BookError::BadGame { game: name(), message: format!("illegal move {mv} at ply {ply}") });
            }
            let canonical = Canonical::of(&pos);
            let key = (self.key)(if canonical.mirrored { &mirror } else { &pos });
            let opening = classifier.as_ref().and_then(Classifier::index).map(|i| i as u16);
            let node = self.node(key, &canonical);
            node.opening = node.opening.max(opening);
            let book_move = canonical.move_to_book(mv);
            let edge = match node.edges.iter().position(|e| e.mv == book_move) {
                Some(i) => &mut node.edges[i],
                None => {
                    node.edges.push(Edge {
                        mv: book_move,
                        games: 0,
                        wins: 0,
                        draws: 0,
                        losses: 0,
                        plies: 0,
                        min_ply: u32::MAX,
                    });
                    node.edges.last_mut().expect("just pushed")
                }
            };
            edge.games += 1;
            match result.score_for(pos.turn()) {
                1 => edge.wins += 1,
                0 => edge.draws += 1,
                _ => edge.losses += 1,
            }
            edge.plies += length;
            edge.min_ply = edge.min_ply.min(ply as u32);
            if let Some(classifier) = classifier.as_mut() {
                classifier.push(&pos, mv);
            }
            pos.play_unchecked(mv);
            mirror.play_unchecked(mv.mirror());
            self.plies += 1;
        }
        self.games += 1;
        Ok(())
    }

    /// The node of a canonical position, found by key and confirmed by the board, or a new one.
    fn node(&mut self, key: u64, canonical: &Canonical) -> &mut Node {
        let same = |n: &Node| n.board == canonical.board && n.turn == canonical.turn;
        let fresh =
            Node { key, board: canonical.board, turn: canonical.turn, next: NONE, opening: None, edges: Vec::new() };
        let new = self.nodes.len() as u32;
        let found = match self.index.get(&key) {
            None => {
                self.index.insert(key, new);
                None
            }
            Some(&first) => {
                let mut i = first;
                loop {
                    if same(&self.nodes[i as usize]) {
                        break Some(i);
                    }
                    match self.nodes[i as usize].next {
                        NONE => {
                            // A collision: another position under this key; chain the new one.
                            self.nodes[i as usize].next = new;
                            break None;
                        }
                        next => i = next,
                    }
                }
            }
        };
        let i = match found {
            Some(i) => i,
            None => {
                self.nodes.push(fresh);
                new
            }
        };
        &mut self.nodes[i as usize]
    }

    /// Writes the book to `path`: refused if it exists unless `replace`. The file is written
    /// under a temporary name and renamed into place, so a failed build leaves no partial book.
    pub fn write(&self, path: &Path, replace: bool) -> Result<BuildSummary> {
        if path.exists() && !replace {
            return Err(BookError::Exists { path: path.to_path_buf() });
        }
        let sqlite = |source| BookError::Sqlite { path: path.to_path_buf(), source };
        xqz_run_folder::write_atomic_with(path, |tmp| {
            remove_stale(tmp)?;
            let mut conn = Connection::open(tmp).map_err(sqlite)?;
            let summary = self.write_tables(&mut conn).map_err(sqlite)?;
            conn.close().map_err(|(_, e)| sqlite(e))?;
            Ok(summary)
        })
    }

    /// The positions to write (those with a move played in `min_games` games), with their text
    /// made, in chunks, in the order of their row ids; stops early if the receiver is gone.
    fn position_rows(&self, send: std::sync::mpsc::SyncSender<RowChunk>) {
        let min_games = u64::from(self.config.min_games);
        // Keys and indexes side by side, so that sorting them never reaches into the nodes; the
        // index breaks ties, so positions under one key keep the order they were first seen in.
        let mut order: Vec<(i64, u32)> = (self.nodes.iter().enumerate())
            .filter(|(_, node)| node.edges.iter().any(|e| e.games >= min_games))
            .map(|(i, node)| (node.key as i64, i as u32))
            .collect();
        order.sort_unstable();
        let ids = schema::slots(order.iter().map(|&(key, _)| key));
        // A chunk's nodes lie scattered over the node table (they are in key order, not in the
        // order they were met), and so do their moves. They are copied out first, in a loop
        // that does nothing else, so that the processor has many of those reads in flight at
        // once; making the text from the copies then reads memory in order. Made from the nodes
        // directly, each position's text waited for its node, then for its moves: most of the
        // time the write took.
        let mut gathered: Vec<([u8; 90], Color, Option<u16>, usize)> = Vec::with_capacity(ROWS_PER_CHUNK);
        let mut edges: Vec<Edge> = Vec::new();
        let mut moves: Vec<(String, Edge)> = Vec::new();
        for (nodes, ids) in order.chunks(ROWS_PER_CHUNK).zip(ids.chunks(ROWS_PER_CHUNK)) {
            gathered.clear();
            edges.clear();
            for &(_, index) in nodes {
                let node = &self.nodes[index as usize];
                edges.extend_from_slice(&node.edges);
                gathered.push((node.board, node.turn, node.opening, edges.len()));
            }
            let mut chunk = RowChunk::default();
            let mut first_edge = 0;
            for (&(board, turn, opening, edges_end), &id) in gathered.iter().zip(ids) {
                let node_edges = &edges[first_edge..edges_end];
                first_edge = edges_end;
                let canonical = Canonical { board, turn, mirrored: false, symmetric: false };
                chunk.text.push_str(&canonical.fen());
                let fen_end = chunk.text.len();
                moves.clear();
                moves.extend(node_edges.iter().filter(|e| e.games >= min_games).map(|e| (e.mv.to_string(), *e)));
                moves.sort_unstable_by(|a, b| a.0.cmp(&b.0));
                for (text, e) in &moves {
                    chunk.text.push_str(text);
                    chunk.moves.push((chunk.text.len(), *e));
                }
                chunk.positions.push(PositionRow {
                    id,
                    fen_end,
                    games: node_edges.iter().map(|e| e.games).sum(),
                    opening,
                    moves_end: chunk.moves.len(),
                });
            }
            if send.send(chunk).is_err() {
                return;
            }
        }
    }

    fn write_tables(&self, conn: &mut Connection) -> rusqlite::Result<BuildSummary> {
        conn.execute_batch(schema::NEW_FILE)?;
        let tx = conn.transaction()?;
        tx.execute_batch(schema::CREATE)?;
        let mut summary = BuildSummary { games: self.games, plies: self.plies, ..BuildSummary::default() };
        {
            let mut meta = tx.prepare("INSERT INTO meta (key, value) VALUES (?1, ?2)")?;
            for (key, value) in [
                ("format", schema::FORMAT.to_string()),
                ("schema_version", schema::VERSION.to_string()),
                ("key", schema::KEY.to_string()),
                ("frame", schema::FRAME.to_string()),
                ("games", self.games.to_string()),
                ("max_ply", self.config.max_ply.to_string()),
                ("min_games", self.config.min_games.to_string()),
                ("writer", format!("xqz-book {}", env!("CARGO_PKG_VERSION"))),
            ] {
                meta.execute(params![key, value])?;
            }
            let mut position =
                tx.prepare("INSERT INTO positions (id, fen, games, ecco, opening) VALUES (?1, ?2, ?3, ?4, ?5)")?;
            let mut row = tx.prepare(
                "INSERT INTO moves (position_id, move, games, wins, draws, losses, avg_plies, min_ply) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )?;
            // The rows' text (FEN, moves) is made on a second thread while this one inserts:
            // SQLite's inserts are the build's bottleneck, and they take one thread.
            let (send, chunks) = std::sync::mpsc::sync_channel::<RowChunk>(8);
            std::thread::scope(|scope| -> rusqlite::Result<()> {
                scope.spawn(move || self.position_rows(send));
                for chunk in chunks {
                    let (mut start, mut first_move) = (0, 0);
                    for p in &chunk.positions {
                        summary.positions += 1;
                        let id = p.id;
                        let opening = p.opening.map(|i| &OPENINGS[usize::from(i)]);
                        position.raw_bind_parameter(1, id)?;
                        position.raw_bind_parameter(2, &chunk.text[start..p.fen_end])?;
                        position.raw_bind_parameter(3, p.games as i64)?;
                        position.raw_bind_parameter(4, opening.map(|o| o.code))?;
                        position.raw_bind_parameter(5, opening.map(|o| o.name))?;
                        position.raw_execute()?;
                        start = p.fen_end;
                        for &(end, e) in &chunk.moves[first_move..p.moves_end] {
                            row.raw_bind_parameter(1, id)?;
                            row.raw_bind_parameter(2, &chunk.text[start..end])?;
                            start = end;
                            row.raw_bind_parameter(3, e.games as i64)?;
                            row.raw_bind_parameter(4, e.wins as i64)?;
                            row.raw_bind_parameter(5, e.draws as i64)?;
                            row.raw_bind_parameter(6, e.losses as i64)?;
                            row.raw_bind_parameter(7, e.plies as f64 / e.games as f64)?;
                            row.raw_bind_parameter(8, e.min_ply)?;
                            row.raw_execute()?;
                            summary.moves += 1;
                        }
                        first_move = p.moves_end;
                    }
                }
                Ok(())
            })?;
        }
        tx.commit()?;
        Ok(summary)
    }
}

/// The name a new book is written under before it is renamed to `path` (`path` + `.tmp`), with
/// whatever an earlier failed write left there removed.
/// Removes what a crashed write left at `tmp`: SQLite would open it as a database.
pub(crate) fn remove_stale(tmp: &Path) -> Result<()> {
    match fs::remove_file(tmp) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(BookError::Io { path: tmp.to_path_buf(), source: e }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use xiangqi::game::{Game, GameConfig};
    use xqz_dataset::GameId;

    use super::*;
    use crate::book::Book;

    fn record(id: u128, moves: &str) -> GameRecord {
        let mut game =
            Game::new(GameConfig { max_plies: Some(moves.split_whitespace().count() as u32), ..Default::default() });
        for mv in moves.split_whitespace() {
            game.push_str(mv).unwrap();
        }
        GameRecord::from_game(&game, GameId::from_u128(id)).unwrap()
    }

    #[test]
    fn a_hash_collision_keeps_positions_apart() {
        // Every position under one key: only the board comparison tells them apart.
        let colliding: KeyFn = |_| 7;
        let mut builder = BookBuilder::with_key(BuildConfig::default(), colliding);
        builder.add_game(&record(1, "h2e2 h9g7 h0g2")).unwrap();
        builder.add_game(&record(2, "g3g4 c6c5")).unwrap();
        assert_eq!(builder.positions(), 4, "the start position is shared");
        assert_eq!(builder.index.len(), 1);

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("book.sqlite");
        builder.write(&path, false).unwrap();
        let book = Book::open_with_key(&path, colliding, crate::book::Access::Read).unwrap();
        let mut pos = Position::startpos();
        pos.play("g3g4".parse().unwrap()).unwrap();
        let entry = book.probe(&pos).unwrap().unwrap();
        assert_eq!(entry.moves.len(), 1);
        assert_eq!(entry.moves[0].mv.to_string(), "c6c5");
        pos.play("c6c5".parse().unwrap()).unwrap();
        assert!(book.probe(&pos).unwrap().is_none(), "a position never counted is not found under the shared key");
        // The four positions took ids 7 to 10 in turn; a new one would take 11.
        let (canonical, key) = book.locate(&pos);
        assert_eq!(book.slot(key, &canonical.fen()).unwrap(), crate::book::Slot::Free(11));
        let (canonical, key) = book.locate(&Position::startpos());
        assert!(matches!(book.slot(key, &canonical.fen()).unwrap(), crate::book::Slot::Found(7..=10)));
    }

    #[test]
    fn keys_take_their_own_id_or_the_next_free_one() {
        let keys = [-5i64, 3, 3, 4, 9, 9, 9, 10, 20];
        assert_eq!(crate::schema::slots(keys.into_iter()), vec![-5, 3, 4, 5, 9, 10, 11, 12, 20]);
    }

    #[test]
    fn an_illegal_stored_move_names_the_game_and_ply() {
        let mut bad = record(3, "h2e2 h9g7");
        bad.moves[1] = "h2h9".parse().unwrap();
        let err = BookBuilder::new(BuildConfig::default()).add_game(&bad).unwrap_err();
        assert_eq!(err.to_string(), format!("game {}: illegal move h2h9 at ply 1", bad.game_id));
    }
}
