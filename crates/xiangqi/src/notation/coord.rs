//! Coordinate notation: file letter and rank digit of both points, `h2e2` (as UCI in Pikafish).

use std::fmt;
use std::str::FromStr;

use thiserror::Error;

use crate::types::{File, Move, Rank, Square};

/// Why a coordinate move could not be read.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("bad coordinate move {0:?} (expected four characters like h2e2: files a-i, ranks 0-9)")]
pub struct ParseMoveError(pub String);

fn parse_square(file: u8, rank: u8) -> Option<Square> {
    let file = File::from_char(file as char)?;
    let rank = Rank::new((rank as char).to_digit(10)? as u8)?;
    Some(Square::new(file, rank))
}

impl FromStr for Move {
    type Err = ParseMoveError;

    /// Parses `h2e2`. `H2-E2` (ICCS) is accepted too.
    fn from_str(s: &str) -> Result<Move, ParseMoveError> {
        let err = || ParseMoveError(s.to_string());
        let b = match s.as_bytes() {
            &[a, b, c, d] | &[a, b, b'-', c, d] => [a, b, c, d],
            _ => return Err(err()),
        };
        let from = parse_square(b[0], b[1]).ok_or_else(err)?;
        let to = parse_square(b[2], b[3]).ok_or_else(err)?;
        Ok(Move::new(from, to))
    }
}

impl fmt::Display for Move {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.from(), self.to())
    }
}
