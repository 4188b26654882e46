//! A naive reference move generator written from the rules alone (square by square, no
//! bitboards), to check the real one against. Shared by the property tests and the fuzz targets.
#![allow(dead_code)] // each user needs a different subset

use xiangqi::{Color, Move, Piece, PieceKind, Position, Rank, Square};

/// A board as an array of optional pieces, indexed by [`Square::index`].
pub type Board = [Option<Piece>; 90];

/// The board of a position.
pub fn board_of(pos: &Position) -> Board {
    pos.to_setup().board
}

pub fn at(board: &Board, file: i32, rank: i32) -> Option<Option<Piece>> {
    Square::from_coords(file, rank).map(|s| board[s.index()])
}

/// Points the piece on `from` could move to if its own king's safety did not matter
/// (own pieces excluded).
pub fn naive_targets(board: &Board, from: Square) -> Vec<Square> {
    let piece = board[from.index()].expect("a piece on the origin");
    let (f, r) = (from.file().index() as i32, from.rank().index() as i32);
    let forward = if piece.color == Color::Red { 1 } else { -1 };
    let mut out = Vec::new();
    let orthogonal = [(1, 0), (-1, 0), (0, 1), (0, -1)];
    let diagonal = [(1, 1), (1, -1), (-1, 1), (-1, -1)];
    match piece.kind {
        PieceKind::King => {
            for (df, dr) in orthogonal {
                if let Some(to) = Square::from_coords(f + df, r + dr).filter(|s| s.in_palace(piece.color)) {
                    out.push(to);
                }
            }
        }
        PieceKind::Advisor => {
            for (df, dr) in diagonal {
                if let Some(to) = Square::from_coords(f + df, r + dr).filter(|s| s.in_palace(piece.color)) {
                    out.push(to);
                }
            }
        }
        PieceKind::Elephant => {
            for (df, dr) in diagonal {
                let eye_empty = at(board, f + df, r + dr) == Some(None);
                if let Some(to) = Square::from_coords(f + 2 * df, r + 2 * dr)
                    && eye_empty
                    && to.on_own_side(piece.color)
                {
                    out.push(to);
                }
            }
        }
        PieceKind::Horse => {
            for (df, dr) in orthogonal {
                // The leg is the orthogonal neighbour; the horse then goes one more step that way
                // and one step to either side.
                if at(board, f + df, r + dr) != Some(None) {
                    continue;
                }
                for side in [-1, 1] {
                    let (tf, tr) = if df != 0 { (f + 2 * df, r + side) } else { (f + side, r + 2 * dr) };
                    if let Some(to) = Square::from_coords(tf, tr) {
                        out.push(to);
                    }
                }
            }
        }
        PieceKind::Rook | PieceKind::Cannon => {
            for (df, dr) in orthogonal {
                let mut screened = false;
                let (mut tf, mut tr) = (f + df, r + dr);
                while let Some(content) = at(board, tf, tr) {
                    let to = Square::from_coords(tf, tr).unwrap();
                    match (piece.kind, screened, content) {
                        (PieceKind::Rook, _, None) => out.push(to),
                        (PieceKind::Rook, _, Some(_)) => {
                            out.push(to);
                            break;
                        }
                        (_, false, None) => out.push(to),
                        (_, false, Some(_)) => screened = true,
                        (_, true, None) => {}
                        (_, true, Some(_)) => {
                            out.push(to);
                            break;
                        }
                    }
                    tf += df;
                    tr += dr;
                }
            }
        }
        PieceKind::Pawn => {
            let mut steps = vec![(0, forward)];
            if !from.on_own_side(piece.color) {
                steps.extend([(1, 0), (-1, 0)]);
            }
            for (df, dr) in steps {
                if let Some(to) = Square::from_coords(f + df, r + dr) {
                    out.push(to);
                }
            }
        }
    }
    out.retain(|to| board[to.index()].is_none_or(|p| p.color != piece.color));
    out
}

/// Whether `color`'s king is attacked on `board`, counting the flying general.
pub fn naive_king_attacked(board: &Board, color: Color) -> bool {
    let king_sq =
        |c: Color| Square::all().find(|s| board[s.index()] == Some(Piece::new(c, PieceKind::King))).expect("a king");
    let ours = king_sq(color);
    let theirs = king_sq(!color);
    if ours.file() == theirs.file() {
        let (lo, hi) = (ours.rank().index().min(theirs.rank().index()), ours.rank().index().max(theirs.rank().index()));
        if (lo + 1..hi).all(|r| board[Square::new(ours.file(), Rank::new(r).unwrap()).index()].is_none()) {
            return true;
        }
    }
    Square::all()
        .filter(|s| board[s.index()].is_some_and(|p| p.color != color))
        .any(|s| naive_targets(board, s).contains(&ours))
}

/// The legal moves by the rules: every move of a piece of the side to move that does not leave
/// its own king attacked.
pub fn naive_legal_moves(pos: &Position) -> Vec<Move> {
    let board = board_of(pos);
    let us = pos.turn();
    let mut out = Vec::new();
    for from in Square::all().filter(|s| board[s.index()].is_some_and(|p| p.color == us)) {
        for to in naive_targets(&board, from) {
            let mut after = board;
            after[to.index()] = after[from.index()].take();
            if !naive_king_attacked(&after, us) {
                out.push(Move::new(from, to));
            }
        }
    }
    out.sort();
    out
}
