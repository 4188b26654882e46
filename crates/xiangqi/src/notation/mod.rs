//! Move notations: coordinates (`h2e2`), WXF (`C2.5`) and Chinese (`炮二平五`).
//!
//! Each notation parses without a position into an unresolved value and resolves against one.

mod coord;

pub use coord::ParseMoveError;
