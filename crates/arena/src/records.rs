//! The records of evaluation matches, in one format whoever plays them (`xqz eval match`, the
//! strength tracker of `xqz run`), so that one reader rates every game of a folder together
//! (`xqz eval ladder`) instead of each producer keeping its own file and its own Elo.
//!
//! Every game is appended to `eval/games.pgn` (PGN with the moves in Chinese notation) and to
//! the Arrow table `eval/games.arrow` (one row per game). The table is an Arrow IPC *stream*
//! (`pyarrow.ipc.open_stream`) that each append extends by one record batch (a game, or the two
//! games of a pair), fsynced before the append returns, so that recording a game costs the same
//! however long the table is. A crash in the middle of an append leaves a torn last batch, which
//! readers skip and the next append cuts off. Appends take a lock on `eval/games.lock`, so that
//! two processes recording into one folder keep each other's games. A table written by earlier
//! versions as an Arrow IPC *file* is read as it is and turned into a stream, once, at its next
//! append.
//!
//! ```
//! use std::collections::BTreeSet;
//!
//! use xiangqi::game::GameConfig;
//! use xqz_arena::player::{Player, SearchPlayer};
//! use xqz_arena::records::{MatchLog, read_games};
//! use xqz_arena::tournament::{MatchPlan, Openings, run_match};
//! use xqz_mcts::{MaterialEvaluator, SearchConfig, UniformEvaluator};
//!
//! let folder = tempfile::tempdir()?;
//! let plan = MatchPlan {
//!     pairs: 1,
//!     played: BTreeSet::new(),
//!     concurrency: 1,
//!     openings: Openings::Random { plies: 4, seed: 0 },
//!     game: GameConfig { max_plies: Some(40), ..GameConfig::default() },
//!     sprt: None,
//! };
//! let search = SearchConfig::default();
//! let material = || Ok(Box::new(SearchPlayer::new("material", MaterialEvaluator, 8, search)) as Box<dyn Player>);
//! let uniform = || Ok(Box::new(SearchPlayer::new("uniform", UniformEvaluator, 8, search)) as Box<dyn Player>);
//! let mut log = MatchLog::open(folder.path(), "material", "uniform", None, None)?;
//! let mut written = Ok(());
//! run_match(&plan, &material, &uniform, |game, _| {
//!     if written.is_ok() {
//!         written = log.append(game);
//!     }
//! })?;
//! written?;
//! let games = read_games(folder.path())?;
//! assert_eq!(games.len(), 2);
//! assert!(games.iter().all(|g| g.a == "material" && g.b == "uniform"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, Cursor, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use arrow_array::{Array, ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray, UInt32Array, UInt64Array};
use arrow_ipc::reader::{FileReader, StreamReader};
use arrow_ipc::writer::StreamWriter;
use arrow_schema::{ArrowError, DataType, Field, Schema, SchemaRef};
use xiangqi::Color;
use xiangqi::notation::{MoveNotation, MovetextError, pgn};
use xqz_dataset::GameResult;

use crate::MatchResult;
use crate::stats::Pentanomial;
use crate::tournament::{MatchGame, MatchPlan, MatchReport, opening_name};

/// The records folder inside an output folder.
pub const RECORDS_DIR: &str = "eval";

/// The table's file name inside [`RECORDS_DIR`].
pub const TABLE_FILE: &str = "games.arrow";

/// The listing's file name inside [`RECORDS_DIR`].
pub const PGN_FILE: &str = "games.pgn";

/// Why the records could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum RecordsError {
    /// A file could not be created, read, written or replaced.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        source: std::io::Error,
    },
    /// The table could not be encoded or decoded.
    #[error("{}: {source}", path.display())]
    Arrow {
        /// The table's file.
        path: PathBuf,
        /// What went wrong.
        source: ArrowError,
    },
    /// The file holds a table of other columns.
    #[error("{} has other columns than a games table", path.display())]
    Schema {
        /// The table's file.
        path: PathBuf,
    },
    /// A game handed to the records had not ended.
    #[error("game of pair {pair} is not over")]
    Unfinished {
        /// Its pair.
        pair: u32,
    },
    /// A game's moves could not be written in Chinese notation (an illegal move).
    #[error("game of pair {pair}: {source}")]
    Movetext {
        /// Its pair.
        pair: u32,
        /// The move that failed.
        source: MovetextError,
    },
}

impl From<xqz_run_folder::IoError> for RecordsError {
    fn from(e: xqz_run_folder::IoError) -> RecordsError {
        RecordsError::Io { path: e.path, source: e.source }
    }
}

/// The result of the records' operations.
pub type Result<T, E = RecordsError> = std::result::Result<T, E>;

fn io_error(path: &Path) -> impl FnOnce(std::io::Error) -> RecordsError + '_ {
    move |source| RecordsError::Io { path: path.to_path_buf(), source }
}

fn arrow_error(path: &Path) -> impl FnOnce(ArrowError) -> RecordsError + '_ {
    move |source| RecordsError::Arrow { path: path.to_path_buf(), source }
}

/// The columns of `games.arrow`.
pub fn schema() -> SchemaRef {
    let text = |name: &str| Field::new(name, DataType::Utf8, false);
    Arc::new(Schema::new(vec![
        text("match_id"),
        Field::new("end_time_ms", DataType::Int64, false),
        text("a"),
        text("b"),
        Field::new("a_steps", DataType::UInt64, true),
        Field::new("b_steps", DataType::UInt64, true),
        Field::new("pair", DataType::UInt32, false),
        text("a_color"),
        text("red"),
        text("black"),
        text("start_fen"),
        Field::new("opening_plies", DataType::UInt32, false),
        text("moves"),
        Field::new("plies", DataType::UInt32, false),
        text("result"),
        text("reason"),
        text("article"),
        Field::new("forfeit", DataType::Utf8, true),
        Field::new("a_score", DataType::Float64, false),
    ]))
}

/// One row of the table, as read back: who played whom and how the first player scored.
#[derive(Clone, Debug, PartialEq)]
pub struct GameRow {
    /// The match the game belongs to.
    pub match_id: String,
    /// First player's name.
    pub a: String,
    /// Second player's name.
    pub b: String,
    /// Training steps of `a`, if a checkpoint.
    pub a_steps: Option<u64>,
    /// Training steps of `b`, if a checkpoint.
    pub b_steps: Option<u64>,
    /// The pair the game belongs to, within its match.
    pub pair: u32,
    /// The opening it started from ([`opening_name`]).
    pub opening: String,
    /// `a`'s score: 1, ½ or 0.
    pub a_score: f64,
    /// How the game ended: the verdict's reason (`checkmate`, `perpetual check`), or `forfeit`.
    pub reason: String,
}

/// The games two players played against each other in a folder's records, pooled over every
/// match between them (whichever of them was the match's first player), so that a match played
/// in parts, or twice, is scored as one.
#[derive(Clone, Debug, PartialEq)]
pub struct Pairing {
    /// The player whose scores these are: the first player of the pairing's first game in the table.
    pub a: String,
    /// The other player.
    pub b: String,
    /// Training steps of `a`, if a checkpoint.
    pub a_steps: Option<u64>,
    /// Training steps of `b`, if a checkpoint.
    pub b_steps: Option<u64>,
    /// `a`'s wins, draws and losses, every game counted.
    pub games: MatchResult,
    /// `a`'s pair scores, over the pairs with both games recorded (a match cut off between the
    /// two games of a pair leaves one game, counted in [`games`](Self::games) only).
    pub pairs: Pentanomial,
    /// The matches pooled.
    pub matches: usize,
    /// How the games ended, by who won and why: `R3 wins by checkmate`, `draw by move limit`
    /// (the winner by name, so the keys read the same either way round).
    pub endings: BTreeMap<String, u32>,
}

impl Pairing {
    /// The totals as a match's report (no test).
    pub fn report(&self) -> MatchReport {
        MatchReport { games: self.games, pairs: self.pairs, sprt: None, decided_after: None }
    }

    /// The same games from `b`'s side.
    pub fn reversed(&self) -> Pairing {
        let mut pairs = self.pairs;
        pairs.counts.reverse();
        Pairing {
            a: self.b.clone(),
            b: self.a.clone(),
            a_steps: self.b_steps,
            b_steps: self.a_steps,
            games: MatchResult { wins: self.games.losses, draws: self.games.draws, losses: self.games.wins },
            pairs,
            matches: self.matches,
            endings: self.endings.clone(),
        }
    }
}

/// The pairs (by number) of which `rows` hold both games with `a` as the first player and `b` as
/// the second, in one match, from the opening `plan` gives the pair: what a match between them
/// under `plan` that was cut short has played already. Games of a match from other openings
/// (another seed or suite) do not count.
pub fn finished_pairs(rows: &[GameRow], a: &str, b: &str, plan: &MatchPlan) -> BTreeSet<u32> {
    let mut openings: BTreeMap<u32, String> = BTreeMap::new();
    let mut games: BTreeMap<(&str, u32), u32> = BTreeMap::new();
    for row in rows.iter().filter(|r| r.a == a && r.b == b) {
        if row.opening == *openings.entry(row.pair).or_insert_with(|| plan.opening(row.pair)) {
            *games.entry((row.match_id.as_str(), row.pair)).or_default() += 1;
        }
    }
    games.into_iter().filter(|&(_, n)| n == 2).map(|((_, pair), _)| pair).collect()
}

/// Every pairing of players in `rows` (as [`read_games`] returns them), in the order their first
/// games appear.
pub fn pairings(rows: &[GameRow]) -> Vec<Pairing> {
    let mut pairings: Vec<Pairing> = Vec::new();
    // Per pairing: its matches, and the scores of each (match, pair) so far.
    let mut matches: Vec<BTreeMap<&str, BTreeMap<u32, Vec<f64>>>> = Vec::new();
    for row in rows {
        let found = pairings.iter().position(|p| (p.a == row.a && p.b == row.b) || (p.a == row.b && p.b == row.a));
        let at = found.unwrap_or_else(|| {
            pairings.push(Pairing {
                a: row.a.clone(),
                b: row.b.clone(),
                a_steps: row.a_steps,
                b_steps: row.b_steps,
                games: MatchResult::default(),
                pairs: Pentanomial::default(),
                matches: 0,
                endings: BTreeMap::new(),
            });
            matches.push(BTreeMap::new());
            pairings.len() - 1
        });
        let pairing = &mut pairings[at];
        let ending = match row.a_score {
            s if s >= 1.0 => format!("{} wins by {}", row.a, row.reason),
            s if s <= 0.0 => format!("{} wins by {}", row.b, row.reason),
            _ => format!("draw by {}", row.reason),
        };
        *pairing.endings.entry(ending).or_default() += 1;
        let score = if pairing.a == row.a { row.a_score } else { 1.0 - row.a_score };
        pairing.games.record_score(score);
        matches[at].entry(row.match_id.as_str()).or_default().entry(row.pair).or_default().push(score);
    }
    for (pairing, matches) in pairings.iter_mut().zip(&matches) {
        pairing.matches = matches.len();
        for scores in matches.values().flat_map(BTreeMap::values) {
            if let [first, second] = scores[..] {
                pairing.pairs.add_pair(first, second);
            }
        }
    }
    pairings
}

/// The records of one match, appended game by game to a folder's `eval/` records.
pub struct MatchLog {
    dir: PathBuf,
    match_id: String,
    a: String,
    b: String,
    steps: (Option<u64>, Option<u64>),
    pgn: BufWriter<File>,
    /// Where the table's whole batches ended after this log's last append: an append walks only
    /// what others appended since (none: the table is checked whole at the first append).
    table_end: Option<u64>,
    terminations: BTreeMap<String, u32>,
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

/// Matches opened by this process, so that two opened in one millisecond get different ids.
static OPENED: AtomicU64 = AtomicU64::new(0);

impl MatchLog {
    /// Opens `out/eval/` (created if missing) for a match between `a` and `b`, with the training
    /// steps of those that are checkpoints.
    ///
    /// # Errors
    /// If the folder or the listing cannot be created.
    pub fn open(out: &Path, a: &str, b: &str, a_steps: Option<u64>, b_steps: Option<u64>) -> Result<MatchLog> {
        let match_id = format!(
            "{}-{}-{}",
            xqz_dataset::export::format_unix_ms(now_ms()),
            std::process::id(),
            OPENED.fetch_add(1, Ordering::Relaxed)
        );
        MatchLog::open_as(out, &match_id, a, b, (a_steps, b_steps))
    }

    /// Opens `out/eval/` for the match `match_id` between `a` and `b`, which may have games in
    /// the table already (a match that a coordinator plays over its restarts): those stay, and
    /// [`append`](Self::append) adds to them.
    ///
    /// # Errors
    /// If the folder or the listing cannot be created.
    pub fn open_as(
        out: &Path,
        match_id: &str,
        a: &str,
        b: &str,
        steps: (Option<u64>, Option<u64>),
    ) -> Result<MatchLog> {
        let dir = out.join(RECORDS_DIR);
        fs::create_dir_all(&dir).map_err(io_error(&dir))?;
        let pgn_path = dir.join(PGN_FILE);
        let pgn = OpenOptions::new().create(true).append(true).open(&pgn_path).map_err(io_error(&pgn_path))?;
        Ok(MatchLog {
            dir,
            match_id: match_id.to_string(),
            a: a.to_string(),
            b: b.to_string(),
            steps,
            pgn: BufWriter::new(pgn),
            table_end: None,
            terminations: BTreeMap::new(),
        })
    }

    /// The records folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The match's id in the table's `match_id` column.
    pub fn match_id(&self) -> &str {
        &self.match_id
    }

    /// Writes one game to the listing and appends it to the table, so that an interrupted match
    /// keeps what it played.
    ///
    /// # Errors
    /// If the game is not over, has an illegal move, or a file cannot be written.
    pub fn append(&mut self, game: &MatchGame) -> Result<()> {
        self.append_all(std::slice::from_ref(game))
    }

    /// Writes games to the listing and appends them to the table as one batch: the games of a
    /// pair go in together or not at all.
    ///
    /// # Errors
    /// If a game is not over or has an illegal move (then nothing is written), or a file cannot
    /// be written.
    pub fn append_all(&mut self, games: &[MatchGame]) -> Result<()> {
        let mut texts = String::new();
        for game in games {
            texts.push_str(&self.listing(game)?);
        }
        let pgn_path = self.dir.join(PGN_FILE);
        self.pgn.write_all(texts.as_bytes()).map_err(io_error(&pgn_path))?;
        self.pgn.flush().map_err(io_error(&pgn_path))?;
        let path = self.dir.join(TABLE_FILE);
        let batch = self.batch(games).map_err(arrow_error(&path))?;
        self.append_table(&batch)?;
        for game in games {
            let verdict = game.outcome.verdict().expect("listed games are over");
            let result = GameResult::from_outcome(game.outcome).expect("listed games are over");
            let key = match &game.forfeit {
                Some(_) => "forfeit".to_string(),
                None => format!("{} {}", result.name(), verdict.reason),
            };
            *self.terminations.entry(key).or_default() += 1;
        }
        Ok(())
    }

    /// `game` as PGN.
    fn listing(&self, game: &MatchGame) -> Result<String> {
        let unfinished = RecordsError::Unfinished { pair: game.pair };
        let (Some(result), Some(verdict)) = (GameResult::from_outcome(game.outcome), game.outcome.verdict()) else {
            return Err(unfinished);
        };
        let termination = match &game.forfeit {
            Some(f) => format!("forfeit: {}", f.reason),
            None => format!("{} ({})", verdict.reason, verdict.article),
        };
        let tags = [
            ("Event", format!("xqz eval {}", self.match_id)),
            ("Date", xqz_dataset::export::format_unix_ms(now_ms())[..10].replace('-', ".")),
            ("Round", format!("{}.{}", game.pair + 1, if game.first == Color::Red { 1 } else { 2 })),
            ("Red", game.red.clone()),
            ("Black", game.black.clone()),
            ("Result", result.pgn().to_string()),
            ("Termination", termination),
            ("Ruleset", verdict.ruleset.name().to_string()),
            ("PlyCount", game.moves.len().to_string()),
            ("OpeningPlies", game.opening_plies.to_string()),
        ];
        pgn(&tags, &game.start, &game.moves, MoveNotation::Chinese, result.pgn(), None)
            .map_err(|source| RecordsError::Movetext { pair: game.pair, source })
    }

    /// How the games ended, counted by result and reason.
    pub fn terminations(&self) -> impl Iterator<Item = (&str, u32)> {
        self.terminations.iter().map(|(k, v)| (k.as_str(), *v))
    }

    /// `games` of this match as one batch (every game is over: [`append`](Self::append) checked).
    fn batch(&self, games: &[MatchGame]) -> std::result::Result<RecordBatch, ArrowError> {
        let n = games.len();
        let text = |f: &dyn Fn(&MatchGame) -> String| -> ArrayRef {
            Arc::new(StringArray::from(games.iter().map(f).collect::<Vec<_>>()))
        };
        let verdict = |g: &MatchGame| g.outcome.verdict().expect("appended games are over");
        let columns: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from(vec![self.match_id.clone(); n])),
            Arc::new(Int64Array::from(vec![now_ms(); n])),
            Arc::new(StringArray::from(vec![self.a.clone(); n])),
            Arc::new(StringArray::from(vec![self.b.clone(); n])),
            Arc::new(UInt64Array::from(vec![self.steps.0; n])),
            Arc::new(UInt64Array::from(vec![self.steps.1; n])),
            Arc::new(UInt32Array::from(games.iter().map(|g| g.pair).collect::<Vec<_>>())),
            text(&|g| g.first.to_string()),
            text(&|g| g.red.clone()),
            text(&|g| g.black.clone()),
            text(&|g| g.start.to_string()),
            Arc::new(UInt32Array::from(games.iter().map(|g| g.opening_plies as u32).collect::<Vec<_>>())),
            text(&|g| g.moves.iter().map(ToString::to_string).collect::<Vec<_>>().join(" ")),
            Arc::new(UInt32Array::from(games.iter().map(|g| g.moves.len() as u32).collect::<Vec<_>>())),
            text(&|g| GameResult::from_outcome(g.outcome).map_or("*", |r| r.pgn()).to_string()),
            text(&|g| verdict(g).reason.to_string()),
            text(&|g| verdict(g).article.to_string()),
            Arc::new(StringArray::from(
                games.iter().map(|g| g.forfeit.as_ref().map(|f| f.reason.clone())).collect::<Vec<_>>(),
            )),
            Arc::new(Float64Array::from(games.iter().map(MatchGame::first_score).collect::<Vec<_>>())),
        ];
        RecordBatch::try_new(schema(), columns)
    }

    /// Appends `batch` to `games.arrow` under the folder's lock: cuts off a torn tail that a
    /// crash left, writes the batch after the last whole one (with the stream's schema first if
    /// the table is new) and syncs the file.
    fn append_table(&mut self, batch: &RecordBatch) -> Result<()> {
        let lock_path = self.dir.join("games.lock");
        let lock = File::create(&lock_path).map_err(io_error(&lock_path))?;
        lock.lock().map_err(io_error(&lock_path))?;
        let path = self.dir.join(TABLE_FILE);
        let known = match self.table_end {
            Some(end) => end,
            None => check_table(&path)?,
        };
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(io_error(&path))?;
        let len = file.metadata().map_err(io_error(&path))?.len();
        let end = if len < known {
            // Not the table this log appended to (replaced by hand): checked again whole.
            drop(file);
            let end = check_table(&path)?;
            file = OpenOptions::new().read(true).write(true).open(&path).map_err(io_error(&path))?;
            end
        } else {
            // What other logs appended since this one's last append.
            let mut appended = Vec::new();
            file.seek(SeekFrom::Start(known)).and_then(|_| file.read_to_end(&mut appended)).map_err(io_error(&path))?;
            known + whole_messages(&appended) as u64
        };
        let bytes = encode_stream(std::slice::from_ref(batch), end == 0).map_err(arrow_error(&path))?;
        if end < len {
            file.set_len(end).map_err(io_error(&path))?;
        }
        file.seek(SeekFrom::Start(end)).map_err(io_error(&path))?;
        file.write_all(&bytes).and_then(|()| file.sync_data()).map_err(io_error(&path))?;
        if end == 0 {
            // A new file: its name must last too.
            File::open(&self.dir).and_then(|d| d.sync_all()).map_err(io_error(&self.dir))?;
        }
        self.table_end = Some(end + bytes.len() as u64);
        // Dropping the file releases the lock.
        drop(lock);
        Ok(())
    }
}

/// The four bytes that begin every message of an Arrow IPC stream as written since Arrow 0.15.
const CONTINUATION: [u8; 4] = [0xff; 4];

/// The magic bytes that begin an Arrow IPC file (the table's format before it was a stream).
const FILE_MAGIC: &[u8] = b"ARROW1";

/// `batches` as the messages of an Arrow IPC stream of the table's schema, without its
/// end-of-stream marker (the next append goes after them); the schema's message first if
/// `with_schema`.
fn encode_stream(batches: &[RecordBatch], with_schema: bool) -> std::result::Result<Vec<u8>, ArrowError> {
    let mut writer = StreamWriter::try_new(Vec::new(), &schema())?;
    let header = if with_schema { 0 } else { writer.get_ref().len() };
    for batch in batches {
        writer.write(batch)?;
    }
    Ok(writer.get_ref()[header..].to_vec())
}

/// Writes `batches` as the whole table at `path`, a stream like any the logs append to, atomically
/// (a discard's rewrite: rare, unlike an append).
fn write_batches(path: &Path, batches: &[RecordBatch]) -> Result<()> {
    let bytes = encode_stream(batches, true).map_err(arrow_error(path))?;
    xqz_run_folder::write_atomic(path, &bytes)?;
    Ok(())
}

/// Removes the games of `pairs` of match `match_id` from the table of the output folder `out`
/// (under its lock; the PGN listing, a log of what was played, keeps them) and returns how many
/// rows went. A coordinator discards so the pairs of a worker that an audit found sending games
/// that were not the match's. A [`MatchLog`] of that match opened before holds the old rows:
/// open it again.
///
/// # Errors
/// If the table cannot be read or written.
pub fn discard_pairs(out: &Path, match_id: &str, pairs: &BTreeSet<u32>) -> Result<usize> {
    let dir = out.join(RECORDS_DIR);
    let lock_path = dir.join("games.lock");
    let path = dir.join(TABLE_FILE);
    if !path.exists() {
        return Ok(0);
    }
    let lock = File::create(&lock_path).map_err(io_error(&lock_path))?;
    lock.lock().map_err(io_error(&lock_path))?;
    let mut kept = Vec::new();
    let mut removed = 0;
    for batch in read_batches(&path)? {
        if !batch_of(&batch, match_id) {
            kept.push(batch);
            continue;
        }
        let column = batch.column_by_name("pair").expect("checked schema");
        let pair = column.as_any().downcast_ref::<UInt32Array>().expect("checked schema");
        // The runs of rows kept, as slices of the batch.
        let mut start = 0;
        for row in 0..=batch.num_rows() {
            if row < batch.num_rows() && !pairs.contains(&pair.value(row)) {
                continue;
            }
            if row > start {
                kept.push(batch.slice(start, row - start));
            }
            removed += usize::from(row < batch.num_rows());
            start = row + 1;
        }
    }
    if removed > 0 {
        write_batches(&path, &kept)?;
    }
    drop(lock);
    Ok(removed)
}

/// Whether `batch` holds games of match `match_id` (a batch holds one match's games).
fn batch_of(batch: &RecordBatch, match_id: &str) -> bool {
    let ids = batch.column(0).as_any().downcast_ref::<StringArray>();
    ids.is_some_and(|ids| ids.len() > 0 && ids.value(0) == match_id)
}

/// The length of the longest prefix of `stream` (messages of an Arrow IPC stream) made of whole
/// messages: what follows is a torn message that a crash cut short, or an end-of-stream marker.
fn whole_messages(stream: &[u8]) -> usize {
    let mut end = 0;
    loop {
        let rest = &stream[end..];
        let Some((CONTINUATION, rest)) = rest.split_first_chunk::<4>().map(|(c, r)| (*c, r)) else { return end };
        let Some((length, rest)) = rest.split_first_chunk::<4>() else { return end };
        let Some(length) = usize::try_from(i32::from_le_bytes(*length)).ok().filter(|&l| l > 0 && l <= rest.len())
        else {
            return end;
        };
        let Some(body) =
            arrow_ipc::root_as_message(&rest[..length]).ok().and_then(|m| usize::try_from(m.bodyLength()).ok())
        else {
            return end;
        };
        if body > rest.len() - length {
            return end;
        }
        end += 8 + length + body;
    }
}

/// How a table file is written.
enum Format<'a> {
    /// No table (no file, or an empty one).
    Empty,
    /// An Arrow IPC file, as earlier versions wrote the table.
    File(&'a [u8]),
    /// An Arrow IPC stream: its whole messages.
    Stream(&'a [u8]),
}

impl Format<'_> {
    /// How `bytes`, read from `path`, are written.
    fn of<'a>(bytes: &'a [u8], path: &Path) -> Result<Format<'a>> {
        if bytes.starts_with(FILE_MAGIC) {
            Ok(Format::File(bytes))
        } else if bytes.starts_with(&CONTINUATION) {
            match whole_messages(bytes) {
                0 => Ok(Format::Empty),
                end => Ok(Format::Stream(&bytes[..end])),
            }
        } else if bytes.is_empty() {
            Ok(Format::Empty)
        } else {
            let what = ArrowError::ParseError("neither an Arrow IPC stream nor an Arrow IPC file".into());
            Err(arrow_error(path)(what))
        }
    }

    /// The batches, after a check of their schema.
    fn batches(&self, path: &Path) -> Result<Vec<RecordBatch>> {
        let checked = |found: SchemaRef| {
            if found == schema() { Ok(()) } else { Err(RecordsError::Schema { path: path.to_path_buf() }) }
        };
        match *self {
            Format::Empty => Ok(Vec::new()),
            Format::File(bytes) => {
                let reader = FileReader::try_new(Cursor::new(bytes), None).map_err(arrow_error(path))?;
                checked(reader.schema())?;
                reader.map(|b| b.map_err(arrow_error(path))).collect()
            }
            Format::Stream(bytes) => {
                let reader = StreamReader::try_new(bytes, None).map_err(arrow_error(path))?;
                checked(reader.schema())?;
                reader.map(|b| b.map_err(arrow_error(path))).collect()
            }
        }
    }
}

/// Checks the table at `path` whole before a log's first append to it: its schema, and that
/// every batch decodes. A table in the IPC file format of earlier versions is rewritten as a
/// stream of the same batches. Returns where its whole messages end (0: no table yet).
fn check_table(path: &Path) -> Result<u64> {
    let bytes = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(io_error(path)(e)),
    };
    let format = Format::of(&bytes, path)?;
    let batches = format.batches(path)?;
    match format {
        Format::Empty => Ok(0),
        Format::Stream(whole) => Ok(whole.len() as u64),
        Format::File(_) => {
            let stream = encode_stream(&batches, true).map_err(arrow_error(path))?;
            xqz_run_folder::write_atomic(path, &stream)?;
            Ok(stream.len() as u64)
        }
    }
}

/// The batches of a table file (none if it does not exist): one per append, a torn last one
/// (from a crash) skipped.
fn read_batches(path: &Path) -> Result<Vec<RecordBatch>> {
    let bytes = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_error(path)(e)),
    };
    Format::of(&bytes, path)?.batches(path)
}

/// Every game row of a folder's `eval/games.arrow`, in the order written; none if the folder has
/// no table yet.
///
/// # Errors
/// If the table cannot be read or has other columns.
pub fn read_games(out: &Path) -> Result<Vec<GameRow>> {
    let path = out.join(RECORDS_DIR).join(TABLE_FILE);
    let mut rows = Vec::new();
    for batch in read_batches(&path)? {
        // The schema was checked, so every column has its type.
        let column = |name: &str| batch.column_by_name(name).expect("checked schema");
        let text = |name: &str| column(name).as_any().downcast_ref::<StringArray>().expect("checked schema").clone();
        let steps = |name: &str| column(name).as_any().downcast_ref::<UInt64Array>().expect("checked schema").clone();
        let (ids, a, b) = (text("match_id"), text("a"), text("b"));
        let (a_steps, b_steps) = (steps("a_steps"), steps("b_steps"));
        let pair = column("pair").as_any().downcast_ref::<UInt32Array>().expect("checked schema").clone();
        let score = column("a_score").as_any().downcast_ref::<Float64Array>().expect("checked schema").clone();
        let (starts, moves) = (text("start_fen"), text("moves"));
        let (reasons, forfeits) = (text("reason"), text("forfeit"));
        let opening_plies =
            column("opening_plies").as_any().downcast_ref::<UInt32Array>().expect("checked schema").clone();
        for i in 0..batch.num_rows() {
            let opt = |s: &UInt64Array| s.is_valid(i).then(|| s.value(i));
            rows.push(GameRow {
                match_id: ids.value(i).to_string(),
                a: a.value(i).to_string(),
                b: b.value(i).to_string(),
                a_steps: opt(&a_steps),
                b_steps: opt(&b_steps),
                pair: pair.value(i),
                opening: opening_name(
                    starts.value(i),
                    moves.value(i).split_whitespace().take(opening_plies.value(i) as usize),
                ),
                a_score: score.value(i),
                reason: if forfeits.is_valid(i) { "forfeit".to_string() } else { reasons.value(i).to_string() },
            });
        }
    }
    Ok(rows)
}
