//! The Chinese Xiangqi Association's 2011 repetition rules (棋例, articles 24-26), one concrete
//! position and cycle per ruling: the both-sides-forbidden rulings of 26.9, the worked examples
//! of the rules text (`shared/seeds/rules-2011-chinese-xiangqi-association.txt`, lines 239-259)
//! and the king and pawn rules of 26.1 and 26.2.
//!
//! Every cycle is four plies (a move of each side and both moves back) played until the start
//! position occurs the third time, when the game is ruled. Before that, each move's nature is
//! checked against what the rules (or the text's commentary) call it: `check` (将), `threat`
//! (杀), `idle` (闲) or `chase` (捉) with the chased squares, each optionally marked `rook`,
//! `unprotected` or `protected`.
//!
//! Most 26.9 cases share one of two "blocks" for the side whose conduct is forbidden but need
//! not vary (a perpetual chase of protected pieces):
//! - Black's horse a8/c7 with the rook a9 behind it: on c7 it attacks the red horse a6, on a8 the
//!   red horse c9, each guarded only by a red pawn (a5, c8); the horse takes, the pawn takes back
//!   and the rook takes the pawn, so each horse move wins material through an exchange (24:
//!   通过完整互吃交换后吃掉对方子且得子). The cannon b6 keeps the red horse a6 off c7.
//! - Black's cannon b6/d6 in front of the elephant c5: leaving b6 it opens the elephant's eye
//!   towards the red piece on a7, leaving d6 towards the one on e7, each guarded by a red pawn
//!   (a6, e6): an elephant for a horse or a cannon is a gain, so each cannon move uncovers a chase
//!   of a protected piece (24: a move that lets another piece capture, 造成其他子能吃子, chases).

mod common;

use common::rules::{check_nature, cycle, parse_move};
use common::{assert_draw, assert_win};
use xiangqi::game::{Reason, classify_move};
use xiangqi::{Color, Move, Position};

/// Black's chases of protected pieces through the elephant's eye (module doc), as natures.
const EYE_CHASES: [&str; 2] = ["chase a7 protected", "chase e7 protected"];

// ---------------------------------------------------------------------------------------------
// 26.9: both sides forbidden.
// ---------------------------------------------------------------------------------------------

/// 26.9 (凡单方长杀...均须变着): Red's rook on i4/i3 always threatens Rf4/Rf3 mate (the black king
/// on f9 cannot step onto the open e-file); Black's horse a8/c7 perpetually chases protected
/// horses (module doc). Perpetual mate threat must vary, a chase of protected pieces need not:
/// Red loses.
#[test]
fn article_26_9_perpetual_mate_threat_against_chases_of_protected_pieces_loses() {
    let game = cycle(
        "r1N2k3/n1P6/9/Nc7/P8/8R/9/9/9/3AKA3 w - - 0 1",
        &["i4i3", "a8c7", "i3i4", "c7a8"],
        &["threat", "chase a6 protected", "threat", "chase c9 protected"],
    );
    assert_win(&game, Color::Black, Reason::PerpetualMateThreat, "26.9");
}

/// 26.9 (一将一杀 must vary): Red's rook goes b4-d4 with check (the red pawn e8 takes d8 and e9
/// from the black king) and back to b4, threatening Rb9 mate. Black answers the check by
/// interposing its cannon on d6, and both cannon moves uncover the elephant's chases of
/// protected pieces (module doc). Red loses.
#[test]
fn article_26_9_one_check_one_mate_threat_against_chases_of_protected_pieces_loses() {
    let game = cycle(
        "3k5/4P4/N3N4/Pc2P4/2b6/1R7/9/9/9/4K4 w - - 0 1",
        &["b4d4", "b6d6", "d4b4", "d6b6"],
        &["check", EYE_CHASES[0], "threat", EYE_CHASES[1]],
    );
    assert_win(&game, Color::Black, Reason::MixedForbidden, "26.9");
}

/// 26.9 (长捉车 must vary): Red's cannon g1/h1 hits the black rooks on g9 and h9 (which guard
/// each other) over the pawns g5/h5; Black's cannon uncovers chases of protected pieces. The
/// rook chaser loses.
#[test]
fn article_26_9_perpetual_chase_of_rooks_against_chases_of_protected_pieces_loses() {
    let game = cycle(
        "3k2rr1/4P4/N3N4/Pc2P4/2b3PP1/9/9/9/4A1C2/4K4 w - - 0 1",
        &["g1h1", "b6d6", "h1g1", "d6b6"],
        &["chase h9 rook protected", EYE_CHASES[0], "chase g9 rook protected", EYE_CHASES[1]],
    );
    assert_win(&game, Color::Black, Reason::PerpetualChase, "26.9");
}

/// 26.9 (长捉无根子 must vary): as above, but the cannon hits two unprotected black horses. The
/// chaser of unprotected pieces loses.
#[test]
fn article_26_9_perpetual_chase_of_unprotected_pieces_against_chases_of_protected_pieces_loses() {
    let game = cycle(
        "3k1ann1/4P4/N3N4/Pc2P4/2b3PP1/9/9/9/4A1C2/4K4 w - - 0 1",
        &["g1h1", "b6d6", "h1g1", "d6b6"],
        &["chase h9 unprotected", EYE_CHASES[0], "chase g9 unprotected", EYE_CHASES[1]],
    );
    assert_win(&game, Color::Black, Reason::PerpetualChase, "26.9");
}

/// 26.9 (一将一捉车 must vary): Red's rook checks from d4 (Black interposes the cannon on d6) and
/// goes back to b4, where it attacks the unprotected black rook on b8 up the b-file that the
/// cannon left; the cannon's return blocks the file again. Red loses.
#[test]
fn article_26_9_one_check_one_rook_chase_loses() {
    let game = cycle(
        "3k5/1r7/N3C4/Pc2P4/2b6/1R7/9/9/9/4K4 w - - 0 1",
        &["b4d4", "b6d6", "d4b4", "d6b6"],
        &["check", EYE_CHASES[0], "chase b8 rook", EYE_CHASES[1]],
    );
    assert_win(&game, Color::Black, Reason::MixedForbidden, "26.9");
}

/// 26.9 (一将一捉无根子 must vary): as above, but back on b4 the rook attacks the unprotected
/// black cannon on b3.
#[test]
fn article_26_9_one_check_one_chase_of_an_unprotected_piece_loses() {
    let game = cycle(
        "3k5/9/N3C4/Pc2P4/2b6/1R7/1c7/9/9/4K4 w - - 0 1",
        &["b4d4", "b6d6", "d4b4", "d6b6"],
        &["check", EYE_CHASES[0], "chase b3 unprotected", EYE_CHASES[1]],
    );
    assert_win(&game, Color::Black, Reason::MixedForbidden, "26.9");
}

/// 26.9 (一捉车一捉无根子 must vary): Red's cannon hits the unprotected horse on h7 from h1 and
/// the rook on g9 (guarded by the horse f7) from g1. Red loses.
#[test]
fn article_26_9_one_rook_chase_one_chase_of_an_unprotected_piece_loses() {
    let game = cycle(
        "3k2r2/4P4/N3Nn1n1/Pc2P4/2b3PP1/9/9/9/4A1C2/4K4 w - - 0 1",
        &["g1h1", "b6d6", "h1g1", "d6b6"],
        &["chase h7 unprotected", EYE_CHASES[0], "chase g9 rook protected", EYE_CHASES[1]],
    );
    assert_win(&game, Color::Black, Reason::PerpetualChase, "26.9");
}

/// 26.9 (除上述情况外，双方不变作和): both sides must vary, so neither loses. Red perpetually
/// chases the rooks g9/h9; Black's elephant now chases the red horses a7/e7 with no pawn to
/// guard them, a perpetual chase of unprotected pieces.
#[test]
fn article_26_9_both_sides_must_vary_is_a_draw() {
    let game = cycle(
        "3k2rr1/4P4/N3N4/1c7/2b3PP1/9/9/9/4A1C2/4K4 w - - 0 1",
        &["g1h1", "b6d6", "h1g1", "d6b6"],
        &["chase h9 rook", "chase a7 unprotected", "chase g9 rook", "chase e7 unprotected"],
    );
    assert_draw(&game, Reason::AllowedRepetition, "26.9");
}

/// 26.9 (除上述情况外，双方不变作和): neither side must vary. Red's horse i1/g2, with the rook i0
/// behind it, chases the black horses i3 and g0 that only pawns guard (Black's horse-and-rook
/// block of the module doc, turned round); Black's cannon uncovers the elephant's chases of the
/// red horse a7 and cannon e7. Both chase protected pieces only: a draw.
#[test]
fn article_26_9_neither_side_must_vary_is_a_draw() {
    let game = cycle(
        "3k5/9/N3C4/Pc2P4/2b6/8p/7Cn/9/6p1N/4K1n1R w - - 0 1",
        &["i1g2", "b6d6", "g2i1", "d6b6"],
        &["chase i3 protected", EYE_CHASES[0], "chase g0 protected", EYE_CHASES[1]],
    );
    assert_draw(&game, Reason::AllowedRepetition, "26.9");
}

/// 26.9 (凡单方长捉车，对方联合捉车，前者变着): Red's cannon g2/i2 alone hits the black rooks on g9
/// and i9 over the black elephant g5 and pawn i5 (a chase by one piece: the screens are
/// Black's). Black's cannon b6/d6 hits the red rooks on b1 and d1 only over its own pawns b4 and
/// d4: neither the cannon nor the pawn could take without the other, a joint chase (联合捉子,
/// 24). The single rook chaser must vary: Black wins.
#[test]
fn article_26_9_perpetual_rook_chase_against_a_joint_rook_chase_must_vary() {
    let game = cycle(
        "3akar1r/9/4b4/1c2p4/6b1p/1ppp5/9/6C2/1R1R5/3AKA3 w - - 0 1",
        &["g2i2", "b6d6", "i2g2", "d6b6"],
        &["chase i9 rook", "chase d1 rook", "chase g9 rook", "chase b1 rook"],
    );
    assert_win(&game, Color::Black, Reason::PerpetualChase, "26.9");
}

/// 26.9 (凡单方长捉无根子，对方联合捉无根子，前者变着): as above with unprotected horses instead of
/// rooks on both sides: Red's cannon alone hits the black horses g8/i8, Black's cannon hits the
/// red horses b1/d1 only over its own pawns. The single chaser must vary: Black wins.
#[test]
fn article_26_9_perpetual_chase_of_unprotected_pieces_against_a_joint_chase_must_vary() {
    let game = cycle(
        "3aka3/6n1n/4b4/1c2p4/6b1p/1ppp5/9/6C2/1N1N5/3AKA3 w - - 0 1",
        &["g2i2", "b6d6", "i2g2", "d6b6"],
        &["chase i8 unprotected", "chase d1 unprotected", "chase g8 unprotected", "chase b1 unprotected"],
    );
    assert_win(&game, Color::Black, Reason::PerpetualChase, "26.9");
}

/// 24 and 26.9: a piece won through a check fork is chased, and with no protector it is an
/// unprotected piece (无根子), whose perpetual chase must vary. The red horse goes to b6 to fork
/// the king e9 and the lone cannon a7 with Nc8+.
#[test]
fn article_24_a_piece_won_through_a_check_fork_with_no_protector_is_unprotected() {
    let pos = Position::from_fen("4k4/9/c8/9/3N5/9/9/9/9/3K5 w - - 0 1").unwrap();
    let mv = parse_move(&pos, "d5b6");
    check_nature(&pos, mv, &classify_move(&pos, mv), "chase a7 unprotected");
}

// ---------------------------------------------------------------------------------------------
// The worked examples of the 2011 text (lines 239-259), on reconstructed positions.
// ---------------------------------------------------------------------------------------------

/// Figure 2 (line 239): 1.马二退一(捉) 车9平8(兑) 2.马一进二(捉) 车8平9(捉); Red (two chases)
/// must vary, Black (a chase and an exchange offer) need not. Reconstruction: the horse's
/// retreat h6-i4 screens the red cannon i2 against the black rook i9 (退马打车); the rook
/// escapes to h9 offering the rook exchange on the h-file that the horse opened (the black horse
/// g7 and the red horse g2 guard the rooks: 兑, idle); the horse's return to h6 threatens the
/// 卧槽 check Ng8+, which blocks the guarding horse's leg so that the rook h0 wins the rook h9
/// (the text's sacrifice of the horse is left out); the rook's return to i9 hits the unguarded
/// cannon i2. Red loses (25.3).
#[test]
fn figure_2_two_chases_against_a_chase_and_an_exchange_offer_must_vary() {
    let game = cycle(
        "4k3r/9/6n2/7N1/9/9/9/6N1C/9/3K3R1 w - - 0 1",
        &["马二退一", "车9平8", "马一进二", "车8平9"],
        &["chase i9 rook unprotected", "idle", "chase h9 rook", "chase i2 unprotected"],
    );
    assert_win(&game, Color::Black, Reason::PerpetualChase, "25.3");
}

/// Figure 3 (line 246): 1.相五退三(捉) 车8平7(捉) 2.相三进五(捉) 车7平8(捉); Red perpetually
/// chases unprotected pieces, Black perpetually chases rooks: both must vary, a draw (26.9).
/// Reconstruction: the red horse a1 attacks the black horses c0 and c2. On g0 the elephant cuts
/// the black rook i0's guard of c0 along the back rank, on e2 the rook g2's guard of c2 along
/// rank 2 (断根捉马; two horses, since with one the elephant's two squares cannot both leave it
/// without a guard while the rook shuttles h2/g2). The black rook on g2 attacks the red rook g5
/// (and the elephant g0), on h2 the rook h6. The text has 车7平8 win a rook through checks; here
/// it attacks it directly.
#[test]
fn figure_3_chases_of_unprotected_horses_against_chases_of_rooks_are_a_draw() {
    let game = cycle(
        "3aka3/9/9/7R1/6R2/9/9/2n1B2r1/N2KA4/2n5r w - - 0 1",
        &["相五退三", "车8平7", "相三进五", "车7平8"],
        &["chase c0 unprotected", "chase g5 rook", "chase c2 unprotected", "chase h6 rook"],
    );
    assert_draw(&game, Reason::AllowedRepetition, "26.9");
}

/// Figure 4 (line 249): 1.车七退五(闲) 将5退1(闲) 2.车七进五(将) 将5进1(闲); one check and one
/// idle move against two idle moves: a draw (25.2). Reconstruction: the red rook on c9 already
/// attacks the bottom advisor f9 past the king on e8; it drops to c4, the king steps back to e9
/// and the rook checks from c9, the king steps up again: retreating and returning changes
/// nothing about taking the advisor, so neither rook move chases.
#[test]
fn figure_4_one_check_one_idle_against_idle_moves_is_a_draw() {
    let game = cycle(
        "2R2a3/4k4/9/9/9/9/9/9/9/3K5 w - - 0 1",
        &["车七退五", "将5退1", "车七进五", "将5进1"],
        &["idle", "idle", "check", "idle"],
    );
    assert_draw(&game, Reason::AllowedRepetition, "25.2");
}

/// Figure 5 (line 255): 1.马四退六(捉) 象9进7(闲) 2.马六进四(捉) 象7退9(闲); Red chases
/// perpetually and must vary (25.3). Reconstruction: on d3 the horse attacks the unguarded
/// elephant c5 (退马捉象); on f4 it joins the cannon c2 (over the elephant e2) against the black
/// horse g2 that only the crossed pawn g3 guards: cannon takes horse, pawn takes cannon, horse
/// takes pawn, one pawn up (以炮换马多得一卒; an uncrossed pawn would be worth nothing, 26.8).
#[test]
fn figure_5_chases_against_idle_elephant_moves_must_vary() {
    let game = cycle(
        "3aka3/9/8b/9/2b6/5N3/6p2/2C1B1n2/9/4K4 w - - 0 1",
        &["马四退六", "象9进7", "马六进四", "象7退9"],
        &["chase c5 unprotected", "idle", "chase g2 protected", "idle"],
    );
    assert_win(&game, Color::Black, Reason::PerpetualChase, "25.3");
}

// ---------------------------------------------------------------------------------------------
// 26.1 and 26.2: the king and the pawns.
// ---------------------------------------------------------------------------------------------

/// 26.1 (帅(将)、兵(卒)本身允许长捉): the red king steps e0-e1-e0, attacking the unprotected
/// black cannon d1 from e1 and the unprotected cannon f0 from e0, while the black king shuttles
/// behind its pawn e6: both sides idle, a draw.
#[test]
fn article_26_1_perpetual_chase_by_the_king_is_allowed() {
    let fen = "4k4/9/9/4p4/9/9/9/9/3c5/4Kc3 w - - 0 1";
    let game = cycle(fen, &moves_king(), &["idle", "idle", "idle", "idle"]);
    assert_draw(&game, Reason::AllowedRepetition, "25.2");
    // The king does attack them: after its step and Black's reply it can take a cannon that
    // nothing guards.
    for (prefix, capture) in [(&moves_king()[..2], "e1d1"), (&moves_king()[..], "e0f0")] {
        let mut pos = Position::from_fen(fen).unwrap();
        for mv in prefix {
            pos.play(mv.parse().unwrap()).unwrap();
        }
        let capture: Move = capture.parse().unwrap();
        assert!(pos.is_legal(capture), "{capture} in {pos}");
        pos.play(capture).unwrap();
        assert!(!pos.legal_moves().iter().any(|m| m.to() == capture.to()), "{capture} takes an unprotected cannon");
    }
}

fn moves_king() -> [&'static str; 4] {
    ["e0e1", "e9e8", "e1e0", "e8e9"]
}

/// 26.1: the crossed red pawn steps d6-e6-d6, attacking the unprotected black cannon e7 and
/// horse d7 in turn: allowed, a draw. A rook doing the same chases perpetually and loses (25.3).
#[test]
fn article_26_1_perpetual_chase_by_a_pawn_is_allowed() {
    let moves = ["d6e6", "f9f8", "e6d6", "f8f9"];
    let pawn = cycle("5k3/9/3nc4/3P5/9/9/9/9/9/3K5 w - - 0 1", &moves, &["idle", "idle", "idle", "idle"]);
    assert_draw(&pawn, Reason::AllowedRepetition, "25.2");
    let rook = cycle(
        "5k3/9/3nc4/3R5/9/9/9/9/9/3K5 w - - 0 1",
        &moves,
        &["chase e7 unprotected", "idle", "chase d7 unprotected", "idle"],
    );
    assert_win(&rook, Color::Black, Reason::PerpetualChase, "25.3");
}

/// 26.2 (走动帅(将)、兵(卒)后...其他子产生新的“捉”，按“捉”处理): the pawn steps d5-e5-d5, each
/// step uncovering a red rook (d1, e1) against an unprotected black horse (d7, e7): a perpetual
/// chase, which loses (25.3). Without the rooks the same pawn moves are idle and the cycle is
/// drawn.
#[test]
fn article_26_2_pawn_moves_that_uncover_rook_chases_are_a_perpetual_chase() {
    let moves = ["d5e5", "f9f8", "e5d5", "f8f9"];
    let uncovering = cycle(
        "5k3/9/3nn4/9/3P5/9/9/9/3RR4/4K4 w - - 0 1",
        &moves,
        &["chase d7 unprotected", "idle", "chase e7 unprotected", "idle"],
    );
    assert_win(&uncovering, Color::Black, Reason::PerpetualChase, "25.3");
    let bare = cycle("5k3/9/3nn4/9/3P5/9/9/9/9/4K4 w - - 0 1", &moves, &["idle", "idle", "idle", "idle"]);
    assert_draw(&bare, Reason::AllowedRepetition, "25.2");
}
