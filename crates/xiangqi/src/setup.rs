//! Unchecked setups and FEN text (the Pikafish dialect).
//!
//! Parsing a FEN gives a [`Setup`], which holds whatever the text said; [`crate::Position`]
//! validates it against the rules.

use std::fmt;
use std::str::FromStr;

use thiserror::Error;

use crate::types::{Color, File, Piece, Rank, Square};

/// The standard start position.
pub const START_FEN: &str = "rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABNR w - - 0 1";

/// A board and side to move as written, not yet checked against the rules.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Setup {
    /// The piece on each square, indexed by [`Square::index`].
    pub board: [Option<Piece>; 90],
    /// The side to move.
    pub turn: Color,
    /// Plies since the last capture.
    pub halfmove_clock: u32,
    /// Move number, starting at 1 and incremented after each Black move.
    pub fullmoves: u32,
}

/// Why a FEN string could not be read.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum FenError {
    /// Nothing but whitespace.
    #[error("empty FEN")]
    Empty,
    /// The board field does not have 10 ranks separated by `/`.
    #[error("FEN board has {0} ranks, expected 10")]
    WrongRankCount(usize),
    /// A rank describes more or fewer than 9 points.
    #[error("FEN rank {rank} describes {points} points, expected 9")]
    WrongRankLength {
        /// The rank (0-9, from Red's side) that is wrong.
        rank: u8,
        /// How many points it described.
        points: u32,
    },
    /// A character that is neither a piece letter nor a digit 1-9.
    #[error("unexpected character {0:?} in FEN board")]
    BadBoardChar(char),
    /// The side-to-move field is missing.
    #[error("FEN has no side-to-move field")]
    MissingSide,
    /// The side-to-move field is not `w`, `r` or `b`.
    #[error("bad side to move {0:?} in FEN (expected w, r or b)")]
    BadSide(String),
    /// The halfmove clock is not a number.
    #[error("bad halfmove clock {0:?} in FEN")]
    BadHalfmoveClock(String),
    /// The move number is not a positive number.
    #[error("bad move number {0:?} in FEN")]
    BadFullmoves(String),
    /// Text after the last field.
    #[error("unexpected trailing text {0:?} in FEN")]
    Trailing(String),
}

impl Setup {
    /// Parses a FEN string.
    ///
    /// The board and side are required; the castling and en-passant placeholders (`-`) and the
    /// two counters are optional. `h`/`e` are read as horse/elephant and `r` as Red.
    ///
    /// ```
    /// use xiangqi::Setup;
    /// let setup: Setup = "4k4/9/9/9/9/9/9/9/9/4K4 r".parse().unwrap();
    /// assert_eq!(setup.to_string(), "4k4/9/9/9/9/9/9/9/9/4K4 w - - 0 1");
    /// ```
    pub fn from_fen(fen: &str) -> Result<Setup, FenError> {
        let mut fields = fen.split_ascii_whitespace();
        let board_field = fields.next().ok_or(FenError::Empty)?;
        let ranks: Vec<&str> = board_field.split('/').collect();
        if ranks.len() != 10 {
            return Err(FenError::WrongRankCount(ranks.len()));
        }
        let mut board = [None; 90];
        for (i, text) in ranks.iter().enumerate() {
            let rank = 9 - i as u8;
            let mut file: u32 = 0;
            for c in text.chars() {
                if let Some(d) = c.to_digit(10).filter(|d| (1..=9).contains(d)) {
                    file += d;
                } else if let Some(piece) = Piece::from_fen_char(c) {
                    if file < 9 {
                        let sq = Square::new(File::new(file as u8).unwrap(), Rank::new(rank).unwrap());
                        board[sq.index()] = Some(piece);
                    }
                    file += 1;
                } else {
                    return Err(FenError::BadBoardChar(c));
                }
            }
            if file != 9 {
                return Err(FenError::WrongRankLength { rank, points: file });
            }
        }
        let turn = match fields.next() {
            None => return Err(FenError::MissingSide),
            Some("w" | "W" | "r" | "R") => Color::Red,
            Some("b" | "B") => Color::Black,
            Some(other) => return Err(FenError::BadSide(other.to_string())),
        };
        let mut rest: Vec<&str> = fields.collect();
        // Chess-style castling and en-passant placeholders.
        let dashes = rest.iter().take(2).take_while(|f| **f == "-").count();
        rest.drain(..dashes);
        let mut rest = rest.into_iter();
        let halfmove_clock = match rest.next() {
            None => 0,
            Some(f) => f.parse().map_err(|_| FenError::BadHalfmoveClock(f.to_string()))?,
        };
        let fullmoves = match rest.next() {
            None => 1,
            Some(f) => match f.parse::<u32>() {
                Ok(n) if n >= 1 => n,
                _ => return Err(FenError::BadFullmoves(f.to_string())),
            },
        };
        let trailing: Vec<&str> = rest.collect();
        if !trailing.is_empty() {
            return Err(FenError::Trailing(trailing.join(" ")));
        }
        Ok(Setup { board, turn, halfmove_clock, fullmoves })
    }

    /// The piece on `sq`.
    pub fn piece_at(&self, sq: Square) -> Option<Piece> {
        self.board[sq.index()]
    }
}

impl FromStr for Setup {
    type Err = FenError;
    fn from_str(s: &str) -> Result<Setup, FenError> {
        Setup::from_fen(s)
    }
}

impl fmt::Display for Setup {
    /// Writes the canonical FEN (`w`/`b`, `- -` placeholders, both counters).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_fen(f, |sq| self.board[sq.index()], self.turn, self.halfmove_clock, self.fullmoves)
    }
}

/// Writes a FEN from a piece lookup; shared by [`Setup`] and [`crate::Position`].
pub(crate) fn write_fen(
    f: &mut impl fmt::Write,
    piece_at: impl Fn(Square) -> Option<Piece>,
    turn: Color,
    halfmove_clock: u32,
    fullmoves: u32,
) -> fmt::Result {
    // The board is gathered as bytes and handed over in one write: a formatter call per
    // character made writing FENs most of the time `xqz book build` takes.
    let mut board = [0u8; 99];
    let mut len = 0;
    let mut push = |byte: u8| {
        board[len] = byte;
        len += 1;
    };
    for rank in (0..10u8).rev() {
        let mut empty = 0;
        for file in 0..9u8 {
            let sq = Square::new(File::new(file).unwrap(), Rank::new(rank).unwrap());
            match piece_at(sq) {
                Some(p) => {
                    if empty > 0 {
                        push(b'0' + empty);
                        empty = 0;
                    }
                    push(p.fen_char() as u8);
                }
                None => empty += 1,
            }
        }
        if empty > 0 {
            push(b'0' + empty);
        }
        if rank > 0 {
            push(b'/');
        }
    }
    f.write_str(std::str::from_utf8(&board[..len]).expect("FEN letters, digits and slashes are ASCII"))?;
    write!(f, " {} - - {} {}", turn.fen_char(), halfmove_clock, fullmoves)
}
