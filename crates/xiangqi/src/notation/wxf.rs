//! WXF notation (World Xiangqi Federation): `C2.5`, `H8+7`, `R+.3`, `P3.4`, `++.4`, `3+.4`.
//!
//! A move is four characters: the piece, which of the mover's pieces it is, the direction and a
//! number. Piece letters are `K A E H R C P` (`B` for the elephant and `N` for the horse are
//! accepted, in either case). The direction is `+` forward, `-` back or `.` sideways (`=` is
//! accepted, as Fairy-Stockfish writes it). Files are numbered 1-9 from the mover's right.
//!
//! Which piece moves, following the WXF page "Official Xiangqi piece names and notation"
//! (<http://www.wxf.org/xq/computer/wxf_notation.html>, AXF system adopted by the WXF in 1997):
//!
//! * normally the piece letter and its file: `C2.5`;
//! * two like pieces on one file: the file digit is replaced by `+` (front) or `-` (rear):
//!   `R+.3`, `C--1`; advisors and elephants keep their file digit (`A6+5` rather than `A-+5`),
//!   since the direction already tells the two apart (as the xqinenglish.com WXF notation guide
//!   recommends and Fairy-Stockfish prints);
//! * three pawns on a file: `P+` front, `P3` (plain notation) middle, `P-` rear;
//! * four pawns: `++` foremost, `P+` second, `P-` third, `--` rearmost (no piece letter);
//! * five pawns: `++`, `P+`, `P3` (middle), `P-`, `--`;
//! * pawns stacked on two files: the piece letter is replaced by the file digit and the second
//!   character is `+` front, `-` rear or the file digit again for the middle pawn: `3+.4`, `33.4`,
//!   `3-.4`, `7+.6`, `7-.6`.
//!
//! Reading is lenient where the text still names one legal move: a file digit may name a piece
//! that shares its file with a like piece if only one of them can make the move (`R2+1`),
//! `++`/`--` also mean the foremost/rearmost of two or three pawns, and the sign may come before
//! the letter (`+R.3` for `R+.3`, as some older texts write it).

use std::fmt;
use std::str::FromStr;

use thiserror::Error;

use super::descriptor::{self, Action, ResolveError, Stack, action_possible, file_from_number, on_file, pick, stacks};
use crate::position::{IllegalMoveError, Position};
use crate::types::{Move, PieceKind};

/// A move in WXF notation, read without a position; [`Wxf::resolve`] finds the move it denotes.
///
/// ```
/// use xiangqi::notation::Wxf;
/// use xiangqi::Position;
/// let mut pos = Position::startpos();
/// let wxf: Wxf = "C2.5".parse()?;
/// let mv = wxf.resolve(&pos)?;
/// assert_eq!(mv.to_string(), "h2e2");
/// pos.play(mv)?;
/// // Printing needs the position the move is played from.
/// let reply = "h9g7".parse()?;
/// assert_eq!(Wxf::from_move(&pos, reply)?.to_string(), "H8+7");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Wxf {
    kind: PieceKind,
    who: Who,
    action: Action,
    arg: u8,
}

/// Which of the mover's pieces of the kind moves.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
enum Who {
    /// `C2`: the piece on that file; for three or five pawns on it, the middle one.
    File(u8),
    /// `R+` / `R-`: front / rear of two or three; second from the front / rear of four or five.
    Tandem(End),
    /// `++` / `--` (pawns): the foremost / rearmost on its file.
    Extreme(End),
    /// `3+` / `3-` / `33` (pawns, when two files hold several): front / rear / middle on that file.
    PawnFile(u8, FileTag),
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
enum End {
    Front,
    Rear,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
enum FileTag {
    Front,
    Middle,
    Rear,
}

/// Why a text is not a WXF move.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum ParseWxfError {
    /// Not exactly four characters.
    #[error("bad WXF move {0:?}: expected four characters like C2.5, H8+7, R+.3 or ++.4")]
    Length(String),
    /// The first character is not a piece letter, a file digit, `+` or `-`.
    #[error("bad WXF move {text:?}: {found:?} is not a piece letter (K A E H R C P)")]
    Piece {
        /// The whole text.
        text: String,
        /// The offending character.
        found: char,
    },
    /// The first two characters do not say which piece moves.
    #[error(
        "bad WXF move {text:?}: {found:?} does not tell which piece moves (expected a letter and a file \
         1-9, + or -, or for pawns ++, --, a file and +, - or the file again)"
    )]
    Which {
        /// The whole text.
        text: String,
        /// The first two characters.
        found: String,
    },
    /// The third character is not `+`, `-` or `.`.
    #[error("bad WXF move {text:?}: direction {found:?} is not +, - or .")]
    Direction {
        /// The whole text.
        text: String,
        /// The offending character.
        found: char,
    },
    /// The last character is not a digit 1-9.
    #[error("bad WXF move {text:?}: {found:?} is not a number 1-9")]
    Number {
        /// The whole text.
        text: String,
        /// The offending character.
        found: char,
    },
    /// The piece can never move in that direction (a horse sideways, a pawn back).
    #[error("bad WXF move {text:?}: a {} never moves {}", descriptor::kind_name(*.kind), direction_name(*.backward))]
    Impossible {
        /// The whole text.
        text: String,
        /// The piece kind.
        kind: PieceKind,
        /// True for a backward move, false for a sideways one.
        backward: bool,
    },
}

fn direction_name(backward: bool) -> &'static str {
    if backward { "back" } else { "sideways" }
}

const fn letter(kind: PieceKind) -> char {
    match kind {
        PieceKind::King => 'K',
        PieceKind::Advisor => 'A',
        PieceKind::Elephant => 'E',
        PieceKind::Horse => 'H',
        PieceKind::Rook => 'R',
        PieceKind::Cannon => 'C',
        PieceKind::Pawn => 'P',
    }
}

fn digit(c: char) -> Option<u8> {
    match c {
        '1'..='9' => Some(c as u8 - b'0'),
        _ => None,
    }
}

/// Index into a file's pieces (front first) of `+` / `-` when `len` share the file.
fn tandem_index(end: End, len: usize) -> usize {
    match (end, len >= 4) {
        (End::Front, false) => 0,
        (End::Front, true) => 1,
        (End::Rear, false) => len - 1,
        (End::Rear, true) => len - 2,
    }
}

impl Wxf {
    /// The WXF text of a move that must be legal in `pos`.
    pub fn from_move(pos: &Position, mv: Move) -> Result<Wxf, IllegalMoveError> {
        let d = descriptor::describe(pos, mv)?;
        let who = match d.stack {
            None => Who::File(d.file),
            Some(Stack { len, index, other_files: true }) if d.kind == PieceKind::Pawn => {
                let tag = match index {
                    0 => FileTag::Front,
                    i if i + 1 == len => FileTag::Rear,
                    _ => FileTag::Middle,
                };
                Who::PawnFile(d.file, tag)
            }
            Some(Stack { len, index, .. }) => match (len, index) {
                (4 | 5, 0) => Who::Extreme(End::Front),
                (4 | 5, i) if i + 1 == len => Who::Extreme(End::Rear),
                (_, 0) | (4 | 5, 1) => Who::Tandem(End::Front),
                (_, i) if i + 1 == len || (len >= 4 && i + 2 == len) => Who::Tandem(End::Rear),
                _ => Who::File(d.file),
            },
        };
        Ok(Wxf { kind: d.kind, who, action: d.action, arg: d.arg })
    }

    /// The kind of piece that moves.
    pub fn kind(&self) -> PieceKind {
        self.kind
    }

    /// The one legal move of the side to move in `pos` that this text denotes.
    pub fn resolve(&self, pos: &Position) -> Result<Move, ResolveError> {
        let color = pos.turn();
        let kind = self.kind;
        let candidates = match self.who {
            Who::File(n) => {
                let column = file_from_number(color, n).map(|f| on_file(pos, color, kind, f)).unwrap_or_default();
                if kind == PieceKind::Pawn && matches!(column.len(), 3 | 5) {
                    vec![column[column.len() / 2]]
                } else {
                    column
                }
            }
            Who::Tandem(end) => {
                stacks(pos, color, kind).iter().filter_map(|s| s.get(tandem_index(end, s.len())).copied()).collect()
            }
            Who::Extreme(end) => stacks(pos, color, kind)
                .iter()
                .filter_map(|s| match end {
                    End::Front => s.first().copied(),
                    End::Rear => s.last().copied(),
                })
                .collect(),
            Who::PawnFile(n, tag) => {
                let column = file_from_number(color, n).map(|f| on_file(pos, color, kind, f)).unwrap_or_default();
                let index = match (tag, column.len()) {
                    (_, 0 | 1) => None,
                    (FileTag::Front, len) => Some(tandem_index(End::Front, len)),
                    (FileTag::Rear, len) => Some(tandem_index(End::Rear, len)),
                    (FileTag::Middle, len) => (len % 2 == 1).then_some(len / 2),
                };
                index.and_then(|i| column.get(i).copied()).into_iter().collect()
            }
        };
        pick(pos, color, kind, &candidates, self.action, self.arg)
    }
}

impl FromStr for Wxf {
    type Err = ParseWxfError;

    /// Reads `C2.5`, `R+.3`, `++.4`, `3+.4` and the like (letters in either case, `=` for `.`,
    /// `+R.3` for `R+.3`).
    fn from_str(s: &str) -> Result<Wxf, ParseWxfError> {
        let text = || s.to_string();
        let mut chars = s.chars();
        let (Some(c0), Some(c1), Some(c2), Some(c3), None) =
            (chars.next(), chars.next(), chars.next(), chars.next(), chars.next())
        else {
            return Err(ParseWxfError::Length(text()));
        };
        let which = || ParseWxfError::Which { text: text(), found: [c0, c1].iter().collect() };
        let (kind, who) = match c0 {
            '+' | '-' if c1 == c0 => (PieceKind::Pawn, Who::Extreme(if c0 == '+' { End::Front } else { End::Rear })),
            '+' | '-' => {
                let kind = PieceKind::from_char(c1).ok_or_else(which)?;
                (kind, Who::Tandem(if c0 == '+' { End::Front } else { End::Rear }))
            }
            '1'..='9' => {
                let n = c0 as u8 - b'0';
                let tag = match c1 {
                    '+' => FileTag::Front,
                    '-' => FileTag::Rear,
                    _ if c1 == c0 => FileTag::Middle,
                    _ => return Err(which()),
                };
                (PieceKind::Pawn, Who::PawnFile(n, tag))
            }
            _ => {
                let kind = PieceKind::from_char(c0).ok_or(ParseWxfError::Piece { text: text(), found: c0 })?;
                let who = match c1 {
                    '+' => Who::Tandem(End::Front),
                    '-' => Who::Tandem(End::Rear),
                    _ => Who::File(digit(c1).ok_or_else(which)?),
                };
                (kind, who)
            }
        };
        let action = match c2 {
            '+' => Action::Forward,
            '-' => Action::Backward,
            '.' | '=' => Action::Sideways,
            _ => return Err(ParseWxfError::Direction { text: text(), found: c2 }),
        };
        let arg = digit(c3).ok_or(ParseWxfError::Number { text: text(), found: c3 })?;
        if !action_possible(kind, action) {
            return Err(ParseWxfError::Impossible { text: text(), kind, backward: action == Action::Backward });
        }
        Ok(Wxf { kind, who, action, arg })
    }
}

impl fmt::Display for Wxf {
    /// Writes the canonical WXF text, e.g. `C2.5`, `R+.3`, `++.4`, `33.4`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let l = letter(self.kind);
        match self.who {
            Who::File(n) => write!(f, "{l}{n}")?,
            Who::Tandem(End::Front) => write!(f, "{l}+")?,
            Who::Tandem(End::Rear) => write!(f, "{l}-")?,
            Who::Extreme(End::Front) => f.write_str("++")?,
            Who::Extreme(End::Rear) => f.write_str("--")?,
            Who::PawnFile(n, FileTag::Front) => write!(f, "{n}+")?,
            Who::PawnFile(n, FileTag::Middle) => write!(f, "{n}{n}")?,
            Who::PawnFile(n, FileTag::Rear) => write!(f, "{n}-")?,
        }
        let sign = match self.action {
            Action::Forward => '+',
            Action::Backward => '-',
            Action::Sideways => '.',
        };
        write!(f, "{sign}{}", self.arg)
    }
}
