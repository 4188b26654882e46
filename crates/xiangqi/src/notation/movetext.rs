//! Games as PGN, the way Xiangqi tools write it: `[Game "Chinese Chess"]` and `[Format]` tags,
//! `[FEN]` when the game does not start from the start position, and the moves in one notation
//! (ICCS coordinates `H2-E2`, WXF `C2.5` or Chinese `炮二平五`). The one PGN writer of the
//! project: match records and dataset exports both use it.

use std::fmt::{self, Write as _};
use std::str::FromStr;

use crate::notation::{Chinese, Wxf};
use crate::position::{IllegalMoveError, Position};
use crate::types::{Color, Move};

/// An illegal move in a listed game.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("ply {ply}: {source}")]
pub struct MovetextError {
    /// Index of the move in the list (0 = first).
    pub ply: usize,
    /// Why it is illegal.
    pub source: IllegalMoveError,
}

/// The notation of a PGN's moves (its `[Format]` tag).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum MoveNotation {
    /// ICCS coordinates, upper case with a dash: `H2-E2`.
    #[default]
    Iccs,
    /// WXF: `C2.5`.
    Wxf,
    /// Chinese: `炮二平五`.
    Chinese,
}

impl MoveNotation {
    /// The `[Format]` tag's value.
    pub fn format_tag(self) -> &'static str {
        match self {
            MoveNotation::Iccs => "ICCS",
            MoveNotation::Wxf => "WXF",
            MoveNotation::Chinese => "Chinese",
        }
    }

    /// `mv`, legal in `pos`, in this notation.
    fn write(self, pos: &Position, mv: Move) -> Result<String, IllegalMoveError> {
        Ok(match self {
            MoveNotation::Iccs => {
                let text = mv.to_string().to_ascii_uppercase();
                format!("{}-{}", &text[..2], &text[2..])
            }
            MoveNotation::Wxf => Wxf::from_move(pos, mv)?.to_string(),
            MoveNotation::Chinese => Chinese::from_move(pos, mv)?.to_string(),
        })
    }
}

impl fmt::Display for MoveNotation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MoveNotation::Iccs => "iccs",
            MoveNotation::Wxf => "wxf",
            MoveNotation::Chinese => "chinese",
        })
    }
}

/// A notation name that is not one of `iccs`, `wxf`, `chinese`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown move notation {0:?} (expected iccs, wxf or chinese)")]
pub struct ParseNotationError(String);

impl FromStr for MoveNotation {
    type Err = ParseNotationError;

    fn from_str(s: &str) -> Result<MoveNotation, ParseNotationError> {
        match s {
            "iccs" => Ok(MoveNotation::Iccs),
            "wxf" => Ok(MoveNotation::Wxf),
            "chinese" => Ok(MoveNotation::Chinese),
            _ => Err(ParseNotationError(s.to_string())),
        }
    }
}

/// One game as PGN text: the standard tags, the caller's `tags` (`Event`, `Red`, `Black`,
/// `Result`, ...), the moves numbered in `notation`, an optional `{comment}`, then `result`
/// (`1-0`, `0-1`, `1/2-1/2` or `*`), the game termination marker, which PGN readers take as the
/// last token of a game. Tag values are escaped; the ply of the first illegal move is the error.
///
/// ```
/// use xiangqi::Position;
/// use xiangqi::notation::{MoveNotation, pgn};
///
/// let moves = ["h2e2".parse()?, "h9g7".parse()?, "h0g2".parse()?];
/// let tags = [("Result", "*".to_string())];
/// let start = Position::startpos();
/// let text = pgn(&tags, &start, &moves, MoveNotation::Chinese, "*", None).unwrap();
/// assert!(text.starts_with("[Game \"Chinese Chess\"]\n[Format \"Chinese\"]\n[Result \"*\"]\n\n"), "{text}");
/// assert!(text.ends_with("1. 炮二平五 马8进7\n2. 马二进三\n*\n\n"), "{text}");
/// let iccs = pgn(&tags, &start, &moves, MoveNotation::Iccs, "*", None).unwrap();
/// assert!(iccs.contains("1. H2-E2 H9-G7\n"), "{iccs}");
/// // A comment comes before the result, which ends the game.
/// let commented = pgn(&tags, &start, &moves, MoveNotation::Iccs, "*", Some("adjourned")).unwrap();
/// assert!(commented.ends_with("2. H0-G2\n{adjourned} *\n\n"), "{commented}");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn pgn(
    tags: &[(&str, String)],
    start: &Position,
    moves: &[Move],
    notation: MoveNotation,
    result: &str,
    comment: Option<&str>,
) -> Result<String, MovetextError> {
    let escape = |value: &str| value.replace('\\', "\\\\").replace('"', "\\\"");
    let mut text = String::new();
    let _ = writeln!(text, "[Game \"Chinese Chess\"]");
    let _ = writeln!(text, "[Format \"{}\"]", notation.format_tag());
    for (name, value) in tags {
        let _ = writeln!(text, "[{name} \"{}\"]", escape(value));
    }
    if *start != Position::startpos() {
        let _ = writeln!(text, "[FEN \"{start}\"]");
    }
    text.push('\n');
    let mut pos = start.clone();
    let mut line = String::new();
    for (ply, &mv) in moves.iter().enumerate() {
        let written = notation.write(&pos, mv).map_err(|source| MovetextError { ply, source })?;
        match pos.turn() {
            Color::Red => {
                if !line.is_empty() {
                    let _ = writeln!(text, "{}", line.trim_end());
                }
                line = format!("{}. {written} ", pos.fullmoves());
            }
            Color::Black => {
                if line.is_empty() {
                    line = format!("{}. ... ", pos.fullmoves());
                }
                line.push_str(&written);
            }
        }
        pos.play(mv).map_err(|source| MovetextError { ply, source })?;
    }
    if !line.is_empty() {
        let _ = writeln!(text, "{}", line.trim_end());
    }
    if let Some(comment) = comment {
        let _ = write!(text, "{{{}}} ", comment.replace('}', ")"));
    }
    let _ = writeln!(text, "{result}\n");
    Ok(text)
}
