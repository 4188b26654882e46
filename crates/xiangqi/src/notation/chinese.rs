//! Chinese notation (纵线方式): `炮二平五`, `马8进7`, `前马退四`, `后车平六`, `中兵平四`, `二兵平五`,
//! `前七进一`.
//!
//! A move is four characters: piece and file, direction (进 forward, 退 back, 平 sideways) and a
//! number, as in article 7 of the Chinese Xiangqi Association rules (2011) and the WXF rules. Red
//! counts files from its right with Chinese numerals 一..九, Black with digits 1..9; the numerals
//! also tell which side the move is written for. Files, steps and targets follow the same rules as
//! WXF (see [`Wxf`](super::Wxf)).
//!
//! Which piece moves:
//!
//! * normally the piece and its file: `炮二平五`;
//! * two like pieces on one file: 前 (front) or 后 (rear) before the piece: `前马退四`, `后车平六`
//!   (the CXA rules' own examples). Advisors and elephants are always named by their file
//!   (`仕六进五`, as in WXF): the direction already tells two on one file apart;
//! * three pawns on a file: 前兵, 中兵, 后兵;
//! * four or five pawns on a file: counted from the front, 一兵 二兵 三兵 四兵 五兵 (Black: 1卒 2卒 ...);
//! * pawns stacked on two files: the pawn character is replaced by the file, `前七进一`, `中三平四`,
//!   `后7平6`, the form WXF writes `7++1`, `33.4`, `7-.6`.
//!
//! Printing uses the simplified standard characters, Red 帅仕相马车炮兵 and Black 将士象马车炮卒,
//! and ASCII digits for Black. Reading also accepts traditional and variant characters (帥 將 俥 車
//! 傌 馬 砲 進 後), full-width digits １..９, either side's piece characters, `前`/`后`/`中` and ordinals
//! for any number of pawns where they still name one, and the five-character form `前兵七进一`.

use std::fmt;
use std::str::FromStr;

use thiserror::Error;

use super::descriptor::{self, Action, ResolveError, Stack, action_possible, file_from_number, on_file, pick, stacks};
use crate::position::{IllegalMoveError, Position};
use crate::types::{Color, Move, Piece, PieceKind};

/// A move in Chinese notation, read without a position; [`Chinese::resolve`] finds the move it
/// denotes.
///
/// ```
/// use xiangqi::notation::Chinese;
/// use xiangqi::Position;
/// let mut pos = Position::startpos();
/// let mv = "炮二平五".parse::<Chinese>()?.resolve(&pos)?;
/// assert_eq!(mv.to_string(), "h2e2");
/// pos.play(mv)?;
/// // Traditional characters are read too; Black writes digits.
/// let reply = "馬8進7".parse::<Chinese>()?;
/// assert_eq!(reply.to_string(), "马8进7");
/// assert_eq!(reply.resolve(&pos)?.to_string(), "h9g7");
/// assert_eq!(Chinese::from_move(&pos, "h9g7".parse()?)?.to_string(), "马8进7");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Chinese {
    color: Color,
    kind: PieceKind,
    who: Who,
    action: Action,
    arg: u8,
}

/// Which of the mover's pieces of the kind moves.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
enum Who {
    /// `炮二`: the piece on that file.
    File(u8),
    /// `前马`, `中兵`, `二兵`: picked by place on a file holding several.
    Tag(Tag),
    /// `前七` (pawns, when two files hold several): picked by place on that file.
    FileTag(u8, Tag),
}

/// A place among like pieces on one file.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
enum Tag {
    /// 前: the front one.
    Front,
    /// 中: the middle one of three (or five).
    Middle,
    /// 后: the rear one.
    Rear,
    /// 一..五: the n-th from the front (1-5).
    Nth(u8),
}

impl Tag {
    /// Index (front first) of the piece this tag picks among `len` on a file.
    fn index(self, len: usize) -> Option<usize> {
        match self {
            _ if len < 2 => None,
            Tag::Front => Some(0),
            Tag::Rear => Some(len - 1),
            Tag::Middle => (len % 2 == 1).then_some(len / 2),
            Tag::Nth(n) => Some(usize::from(n) - 1).filter(|&i| i < len),
        }
    }
}

/// Why a text is not a move in Chinese notation.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum ParseChineseError {
    /// Not four characters (or five in the form `前兵七进一`).
    #[error("bad Chinese move {0:?}: expected four characters like 炮二平五 or 马8进7")]
    Length(String),
    /// The first character is neither a piece nor a place (前 中 后, 一..五).
    #[error("bad Chinese move {text:?}: {found:?} is not a piece (帅仕相马车炮兵 将士象马车炮卒) or 前/中/后")]
    Piece {
        /// The whole text.
        text: String,
        /// The offending character.
        found: char,
    },
    /// The characters before the direction do not say which piece moves.
    #[error("bad Chinese move {text:?}: {found:?} does not tell which piece moves")]
    Which {
        /// The whole text.
        text: String,
        /// The characters before the direction.
        found: String,
    },
    /// A file or number is not 一..九 (Red) or 1..9 (Black).
    #[error("bad Chinese move {text:?}: {found:?} is not a number 一..九 or 1..9")]
    Number {
        /// The whole text.
        text: String,
        /// The offending character.
        found: char,
    },
    /// The direction is not 进, 退 or 平.
    #[error("bad Chinese move {text:?}: direction {found:?} is not 进, 退 or 平")]
    Direction {
        /// The whole text.
        text: String,
        /// The offending character.
        found: char,
    },
    /// Red's Chinese numerals and Black's digits in one move.
    #[error("bad Chinese move {0:?}: it mixes Red's numerals 一..九 with Black's digits 1..9")]
    MixedNumerals(String),
    /// The piece can never move in that direction (a horse sideways, a pawn back).
    #[error("bad Chinese move {text:?}: a {} never moves {}", descriptor::kind_name(*.kind), if *.backward { "back" } else { "sideways" })]
    Impossible {
        /// The whole text.
        text: String,
        /// The piece kind.
        kind: PieceKind,
        /// True for a backward move, false for a sideways one.
        backward: bool,
    },
}

const RED_NUMERALS: [char; 9] = ['一', '二', '三', '四', '五', '六', '七', '八', '九'];

fn piece_kind(c: char) -> Option<PieceKind> {
    Some(match c {
        '帅' | '帥' | '将' | '將' => PieceKind::King,
        '仕' | '士' => PieceKind::Advisor,
        '相' | '象' => PieceKind::Elephant,
        '马' | '馬' | '傌' => PieceKind::Horse,
        '车' | '車' | '俥' => PieceKind::Rook,
        '炮' | '砲' => PieceKind::Cannon,
        '兵' | '卒' => PieceKind::Pawn,
        _ => return None,
    })
}

const fn piece_char(color: Color, kind: PieceKind) -> char {
    match (color, kind) {
        (Color::Red, PieceKind::King) => '帅',
        (Color::Black, PieceKind::King) => '将',
        (Color::Red, PieceKind::Advisor) => '仕',
        (Color::Black, PieceKind::Advisor) => '士',
        (Color::Red, PieceKind::Elephant) => '相',
        (Color::Black, PieceKind::Elephant) => '象',
        (_, PieceKind::Horse) => '马',
        (_, PieceKind::Rook) => '车',
        (_, PieceKind::Cannon) => '炮',
        (Color::Red, PieceKind::Pawn) => '兵',
        (Color::Black, PieceKind::Pawn) => '卒',
    }
}

/// A number 1-9 and the side whose style it is written in.
fn numeral(c: char) -> Option<(u8, Color)> {
    if let Some(i) = RED_NUMERALS.iter().position(|&r| r == c) {
        return Some((i as u8 + 1, Color::Red));
    }
    match c {
        '1'..='9' => Some((c as u8 - b'0', Color::Black)),
        '１'..='９' => Some((c as u32 - '０' as u32) as u8).map(|n| (n, Color::Black)),
        _ => None,
    }
}

fn tag(c: char) -> Option<Tag> {
    match c {
        '前' => Some(Tag::Front),
        '中' => Some(Tag::Middle),
        '后' | '後' => Some(Tag::Rear),
        _ => numeral(c).and_then(|(n, _)| (n <= 5).then_some(Tag::Nth(n))),
    }
}

fn number_char(color: Color, n: u8) -> char {
    match color {
        Color::Red => RED_NUMERALS.get(usize::from(n).wrapping_sub(1)).copied().unwrap_or('?'),
        Color::Black => char::from_digit(u32::from(n), 10).unwrap_or('?'),
    }
}

impl Chinese {
    /// The character a piece is printed with (Red 帅仕相马车炮兵, Black 将士象马车炮卒), as on a
    /// board diagram.
    ///
    /// ```
    /// use xiangqi::notation::Chinese;
    /// use xiangqi::{Color, Piece, PieceKind};
    /// assert_eq!(Chinese::piece_char(Piece::new(Color::Black, PieceKind::King)), '将');
    /// ```
    pub const fn piece_char(piece: Piece) -> char {
        piece_char(piece.color, piece.kind)
    }

    /// The Chinese text of a move that must be legal in `pos`, written for the side to move.
    pub fn from_move(pos: &Position, mv: Move) -> Result<Chinese, IllegalMoveError> {
        let d = descriptor::describe(pos, mv)?;
        let who = match d.stack {
            None => Who::File(d.file),
            Some(Stack { len, index, other_files }) => {
                let tag = match (len, index) {
                    (4.., i) => Tag::Nth(i as u8 + 1),
                    (_, 0) => Tag::Front,
                    (_, i) if i + 1 == len => Tag::Rear,
                    _ => Tag::Middle,
                };
                if other_files && d.kind == PieceKind::Pawn { Who::FileTag(d.file, tag) } else { Who::Tag(tag) }
            }
        };
        Ok(Chinese { color: d.color, kind: d.kind, who, action: d.action, arg: d.arg })
    }

    /// The side the move is written for (Red with numerals 一..九, Black with digits).
    pub fn color(&self) -> Color {
        self.color
    }

    /// The kind of piece that moves.
    pub fn kind(&self) -> PieceKind {
        self.kind
    }

    /// The one legal move of the side to move in `pos` that this text denotes.
    pub fn resolve(&self, pos: &Position) -> Result<Move, ResolveError> {
        let color = pos.turn();
        if color != self.color {
            return Err(ResolveError::WrongSide { written: self.color, to_move: color });
        }
        let kind = self.kind;
        let column = |n| file_from_number(color, n).map(|f| on_file(pos, color, kind, f)).unwrap_or_default();
        let candidates = match self.who {
            Who::File(n) => column(n),
            Who::Tag(tag) => stacks(pos, color, kind)
                .iter()
                .filter_map(|s| tag.index(s.len()).and_then(|i| s.get(i).copied()))
                .collect(),
            Who::FileTag(n, tag) => {
                let column = column(n);
                tag.index(column.len()).and_then(|i| column.get(i).copied()).into_iter().collect()
            }
        };
        pick(pos, color, kind, &candidates, self.action, self.arg)
    }
}

impl FromStr for Chinese {
    type Err = ParseChineseError;

    /// Reads `炮二平五`, `马8进7`, `前马退四`, `中兵平四`, `二兵平五`, `前七进一`, `前兵七进一` and
    /// traditional-character forms such as `傌二進三`.
    fn from_str(s: &str) -> Result<Chinese, ParseChineseError> {
        let text = || s.to_string();
        // Bound the work on long inputs before collecting.
        if s.len() > 5 * 4 {
            return Err(ParseChineseError::Length(text()));
        }
        let chars: Vec<char> = s.chars().collect();
        if !(4..=5).contains(&chars.len()) {
            return Err(ParseChineseError::Length(text()));
        }
        let (head, tail) = chars.split_at(chars.len() - 2);
        let number = |c: char| numeral(c).ok_or(ParseChineseError::Number { text: text(), found: c });
        let which = || ParseChineseError::Which { text: text(), found: head.iter().collect() };
        let (kind, who, file_color) = match *head {
            [a, b] => {
                if let Some(kind) = piece_kind(a) {
                    let (n, c) = number(b)?;
                    (kind, Who::File(n), Some(c))
                } else if let Some(t) = tag(a) {
                    if let Some(kind) = piece_kind(b) {
                        (kind, Who::Tag(t), None)
                    } else {
                        let (n, c) = numeral(b).ok_or_else(which)?;
                        (PieceKind::Pawn, Who::FileTag(n, t), Some(c))
                    }
                } else {
                    return Err(ParseChineseError::Piece { text: text(), found: a });
                }
            }
            [a, b, c] => {
                let t = tag(a).ok_or_else(which)?;
                let kind = piece_kind(b).ok_or_else(which)?;
                let (n, color) = number(c)?;
                (kind, Who::FileTag(n, t), Some(color))
            }
            _ => return Err(ParseChineseError::Length(text())),
        };
        let action = match tail[0] {
            '进' | '進' => Action::Forward,
            '退' => Action::Backward,
            '平' => Action::Sideways,
            found => return Err(ParseChineseError::Direction { text: text(), found }),
        };
        let (arg, color) = number(tail[1])?;
        if file_color.is_some_and(|c| c != color) {
            return Err(ParseChineseError::MixedNumerals(text()));
        }
        if !action_possible(kind, action) {
            return Err(ParseChineseError::Impossible { text: text(), kind, backward: action == Action::Backward });
        }
        Ok(Chinese { color, kind, who, action, arg })
    }
}

impl fmt::Display for Chinese {
    /// Writes the standard simplified form for the side the move is written for, e.g. `炮二平五`,
    /// `马8进7`, `前马退四`, `中兵平四`, `二兵平五`, `前七进一`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use fmt::Write;
        let color = self.color;
        let piece = piece_char(color, self.kind);
        let tag_char = |t: Tag| match t {
            Tag::Front => '前',
            Tag::Middle => '中',
            Tag::Rear => '后',
            Tag::Nth(n) => number_char(color, n),
        };
        match self.who {
            Who::File(n) => {
                f.write_char(piece)?;
                f.write_char(number_char(color, n))?;
            }
            Who::Tag(t) => {
                f.write_char(tag_char(t))?;
                f.write_char(piece)?;
            }
            Who::FileTag(n, t) => {
                f.write_char(tag_char(t))?;
                if self.kind != PieceKind::Pawn {
                    f.write_char(piece)?;
                }
                f.write_char(number_char(color, n))?;
            }
        }
        f.write_char(match self.action {
            Action::Forward => '进',
            Action::Backward => '退',
            Action::Sideways => '平',
        })?;
        f.write_char(number_char(color, self.arg))
    }
}
