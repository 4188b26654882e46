//! What WXF and Chinese notation share: files counted from the mover's right, forward / back /
//! sideways actions, telling apart several pieces of a kind on one file, and finding the one legal
//! move a description denotes.
//!
//! A move is described relative to the side that makes it: files are numbered 1-9 from the mover's
//! right (Red's file 1 is file `i`, Black's file 1 is file `a`) and forward is towards the opponent.
//! Straight movers (king, rook, cannon, pawn) give the number of ranks moved when going forward or
//! back and the target file when going sideways; diagonal movers (advisor, elephant, horse) always
//! give the target file.

use std::cmp::Reverse;
use std::fmt;

use thiserror::Error;

use crate::position::{IllegalMoveError, Position};
use crate::types::{Color, File, Move, Piece, PieceKind, Square};

/// Why a WXF or Chinese move does not denote exactly one legal move in a position.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum ResolveError {
    /// The move is written for the side that is not to move (Chinese numerals tell the side).
    #[error("the move is written for {written}, but {to_move} is to move")]
    WrongSide {
        /// The side the text was written for.
        written: Color,
        /// The side to move in the position.
        to_move: Color,
    },
    /// No piece of the side to move fits the description (none on that file, no two on one file,
    /// no middle one, ...).
    #[error("no {color} {} fits the description", kind_name(*.kind))]
    NoSuchPiece {
        /// The side to move.
        color: Color,
        /// The kind of piece described.
        kind: PieceKind,
    },
    /// Pieces fit, but none can move the described way (wrong geometry or off the board).
    #[error("no {color} {} that fits the description can move that way", kind_name(*.kind))]
    Unreachable {
        /// The side to move.
        color: Color,
        /// The kind of piece described.
        kind: PieceKind,
    },
    /// The described move exists on the board but is not legal in the position.
    #[error("the described move {0} is not legal in this position")]
    Illegal(Move),
    /// Several pieces fit the description and each can make the described move.
    #[error("ambiguous: the description fits the legal moves {}", MoveList(.0))]
    Ambiguous(Vec<Move>),
}

struct MoveList<'a>(&'a [Move]);

impl fmt::Display for MoveList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, mv) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{mv}")?;
        }
        Ok(())
    }
}

/// English name of a piece kind, for error messages.
pub(crate) const fn kind_name(kind: PieceKind) -> &'static str {
    match kind {
        PieceKind::King => "king",
        PieceKind::Advisor => "advisor",
        PieceKind::Elephant => "elephant",
        PieceKind::Horse => "horse",
        PieceKind::Rook => "rook",
        PieceKind::Cannon => "cannon",
        PieceKind::Pawn => "pawn",
    }
}

/// Which way a piece moves, seen from its own side.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Action {
    /// Towards the opponent (WXF `+`, 进).
    Forward,
    /// Towards the own back rank (WXF `-`, 退).
    Backward,
    /// Along the rank (WXF `.`, 平).
    Sideways,
}

/// Whether the kind moves along files and ranks (and so counts ranks when moving forward or back).
pub(crate) const fn is_straight(kind: PieceKind) -> bool {
    matches!(kind, PieceKind::King | PieceKind::Rook | PieceKind::Cannon | PieceKind::Pawn)
}

/// Whether a piece of this kind can ever move this way (diagonal movers never go sideways, pawns
/// never go back).
pub(crate) const fn action_possible(kind: PieceKind, action: Action) -> bool {
    match action {
        Action::Forward => true,
        Action::Backward => !matches!(kind, PieceKind::Pawn),
        Action::Sideways => is_straight(kind),
    }
}

/// The board file with number `number` (1-9) counted from `color`'s right, if in range.
pub(crate) fn file_from_number(color: Color, number: u8) -> Option<File> {
    if !(1..=9).contains(&number) {
        return None;
    }
    match color {
        Color::Red => File::new(9 - number),
        Color::Black => File::new(number - 1),
    }
}

/// The number (1-9) of `file` counted from `color`'s right.
pub(crate) const fn file_number(color: Color, file: File) -> u8 {
    match color {
        Color::Red => 9 - file.index(),
        Color::Black => file.index() + 1,
    }
}

const fn forward_sign(color: Color) -> i32 {
    match color {
        Color::Red => 1,
        Color::Black => -1,
    }
}

/// `color`'s pieces of `kind` on `file`, the front one (nearest the opponent) first.
pub(crate) fn on_file(pos: &Position, color: Color, kind: PieceKind, file: File) -> Vec<Square> {
    let mut squares: Vec<Square> = pos.piece_bb(Piece::new(color, kind)).filter(|sq| sq.file() == file).collect();
    squares.sort_by_key(|sq| Reverse(sq.rank().relative_to(color)));
    squares
}

/// Every file holding two or more of `color`'s pieces of `kind`, each listed front first.
pub(crate) fn stacks(pos: &Position, color: Color, kind: PieceKind) -> Vec<Vec<Square>> {
    (0..9u8)
        .filter_map(File::new)
        .map(|file| on_file(pos, color, kind, file))
        .filter(|squares| squares.len() >= 2)
        .collect()
}

/// Where a `color` `kind` on `from` lands when it moves `action` with number `arg`, if that point
/// is on the board and the geometry fits the kind (the move may still be blocked or illegal).
pub(crate) fn target(color: Color, kind: PieceKind, from: Square, action: Action, arg: u8) -> Option<Square> {
    if !action_possible(kind, action) {
        return None;
    }
    let file = i32::from(from.file().index());
    let rank = i32::from(from.rank().index());
    let dir = match action {
        Action::Forward => forward_sign(color),
        Action::Backward => -forward_sign(color),
        Action::Sideways => {
            let to_file = i32::from(file_from_number(color, arg)?.index());
            return if to_file == file { None } else { Square::from_coords(to_file, rank) };
        }
    };
    if is_straight(kind) {
        return Square::from_coords(file, rank + dir * i32::from(arg));
    }
    let to_file = i32::from(file_from_number(color, arg)?.index());
    let ranks = match (kind, (to_file - file).abs()) {
        (PieceKind::Advisor, 1) => 1,
        (PieceKind::Elephant, 2) => 2,
        (PieceKind::Horse, 1) => 2,
        (PieceKind::Horse, 2) => 1,
        _ => return None,
    };
    Square::from_coords(to_file, rank + dir * ranks)
}

/// The one legal move made by one of `candidates` (squares of `color`'s `kind`) moving `action`
/// with number `arg`.
pub(crate) fn pick(
    pos: &Position,
    color: Color,
    kind: PieceKind,
    candidates: &[Square],
    action: Action,
    arg: u8,
) -> Result<Move, ResolveError> {
    if candidates.is_empty() {
        return Err(ResolveError::NoSuchPiece { color, kind });
    }
    let geometric: Vec<Move> = candidates
        .iter()
        .filter_map(|&from| target(color, kind, from, action, arg).map(|to| Move::new(from, to)))
        .collect();
    let legal: Vec<Move> = geometric.iter().copied().filter(|&mv| pos.is_legal(mv)).collect();
    match (legal.as_slice(), geometric.first()) {
        ([mv], _) => Ok(*mv),
        ([], Some(&mv)) => Err(ResolveError::Illegal(mv)),
        ([], None) => Err(ResolveError::Unreachable { color, kind }),
        _ => Err(ResolveError::Ambiguous(legal)),
    }
}

/// Where the moving piece stands among several of its kind on its file.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Stack {
    /// How many of the mover's pieces of this kind share the file (2-5).
    pub len: usize,
    /// The moving piece's place among them, 0 for the front one.
    pub index: usize,
    /// Whether another file also holds two or more of them (only possible for pawns).
    pub other_files: bool,
}

/// A legal move broken into the parts both notations write.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(crate) struct Description {
    /// The side making the move.
    pub color: Color,
    /// The moving piece's kind.
    pub kind: PieceKind,
    /// The number (1-9, from the mover's right) of the file the piece starts on.
    pub file: u8,
    /// Set when like pieces share the start file and the notations must say which one moves.
    /// Never set for advisors and elephants: by convention they are named by their file, and the
    /// direction tells two on one file apart.
    pub stack: Option<Stack>,
    /// Forward, back or sideways.
    pub action: Action,
    /// Ranks moved (straight movers going forward or back), else the target file number.
    pub arg: u8,
}

/// Describes a move that must be legal in `pos`.
pub(crate) fn describe(pos: &Position, mv: Move) -> Result<Description, IllegalMoveError> {
    let illegal = IllegalMoveError { mv };
    if !pos.is_legal(mv) {
        return Err(illegal);
    }
    let piece = pos.piece_at(mv.from()).ok_or(illegal)?;
    let (color, kind) = (piece.color, piece.kind);
    let (from, to) = (mv.from(), mv.to());
    let stack = if matches!(kind, PieceKind::Advisor | PieceKind::Elephant) {
        None
    } else {
        let column = on_file(pos, color, kind, from.file());
        let index = column.iter().position(|&sq| sq == from).ok_or(illegal)?;
        (column.len() >= 2).then(|| Stack {
            len: column.len(),
            index,
            other_files: stacks(pos, color, kind).len() >= 2,
        })
    };
    let ranks = (i32::from(to.rank().index()) - i32::from(from.rank().index())) * forward_sign(color);
    let action = match ranks {
        0 => Action::Sideways,
        r if r > 0 => Action::Forward,
        _ => Action::Backward,
    };
    let arg = if action == Action::Sideways || !is_straight(kind) {
        file_number(color, to.file())
    } else {
        ranks.unsigned_abs() as u8
    };
    Ok(Description { color, kind, file: file_number(color, from.file()), stack, action, arg })
}
