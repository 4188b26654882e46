//! The book frame: a position and its left-right mirror are one entry, stored as the smaller.

use xiangqi::{Color, Move, Piece, Position, Setup};
use xqz_dataset::{encode_board, mirror_board};

/// How positions are keyed: the 64-bit hash of the canonical position.
pub(crate) type KeyFn = fn(&Position) -> u64;

/// The key every book uses: the rules core's Zobrist hash of pieces and side to move.
pub(crate) fn zobrist(pos: &Position) -> u64 {
    pos.hash()
}

/// A position in the book frame.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Canonical {
    /// The smaller of the position's and its mirror's encoded boards (`xqz_dataset::encode_board`).
    pub board: [u8; 90],
    /// The side to move.
    pub turn: Color,
    /// Whether the book frame is the mirror of the position's.
    pub mirrored: bool,
    /// Whether the position is its own mirror image.
    pub symmetric: bool,
}

impl Canonical {
    /// The book frame of `pos`.
    pub fn of(pos: &Position) -> Canonical {
        let board = encode_board(pos);
        let mirror = mirror_board(&board);
        let symmetric = mirror == board;
        let (board, mirrored) = if mirror < board { (mirror, true) } else { (board, false) };
        Canonical { board, turn: pos.turn(), mirrored, symmetric }
    }

    /// A move of the position in the book frame. In a symmetric position a move and its mirror
    /// lead to mirror-image positions, so both are stored as the one with the smaller code.
    pub fn move_to_book(&self, mv: Move) -> Move {
        if self.mirrored {
            mv.mirror()
        } else if self.symmetric {
            smaller(mv, mv.mirror())
        } else {
            mv
        }
    }

    /// A stored move back in the position's frame.
    pub fn move_from_book(&self, mv: Move) -> Move {
        if self.mirrored { mv.mirror() } else { mv }
    }

    /// The FEN of the book-frame position, counters reset (`... w - - 0 1`).
    pub fn fen(&self) -> String {
        // Written from the board as it stands: it came from a legal position, so the checks of
        // `Position::from_setup` would only cost time on every probe.
        let board = self.board.map(|code| code.checked_sub(1).and_then(|i| Piece::from_index(usize::from(i))));
        Setup { board, turn: self.turn, halfmove_clock: 0, fullmoves: 1 }.to_string()
    }
}

fn smaller(a: Move, b: Move) -> Move {
    if b.to_u16() < a.to_u16() { b } else { a }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_position_and_its_mirror_share_a_frame() {
        let mut pos = Position::startpos();
        pos.play("h2e2".parse().unwrap()).unwrap();
        let mirror = pos.mirror();
        let (a, b) = (Canonical::of(&pos), Canonical::of(&mirror));
        assert_eq!((a.board, a.turn), (b.board, b.turn));
        assert_ne!(a.mirrored, b.mirrored);
        assert!(!a.symmetric);
        let mv = "h9g7".parse().unwrap();
        assert_eq!(a.move_to_book(mv), b.move_to_book(mv.mirror()));
        assert_eq!(b.move_from_book(b.move_to_book(mv.mirror())), mv.mirror());
    }

    #[test]
    fn a_symmetric_position_stores_a_move_and_its_mirror_as_one() {
        let start = Canonical::of(&Position::startpos());
        assert!(start.symmetric && !start.mirrored);
        let (h, b): (Move, Move) = ("h2e2".parse().unwrap(), "b2e2".parse().unwrap());
        assert_eq!(start.move_to_book(h), start.move_to_book(b));
        assert_eq!(start.fen(), xiangqi::START_FEN);
    }
}
