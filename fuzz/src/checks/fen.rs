//! Arbitrary text as FEN: parsing never panics; what parses round-trips through its canonical
//! FEN; what validates has a consistent hash, a move generator that agrees with the naive
//! reference generator, moves that lead to valid positions, and a mirror image that behaves.

use xiangqi::{ParseFenError, Position, Setup};

// The reference generator of the rules crate's tests, compiled here wherever this check is.
#[path = "../../../crates/xiangqi/tests/common/naive.rs"]
mod naive;

use naive::{board_of, naive_king_attacked, naive_legal_moves};

/// The target's check of one input: panics where a property fails.
pub fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };

    let setup = match Setup::from_fen(text) {
        Ok(setup) => setup,
        Err(e) => {
            assert_eq!(Position::from_fen(text).unwrap_err(), ParseFenError::Fen(e));
            return;
        }
    };
    // Setup: canonical text is a fixed point.
    let fen = setup.to_string();
    let again = Setup::from_fen(&fen).expect("a setup's own FEN parses");
    assert_eq!(again, setup);
    assert_eq!(again.to_string(), fen);

    let pos = match Position::from_setup(&setup) {
        Ok(pos) => pos,
        Err(e) => {
            assert_eq!(Position::from_fen(text).unwrap_err(), ParseFenError::Position(e.clone()));
            assert_eq!(Position::from_fen(&fen).unwrap_err(), ParseFenError::Position(e));
            return;
        }
    };
    assert_eq!(Position::from_fen(text).as_ref(), Ok(&pos));

    // Position: FEN round trip and hashing.
    assert_eq!(pos.to_string(), fen);
    let back = Position::from_fen(&fen).expect("a position's own FEN validates");
    assert_eq!(back, pos);
    assert_eq!(back.hash(), pos.hash());
    assert!(pos.hash_is_consistent());
    assert_eq!(pos.to_setup(), setup);

    // Move generation.
    let moves = pos.legal_moves();
    let mut sorted = moves.to_vec();
    sorted.sort();
    assert_eq!(sorted, naive_legal_moves(&pos), "move generator disagrees with the reference at {fen}");
    assert_eq!(pos.count_legal_moves(), moves.len());
    assert_eq!(pos.has_legal_moves(), !moves.is_empty());
    assert_eq!(pos.is_check(), naive_king_attacked(&board_of(&pos), pos.turn()), "check status at {fen}");
    assert_eq!(pos.is_checkmate(), pos.is_check() && moves.is_empty());
    assert_eq!(pos.is_stalemate(), !pos.is_check() && moves.is_empty());
    for &mv in &moves {
        assert!(pos.is_legal(mv));
        let mut child = pos.clone();
        child.play_unchecked(mv);
        assert!(child.hash_is_consistent());
        let reparsed = Position::from_setup(&child.to_setup())
            .unwrap_or_else(|e| panic!("{mv} at {fen} leads to an invalid position: {e}"));
        assert_eq!(reparsed.hash(), child.hash());
        let _ = child.legal_moves();
    }

    // Mirror.
    let mirror = pos.mirror();
    assert_eq!(mirror.mirror(), pos);
    let mut mirrored: Vec<_> = moves.iter().map(|m| m.mirror()).collect();
    mirrored.sort();
    let mut of_mirror = mirror.legal_moves().to_vec();
    of_mirror.sort();
    assert_eq!(of_mirror, mirrored);
    assert_eq!(mirror.is_check(), pos.is_check());
}
