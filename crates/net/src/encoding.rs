//! Network input: the position from the side to move's point of view.
//!
//! Version [`ENCODING_VERSION`] has [`PLANES`] planes of 10 x 9 (ranks x files), rank 0 first; for
//! Black the board is flipped top to bottom ([`Square::flip_rank`]), so the side to move always
//! plays "up" from ranks 0-4:
//!
//! | planes | meaning                                                                  |
//! |--------|--------------------------------------------------------------------------|
//! | 0-6    | the side to move's king, advisors, elephants, horses, rooks, cannons, pawns |
//! | 7-13   | the opponent's, same order                                               |
//! | 14     | plies since the last capture / 120, capped at 1 (the natural move limit) |
//! | 15     | 1 if the position occurred before in the game (since the last capture)    |
//! | 16     | 1 if it occurred twice or more before                                     |
//! | 17     | all ones (lets convolutions tell the board's edge from zero padding)     |
//! | 18-23  | the side to move's advisors, elephants, horses, rooks, cannons, pawns: count / starting count, on every square |
//! | 24-29  | the opponent's, same order                                               |
//!
//! The count planes give the material balance to every square at once. A convolution only sees
//! a 3 x 3 neighbourhood, so without them the count is something the trunk must learn to gather
//! across the board, and a rook on a square where self-play rarely put one is not counted.
//! They are hand-computed features of the position, as KataGo's liberty and ladder planes are.
//!
//! ```
//! use xiangqi::Position;
//! use xqz_net::encoding::{self, History, INPUT_SIZE};
//!
//! let mut planes = vec![0.0; INPUT_SIZE];
//! encoding::encode_position(&Position::startpos(), History::default(), &mut planes);
//! // Red's king on e1 (file 4, rank 0) is on the side to move's king plane.
//! assert_eq!(planes[4], 1.0);
//! ```

use xiangqi::game::Game;
use xiangqi::{Color, Piece, PieceKind, Position, Square};

/// Version of this encoding, stored in checkpoints: a net only reads inputs of its own version.
pub const ENCODING_VERSION: u32 = 2;
/// Ranks of the board.
pub const HEIGHT: usize = 10;
/// Files of the board.
pub const WIDTH: usize = 9;
/// Input planes.
pub const PLANES: usize = 30;
/// Floats of one encoded position.
pub const INPUT_SIZE: usize = PLANES * HEIGHT * WIDTH;
/// Plies without capture that fill the counter plane (60 moves, the 2011 rules' natural limit).
pub const QUIET_PLIES_FULL: u32 = 120;

const SQUARES: usize = HEIGHT * WIDTH;
const QUIET_PLANE: usize = 14;
const REPEATED_PLANE: usize = 15;
const REPEATED_TWICE_PLANE: usize = 16;
const ONES_PLANE: usize = 17;
const COUNT_PLANES: usize = 18;
/// The kinds on the count planes (the king is always there) and their numbers at the start.
const COUNTED: [(PieceKind, u8); 6] = [
    (PieceKind::Advisor, 2),
    (PieceKind::Elephant, 2),
    (PieceKind::Horse, 2),
    (PieceKind::Rook, 2),
    (PieceKind::Cannon, 2),
    (PieceKind::Pawn, 5),
];

/// What the network sees of the game's history besides the board.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct History {
    /// Plies since the last capture ([`Position::halfmove_clock`]).
    pub quiet_plies: u32,
    /// Earlier occurrences of the position since the last capture ([`Game::repetitions`]).
    pub repetitions: u32,
}

impl History {
    /// The history of a game's current position.
    pub fn of_game(game: &Game) -> History {
        History { quiet_plies: game.position().halfmove_clock(), repetitions: game.repetitions() }
    }
}

/// A board code that is not 0 (empty) or 1..=14 ([`Piece::index`] + 1, as datasets store boards).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("bad board code {code} on square {square}")]
pub struct BoardCodeError {
    /// The code.
    pub code: u8,
    /// Square index (rank * 9 + file).
    pub square: usize,
}

/// The plane index of `piece` seen by `turn`.
fn piece_plane(piece: Piece, turn: Color) -> usize {
    if piece.color == turn { piece.kind.index() } else { 7 + piece.kind.index() }
}

/// The square's offset within a plane, seen by `turn`.
fn view(sq: Square, turn: Color) -> usize {
    match turn {
        Color::Red => sq.index(),
        Color::Black => sq.flip_rank().index(),
    }
}

fn encode_history(history: History, out: &mut [f32]) {
    let quiet = history.quiet_plies.min(QUIET_PLIES_FULL) as f32 / QUIET_PLIES_FULL as f32;
    out[QUIET_PLANE * SQUARES..(QUIET_PLANE + 1) * SQUARES].fill(quiet);
    if history.repetitions >= 1 {
        out[REPEATED_PLANE * SQUARES..(REPEATED_PLANE + 1) * SQUARES].fill(1.0);
    }
    if history.repetitions >= 2 {
        out[REPEATED_TWICE_PLANE * SQUARES..(REPEATED_TWICE_PLANE + 1) * SQUARES].fill(1.0);
    }
    out[ONES_PLANE * SQUARES..(ONES_PLANE + 1) * SQUARES].fill(1.0);
}

/// Fills the count planes from `counts[plane][kind index]`, plane 0 the side to move's.
fn encode_counts(counts: &[[u8; 7]; 2], out: &mut [f32]) {
    for (side, counts) in counts.iter().enumerate() {
        for (i, &(kind, start)) in COUNTED.iter().enumerate() {
            let plane = COUNT_PLANES + side * COUNTED.len() + i;
            out[plane * SQUARES..(plane + 1) * SQUARES].fill(f32::from(counts[kind.index()]) / f32::from(start));
        }
    }
}

/// Writes the planes of `pos` into `out` (`INPUT_SIZE` floats, overwritten).
///
/// # Panics
/// If `out` is not `INPUT_SIZE` long.
pub fn encode_position(pos: &Position, history: History, out: &mut [f32]) {
    assert_eq!(out.len(), INPUT_SIZE, "input buffer of {} floats, expected {INPUT_SIZE}", out.len());
    out.fill(0.0);
    let turn = pos.turn();
    let mut counts = [[0u8; 7]; 2];
    for color in [Color::Red, Color::Black] {
        for kind in PieceKind::ALL {
            let piece = Piece::new(color, kind);
            let plane = piece_plane(piece, turn) * SQUARES;
            let bb = pos.piece_bb(piece);
            counts[usize::from(color != turn)][kind.index()] = bb.count() as u8;
            for sq in bb {
                out[plane + view(sq, turn)] = 1.0;
            }
        }
    }
    encode_history(history, out);
    encode_counts(&counts, out);
}

/// Writes the planes of a game's current position into `out` (`INPUT_SIZE` floats).
pub fn encode_game(game: &Game, out: &mut [f32]) {
    encode_position(game.position(), History::of_game(game), out);
}

/// Writes the planes of a stored board (90 codes, 0 empty or [`Piece::index`] + 1, square index
/// rank * 9 + file) with `turn` to move into `out` (`INPUT_SIZE` floats, overwritten).
///
/// # Panics
/// If `board` is not 90 codes or `out` not `INPUT_SIZE` floats long.
pub fn encode_board(board: &[u8], turn: Color, history: History, out: &mut [f32]) -> Result<(), BoardCodeError> {
    assert_eq!(board.len(), SQUARES, "board of {} codes, expected {SQUARES}", board.len());
    assert_eq!(out.len(), INPUT_SIZE, "input buffer of {} floats, expected {INPUT_SIZE}", out.len());
    out.fill(0.0);
    let mut counts = [[0u8; 7]; 2];
    for (index, &code) in board.iter().enumerate() {
        if code == 0 {
            continue;
        }
        let piece = Piece::from_index(code as usize - 1).ok_or(BoardCodeError { code, square: index })?;
        let sq = Square::from_index(index as u8).expect("90 squares");
        out[piece_plane(piece, turn) * SQUARES + view(sq, turn)] = 1.0;
        let count = &mut counts[usize::from(piece.color != turn)][piece.kind.index()];
        *count = count.saturating_add(1);
    }
    encode_history(history, out);
    encode_counts(&counts, out);
    Ok(())
}

/// The board and history read back from planes, for tests and debugging: `turn` says whose view
/// the planes are in. Returns `None` for planes that no position encodes to (two pieces on one
/// square, a value other than 0 or 1 on a piece plane, counts that are not the board's).
pub fn decode(planes: &[f32], turn: Color) -> Option<([Option<Piece>; SQUARES], History)> {
    if planes.len() != INPUT_SIZE {
        return None;
    }
    let mut board = [None; SQUARES];
    for plane in 0..14 {
        let (color, kind) = if plane < 7 { (turn, plane) } else { (turn.opponent(), plane - 7) };
        let piece = Piece::new(color, PieceKind::ALL[kind]);
        for (offset, &value) in planes[plane * SQUARES..(plane + 1) * SQUARES].iter().enumerate() {
            if value == 0.0 {
                continue;
            }
            let viewed = Square::from_index(offset as u8)?;
            let sq = if turn == Color::Black { viewed.flip_rank() } else { viewed };
            if value != 1.0 || board[sq.index()].replace(piece).is_some() {
                return None;
            }
        }
    }
    let mut counts = [[0u8; 7]; 2];
    for piece in board.iter().flatten() {
        counts[usize::from(piece.color != turn)][piece.kind.index()] += 1;
    }
    let mut expected = vec![0.0; INPUT_SIZE];
    encode_counts(&counts, &mut expected);
    let count_planes = COUNT_PLANES * SQUARES..(COUNT_PLANES + 2 * COUNTED.len()) * SQUARES;
    if planes[count_planes.clone()] != expected[count_planes] {
        return None;
    }
    let quiet = (planes[QUIET_PLANE * SQUARES] * QUIET_PLIES_FULL as f32).round() as u32;
    let repetitions =
        (planes[REPEATED_PLANE * SQUARES] == 1.0) as u32 + (planes[REPEATED_TWICE_PLANE * SQUARES] == 1.0) as u32;
    Some((board, History { quiet_plies: quiet, repetitions }))
}
