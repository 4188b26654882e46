//! The policy index: every geometrically possible move numbered `0..POLICY_SIZE` (2086).
//!
//! A move is possible when it follows a rook/cannon line (any two points on one rank or file, which
//! also covers king and pawn steps), a horse jump, an advisor diagonal inside a palace, or an
//! elephant diagonal between two elephant points on one side of the river. The numbering is by
//! origin square, then target square (square index rank * 9 + file).
//!
//! The network sees the board from the side to move's view (see [`crate::encoding`]), so its
//! policy is indexed in that frame: [`index_for`] and [`move_for`] flip Black's moves top to bottom.
//! [`mirror`] and [`flip`] permute indices for the left-right mirror and the top-bottom flip.
//!
//! ```
//! use xiangqi::{Color, Move};
//! use xqz_net::policy::{self, POLICY_SIZE};
//!
//! let mv: Move = "h2e2".parse()?;
//! let i = policy::index(mv).unwrap();
//! assert!(i < POLICY_SIZE);
//! assert_eq!(policy::move_at(i), Some(mv));
//! // Black's h7e7 is Red's h2e2 seen from Black's side.
//! assert_eq!(policy::index_for("h7e7".parse()?, Color::Black), Some(i));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use xiangqi::{Color, Move, Square};

/// Number of possible moves: 1530 line moves + 508 horse jumps + 16 advisor + 32 elephant moves.
pub const POLICY_SIZE: usize = 2086;

const SQUARES: usize = 90;
const NONE: u16 = u16::MAX;

/// The rank counted from the nearer edge (0..=4), which makes the two halves alike.
const fn near_rank(rank: i32) -> i32 {
    if rank < 5 { rank } else { 9 - rank }
}

const fn advisor_point(file: i32, rank: i32) -> bool {
    let r = near_rank(rank);
    file >= 3 && file <= 5 && r <= 2 && (file + r) % 2 == 1
}

const fn elephant_point(file: i32, rank: i32) -> bool {
    let r = near_rank(rank);
    file % 2 == 0 && r % 2 == 0 && (file / 2 + r / 2) % 2 == 1
}

const fn possible(from: usize, to: usize) -> bool {
    if from == to {
        return false;
    }
    let (f1, r1, f2, r2) = ((from % 9) as i32, (from / 9) as i32, (to % 9) as i32, (to / 9) as i32);
    let (df, dr) = ((f2 - f1).abs(), (r2 - r1).abs());
    if df == 0 || dr == 0 {
        return true;
    }
    if (df == 1 && dr == 2) || (df == 2 && dr == 1) {
        return true;
    }
    if df == 1 && dr == 1 {
        return advisor_point(f1, r1) && advisor_point(f2, r2);
    }
    if df == 2 && dr == 2 {
        return elephant_point(f1, r1) && elephant_point(f2, r2) && (r1 < 5) == (r2 < 5);
    }
    false
}

struct Tables {
    /// `from * 90 + to` -> index, or `NONE`.
    index: [u16; SQUARES * SQUARES],
    /// index -> `(from, to)` square indices.
    moves: [(u8, u8); POLICY_SIZE],
    /// index -> index of the left-right mirrored move.
    mirror: [u16; POLICY_SIZE],
    /// index -> index of the top-bottom flipped move.
    flip: [u16; POLICY_SIZE],
}

const TABLES: Tables = {
    let mut t = Tables {
        index: [NONE; SQUARES * SQUARES],
        moves: [(0, 0); POLICY_SIZE],
        mirror: [0; POLICY_SIZE],
        flip: [0; POLICY_SIZE],
    };
    let mut n = 0;
    let mut from = 0;
    while from < SQUARES {
        let mut to = 0;
        while to < SQUARES {
            if possible(from, to) {
                t.index[from * SQUARES + to] = n as u16;
                t.moves[n] = (from as u8, to as u8);
                n += 1;
            }
            to += 1;
        }
        from += 1;
    }
    assert!(n == POLICY_SIZE);
    let mut i = 0;
    while i < POLICY_SIZE {
        let (from, to) = (t.moves[i].0 as usize, t.moves[i].1 as usize);
        let mirrored = (from / 9 * 9 + 8 - from % 9) * SQUARES + (to / 9 * 9 + 8 - to % 9);
        let flipped = ((9 - from / 9) * 9 + from % 9) * SQUARES + ((9 - to / 9) * 9 + to % 9);
        t.mirror[i] = t.index[mirrored];
        t.flip[i] = t.index[flipped];
        assert!(t.mirror[i] != NONE && t.flip[i] != NONE);
        i += 1;
    }
    t
};

/// The index of `mv` (board frame), or `None` if no piece could ever make it.
#[inline]
pub fn index(mv: Move) -> Option<usize> {
    let i = TABLES.index[mv.from().index() * SQUARES + mv.to().index()];
    (i != NONE).then_some(i as usize)
}

/// The move with index `i` (board frame).
#[inline]
pub fn move_at(i: usize) -> Option<Move> {
    let &(from, to) = TABLES.moves.get(i)?;
    Some(Move::new(Square::from_index(from)?, Square::from_index(to)?))
}

/// The index of `mv` in the network's frame when `turn` is to move.
#[inline]
pub fn index_for(mv: Move, turn: Color) -> Option<usize> {
    match turn {
        Color::Red => index(mv),
        Color::Black => index(mv.flip_rank()),
    }
}

/// The move with index `i` in the network's frame, played by `turn`.
#[inline]
pub fn move_for(i: usize, turn: Color) -> Option<Move> {
    let mv = move_at(i)?;
    Some(match turn {
        Color::Red => mv,
        Color::Black => mv.flip_rank(),
    })
}

/// The index of the left-right mirror of move `i`.
///
/// # Panics
/// If `i >= POLICY_SIZE`.
#[inline]
pub fn mirror(i: usize) -> usize {
    TABLES.mirror[i] as usize
}

/// The index of the top-bottom flip of move `i`.
///
/// # Panics
/// If `i >= POLICY_SIZE`.
#[inline]
pub fn flip(i: usize) -> usize {
    TABLES.flip[i] as usize
}
