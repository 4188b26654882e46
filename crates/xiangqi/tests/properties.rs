//! Properties of the rules core, stated as specifications and checked on reachable positions.
//!
//! Most properties are checked with proptest: the strategy picks a seed, a game length and a
//! capture bias, and replays a seeded random game from the start position (see
//! `common::random_game`), so every position tested is one a real game can reach. Proptest shrinks
//! a failure to a small seed and a short game.
//!
//! Legal move generation is also compared with a deliberately naive reference generator written
//! here from the rules alone (piece by piece, square by square, no bitboards).

mod common;

use common::naive::{board_of, naive_king_attacked, naive_legal_moves};

use proptest::prelude::*;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use xiangqi::{
    Color, FenError, File, IllegalMoveError, Move, ParseFenError, Piece, PieceKind, Position, PositionError, Rank,
    START_FEN, Setup, Square,
};

// ---------------------------------------------------------------------------------------------
// Strategies and helpers
// ---------------------------------------------------------------------------------------------

/// A random game, described by what is needed to replay it.
#[derive(Clone, Debug)]
struct GameSpec {
    seed: u64,
    plies: usize,
    capture_bias: f64,
}

impl GameSpec {
    fn replay(&self) -> common::RandomGame {
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed);
        common::random_game(&mut rng, self.plies, self.capture_bias)
    }

    /// Every position of the game, the start included, with the move played from it.
    fn positions(&self) -> Vec<(Position, Option<Move>)> {
        self.replay().positions()
    }

    /// The last position of the game.
    fn final_position(&self) -> Position {
        self.positions().pop().unwrap().0
    }
}

/// Arbitrary games of up to `max_plies` plies. Captures are preferred with a random bias so that
/// middlegames and sparse endgames are both reached.
fn games(max_plies: usize) -> impl Strategy<Value = GameSpec> {
    (any::<u64>(), 0..=max_plies, 0.0..0.9f64).prop_map(|(seed, plies, capture_bias)| GameSpec {
        seed,
        plies,
        capture_bias,
    })
}

/// A reachable position with the game that reached it; its `Debug` (what proptest prints for a
/// failing case) is the FEN and the game, not the internal arrays.
#[derive(Clone)]
struct Reached {
    pos: Position,
    game: GameSpec,
}

impl std::fmt::Debug for Reached {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "\"{}\" (after {:?})", self.pos, self.game)
    }
}

/// Arbitrary reachable positions (the last position of an arbitrary game).
fn positions() -> impl Strategy<Value = Reached> {
    games(250).prop_map(|game| Reached { pos: game.final_position(), game })
}

fn sq(name: &str) -> Square {
    let b = name.as_bytes();
    Square::new(File::from_char(b[0] as char).unwrap(), Rank::new(b[1] - b'0').unwrap())
}

fn mv(text: &str) -> Move {
    text.parse().unwrap()
}

/// All 8100 from/to pairs, including the 90 null pairs `a0a0` ...
fn all_from_to_pairs() -> impl Iterator<Item = Move> {
    Square::all().flat_map(|from| Square::all().map(move |to| Move::new(from, to)))
}

fn sorted(mut moves: Vec<Move>) -> Vec<Move> {
    moves.sort();
    moves
}

fn legal_moves_sorted(pos: &Position) -> Vec<Move> {
    sorted(pos.legal_moves().to_vec())
}

fn position_error(fen: &str) -> PositionError {
    match Position::from_fen(fen) {
        Err(ParseFenError::Position(e)) => e,
        other => panic!("expected a PositionError for {fen:?}, got {other:?}"),
    }
}

fn fen_error(fen: &str) -> FenError {
    let err = Setup::from_fen(fen).expect_err(fen);
    // Position::from_fen reports the same syntax error.
    assert_eq!(Position::from_fen(fen).unwrap_err(), ParseFenError::Fen(err.clone()));
    err
}

fn red(kind: PieceKind) -> Piece {
    Piece::new(Color::Red, kind)
}

// ---------------------------------------------------------------------------------------------
// Hashing and copy-make
// ---------------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// The hash updated incrementally by `play_unchecked` always equals the hash computed from
    /// scratch, and the hash of the same position read back from its FEN.
    #[test]
    fn incremental_hash_equals_hash_from_scratch_and_from_fen(game in games(300)) {
        for (pos, _) in game.positions() {
            prop_assert!(pos.hash_is_consistent(), "inconsistent hash at {pos}");
            let reparsed = Position::from_fen(&pos.to_string()).unwrap();
            prop_assert_eq!(reparsed.hash(), pos.hash(), "hash differs after FEN round trip at {}", pos);
        }
    }

    /// Copy-make: playing any legal move on a clone leaves the original untouched, and the child
    /// differs from its parent (the side to move at least).
    #[test]
    fn playing_on_a_clone_leaves_the_original_unchanged(Reached { pos, .. } in positions()) {
        let snapshot = pos.clone();
        let fen = pos.to_string();
        for &m in &pos.legal_moves() {
            let mut child = pos.clone();
            child.play_unchecked(m);
            prop_assert!(child.hash_is_consistent());
            prop_assert_ne!(child.hash(), pos.hash(), "{} changed nothing in the hash", m);
            prop_assert_ne!(&child, &pos);
            prop_assert_eq!(&pos, &snapshot);
            prop_assert_eq!(pos.hash(), snapshot.hash());
            prop_assert_eq!(pos.to_string(), fen.clone());
        }
    }

    /// The counters are not hashed: the same pieces and side to move have the same hash whatever
    /// the clocks say; the side to move is hashed.
    #[test]
    fn hash_covers_pieces_and_side_but_not_counters(Reached { pos, .. } in positions(), clock in 0u32..200, moves in 1u32..500) {
        let mut setup = pos.to_setup();
        setup.halfmove_clock = clock;
        setup.fullmoves = moves;
        let same_pieces = Position::from_setup(&setup).unwrap();
        prop_assert_eq!(same_pieces.hash(), pos.hash());
        setup.turn = !setup.turn;
        // Flipping the side to move may make the position illegal (the mover in check).
        if let Ok(other_side) = Position::from_setup(&setup) {
            prop_assert_ne!(other_side.hash(), pos.hash());
        }
    }
}

/// Two move orders that reach the same position give the same hash, and equal positions.
#[test]
fn transpositions_have_equal_hashes() {
    let play_all = |moves: &[&str]| {
        let mut pos = Position::startpos();
        for m in moves {
            pos.play(mv(m)).unwrap();
        }
        pos
    };
    let a = play_all(&["h2e2", "h9g7", "b0c2", "b9c7", "h0g2"]);
    let b = play_all(&["b0c2", "b9c7", "h2e2", "h9g7", "h0g2"]);
    assert_eq!(a, b);
    assert_eq!(a.hash(), b.hash());
    assert!(a.hash_is_consistent());
}

// ---------------------------------------------------------------------------------------------
// FEN
// ---------------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, ..ProptestConfig::default() })]

    /// Position -> FEN -> Position is the identity, the FEN text is a fixed point, and the
    /// unchecked `Setup` reads and writes the same text.
    #[test]
    fn fen_round_trip(Reached { pos, .. } in positions()) {
        let fen = pos.to_string();
        let reparsed = Position::from_fen(&fen).unwrap();
        prop_assert_eq!(&reparsed, &pos);
        prop_assert_eq!(reparsed.to_string(), fen.clone());
        prop_assert_eq!(reparsed.turn(), pos.turn());
        prop_assert_eq!(reparsed.halfmove_clock(), pos.halfmove_clock());
        prop_assert_eq!(reparsed.fullmoves(), pos.fullmoves());
        let setup = Setup::from_fen(&fen).unwrap();
        prop_assert_eq!(&setup, &pos.to_setup());
        prop_assert_eq!(setup.to_string(), fen.clone());
        prop_assert_eq!(Position::from_setup(&setup).unwrap(), pos);
    }
}

#[test]
fn start_fen_round_trips() {
    let pos = Position::startpos();
    assert_eq!(pos.to_string(), START_FEN);
    assert_eq!(Position::from_fen(START_FEN).unwrap(), pos);
    assert_eq!(pos.turn(), Color::Red);
    assert_eq!((pos.halfmove_clock(), pos.fullmoves()), (0, 1));
}

#[test]
fn fen_counters_follow_the_game() {
    let mut pos = Position::startpos();
    pos.play(mv("h2e2")).unwrap(); // no capture, Red moved
    assert_eq!(pos.to_string(), "rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C2C4/9/RNBAKABNR b - - 1 1");
    pos.play(mv("b7b0")).unwrap(); // Black's cannon takes the horse: clock resets, move number +1
    assert_eq!(pos.to_string(), "rnbakabnr/9/7c1/p1p1p1p1p/9/9/P1P1P1P1P/1C2C4/9/RcBAKABNR w - - 0 2");
}

// ---------------------------------------------------------------------------------------------
// Mirroring
// ---------------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, ..ProptestConfig::default() })]

    /// Mirroring twice gives back the same position (and hash); a mirror moves each piece to the
    /// mirrored point and keeps the side to move and counters.
    #[test]
    fn mirror_is_an_involution(Reached { pos, .. } in positions()) {
        let m = pos.mirror();
        prop_assert!(m.hash_is_consistent());
        for s in Square::all() {
            prop_assert_eq!(m.piece_at(s.mirror()), pos.piece_at(s));
        }
        prop_assert_eq!(m.turn(), pos.turn());
        prop_assert_eq!(m.halfmove_clock(), pos.halfmove_clock());
        prop_assert_eq!(m.fullmoves(), pos.fullmoves());
        let back = m.mirror();
        prop_assert_eq!(back.hash(), pos.hash());
        prop_assert_eq!(back, pos);
    }

    /// The legal moves of the mirrored position are exactly the mirrored legal moves.
    #[test]
    fn mirror_commutes_with_move_generation(Reached { pos, .. } in positions()) {
        let m = pos.mirror();
        let mirrored_moves = sorted(pos.legal_moves().iter().map(|mv| mv.mirror()).collect());
        prop_assert_eq!(legal_moves_sorted(&m), mirrored_moves);
        prop_assert_eq!(m.count_legal_moves(), pos.count_legal_moves());
    }

    /// Check, the checking pieces, checkmate and stalemate are preserved by the mirror.
    #[test]
    fn mirror_preserves_check_status(Reached { pos, .. } in positions()) {
        let m = pos.mirror();
        prop_assert_eq!(m.is_check(), pos.is_check());
        prop_assert_eq!(m.checkers(), pos.checkers().mirror());
        prop_assert_eq!(m.is_checkmate(), pos.is_checkmate());
        prop_assert_eq!(m.is_stalemate(), pos.is_stalemate());
    }

    /// Playing a move and mirroring gives the same as mirroring and playing the mirrored move.
    #[test]
    fn mirror_commutes_with_play(Reached { pos, .. } in positions()) {
        let m = pos.mirror();
        for &mv in &pos.legal_moves() {
            let mut a = pos.clone();
            a.play_unchecked(mv);
            let mut b = m.clone();
            b.play_unchecked(mv.mirror());
            prop_assert_eq!(a.mirror(), b);
        }
    }
}

/// `Move::mirror` is an involution on all 8100 from/to pairs and mirrors both points.
#[test]
fn move_mirror_is_an_involution() {
    for m in all_from_to_pairs() {
        assert_eq!(m.mirror().mirror(), m);
        assert_eq!(m.mirror().from(), m.from().mirror());
        assert_eq!(m.mirror().to(), m.to().mirror());
        assert_eq!(m.mirror().from().rank(), m.from().rank());
    }
    assert_eq!(mv("h2e2").mirror(), mv("b2e2"));
}

/// The symmetric start position is its own mirror.
#[test]
fn start_position_is_its_own_mirror() {
    let pos = Position::startpos();
    assert_eq!(pos.mirror(), pos);
    assert_eq!(pos.mirror().hash(), pos.hash());
}

// ---------------------------------------------------------------------------------------------
// Move encodings
// ---------------------------------------------------------------------------------------------

/// Every from/to pair survives the u16 code and the coordinate text; codes off the board are
/// rejected.
#[test]
fn move_codes_and_coordinates_round_trip() {
    for m in all_from_to_pairs() {
        assert_eq!(Move::from_u16(m.to_u16()), Some(m));
        assert!(m.to_u16() < 1 << 14);
        let text = m.to_string();
        assert_eq!(text.len(), 4);
        assert_eq!(text.parse::<Move>().unwrap(), m);
        assert_eq!(text.to_ascii_uppercase().parse::<Move>().unwrap(), m);
        let iccs = format!("{}-{}", &text[..2], &text[2..]).to_ascii_uppercase();
        assert_eq!(iccs.parse::<Move>().unwrap(), m);
    }
    let valid = (0..=u16::MAX).filter_map(Move::from_u16).count();
    assert_eq!(valid, 8100);
    for bad in ["", "h2e", "h2e22", "j2e2", "h2e:", "h-2e2", "h2 e2", "h2—e2", "ｈ2e2"] {
        assert!(bad.parse::<Move>().is_err(), "{bad:?} should not parse");
    }
}

// ---------------------------------------------------------------------------------------------
// Legality
// ---------------------------------------------------------------------------------------------

proptest! {
    #![proptest_config(ProptestConfig { cases: 1024, ..ProptestConfig::default() })]

    /// `is_legal` holds for exactly the generated moves among all 8100 from/to pairs, and `play`
    /// accepts exactly those: an illegal move is rejected and leaves the position unchanged.
    #[test]
    fn is_legal_and_play_accept_exactly_the_generated_moves(Reached { pos, .. } in positions()) {
        let legal = legal_moves_sorted(&pos);
        let mut accepted = Vec::new();
        for m in all_from_to_pairs() {
            let generated = legal.binary_search(&m).is_ok();
            prop_assert_eq!(pos.is_legal(m), generated, "is_legal({}) disagrees with movegen at {}", m, pos);
            let mut copy = pos.clone();
            match copy.play(m) {
                Ok(()) => {
                    accepted.push(m);
                    let mut expected = pos.clone();
                    expected.play_unchecked(m);
                    prop_assert_eq!(&copy, &expected);
                    prop_assert_eq!(copy.hash(), expected.hash());
                }
                Err(e) => {
                    prop_assert_eq!(e, IllegalMoveError { mv: m });
                    prop_assert_eq!(&copy, &pos);
                    prop_assert_eq!(copy.hash(), pos.hash());
                }
            }
        }
        prop_assert_eq!(sorted(accepted), legal);
    }

    /// `count_legal_moves` and `has_legal_moves` agree with the move list; a position with no
    /// legal move is checkmate when in check and stalemate otherwise.
    #[test]
    fn move_counting_agrees_with_the_move_list(game in games(250)) {
        for (pos, _) in game.positions() {
            let n = pos.legal_moves().len();
            prop_assert_eq!(pos.count_legal_moves(), n);
            prop_assert_eq!(pos.has_legal_moves(), n > 0);
            prop_assert_eq!(pos.is_checkmate(), n == 0 && pos.is_check());
            prop_assert_eq!(pos.is_stalemate(), n == 0 && !pos.is_check());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 384, ..ProptestConfig::default() })]

    /// The generator agrees with a naive generator written from the rules at every position of a
    /// game, and every legal move leads to a position that passes validation (the mover is not
    /// left in check, the kings do not face each other).
    #[test]
    fn legal_moves_match_a_naive_reference_generator(game in games(250)) {
        for (pos, _) in game.positions() {
            let legal = legal_moves_sorted(&pos);
            prop_assert_eq!(&legal, &naive_legal_moves(&pos), "move lists differ at {}", pos);
            let mut deduped = legal.clone();
            deduped.dedup();
            prop_assert_eq!(deduped.len(), legal.len(), "duplicate moves at {}", pos);
            prop_assert_eq!(pos.is_check(), naive_king_attacked(&board_of(&pos), pos.turn()), "check at {}", pos);
            for &m in &legal {
                let mut child = pos.clone();
                child.play_unchecked(m);
                prop_assert!(Position::from_setup(&child.to_setup()).is_ok(), "{} leads to an invalid position", m);
            }
        }
    }
}

/// Legality on random games from the shared helper (many games, long and capture-heavy), so that
/// rare endgames with no legal move are met too.
#[test]
fn games_ending_without_moves_are_checkmate_or_stalemate() {
    let mut ended = 0;
    for game in common::random_games(2024, 400, 400) {
        let (last, _) = game.positions().pop().unwrap();
        if last.legal_moves().is_empty() {
            ended += 1;
            assert_eq!(last.count_legal_moves(), 0);
            assert!(!last.has_legal_moves());
            assert!(last.is_checkmate() ^ last.is_stalemate(), "{last}");
            assert!(naive_legal_moves(&last).is_empty(), "{last}");
        }
    }
    assert!(ended > 0, "no game ended by checkmate or stalemate; the test covers nothing");
}

#[test]
fn checkmate_has_no_legal_moves() {
    // Black king d9, Red rook d0 gives check along the d-file; e9 faces the red king.
    let pos = Position::from_fen("3k5/9/9/9/9/9/9/9/9/3RK4 b - - 0 1").unwrap();
    assert!(pos.is_check());
    assert_eq!(pos.count_legal_moves(), 0);
    assert!(pos.legal_moves().is_empty());
    assert!(!pos.has_legal_moves());
    assert!(pos.is_checkmate());
    assert!(!pos.is_stalemate());
    assert_eq!(pos.checkers().collect::<Vec<_>>(), vec![sq("d0")]);
}

#[test]
fn stalemate_has_no_legal_moves() {
    // Black king d9 not in check; d8 is covered by the rook on c8, e9 by the flying general.
    let pos = Position::from_fen("3k5/2R6/9/9/9/9/9/9/9/4K4 b - - 0 1").unwrap();
    assert!(!pos.is_check());
    assert_eq!(pos.count_legal_moves(), 0);
    assert!(!pos.has_legal_moves());
    assert!(pos.is_stalemate());
    assert!(!pos.is_checkmate());
}

#[test]
fn cannon_needs_exactly_one_screen_to_check() {
    // Red cannon e2, black king e9: no screen, no check; one screen, check; two, no check.
    // The Red king sits on d0 so that the kings never share a file.
    let no_screen = Position::from_fen("4k4/9/9/9/9/9/9/4C4/9/3K5 b").unwrap();
    assert!(!no_screen.is_check());
    let one_screen = Position::from_fen("4k4/9/9/9/4p4/9/9/4C4/9/3K5 b").unwrap();
    assert!(one_screen.is_check());
    let two_screens = Position::from_fen("4k4/9/4r4/9/4p4/9/9/4C4/9/3K5 b").unwrap();
    assert!(!two_screens.is_check());
    // With no screen, no black piece may step onto the e-file between the cannon and the king.
    let pos = Position::from_fen("4k4/9/9/9/9/2r6/9/4C4/9/3K5 b").unwrap();
    assert!(!pos.is_legal(mv("c4e4")));
    assert!(pos.is_legal(mv("c4d4")));
    assert!(pos.is_legal(mv("c4c3")));
    assert_eq!(legal_moves_sorted(&pos), naive_legal_moves(&pos));
}

// ---------------------------------------------------------------------------------------------
// FEN syntax errors (FenError)
// ---------------------------------------------------------------------------------------------

const KINGS: &str = "4k4/9/9/9/9/9/9/9/9/3K5";

#[test]
fn fen_error_empty() {
    assert_eq!(fen_error(""), FenError::Empty);
    assert_eq!(fen_error(" \t\n"), FenError::Empty);
}

#[test]
fn fen_error_wrong_rank_count() {
    assert_eq!(fen_error("4k4/9/9/9/9/9/9/9/3K5 w"), FenError::WrongRankCount(9));
    assert_eq!(fen_error("4k4/9/9/9/9/9/9/9/9/9/3K5 w"), FenError::WrongRankCount(11));
    assert_eq!(fen_error("4k4/9/9/9/9/9/9/9/9/3K5/ w"), FenError::WrongRankCount(11));
}

#[test]
fn fen_error_rank_too_long() {
    assert_eq!(fen_error("4k5/9/9/9/9/9/9/9/9/3K5 w"), FenError::WrongRankLength { rank: 9, points: 10 });
    assert_eq!(fen_error("4k4p/9/9/9/9/9/9/9/9/3K5 w"), FenError::WrongRankLength { rank: 9, points: 10 });
    assert_eq!(fen_error("4k4/9/99/9/9/9/9/9/9/3K5 w"), FenError::WrongRankLength { rank: 7, points: 18 });
}

#[test]
fn fen_error_rank_too_short() {
    assert_eq!(fen_error("4k4/9/9/9/9/9/9/9/9/3K4 w"), FenError::WrongRankLength { rank: 0, points: 8 });
    assert_eq!(fen_error("4k4/9/9/9//9/9/9/9/3K5 w"), FenError::WrongRankLength { rank: 5, points: 0 });
}

#[test]
fn fen_error_bad_board_char() {
    assert_eq!(fen_error("4k4/9/9/9/9/9/9/9/9/3K1x3 w"), FenError::BadBoardChar('x'));
    // 0 is not a run length.
    assert_eq!(fen_error("4k4/9/9/9/9/9/9/9/9/3K05 w"), FenError::BadBoardChar('0'));
    assert_eq!(fen_error("4k4/9/9/9/9/9/9/9/9/3K4帅 w"), FenError::BadBoardChar('帅'));
}

#[test]
fn fen_error_missing_side() {
    assert_eq!(fen_error(KINGS), FenError::MissingSide);
}

#[test]
fn fen_error_bad_side() {
    assert_eq!(fen_error(&format!("{KINGS} x")), FenError::BadSide("x".into()));
    assert_eq!(fen_error(&format!("{KINGS} red")), FenError::BadSide("red".into()));
}

#[test]
fn fen_error_bad_counters_and_trailing_text() {
    assert_eq!(fen_error(&format!("{KINGS} w - - x 1")), FenError::BadHalfmoveClock("x".into()));
    assert_eq!(fen_error(&format!("{KINGS} w - - -1 1")), FenError::BadHalfmoveClock("-1".into()));
    assert_eq!(fen_error(&format!("{KINGS} w - - 0 0")), FenError::BadFullmoves("0".into()));
    assert_eq!(fen_error(&format!("{KINGS} w - - 0 y")), FenError::BadFullmoves("y".into()));
    assert_eq!(fen_error(&format!("{KINGS} w - - 0 1 extra")), FenError::Trailing("extra".into()));
}

/// Counters at the top of their range must not make `play` panic (debug builds) or wrap to a
/// move number of 0 that the FEN reader then rejects (release builds); found by the `fen` fuzz
/// target. The counters saturate.
#[test]
fn counters_at_their_maximum_do_not_overflow() {
    for fen in [format!("{KINGS} w - - {} 1", u32::MAX), format!("{KINGS} b - - 0 {}", u32::MAX)] {
        let Ok(pos) = Position::from_fen(&fen) else { continue };
        for &m in &pos.legal_moves() {
            let mut child = pos.clone();
            child.play_unchecked(m);
            let text = child.to_string();
            assert!(Position::from_fen(&text).is_ok(), "{m} from {fen} gives {text}");
        }
    }
}

#[test]
fn fen_optional_fields_take_defaults() {
    for fen in [format!("{KINGS} w"), format!("{KINGS} w - -"), format!("{KINGS} w - - 0"), format!("{KINGS} w 0 1")] {
        let setup = Setup::from_fen(&fen).unwrap();
        assert_eq!(setup.to_string(), format!("{KINGS} w - - 0 1"), "{fen}");
    }
    let setup = Setup::from_fen(&format!("{KINGS} b - - 17 42")).unwrap();
    assert_eq!((setup.turn, setup.halfmove_clock, setup.fullmoves), (Color::Black, 17, 42));
}

// ---------------------------------------------------------------------------------------------
// Rule violations (PositionError)
// ---------------------------------------------------------------------------------------------

#[test]
fn position_error_missing_king() {
    assert_eq!(position_error("4k4/9/9/9/9/9/9/9/9/9 w"), PositionError::MissingKing(Color::Red));
    assert_eq!(position_error("9/9/9/9/9/9/9/9/9/4K4 w"), PositionError::MissingKing(Color::Black));
}

#[test]
fn position_error_two_red_kings() {
    assert_eq!(
        position_error("4k4/9/9/9/9/9/9/9/9/3KK4 w"),
        PositionError::TooMany { piece: red(PieceKind::King), count: 2 }
    );
}

#[test]
fn position_error_too_many_pieces() {
    assert_eq!(
        position_error("4k4/9/9/9/9/9/9/9/RRR6/3K5 w"),
        PositionError::TooMany { piece: red(PieceKind::Rook), count: 3 }
    );
    assert_eq!(
        position_error("4k4/9/9/p1p1p1p1p/p8/9/9/9/9/3K5 w"),
        PositionError::TooMany { piece: Piece::new(Color::Black, PieceKind::Pawn), count: 6 }
    );
}

#[test]
fn position_error_king_outside_palace() {
    assert_eq!(
        position_error("4k4/9/9/9/9/9/9/9/9/K8 w"),
        PositionError::KingOutsidePalace { color: Color::Red, square: sq("a0") }
    );
    assert_eq!(
        position_error("9/9/9/4k4/9/9/9/9/9/3K5 w"),
        PositionError::KingOutsidePalace { color: Color::Black, square: sq("e6") }
    );
}

#[test]
fn position_error_advisor_on_impossible_point() {
    assert_eq!(
        position_error("4k4/9/9/9/9/9/9/9/9/3KA4 w"),
        PositionError::InvalidAdvisorSquare { color: Color::Red, square: sq("e0") }
    );
    assert_eq!(
        position_error("4k4/9/9/9/9/9/9/9/9/A2K5 w"),
        PositionError::InvalidAdvisorSquare { color: Color::Red, square: sq("a0") }
    );
}

#[test]
fn position_error_elephant_on_impossible_point() {
    assert_eq!(
        position_error("4k4/9/9/9/9/9/9/9/9/3KB4 w"),
        PositionError::InvalidElephantSquare { color: Color::Red, square: sq("e0") }
    );
    // A black elephant across the river (c4 is on Red's side).
    assert_eq!(
        position_error("4k4/9/9/9/9/2b6/9/9/9/3K5 w"),
        PositionError::InvalidElephantSquare { color: Color::Black, square: sq("c4") }
    );
}

#[test]
fn position_error_pawn_behind_its_start_rank() {
    assert_eq!(
        position_error("4k4/9/9/9/9/9/9/P8/9/3K5 w"),
        PositionError::InvalidPawnSquare { color: Color::Red, square: sq("a2") }
    );
    assert_eq!(
        position_error("4k4/9/p8/9/9/9/9/9/9/3K5 w"),
        PositionError::InvalidPawnSquare { color: Color::Black, square: sq("a7") }
    );
}

#[test]
fn position_error_uncrossed_pawn_off_its_file() {
    assert_eq!(
        position_error("4k4/9/9/9/9/9/1P7/9/9/3K5 w"),
        PositionError::InvalidPawnSquare { color: Color::Red, square: sq("b3") }
    );
    assert_eq!(
        position_error("4k4/9/9/9/1p7/9/9/9/9/3K5 w"),
        PositionError::InvalidPawnSquare { color: Color::Black, square: sq("b5") }
    );
    // Across the river any file is fine.
    assert!(Position::from_fen("4k4/9/9/9/1P7/9/9/9/9/3K5 w").is_ok());
}

#[test]
fn position_error_kings_facing() {
    assert_eq!(position_error("4k4/9/9/9/9/9/9/9/9/4K4 w"), PositionError::KingsFacing);
    // A piece between them is enough.
    assert!(Position::from_fen("4k4/9/9/9/4p4/9/9/9/9/4K4 w").is_ok());
}

#[test]
fn position_error_side_not_to_move_in_check() {
    // Red to move while the Red rook on e1 already checks the black king.
    assert_eq!(position_error("4k4/9/9/9/9/9/9/9/4R4/3K5 w"), PositionError::OpponentInCheck(Color::Black));
    // With Black to move it is an ordinary check.
    assert!(Position::from_fen("4k4/9/9/9/9/9/9/9/4R4/3K5 b").unwrap().is_check());
}

// ---------------------------------------------------------------------------------------------
// Accepted dialect variants
// ---------------------------------------------------------------------------------------------

#[test]
fn fen_accepts_h_and_e_letters_and_r_side() {
    let variant = "rheakaehr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RHEAKAEHR r - - 0 1";
    let pos = Position::from_fen(variant).unwrap();
    assert_eq!(pos, Position::startpos());
    assert_eq!(pos.to_string(), START_FEN);
    assert_eq!(pos.piece_at(sq("b0")), Some(red(PieceKind::Horse)));
    assert_eq!(pos.piece_at(sq("c9")), Some(Piece::new(Color::Black, PieceKind::Elephant)));
    for side in ["w", "W", "r", "R"] {
        assert_eq!(Setup::from_fen(&format!("{KINGS} {side}")).unwrap().turn, Color::Red, "{side}");
    }
    for side in ["b", "B"] {
        assert_eq!(Setup::from_fen(&format!("{KINGS} {side}")).unwrap().turn, Color::Black, "{side}");
    }
}
