//! Move text for game listings: numbered lines with each move in coordinate and Chinese notation.

use std::fmt::Write as _;

use crate::notation::Chinese;
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

/// Lists `moves` from `start`, one line per move number, each move in coordinate and Chinese
/// notation; the ply of the first illegal move is the error.
///
/// ```
/// use xiangqi::Position;
/// use xiangqi::notation::movetext;
///
/// let moves = ["h2e2".parse()?, "h9g7".parse()?, "h0g2".parse()?];
/// let text = movetext(&Position::startpos(), &moves).unwrap();
/// assert_eq!(text, "1. h2e2 炮二平五  h9g7 马8进7\n2. h0g2 马二进三\n");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn movetext(start: &Position, moves: &[Move]) -> Result<String, MovetextError> {
    let mut pos = start.clone();
    let mut text = String::new();
    let mut line = String::new();
    for (ply, &mv) in moves.iter().enumerate() {
        let chinese = Chinese::from_move(&pos, mv).map_err(|source| MovetextError { ply, source })?;
        match pos.turn() {
            Color::Red => {
                if !line.is_empty() {
                    text.push_str(line.trim_end());
                    text.push('\n');
                }
                line = format!("{}. {mv} {chinese}  ", pos.fullmoves());
            }
            Color::Black => {
                if line.is_empty() {
                    line = format!("{}. ...  ", pos.fullmoves());
                }
                let _ = write!(line, "{mv} {chinese}");
            }
        }
        pos.play(mv).map_err(|source| MovetextError { ply, source })?;
    }
    if !line.is_empty() {
        text.push_str(line.trim_end());
        text.push('\n');
    }
    Ok(text)
}
