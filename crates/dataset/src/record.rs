//! Row types of the two schemas, board encoding and mirroring, and their conversion to and from
//! Arrow record batches.
//!
//! ```
//! use xiangqi::game::{Game, GameConfig};
//! use xqz_dataset::{GameId, GameRecord, PlySearch, SampleRecord, PolicyEntry};
//!
//! let mut game = Game::new(GameConfig { max_plies: Some(2), ..Default::default() });
//! for mv in ["h2e2", "h9g7"] {
//!     game.push_str(mv)?;
//! }
//! let record = GameRecord::from_game(&game, GameId::from_u128(1))?;
//! assert_eq!(record.result.name(), "draw");
//! let searches: Vec<PlySearch> = record
//!     .moves
//!     .iter()
//!     .map(|&mv| PlySearch::full(vec![PolicyEntry { mv, p: 1.0 }], [0.3, 0.4, 0.3], 1))
//!     .collect();
//! let samples = SampleRecord::from_game(&record, &searches)?;
//! assert_eq!(samples.len(), 2);
//! assert_eq!(samples[1].plies_to_end, 1);
//! assert_eq!((samples[1].quiet_plies, samples[1].repetitions), (1, 0)); // one quiet ply, a new position
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;
use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;

use arrow_array::types::{Float32Type, UInt8Type, UInt16Type, UInt32Type, UInt64Type};
use arrow_array::{
    Array, ArrayRef, BooleanArray, FixedSizeBinaryArray, FixedSizeListArray, Float32Array, Int8Array, ListArray,
    PrimitiveArray, RecordBatch, StringArray, StructArray, TimestampMillisecondArray, UInt8Array, UInt16Array,
    UInt32Array, UInt64Array,
};
use arrow_buffer::{Buffer, OffsetBuffer};
use arrow_schema::SchemaRef;
use xiangqi::game::{Game, GameConfig, Outcome, Ruleset};
use xiangqi::{Color, Move, Piece, Position, Setup, Square};

use crate::error::{ArrowContext, DatasetError, Result};
use crate::schema::{self, BOARD_BYTES, GAME_ID_BYTES};

/// A game's 16-byte id, printed as 32 hex digits.
///
/// ```
/// use xqz_dataset::GameId;
/// let id = GameId::from_u128(0xabc);
/// assert_eq!(id.to_string(), "00000000000000000000000000000abc");
/// assert_eq!(id.to_string().parse::<GameId>(), Ok(id));
/// ```
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GameId(pub [u8; GAME_ID_BYTES]);

impl GameId {
    /// The id with the big-endian bytes of `n`.
    pub const fn from_u128(n: u128) -> GameId {
        GameId(n.to_be_bytes())
    }

    /// The id as a number (big-endian).
    pub const fn to_u128(self) -> u128 {
        u128::from_be_bytes(self.0)
    }
}

impl fmt::Display for GameId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:032x}", self.to_u128())
    }
}

/// A game id that is not 32 hex digits.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("bad game id {0:?} (expected 32 hex digits)")]
pub struct ParseGameIdError(pub String);

impl FromStr for GameId {
    type Err = ParseGameIdError;
    fn from_str(s: &str) -> Result<GameId, ParseGameIdError> {
        if s.len() != 32 {
            return Err(ParseGameIdError(s.to_string()));
        }
        u128::from_str_radix(s, 16).map(GameId::from_u128).map_err(|_| ParseGameIdError(s.to_string()))
    }
}

/// How a stored game ended: stored as `red`, `black` (the winner) or `draw`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum GameResult {
    /// Red won.
    RedWin,
    /// Black won.
    BlackWin,
    /// A draw.
    Draw,
}

impl GameResult {
    /// All results, in the order used by statistics.
    pub const ALL: [GameResult; 3] = [GameResult::RedWin, GameResult::BlackWin, GameResult::Draw];

    /// The stored name: `red`, `black` or `draw`.
    pub const fn name(self) -> &'static str {
        match self {
            GameResult::RedWin => "red",
            GameResult::BlackWin => "black",
            GameResult::Draw => "draw",
        }
    }

    /// Parses [`GameResult::name`].
    pub fn from_name(name: &str) -> Option<GameResult> {
        GameResult::ALL.into_iter().find(|r| r.name() == name)
    }

    /// The result of a finished game (`None` while it goes on).
    pub fn from_outcome(outcome: Outcome) -> Option<GameResult> {
        match outcome {
            Outcome::Ongoing => None,
            Outcome::Win { winner: Color::Red, .. } => Some(GameResult::RedWin),
            Outcome::Win { winner: Color::Black, .. } => Some(GameResult::BlackWin),
            Outcome::Draw { .. } => Some(GameResult::Draw),
        }
    }

    /// The winner, if any.
    pub const fn winner(self) -> Option<Color> {
        match self {
            GameResult::RedWin => Some(Color::Red),
            GameResult::BlackWin => Some(Color::Black),
            GameResult::Draw => None,
        }
    }

    /// The result for `side`: 1 win, 0 draw, -1 loss.
    pub fn score_for(self, side: Color) -> i8 {
        match self.winner() {
            None => 0,
            Some(w) if w == side => 1,
            Some(_) => -1,
        }
    }

    /// The PGN result tag: `1-0` (Red won), `0-1` or `1/2-1/2`.
    pub const fn pgn(self) -> &'static str {
        match self {
            GameResult::RedWin => "1-0",
            GameResult::BlackWin => "0-1",
            GameResult::Draw => "1/2-1/2",
        }
    }
}

impl fmt::Display for GameResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One row of the games schema.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GameRecord {
    /// The game's id; its samples carry the same.
    pub game_id: GameId,
    /// The start position in FEN.
    pub start_fen: String,
    /// The moves played (stored in coordinate notation).
    pub moves: Vec<Move>,
    /// The result.
    pub result: GameResult,
    /// The termination reason, `xiangqi::game::Reason::name` (`checkmate`, ...).
    pub reason: String,
    /// The rule article that decided the game (`4.1.1`, ...).
    pub article: String,
    /// The rules the game was adjudicated under.
    pub ruleset: Ruleset,
    /// The model version that played it.
    pub model_version: u64,
    /// The worker that played it.
    pub worker_id: String,
    /// The worker's seed for the game.
    pub seed: u64,
    /// Start time, Unix milliseconds.
    pub start_time_ms: i64,
    /// End time, Unix milliseconds.
    pub end_time_ms: i64,
    /// The version of the coordinator's play settings it was played under (0: local play).
    pub settings_version: u64,
}

impl GameRecord {
    /// The record of a finished game: start position, moves, result, reason, article and ruleset
    /// come from `game`; model version, worker, seed and times are zero/empty for the caller to fill.
    ///
    /// Fails with [`DatasetError::InvalidRecord`] if the game is still going on.
    pub fn from_game(game: &Game, game_id: GameId) -> Result<GameRecord> {
        let outcome = game.outcome();
        let (Some(result), Some(verdict)) = (GameResult::from_outcome(outcome), outcome.verdict()) else {
            return Err(DatasetError::InvalidRecord(format!("game {game_id} is not finished")));
        };
        Ok(GameRecord {
            game_id,
            start_fen: game.start().to_string(),
            moves: game.moves().collect(),
            result,
            reason: verdict.reason.name().to_string(),
            article: verdict.article.to_string(),
            ruleset: verdict.ruleset,
            model_version: 0,
            worker_id: String::new(),
            seed: 0,
            start_time_ms: 0,
            end_time_ms: 0,
            settings_version: 0,
        })
    }

    /// Number of plies.
    pub fn len(&self) -> usize {
        self.moves.len()
    }

    /// Whether the game has no move.
    pub fn is_empty(&self) -> bool {
        self.moves.is_empty()
    }

    /// The start position.
    pub fn start_position(&self) -> Result<Position> {
        Position::from_fen(&self.start_fen)
            .map_err(|e| DatasetError::InvalidRecord(format!("game {}: bad start FEN: {e}", self.game_id)))
    }
}

/// One entry of a sparse policy target.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct PolicyEntry {
    /// The move (stored as [`Move::to_u16`]).
    pub mv: Move,
    /// Its probability (root visit fraction).
    pub p: f32,
}

/// What the search said at one ply: the input of [`SampleRecord::from_game`].
#[derive(Clone, Debug, PartialEq)]
pub struct PlySearch {
    /// Sparse policy target.
    pub policy: Vec<PolicyEntry>,
    /// The root's [win, draw, loss] estimate for the side to move.
    pub root_wdl: [f32; 3],
    /// The model version that searched.
    pub model_version: u64,
    /// Whether it was a full search (a training target) or a cheap one.
    pub full_search: bool,
}

impl PlySearch {
    /// A full search's result.
    pub fn full(policy: Vec<PolicyEntry>, root_wdl: [f32; 3], model_version: u64) -> PlySearch {
        PlySearch { policy, root_wdl, model_version, full_search: true }
    }
}

/// One row of the samples schema: a training position.
#[derive(Clone, Debug, PartialEq)]
pub struct SampleRecord {
    /// The game it comes from.
    pub game_id: GameId,
    /// Plies played before it.
    pub ply: u32,
    /// The board, see [`schema::BOARD_ENCODING`] and [`encode_board`].
    pub board: [u8; BOARD_BYTES],
    /// The side to move.
    pub side_to_move: Color,
    /// The policy target.
    pub policy: Vec<PolicyEntry>,
    /// The root's [win, draw, loss] estimate for the side to move.
    pub root_wdl: [f32; 3],
    /// The final result for the side to move: 1, 0 or -1.
    pub result: i8,
    /// Plies from here to the end of the game.
    pub plies_to_end: u32,
    /// The model version that searched.
    pub model_version: u64,
    /// Whether the search was a full one.
    pub full_search: bool,
    /// Plies since the last capture: the position's halfmove clock (the start FEN's clock
    /// included), saturated at `u16::MAX`.
    pub quiet_plies: u16,
    /// How many times the position occurred earlier in the game since the last capture
    /// ([`Game::repetitions`]; 0 for a new position), saturated at `u8::MAX`.
    pub repetitions: u8,
}

impl SampleRecord {
    /// The samples of a game, one per ply: replays `game`'s moves from its start position with a
    /// [`Game`] under the record's ruleset and pairs each position with the search made there
    /// (`searches[i]` for the position before move `i`), its halfmove clock (`quiet_plies`) and
    /// its [`Game::repetitions`]. Fails if the lengths differ, a move is illegal, or a move comes
    /// after the replayed game has ended (the natural move limit and the length cap are not
    /// applied in the replay, as the record does not store them).
    pub fn from_game(game: &GameRecord, searches: &[PlySearch]) -> Result<Vec<SampleRecord>> {
        if searches.len() != game.moves.len() {
            return Err(DatasetError::InvalidRecord(format!(
                "game {}: {} searches for {} plies",
                game.game_id,
                searches.len(),
                game.moves.len()
            )));
        }
        // Only the repetition count needs the game's history; the limits the record does not
        // store are lifted so that they cannot end the replay early.
        let config = GameConfig { ruleset: game.ruleset, natural_limit: Some(u32::MAX), ..GameConfig::default() };
        let mut replay = Game::from_position(game.start_position()?, config);
        let mut out = Vec::with_capacity(searches.len());
        for (&mv, search) in game.moves.iter().zip(searches) {
            out.push(SampleRecord::before_move(&replay, game.game_id, search.clone()));
            replay.push(mv).map_err(|e| DatasetError::InvalidRecord(format!("game {}: {e}", game.game_id)))?;
        }
        SampleRecord::set_outcome(&mut out, game.result);
        Ok(out)
    }

    /// The sample of the position `game` has reached (`game.len()` plies from its start),
    /// searched by `search`, before its move is played: what a replay that checks the game as it
    /// goes records. Its result and distance to the end wait for [`SampleRecord::set_outcome`].
    pub fn before_move(game: &Game, game_id: GameId, search: PlySearch) -> SampleRecord {
        let pos = game.position();
        SampleRecord {
            game_id,
            ply: game.len() as u32,
            board: encode_board(pos),
            side_to_move: pos.turn(),
            policy: search.policy,
            root_wdl: search.root_wdl,
            result: 0,
            plies_to_end: 0,
            model_version: search.model_version,
            full_search: search.full_search,
            quiet_plies: u16::try_from(pos.halfmove_clock()).unwrap_or(u16::MAX),
            repetitions: u8::try_from(game.repetitions()).unwrap_or(u8::MAX),
        }
    }

    /// Gives a finished game's samples (all of them, in order from its start) the game's
    /// `result` for their side to move and their plies to the end.
    pub fn set_outcome(samples: &mut [SampleRecord], result: GameResult) {
        let len = samples.len() as u32;
        for sample in samples {
            sample.result = result.score_for(sample.side_to_move);
            sample.plies_to_end = len - sample.ply;
        }
    }

    /// The sample mirrored left-right: board and policy moves mirrored together.
    #[must_use]
    pub fn mirror(&self) -> SampleRecord {
        SampleRecord {
            board: mirror_board(&self.board),
            policy: self.policy.iter().map(|e| PolicyEntry { mv: e.mv.mirror(), p: e.p }).collect(),
            ..self.clone()
        }
    }
}

/// Encodes a position's board (see [`schema::BOARD_ENCODING`]).
///
/// ```
/// let board = xqz_dataset::encode_board(&xiangqi::Position::startpos());
/// assert_eq!(board[0], 5); // a0: Red rook
/// assert_eq!(board[4], 1); // e0: Red king
/// assert_eq!(board[85], 8); // e9: Black king
/// ```
pub fn encode_board(pos: &Position) -> [u8; BOARD_BYTES] {
    let mut board = [0u8; BOARD_BYTES];
    for sq in Square::all() {
        if let Some(piece) = pos.piece_at(sq) {
            board[sq.index()] = 1 + piece.index() as u8;
        }
    }
    board
}

/// Decodes an encoded board and side to move into a position (halfmove clock 0, move 1).
///
/// ```
/// use xiangqi::{Color, Position};
/// let pos = Position::startpos();
/// let board = xqz_dataset::encode_board(&pos);
/// assert_eq!(xqz_dataset::decode_board(&board, Color::Red)?, pos);
/// # Ok::<(), xqz_dataset::DatasetError>(())
/// ```
pub fn decode_board(board: &[u8], side_to_move: Color) -> Result<Position> {
    if board.len() != BOARD_BYTES {
        return Err(DatasetError::InvalidRecord(format!("board of {} bytes, expected {BOARD_BYTES}", board.len())));
    }
    let mut cells = [None; BOARD_BYTES];
    for (cell, &code) in cells.iter_mut().zip(board) {
        *cell = match code {
            0 => None,
            1..=14 => Piece::from_index(usize::from(code - 1)),
            _ => return Err(DatasetError::InvalidRecord(format!("board byte {code} above 14"))),
        };
    }
    let setup = Setup { board: cells, turn: side_to_move, halfmove_clock: 0, fullmoves: 1 };
    Position::from_setup(&setup).map_err(|e| DatasetError::InvalidRecord(format!("board is not a legal position: {e}")))
}

/// `MIRROR[i]` is the index of the left-right mirror of point `i` ([`Square::mirror`]).
pub const MIRROR: [u8; BOARD_BYTES] = {
    let mut table = [0u8; BOARD_BYTES];
    let mut i = 0;
    while i < BOARD_BYTES {
        table[i] = Square::from_index(i as u8).unwrap().mirror().index() as u8;
        i += 1;
    }
    table
};

/// Mirrors an encoded board left-right.
pub fn mirror_board(board: &[u8; BOARD_BYTES]) -> [u8; BOARD_BYTES] {
    let mut out = [0u8; BOARD_BYTES];
    mirror_board_into(board, &mut out);
    out
}

/// Writes the left-right mirror of `board` (90 bytes) into `out` (90 bytes).
pub fn mirror_board_into(board: &[u8], out: &mut [u8]) {
    for (i, &m) in MIRROR.iter().enumerate() {
        out[m as usize] = board[i];
    }
}

/// Mirrors a move code ([`Move::to_u16`]) left-right; codes that are not moves come back unchanged.
pub fn mirror_move_code(code: u16) -> u16 {
    Move::from_u16(code).map_or(code, |mv| mv.mirror().to_u16())
}

/// Checks a game and its samples before they are written.
pub(crate) fn validate(game: &GameRecord, samples: &[SampleRecord]) -> Result<()> {
    let bad = |msg: String| Err(DatasetError::InvalidRecord(format!("game {}: {msg}", game.game_id)));
    let len = game.moves.len() as u32;
    if game.start_fen.is_empty() {
        return bad("empty start FEN".into());
    }
    let mut last_ply = None;
    for s in samples {
        if s.game_id != game.game_id {
            return bad(format!("sample of game {} in its samples", s.game_id));
        }
        if s.ply >= len {
            return bad(format!("sample at ply {} of a {len}-ply game", s.ply));
        }
        if last_ply.is_some_and(|p| s.ply <= p) {
            return bad(format!("sample plies not increasing at ply {}", s.ply));
        }
        last_ply = Some(s.ply);
        if s.plies_to_end != len - s.ply {
            return bad(format!("ply {}: plies_to_end {} but the game ends at ply {len}", s.ply, s.plies_to_end));
        }
        if s.result != game.result.score_for(s.side_to_move) {
            return bad(format!("ply {}: result {} contradicts the game result {}", s.ply, s.result, game.result));
        }
        if s.board.iter().any(|&b| b > 14) {
            return bad(format!("ply {}: board byte above 14", s.ply));
        }
        if s.policy.iter().any(|e| !e.p.is_finite() || e.p < 0.0) {
            return bad(format!("ply {}: policy probability not finite and non-negative", s.ply));
        }
        if s.root_wdl.iter().any(|v| !v.is_finite()) {
            return bad(format!("ply {}: root_wdl not finite", s.ply));
        }
        // Equal positions with the same side to move lie at least 4 plies apart, and no capture
        // falls between them, so each repetition takes 4 quiet plies.
        if s.quiet_plies < u16::MAX && u32::from(s.repetitions) * 4 > u32::from(s.quiet_plies) {
            return bad(format!(
                "ply {}: {} repetitions in {} plies since the last capture",
                s.ply, s.repetitions, s.quiet_plies
            ));
        }
    }
    Ok(())
}

fn offsets_from_lengths(lengths: impl IntoIterator<Item = usize>) -> OffsetBuffer<i32> {
    OffsetBuffer::from_lengths(lengths)
}

/// Builds a games record batch with `schema` (from [`schema::games_schema`], maybe with shard metadata).
pub fn games_to_batch(records: &[GameRecord], schema: SchemaRef) -> Result<RecordBatch> {
    let ids: Vec<u8> = records.iter().flat_map(|r| r.game_id.0).collect();
    let moves: StringArray = records.iter().flat_map(|r| r.moves.iter().map(|m| Some(m.to_string()))).collect();
    let moves = ListArray::try_new(
        schema::moves_item_field(),
        offsets_from_lengths(records.iter().map(|r| r.moves.len())),
        Arc::new(moves),
        None,
    )
    .arrow(|| "building the moves column".into())?;
    let strings = |f: &dyn Fn(&GameRecord) -> &str| -> ArrayRef {
        Arc::new(StringArray::from_iter_values(records.iter().map(f)))
    };
    let columns: Vec<ArrayRef> = vec![
        Arc::new(FixedSizeBinaryArray::new(GAME_ID_BYTES as i32, Buffer::from_vec(ids), None)),
        strings(&|r| &r.start_fen),
        Arc::new(moves),
        strings(&|r| r.result.name()),
        strings(&|r| &r.reason),
        strings(&|r| &r.article),
        strings(&|r| r.ruleset.name()),
        Arc::new(UInt32Array::from_iter_values(records.iter().map(|r| r.moves.len() as u32))),
        Arc::new(UInt64Array::from_iter_values(records.iter().map(|r| r.model_version))),
        strings(&|r| &r.worker_id),
        Arc::new(UInt64Array::from_iter_values(records.iter().map(|r| r.seed))),
        Arc::new(
            TimestampMillisecondArray::from_iter_values(records.iter().map(|r| r.start_time_ms)).with_timezone("UTC"),
        ),
        Arc::new(
            TimestampMillisecondArray::from_iter_values(records.iter().map(|r| r.end_time_ms)).with_timezone("UTC"),
        ),
        Arc::new(UInt64Array::from_iter_values(records.iter().map(|r| r.settings_version))),
    ];
    RecordBatch::try_new(schema, columns).arrow(|| "building a games batch".into())
}

/// Builds a samples record batch with `schema` (from [`schema::samples_schema`], maybe with shard metadata).
pub fn samples_to_batch(records: &[SampleRecord], schema: SchemaRef) -> Result<RecordBatch> {
    let ids: Vec<u8> = records.iter().flat_map(|r| r.game_id.0).collect();
    let boards: Vec<u8> = records.iter().flat_map(|r| r.board).collect();
    let moves = UInt16Array::from_iter_values(records.iter().flat_map(|r| r.policy.iter().map(|e| e.mv.to_u16())));
    let probs = Float32Array::from_iter_values(records.iter().flat_map(|r| r.policy.iter().map(|e| e.p)));
    let entries = StructArray::try_new(schema::policy_entry_fields(), vec![Arc::new(moves), Arc::new(probs)], None)
        .arrow(|| "building policy entries".into())?;
    let policy = ListArray::try_new(
        schema::policy_item_field(),
        offsets_from_lengths(records.iter().map(|r| r.policy.len())),
        Arc::new(entries),
        None,
    )
    .arrow(|| "building the policy column".into())?;
    let wdl = Float32Array::from_iter_values(records.iter().flat_map(|r| r.root_wdl));
    let wdl = FixedSizeListArray::try_new(schema::wdl_item_field(), 3, Arc::new(wdl), None)
        .arrow(|| "building the root_wdl column".into())?;
    let columns: Vec<ArrayRef> = vec![
        Arc::new(FixedSizeBinaryArray::new(GAME_ID_BYTES as i32, Buffer::from_vec(ids), None)),
        Arc::new(UInt32Array::from_iter_values(records.iter().map(|r| r.ply))),
        Arc::new(FixedSizeBinaryArray::new(BOARD_BYTES as i32, Buffer::from_vec(boards), None)),
        Arc::new(UInt8Array::from_iter_values(records.iter().map(|r| r.side_to_move.index() as u8))),
        Arc::new(policy),
        Arc::new(wdl),
        Arc::new(Int8Array::from_iter_values(records.iter().map(|r| r.result))),
        Arc::new(UInt32Array::from_iter_values(records.iter().map(|r| r.plies_to_end))),
        Arc::new(UInt64Array::from_iter_values(records.iter().map(|r| r.model_version))),
        Arc::new(BooleanArray::from(records.iter().map(|r| r.full_search).collect::<Vec<_>>())),
        Arc::new(UInt16Array::from_iter_values(records.iter().map(|r| r.quiet_plies))),
        Arc::new(UInt8Array::from_iter_values(records.iter().map(|r| r.repetitions))),
    ];
    RecordBatch::try_new(schema, columns).arrow(|| "building a samples batch".into())
}

/// Typed access to the columns of a batch already checked with [`schema::check_compatible`].
pub(crate) struct Columns<'a> {
    batch: &'a RecordBatch,
    path: &'a Path,
}

impl<'a> Columns<'a> {
    pub(crate) fn new(batch: &'a RecordBatch, path: &'a Path) -> Columns<'a> {
        Columns { batch, path }
    }

    pub(crate) fn error(&self, message: String) -> DatasetError {
        DatasetError::Shard { path: self.path.to_path_buf(), message }
    }

    pub(crate) fn get<T: Array + 'static>(&self, name: &str) -> Result<&'a T> {
        let column = self.batch.column_by_name(name).ok_or_else(|| self.error(format!("no column {name:?}")))?;
        if column.null_count() > 0 {
            return Err(self.error(format!("column {name:?} has nulls")));
        }
        column.as_any().downcast_ref::<T>().ok_or_else(|| self.error(format!("column {name:?} has the wrong type")))
    }

    pub(crate) fn primitive<T: arrow_array::ArrowPrimitiveType>(&self, name: &str) -> Result<&'a [T::Native]> {
        Ok(self.get::<PrimitiveArray<T>>(name)?.values())
    }

    pub(crate) fn string(&self, name: &str) -> Result<&'a StringArray> {
        self.get::<StringArray>(name)
    }

    pub(crate) fn fixed_binary(&self, name: &str, width: usize) -> Result<&'a [u8]> {
        let array = self.get::<FixedSizeBinaryArray>(name)?;
        let data = array.value_data();
        if array.value_size() != width || data.len() != array.len() * width {
            return Err(self.error(format!("column {name:?} is not {width} bytes wide")));
        }
        Ok(data)
    }

    /// The policy column as (list offsets, move codes, probabilities); the offsets index the two slices.
    pub(crate) fn policy(&self) -> Result<(&'a [i32], &'a [u16], &'a [f32])> {
        let list = self.get::<ListArray>(schema::samples::POLICY)?;
        let entries = list
            .values()
            .as_any()
            .downcast_ref::<StructArray>()
            .ok_or_else(|| self.error("policy entries are not structs".into()))?;
        let moves = entries
            .column(0)
            .as_any()
            .downcast_ref::<PrimitiveArray<UInt16Type>>()
            .ok_or_else(|| self.error("policy moves are not uint16".into()))?;
        let probs = entries
            .column(1)
            .as_any()
            .downcast_ref::<PrimitiveArray<Float32Type>>()
            .ok_or_else(|| self.error("policy probabilities are not float32".into()))?;
        let offsets = list.value_offsets();
        let end = offsets.last().copied().unwrap_or(0) as usize;
        if moves.len() < end || probs.len() < end {
            return Err(self.error("policy offsets exceed the entries".into()));
        }
        Ok((offsets, moves.values(), probs.values()))
    }

    /// The root_wdl column's values, 3 per row.
    pub(crate) fn wdl(&self) -> Result<&'a [f32]> {
        let list = self.get::<FixedSizeListArray>(schema::samples::ROOT_WDL)?;
        let values = list
            .values()
            .as_any()
            .downcast_ref::<PrimitiveArray<Float32Type>>()
            .ok_or_else(|| self.error("root_wdl values are not float32".into()))?;
        if values.len() != list.len() * 3 {
            return Err(self.error("root_wdl is not 3 wide".into()));
        }
        Ok(values.values())
    }
}

fn color_of(code: u8, cols: &Columns<'_>) -> Result<Color> {
    match code {
        0 => Ok(Color::Red),
        1 => Ok(Color::Black),
        _ => Err(cols.error(format!("side_to_move {code} is neither 0 nor 1"))),
    }
}

fn game_id_at(ids: &[u8], row: usize) -> GameId {
    let mut id = [0u8; GAME_ID_BYTES];
    id.copy_from_slice(&ids[row * GAME_ID_BYTES..(row + 1) * GAME_ID_BYTES]);
    GameId(id)
}

/// Reads the rows of a games batch (checked with [`schema::check_compatible`]); `path` names the
/// shard in errors.
pub(crate) fn batch_to_games(batch: &RecordBatch, path: &Path) -> Result<Vec<GameRecord>> {
    use schema::games::*;
    let cols = Columns::new(batch, path);
    let ids = cols.fixed_binary(GAME_ID, GAME_ID_BYTES)?;
    let fens = cols.string(START_FEN)?;
    let moves = cols.get::<ListArray>(MOVES)?;
    let move_texts =
        moves.values().as_any().downcast_ref::<StringArray>().ok_or_else(|| cols.error("moves are not utf8".into()))?;
    let offsets = moves.value_offsets();
    let results = cols.string(RESULT)?;
    let reasons = cols.string(REASON)?;
    let articles = cols.string(ARTICLE)?;
    let rulesets = cols.string(RULESET)?;
    let models = cols.primitive::<UInt64Type>(MODEL_VERSION)?;
    let workers = cols.string(WORKER_ID)?;
    let seeds = cols.primitive::<UInt64Type>(SEED)?;
    let starts = cols.get::<TimestampMillisecondArray>(START_TIME)?.values();
    let ends = cols.get::<TimestampMillisecondArray>(END_TIME)?.values();
    let settings = cols.primitive::<UInt64Type>(SETTINGS_VERSION)?;
    let mut out = Vec::with_capacity(batch.num_rows());
    for row in 0..batch.num_rows() {
        let (a, b) = (offsets[row] as usize, offsets[row + 1] as usize);
        let mut mvs = Vec::with_capacity(b - a);
        for i in a..b {
            let text = move_texts.value(i);
            mvs.push(text.parse::<Move>().map_err(|_| cols.error(format!("row {row}: bad move {text:?}")))?);
        }
        let result = results.value(row);
        let ruleset = rulesets.value(row);
        out.push(GameRecord {
            game_id: game_id_at(ids, row),
            start_fen: fens.value(row).to_string(),
            moves: mvs,
            result: GameResult::from_name(result)
                .ok_or_else(|| cols.error(format!("row {row}: unknown result {result:?}")))?,
            reason: reasons.value(row).to_string(),
            article: articles.value(row).to_string(),
            ruleset: ruleset.parse().map_err(|e| cols.error(format!("row {row}: {e}")))?,
            model_version: models[row],
            worker_id: workers.value(row).to_string(),
            seed: seeds[row],
            start_time_ms: starts[row],
            end_time_ms: ends[row],
            settings_version: settings[row],
        });
    }
    Ok(out)
}

/// Reads the rows of a samples batch (checked with [`schema::check_compatible`]).
pub(crate) fn batch_to_samples(batch: &RecordBatch, path: &Path) -> Result<Vec<SampleRecord>> {
    use schema::samples::*;
    let cols = Columns::new(batch, path);
    let ids = cols.fixed_binary(GAME_ID, GAME_ID_BYTES)?;
    let plies = cols.primitive::<UInt32Type>(PLY)?;
    let boards = cols.fixed_binary(BOARD, BOARD_BYTES)?;
    let sides = cols.primitive::<UInt8Type>(SIDE_TO_MOVE)?;
    let (offsets, moves, probs) = cols.policy()?;
    let wdl = cols.wdl()?;
    let results = cols.get::<Int8Array>(RESULT)?.values();
    let to_end = cols.primitive::<UInt32Type>(PLIES_TO_END)?;
    let models = cols.primitive::<UInt64Type>(MODEL_VERSION)?;
    let full = cols.get::<BooleanArray>(FULL_SEARCH)?;
    let quiet = cols.primitive::<UInt16Type>(QUIET_PLIES)?;
    let repetitions = cols.primitive::<UInt8Type>(REPETITIONS)?;
    let mut out = Vec::with_capacity(batch.num_rows());
    for row in 0..batch.num_rows() {
        let mut board = [0u8; BOARD_BYTES];
        board.copy_from_slice(&boards[row * BOARD_BYTES..(row + 1) * BOARD_BYTES]);
        let (a, b) = (offsets[row] as usize, offsets[row + 1] as usize);
        let mut policy = Vec::with_capacity(b - a);
        for i in a..b {
            let mv =
                Move::from_u16(moves[i]).ok_or_else(|| cols.error(format!("row {row}: bad move code {}", moves[i])))?;
            policy.push(PolicyEntry { mv, p: probs[i] });
        }
        out.push(SampleRecord {
            game_id: game_id_at(ids, row),
            ply: plies[row],
            board,
            side_to_move: color_of(sides[row], &cols)?,
            policy,
            root_wdl: [wdl[row * 3], wdl[row * 3 + 1], wdl[row * 3 + 2]],
            result: results[row],
            plies_to_end: to_end[row],
            model_version: models[row],
            full_search: full.value(row),
            quiet_plies: quiet[row],
            repetitions: repetitions[row],
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mirror_table_is_an_involution() {
        for i in 0..BOARD_BYTES {
            assert_eq!(MIRROR[MIRROR[i] as usize] as usize, i);
            assert_eq!(MIRROR[i] as usize / 9, i / 9);
        }
        let start = encode_board(&Position::startpos());
        assert_eq!(mirror_board(&start), start);
        assert_eq!(encode_board(&Position::startpos().mirror()), start);
    }

    #[test]
    fn game_id_round_trips_and_rejects_bad_text() {
        let id = GameId::from_u128(u128::MAX - 5);
        assert_eq!(id.to_string().parse::<GameId>(), Ok(id));
        assert!("xyz".parse::<GameId>().is_err());
        assert!("g".repeat(32).parse::<GameId>().is_err());
    }

    #[test]
    fn result_scores() {
        assert_eq!(GameResult::RedWin.score_for(Color::Red), 1);
        assert_eq!(GameResult::RedWin.score_for(Color::Black), -1);
        assert_eq!(GameResult::Draw.score_for(Color::Black), 0);
        for r in GameResult::ALL {
            assert_eq!(GameResult::from_name(r.name()), Some(r));
        }
    }
}
