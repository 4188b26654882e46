//! Move notations: coordinates (`h2e2`), WXF (`C2.5`) and Chinese (`炮二平五`), and games as PGN.
//!
//! Each notation parses without a position into an unresolved value and resolves against one.
//! WXF and Chinese moves are printed from a position with `from_move`; both describe the move
//! from the mover's side (files 1-9 from its right, forward towards the opponent), and both
//! resolve to the one legal move they denote or fail with a [`ResolveError`]. PGN is written
//! with [`pgn`] and read with [`PgnReader`] the same way: games parse without a position, then
//! [`PgnGame::resolve`] plays their moves.

mod chinese;
mod coord;
mod descriptor;
mod movetext;
mod pgn_reader;
mod wxf;

pub use chinese::{Chinese, ParseChineseError};
pub use coord::ParseMoveError;
pub use descriptor::ResolveError;
pub use movetext::{MoveNotation, MovetextError, ParseNotationError, pgn};
pub use pgn_reader::{
    BadMoveText, MAX_GAME_BYTES, Notated, PgnError, PgnErrorKind, PgnGame, PgnMove, PgnReader, PgnResult, ResolvedGame,
    Unresolved,
};
pub use wxf::{ParseWxfError, Wxf};
