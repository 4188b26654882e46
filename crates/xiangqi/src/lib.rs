//! Xiangqi (Chinese chess) rules for xqzero: positions, FEN, move notation, legal move
//! generation and perft.
//!
//! Text is parsed into unchecked values first ([`Setup`], [`Move`], notation) and then checked
//! against a position ([`Position::from_setup`], [`Position::play`]).
//!
//! ```
//! use xiangqi::{Position, perft};
//! let mut pos = Position::startpos();
//! pos.play("h2e2".parse()?)?;            // 炮二平五
//! assert_eq!(pos.turn(), xiangqi::Color::Black);
//! assert_eq!(perft(&pos, 1), 45); // the h7 cannon now reaches h1
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod attacks;
mod bitboard;
pub mod game;
mod movegen;
pub mod notation;
mod perft;
mod position;
mod setup;
mod types;
mod zobrist;

pub use bitboard::Bitboard;
pub use movegen::MoveList;
pub use perft::{divide, perft};
pub use position::{IllegalMoveError, ParseFenError, Position, PositionError};
pub use setup::{FenError, START_FEN, Setup};
pub use types::{Color, File, Move, Piece, PieceKind, Rank, Square};
