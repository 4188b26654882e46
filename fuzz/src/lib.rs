//! Shared helpers for the fuzz targets: the naive reference move generator of the integration
//! tests, compiled here as well so that the `fen` target checks move generation on any valid
//! position, not only on positions reached in games.

#[path = "../../crates/xiangqi/tests/common/naive.rs"]
mod naive;

pub use naive::{board_of, naive_king_attacked, naive_legal_moves};
