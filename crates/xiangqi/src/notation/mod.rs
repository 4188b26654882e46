//! Move notations: coordinates (`h2e2`), WXF (`C2.5`) and Chinese (`炮二平五`).
//!
//! Each notation parses without a position into an unresolved value and resolves against one.
//! WXF and Chinese moves are printed from a position with `from_move`; both describe the move
//! from the mover's side (files 1-9 from its right, forward towards the opponent), and both
//! resolve to the one legal move they denote or fail with a [`ResolveError`].

mod chinese;
mod coord;
mod descriptor;
mod movetext;
mod wxf;

pub use chinese::{Chinese, ParseChineseError};
pub use coord::ParseMoveError;
pub use descriptor::ResolveError;
pub use movetext::{MoveNotation, MovetextError, ParseNotationError, pgn};
pub use wxf::{ParseWxfError, Wxf};
