//! Forced mates by checks: an exhaustive search of a few moves in which every move of the
//! attacker but the last gives check. The defender's replies to a check are few, so such a
//! search is cheap, and it sees the mating attacks that a network trained on short, adjudicated
//! games cannot value and that few playouts spread over dozens of moves do not reach (shogi
//! engines pair their tree search with a check-only mate search for the same reason).
//!
//! It works on positions alone: a mate it finds could in principle run into a game's length cap
//! or repetition rules, which the caller accounts for.

use xiangqi::{Move, Position};

/// Whether the side to move in `pos` mates by force within `moves` of its own moves, every one
/// but the last a check (a move that leaves the opponent without a legal move mates, stalemate
/// included, since that loses too in xiangqi). `seen` holds the hashes of the positions the line
/// must not return to (those of the game since its last capture): a mate that goes through a
/// repetition proves nothing, since the repetition may be ruled against the side that checks.
/// It is left as it was given.
pub(crate) fn mates_within(pos: &Position, moves: u32, seen: &mut Vec<u64>) -> bool {
    moves > 0 && pos.legal_moves().iter().any(|&mv| mates_with(pos, mv, moves, seen))
}

/// Whether the legal move `mv` starts such a mate in `pos`.
pub(crate) fn mates_with(pos: &Position, mv: Move, moves: u32, seen: &mut Vec<u64>) -> bool {
    let mut after = pos.clone();
    after.play_unchecked(mv);
    !after.has_legal_moves() || mates_after_check(&after, moves, seen)
}

/// Whether the move into `after`, where the side to move still has a legal move, is a check
/// that leaves the mover a mate within `moves - 1` more moves against every reply.
pub(crate) fn mates_after_check(after: &Position, moves: u32, seen: &mut Vec<u64>) -> bool {
    if moves < 2 || !after.is_check() || seen.contains(&after.hash()) {
        return false;
    }
    seen.push(after.hash());
    let forced = after.legal_moves().iter().all(|&reply| {
        let mut next = after.clone();
        next.play_unchecked(reply);
        if seen.contains(&next.hash()) {
            return false;
        }
        seen.push(next.hash());
        let mates = mates_within(&next, moves - 1, seen);
        seen.pop();
        mates
    });
    seen.pop();
    forced
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pos(fen: &str) -> Position {
        fen.parse().expect("a legal FEN")
    }

    #[test]
    fn a_rook_mates_a_bare_king_in_one_and_only_on_the_open_files() {
        // a1d1 mates (the kings face on the e-file) and a1a8 stalemates, which loses too (checked
        // with pyffish); nothing else wins at once.
        let p = pos("3k5/9/9/9/9/9/9/9/R8/4K4 w");
        let mating: Vec<Move> =
            p.legal_moves().iter().copied().filter(|&mv| mates_with(&p, mv, 1, &mut Vec::new())).collect();
        assert_eq!(mating.len(), 2, "{mating:?}");
        assert!(mates_within(&p, 1, &mut Vec::new()));
        assert!(!mates_within(&p, 0, &mut Vec::new()));
    }

    #[test]
    fn a_mate_in_two_by_a_check_is_found_at_two_moves_and_not_at_one() {
        // R a5-d5+ forces mate next move (the mate-in-two test of the search, checked with
        // pyffish); no move mates at once.
        let p = pos("3a5/3k5/9/p8/R4R3/9/9/9/9/5K3 w");
        let first: Move = "a5d5".parse().unwrap();
        assert!(!mates_within(&p, 1, &mut Vec::new()));
        assert!(mates_within(&p, 2, &mut Vec::new()));
        assert!(mates_with(&p, first, 2, &mut Vec::new()) && !mates_with(&p, first, 1, &mut Vec::new()));
        // A quiet first move is not tried, whatever it leads to.
        assert!(!mates_with(&p, "f0e0".parse().unwrap(), 3, &mut Vec::new()));
        // Nor is a check whose position occurred before.
        let mut after = p.clone();
        after.play_unchecked(first);
        assert!(!mates_with(&p, first, 2, &mut vec![after.hash()]));
    }

    #[test]
    fn the_start_position_has_no_forced_mate() {
        assert!(!mates_within(&Position::startpos(), 3, &mut Vec::new()));
    }
}
