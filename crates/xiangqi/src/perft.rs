//! Perft: counting the leaves of the legal move tree, the standard test of a move generator.

use crate::position::Position;
use crate::types::Move;

/// The number of leaf positions `depth` plies below `pos`. Moves at the last ply are counted,
/// not played (bulk counting), as other engines' perft does.
///
/// ```
/// use xiangqi::{perft, Position};
/// assert_eq!(perft(&Position::startpos(), 2), 1920);
/// ```
pub fn perft(pos: &Position, depth: u32) -> u64 {
    match depth {
        0 => 1,
        1 => pos.count_legal_moves() as u64,
        _ => pos
            .legal_moves()
            .iter()
            .map(|&mv| {
                let mut child = pos.clone();
                child.play_unchecked(mv);
                perft(&child, depth - 1)
            })
            .sum(),
    }
}

/// Perft split by root move: each legal move with the leaf count below it.
pub fn divide(pos: &Position, depth: u32) -> Vec<(Move, u64)> {
    pos.legal_moves()
        .iter()
        .map(|&mv| {
            let mut child = pos.clone();
            child.play_unchecked(mv);
            (mv, perft(&child, depth.saturating_sub(1)))
        })
        .collect()
}
