//! The Chinese Xiangqi Association's 2011 repetition rules (棋例, articles 23-26), one concrete
//! position and cycle per ruling: the both-sides-forbidden rulings of 26.9, the worked examples
//! of the rules text (its figures 2-5 and reference figures, after article 24),
//! the king and pawn rules of 26.1 and 26.2, the nine-round rule of 23.4, the defending side's
//! lone attacker of 26.4, the self-inflicted positions of 26.5 and the exchange offers of 26.10
//! and 26.11. Tables of single moves give each article's cases, those where it must not apply
//! among them.
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

use common::rules::{check_nature, cycle, parse_move, play_out};
use common::{assert_draw, assert_win};
use xiangqi::game::{Game, MoveNature, Outcome, Reason, Ruleset, Verdict, classify_move, classify_move_in_game};
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
    assert_draw(&game, Reason::MutualForbidden, "26.9");
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
    assert_draw(&game, Reason::MutualForbidden, "26.9");
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
    assert_draw(&game, Reason::MutualForbidden, "26.9");
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

// ---------------------------------------------------------------------------------------------
// 23.5: rounds to vary.
// ---------------------------------------------------------------------------------------------

/// Red's rook follows Black's horse a5/c6 along ranks 5 and 6, chasing it unprotected with every
/// move (25.3); Black's horse moves are idle. The start position occurs the third time at ply 8.
const ROOK_FOLLOWS: (&str, [&str; 4]) = ("5k3/4a4/9/9/n7R/9/9/9/9/3AKA3 b - - 0 1", ["a5c6", "i5i6", "c6a5", "i6i5"]);

/// The game after `plies` plies of `cycle` from `fen` with `vary` in place of the moves at the
/// given ply indices.
fn varied(ruleset: Ruleset, fen: &str, cycle: &[&'static str], plies: usize, vary: &[(usize, &'static str)]) -> Game {
    let mut moves: Vec<&str> = cycle.iter().cycle().take(plies).copied().collect();
    for &(ply, mv) in vary {
        moves[ply] = mv;
    }
    let game = play_out(ruleset, fen, &moves, plies);
    assert_eq!(game.len(), plies, "{:?}", game.outcome());
    game
}

/// 23.5 (单方"长将"立即判负。其他待判局面，均允许单方两个回合内变着): at the pending position (the
/// third occurrence) a perpetual check loses at once; any other ruling waits while the side it
/// names has two rounds to vary, and is given with that side's second move in the cycle (a draw:
/// after two rounds of both). A move out of the cycle by either side ends the wait; if the cycle
/// comes back, the rounds count afresh. The rulings of every cycle in this file come through
/// `common::rules::rule_pending`, which checks their timing too.
#[test]
fn article_23_5_the_side_that_must_vary_has_two_rounds_to() {
    let (fen, cycle) = ROOK_FOLLOWS;
    let ruleset = Ruleset::Chinese2011;
    // Red completed the third occurrence: its moves at plies 10 and 12 are its two rounds.
    for plies in 8..12 {
        let game = varied(ruleset, fen, &cycle, plies, &[]);
        assert_eq!(game.outcome(), Outcome::Ongoing, "ply {plies}");
        let pending = game.pending_ruling().unwrap_or_else(|| panic!("pending at ply {plies}"));
        assert_eq!(pending.winner(), Some(Color::Black));
    }
    assert_win(&varied(ruleset, fen, &cycle, 12, &[]), Color::Black, Reason::PerpetualChase, "25.3");

    // Must not apply: a move out of the cycle, by Black (a5c4 for a5c6, ply 9) or by Red in its
    // first or second round (plies 10 and 12), and the game goes on with nothing pending.
    for (what, ply, mv) in [("black", 8, "a5c4"), ("red's first round", 9, "i5i4"), ("red's second round", 11, "i6i7")]
    {
        let game = varied(ruleset, fen, &cycle, ply + 1, &[(ply, mv)]);
        assert_eq!((game.outcome(), game.pending_ruling()), (Outcome::Ongoing, None), "{what}");
    }

    // Red varies at ply 10 and comes back at ply 12: the start position, its fourth occurrence,
    // is pending afresh, ruled with Red's second move after it (ply 16), not at ply 12 or 14.
    let back = [(9, "i5i4"), (11, "i4i5")];
    for plies in 12..16 {
        let game = varied(ruleset, fen, &cycle, plies, &back);
        assert_eq!(game.outcome(), Outcome::Ongoing, "ply {plies}");
        assert!(game.pending_ruling().is_some(), "ply {plies}");
    }
    assert!(varied(ruleset, fen, &cycle, 16, &back).outcome().is_over());
}

/// 23.5's exceptions and the other books: a perpetual check loses at once (23.5.1); a draw waits
/// two rounds of both sides (23.5.2.1); the loser that did not complete the third occurrence
/// moves first and is ruled one ply sooner; the WXF and simple rules rule at once.
#[test]
fn article_23_5_rules_a_perpetual_check_at_once_and_a_draw_after_two_rounds_of_both() {
    // Red's rook checks from h9/h8 while the king steps d9/d8: lost at ply 9, the third occurrence.
    let checks = ["d9d8", "h9h8", "d8d9", "h8h9"];
    let fen = "3k3R1/9/9/9/9/9/9/9/9/4K4 b - - 0 1";
    assert_eq!(varied(Ruleset::Chinese2011, fen, &checks, 7, &[]).outcome(), Outcome::Ongoing);
    assert_win(&varied(Ruleset::Chinese2011, fen, &checks, 8, &[]), Color::Black, Reason::PerpetualCheck, "25.1");

    // Both sides idle from the start: pending from ply 8, a draw at ply 12.
    let idle = ["b0c2", "b9c7", "c2b0", "c7b9"];
    let game = varied(Ruleset::Chinese2011, xiangqi::START_FEN, &idle, 11, &[]);
    assert!(matches!(game.pending_ruling(), Some(Outcome::Draw { .. })));
    assert_draw(&varied(Ruleset::Chinese2011, xiangqi::START_FEN, &idle, 12, &[]), Reason::AllowedRepetition, "25.2");

    // The rook follows the horse from Red's move on: Black completes the third occurrence (ply
    // 8), Red, the loser, moves first after it and is ruled with its second move, at ply 11.
    let (fen, cycle) = ROOK_FOLLOWS;
    let mut from_red = Position::from_fen(fen).unwrap();
    from_red.play(parse_move(&from_red, cycle[0])).unwrap();
    let rotated = [cycle[1], cycle[2], cycle[3], cycle[0]];
    let red_first = from_red.to_string();
    assert_eq!(varied(Ruleset::Chinese2011, &red_first, &rotated, 10, &[]).outcome(), Outcome::Ongoing);
    assert_win(
        &varied(Ruleset::Chinese2011, &red_first, &rotated, 11, &[]),
        Color::Black,
        Reason::PerpetualChase,
        "25.3",
    );

    // WXF and the simple rules rule at the third occurrence.
    assert!(varied(Ruleset::Wxf, fen, &cycle, 8, &[]).outcome().is_over());
    assert_draw(&varied(Ruleset::Simple, fen, &cycle, 8, &[]), Reason::AllowedRepetition, "25.2");
}

// ---------------------------------------------------------------------------------------------
// 23.4: nine rounds of forbidden moves over three or more points.
// ---------------------------------------------------------------------------------------------

/// Red's rook tours a1, a3 and a5, attacking in turn the unprotected black horse g1 (or h1),
/// cannon g3 (h3) and horse g5 (h5) along the ranks: every move a chase, over three points.
const ROOK_TOUR: [&str; 3] = ["a1a3", "a3a5", "a5a1"];

/// The rook tour interleaved with Black's moves, Red first.
fn with_tour(black: &[&'static str]) -> Vec<&'static str> {
    black.iter().enumerate().flat_map(|(i, &b)| [ROOK_TOUR[i % 3], b]).collect()
}

/// The ruling 23.4 makes pending: Red, chasing over the rook's tour, must vary.
const TOUR_LOST: Outcome = Outcome::Win {
    winner: Color::Black,
    verdict: Verdict { reason: Reason::PerpetualChase, ruleset: Ruleset::Chinese2011, article: "23.4" },
};

/// 23.4 (如果一方在三个或三个以上点上，连续以犯禁着法…达九个回合，即使未形成三次重复的待判局面，经一方
/// 提出，可按待判局面的有关规定进行裁决) with 23.5 (其他待判局面，均允许单方两个回合内变着): Black's king
/// steps e9/e8 while the rook tours, so the start position comes back only after six rounds (the
/// tour takes three, the king two) and would occur the third time at ply 24. Red's ninth move
/// (ply 17; the game's first ply is one of the nine) completes nine rounds of chases over three
/// points: a pending position, ruled as one. Red has two rounds to vary and, not varying, loses
/// with its second move after it (ply 21), the position having occurred only twice.
#[test]
fn article_23_4_nine_rounds_of_chases_over_three_points_are_a_pending_position() {
    let fen = "4k4/9/9/9/7n1/9/7c1/9/R6n1/3K5 w - - 0 1";
    let moves = with_tour(&["e9e8", "e8e9"].repeat(3));
    let natures = ["chase h3 unprotected", "idle", "chase h5 unprotected", "idle", "chase h1 unprotected", "idle"];
    let pos = Position::from_fen(fen).unwrap();
    let mut after = pos.clone();
    for (text, expected) in moves.iter().zip(natures) {
        let mv = parse_move(&after, text);
        check_nature(&after, mv, &classify_move(&after, mv), expected);
        after.play(mv).unwrap();
    }
    let game = play_out(Ruleset::Chinese2011, fen, &moves, 16);
    assert_eq!((game.outcome(), game.pending_ruling()), (Outcome::Ongoing, None), "eight rounds are not nine");
    for plies in 17..21 {
        let game = play_out(Ruleset::Chinese2011, fen, &moves, plies);
        assert_eq!(game.outcome(), Outcome::Ongoing, "ply {plies}");
        assert_eq!(game.pending_ruling(), Some(TOUR_LOST), "ply {plies}");
    }
    let game = play_out(Ruleset::Chinese2011, fen, &moves, 21);
    assert_eq!(game.len(), 21);
    assert_eq!(game.repetitions(), 1, "the position occurs the second time, not the third");
    assert_eq!(game.outcome(), TOUR_LOST);

    // Red varies in its first round (a1a2 for a1a3, ply 19) or its second (a3a4 for a3a5, ply
    // 21): the wait ends, and nine new rounds are needed to come back.
    for (ply, mv) in [(18, "a1a2"), (20, "a3a4")] {
        let game = varied(Ruleset::Chinese2011, fen, &moves, ply + 1, &[(ply, mv)]);
        assert_eq!((game.outcome(), game.pending_ruling()), (Outcome::Ongoing, None), "{mv}");
    }
}

/// 23.4 with 23.2 (如首着为“吃子”应予扣除): the nine rounds count from the move after the last
/// capture. Black's king first takes the red pawn e8 (ply 1), then the tour and the king's
/// shuttle of the test above follow: Red's moves from ply 2 on are the nine rounds, pending at
/// ply 18 and ruled at ply 22.
#[test]
fn article_23_4_counts_the_rounds_from_the_move_after_a_capture() {
    let fen = "4k4/4P4/9/9/7n1/9/7c1/9/R6n1/3K5 b - - 0 1";
    let shuttle = ["e8e9", "e9e8"].repeat(3);
    let moves = [&["e9e8"][..], &with_tour(&shuttle), &with_tour(&shuttle)].concat();
    let game = play_out(Ruleset::Chinese2011, fen, &moves[..17], 17);
    assert_eq!((game.outcome(), game.pending_ruling()), (Outcome::Ongoing, None), "eight rounds since the capture");
    let game = play_out(Ruleset::Chinese2011, fen, &moves[..18], 18);
    assert_eq!(game.pending_ruling(), Some(TOUR_LOST));
    let game = play_out(Ruleset::Chinese2011, fen, &moves, moves.len());
    assert_eq!(game.len(), 22);
    assert_eq!(game.outcome(), TOUR_LOST);
}

/// The same tour while Black's pawn walks down the i-file and along the bottom rank: no position
/// ever comes back, yet nine rounds of chases over three points are pending at ply 17 and ruled
/// at ply 21. The same pawn walk against a rook that shuttles between two points is no 23.4 case.
#[test]
fn article_23_4_applies_without_any_repeated_position_but_not_over_two_points() {
    let fen = "4k4/9/9/8p/6n2/9/6c2/9/R5n2/3K5 w - - 0 1";
    let walk = ["i6i5", "i5i4", "i4i3", "i3i2", "i2i1", "i1i0", "i0h0", "h0g0", "g0f0", "e9e8"];
    let tour = [with_tour(&walk).as_slice(), &["a3a5"]].concat();
    let game = play_out(Ruleset::Chinese2011, fen, &tour, 20);
    assert!(matches!(game.pending_ruling(), Some(Outcome::Win { winner: Color::Black, .. })));
    let game = play_out(Ruleset::Chinese2011, fen, &tour, 21);
    assert_eq!(game.len(), 21);
    assert_win(&game, Color::Black, Reason::PerpetualChase, "23.4");

    let shuttle: Vec<&str> = walk.iter().enumerate().flat_map(|(i, &b)| [["a1a3", "a3a1"][i % 2], b]).collect();
    let game = play_out(Ruleset::Chinese2011, fen, &[shuttle.as_slice(), &["a1a3"]].concat(), 21);
    assert_eq!(game.len(), 21);
    assert_eq!((game.outcome(), game.pending_ruling()), (Outcome::Ongoing, None), "two points are no tour of three");
}

/// Without the black horse on h5 the rook's move to a5 attacks nothing: one idle move in the
/// nine rounds, so 23.4 does not apply and the game goes on to the third occurrence at ply 24,
/// a draw (two chases and an idle move are allowed, 25.2) given two rounds later (23.5), at ply
/// 28.
#[test]
fn article_23_4_does_not_apply_when_one_move_of_the_nine_rounds_is_idle() {
    let fen = "4k4/9/9/9/9/9/7c1/9/R6n1/3K5 w - - 0 1";
    let moves = with_tour(&["e9e8", "e8e9"].repeat(3));
    assert_eq!(play_out(Ruleset::Chinese2011, fen, &moves, 23).outcome(), Outcome::Ongoing);
    let game = play_out(Ruleset::Chinese2011, fen, &moves, 27);
    assert!(matches!(game.pending_ruling(), Some(Outcome::Draw { .. })), "{:?}", game.outcome());
    let game = play_out(Ruleset::Chinese2011, fen, &moves, 28);
    assert_eq!(game.len(), 28);
    assert_draw(&game, Reason::AllowedRepetition, "25.2");
}

/// 23.4 is a 2011 article: under the simple rules (as under 1999, `rules1999.rs`) the same
/// nine rounds wait for the third occurrence at ply 24.
#[test]
fn article_23_4_belongs_to_the_2011_rules_only() {
    let fen = "4k4/9/9/9/7n1/9/7c1/9/R6n1/3K5 w - - 0 1";
    let moves = with_tour(&["e9e8", "e8e9"].repeat(3));
    let game = play_out(Ruleset::Simple, fen, &moves, 24);
    assert_eq!(game.len(), 24);
    assert_draw(&game, Reason::AllowedRepetition, "25.2");
}

/// Both sides forbidden over the nine rounds: the rook tour against Black's rook i8/i6, which
/// chases the unprotected red horses b6 and b8 with every move. Both chase unprotected pieces,
/// so both must vary (26.9): pending from ply 17, and a draw after two rounds of both sides
/// (23.5.2.1), at ply 21.
#[test]
fn article_23_4_rules_both_sides_forbidden_by_26_9() {
    let fen = "4k4/1N6r/9/1N7/7n1/9/7c1/9/R6n1/3K5 w - - 0 1";
    let moves = with_tour(&["i8i6", "i6i8"].repeat(3));
    let game = play_out(Ruleset::Chinese2011, fen, &moves, 20);
    assert!(matches!(game.pending_ruling(), Some(Outcome::Draw { .. })), "{:?}", game.outcome());
    let game = play_out(Ruleset::Chinese2011, fen, &moves, 24);
    assert_eq!(game.len(), 21);
    assert_draw(&game, Reason::MutualForbidden, "23.4");
}

// ---------------------------------------------------------------------------------------------
// 26.4: a defending side's lone attacking piece.
// ---------------------------------------------------------------------------------------------

/// Natures of single moves by a red rook: (what, FEN, move, nature).
const LONE_ATTACKER: &[(&str, &str, &str, &str)] = &[
    (
        "the lone rook of the weaker side comes to a5 and attacks the unprotected elephant g5",
        "4k2nr/9/9/9/6b2/R8/9/9/9/3K5 w - - 0 1",
        "a4a5",
        "idle",
    ),
    ("the same for an unprotected advisor on f7", "4k2nr/9/5a3/9/9/R8/9/9/9/3K5 w - - 0 1", "a4a7", "idle"),
    (
        "a horse is no advisor or elephant: chased",
        "4k2nr/9/9/9/6n2/R8/9/9/9/3K5 w - - 0 1",
        "a4a5",
        "chase g5 unprotected",
    ),
    (
        "with a cannon beside the rook the side has two attacking pieces: chased",
        "4k2nr/9/9/9/6b2/R8/9/9/9/1C1K5 w - - 0 1",
        "a4a5",
        "chase g5 unprotected",
    ),
    (
        "with the rook ahead in material the side is no defending side: chased",
        "4k4/9/9/9/6b2/R8/9/9/9/3K5 w - - 0 1",
        "a4a5",
        "chase g5 unprotected",
    ),
    (
        "the king's step uncovers the rook (26.2; with a mate threat on the d-file): chased",
        "5k2r/9/3a5/9/9/9/9/9/3K5/3R5 w - - 0 1",
        "d1e1",
        "threat d7 unprotected",
    ),
];

/// 26.4 (守和方只有一个进攻子时，占据守和要点，附带产生的捉士象按“闲”处理), on single moves.
#[test]
fn article_26_4_chases_of_advisors_and_elephants_by_a_defending_lone_attacker_are_idle() {
    for &(what, fen, text, expected) in LONE_ATTACKER {
        eprintln!("{what}");
        let pos = Position::from_fen(fen).unwrap();
        let mv = parse_move(&pos, text);
        check_nature(&pos, mv, &classify_move(&pos, mv), expected);
    }
}

/// 26.4 in a ruling: Black's king shuttles e8/f8; Red's lone rook goes a5-a9, attacking the
/// unprotected elephant c9, and back, attacking the unprotected elephant g5. Red has less
/// material than Black (rook against rook and two elephants): its chases are idle, a draw. (The
/// king's step back to e8 threatens a mate with the rook on the d-file, the kings facing on the
/// e-file: allowed beside an idle move.) With horses for the elephants, or without Black's rook
/// (Red no longer the defending side), the rook chases perpetually and loses.
#[test]
fn article_26_4_a_defending_lone_rook_may_attack_elephants_perpetually() {
    let moves = ["a5a9", "e8f8", "a9a5", "f8e8"];
    let elephants = cycle("2b6/4k4/9/9/R5b2/9/9/8r/9/3K5 w - - 0 1", &moves, &["idle", "idle", "idle", "threat"]);
    assert_draw(&elephants, Reason::AllowedRepetition, "25.2");
    let horses = cycle(
        "2n6/4k4/9/9/R5n2/9/9/8r/9/3K5 w - - 0 1",
        &moves,
        &["chase c9 unprotected", "idle", "chase g5 unprotected", "threat"],
    );
    assert_win(&horses, Color::Black, Reason::PerpetualChase, "25.3");
    let stronger = cycle(
        "2b6/4k4/9/9/R5b2/9/9/9/9/3K5 w - - 0 1",
        &moves,
        &["chase c9 unprotected", "idle", "chase g5 unprotected", "idle"],
    );
    assert_win(&stronger, Color::Black, Reason::PerpetualChase, "25.3");
}

// ---------------------------------------------------------------------------------------------
// 26.5: self-inflicted (自毙).
// ---------------------------------------------------------------------------------------------

/// The 26.5 position: Red's rook on c3 keeps Black's rook c5 (guarded by the horse b7) off c0,
/// where it would mate (the red king e0 is boxed in by its cannon e1; nothing reaches d0). The
/// red horse d1 guards c3, the red horse d9 stands where Black's advisor on e8 attacks it.
const SELF_INFLICTED: &str = "3N1k3/4a4/1n7/9/2r6/9/2R6/9/3NC4/4K4 w - - 0 1";

/// 26.5 (一方形成“自毙”，应由己方负责，不得视为另一方造成): the rook leaves c3 to check from f3,
/// which lets Black's rook mate on c0; Black blocks with the advisor e8-f7. The mate threat after
/// the block is Red's own doing, so the block is idle, not a threat. The rook's return to c3
/// offers the rook exchange (each side recaptures: 兑, idle), the advisor's return attacks the
/// unprotected horse d9. Black (idle, chase) varies nothing it must: a draw. Read alone, the
/// block would be a mate threat and Black, with a threat and a chase, would lose (25.3).
#[test]
fn article_26_5_a_mate_threat_the_checker_brought_on_itself_is_not_the_answers() {
    let moves = ["c3f3", "e8f7", "f3c3", "f7e8"];
    let game = cycle(SELF_INFLICTED, &moves, &["check", "idle", "idle", "chase d9 unprotected"]);
    assert_draw(&game, Reason::AllowedRepetition, "25.2");
    let earlier = Position::from_fen(SELF_INFLICTED).unwrap();
    let mut before = earlier.clone();
    before.play(parse_move(&earlier, "c3f3")).unwrap();
    let block = parse_move(&before, "e8f7");
    assert_eq!(classify_move(&before, block).heaviest(), MoveNature::MateThreat, "read alone");
}

/// Red's rook h2 checks from e2; Black's horse c7 can block on e6, on rank 6 between the red rook
/// a6 and the red horse i6 that it guards against the black rook i9. The black horse on c7
/// attacks the red rook a6.
const ROOT_CUT: &str = "4ka2r/9/2n6/R7N/9/9/9/7R1/9/3K5 w - - 0 1";

/// Answers to a check, each judged knowing the check: (what, FEN, check, answer, nature).
const ANSWERS: &[(&str, &str, &str, &str, &str)] = &[
    ("the self-inflicted threat above", SELF_INFLICTED, "c3f3", "e8f7", "idle"),
    (
        "the rook checks from i3, where it blocked nothing: the mate threat was there before the \
         check and is the answer's",
        "3N1k3/4a4/1n7/9/2r6/9/8R/9/3NC4/4K4 w - - 0 1",
        "i3f3",
        "e8f7",
        "threat",
    ),
    (
        "Black's cannon c4 blocks the check on f4 and opens the c-file itself: a new mate threat \
         (若另一方应将着法产生新的杀法，仍应按“杀”处理)",
        "3N1k3/4a4/1n7/9/2r6/2c6/8R/9/3NC4/4K4 w - - 0 1",
        "i3f3",
        "c4f4",
        "threat",
    ),
    (
        "the rook a3, the red horse a6's only guard against the black rook i6, leaves its line to \
         check: the horse left unguarded is Red's doing, the block does not chase it (责由自负)",
        "5k3/4a4/9/N7r/9/9/R8/9/9/4K4 w - - 0 1",
        "a3f3",
        "e8f7",
        "idle",
    ),
    (
        "the advisor's block uncovers the black rook b8 against the red pawn h8, as it would have \
         before the check: a chase of the answer's own",
        "5k3/1r2a2P1/9/9/9/9/R8/9/9/4K4 w - - 0 1",
        "a3f3",
        "e8f7",
        "chase h8 unprotected",
    ),
    (
        "the black rook blocks on f4 next to the checking rook and attacks it: it takes part in \
         that chase, which counts though the rook stood elsewhere before the check",
        "5k3/4a4/9/9/9/8r/R8/9/9/4K4 w - - 0 1",
        "a3f3",
        "i4f4",
        "chase f3 rook unprotected",
    ),
    (
        "the black horse blocks the rook's check on e6 and so cuts the red rook a6's guard of the \
         horse i6 along rank 6, which the black rook i9 attacks: the answer's own new chase (26.3, \
         走动其他棋子应将后产生新的“捉”), whatever the check did not do",
        ROOT_CUT,
        "h2e2",
        "c7e6",
        "chase i6 unprotected",
    ),
    ("the advisor's block on e8 cuts nothing: idle", ROOT_CUT, "h2e2", "f9e8", "idle"),
    (
        "the red horse checks from g8 and, over the same leg f8, guards the cannon e7 that the black \
         rook a7 attacks; the black horse blocks the leg and cuts that guard: a chase, though the \
         cannon was unguarded before the check (the check brought the root, the answer cut it)",
        "4k4/9/r3C2n1/5N3/9/9/9/9/9/3K5 w - - 0 1",
        "f6g8",
        "h7f8",
        "chase e7 unprotected",
    ),
];

/// 26.5 on single answers to a check.
#[test]
fn article_26_5_answers_to_a_check_are_judged_against_the_board_before_it() {
    for &(what, fen, check, answer, expected) in ANSWERS {
        eprintln!("{what}");
        let earlier = Position::from_fen(fen).unwrap();
        let check = parse_move(&earlier, check);
        let mut before = earlier.clone();
        before.play(check).unwrap();
        assert!(before.is_check(), "{what}");
        let answer = parse_move(&before, answer);
        check_nature(&before, answer, &classify_move_in_game(Some((&earlier, check)), &before, answer), expected);
    }
}

/// 26.3 (走动其他棋子应将后产生新的“捉”或“杀”，判“捉”或“杀”) and 26.5 (无直接参与且是己方走子造成被捉状态，
/// 不予考虑) in a ruling: Red's rook checks from e2 and goes back to h2 (check, idle: allowed);
/// Black blocks with the horse on e6, cutting the red rook a6's guard of the horse i6, and goes
/// back to c7, attacking the rook a6. The block is a chase of Black's own making, so Black chases
/// with every move and must vary: the third occurrence comes with Black's move at ply 8, and
/// Black loses with its second move after it, at ply 12 (25.3). Read as idle, the block would leave Black
/// an idle move and a chase, allowed, and the cycle would be drawn (25.2).
#[test]
fn article_26_3_a_block_that_cuts_a_root_chases_in_a_ruling() {
    let game = cycle(
        ROOT_CUT,
        &["h2e2", "c7e6", "e2h2", "e6c7"],
        &["check", "chase i6 unprotected", "idle", "chase a6 rook unprotected"],
    );
    assert_eq!(game.len(), 12);
    assert_win(&game, Color::Red, Reason::PerpetualChase, "25.3");
}

// ---------------------------------------------------------------------------------------------
// 26.10 and 26.11: exchange offers.
// ---------------------------------------------------------------------------------------------

/// Single moves that offer an exchange: (what, FEN, move, nature).
const OFFERS: &[(&str, &str, &str, &str)] = &[
    // 26.10: the red horse e5-c6 (guarded by the pawn c5) offers itself to the black horse b8
    // (guarded by the rook b9), which alone guards the black rook a6 against the red rook a2.
    (
        "taking the horse lets the red rook take the black rook: the offer chases (26.10)",
        "1r2k4/1n7/9/r8/2P1N4/9/9/R8/9/3K5 w - - 0 1",
        "e5c6",
        "chase b8 protected",
    ),
    (
        "the same offer with the red horse unguarded: taking it still costs the rook",
        "1r2k4/1n7/9/r8/4N4/9/9/R8/9/3K5 w - - 0 1",
        "e5c6",
        "chase b8 protected",
    ),
    (
        "without the red rook taking costs nothing: an exchange, idle (兑)",
        "1r2k4/1n7/9/r8/2P1N4/9/9/9/9/3K5 w - - 0 1",
        "e5c6",
        "idle",
    ),
    (
        "with the black horse c7 guarding the rook a6 too, taking costs nothing: idle",
        "1r2k4/1n7/2n6/r8/2P1N4/9/9/R8/9/3K5 w - - 0 1",
        "e5c6",
        "idle",
    ),
    (
        "a black cannon on b7 blocks the horse's leg: it cannot take, no exchange is offered",
        "1r2k4/1n7/1c7/r8/2P1N4/9/9/R8/9/3K5 w - - 0 1",
        "e5c6",
        "idle",
    ),
    // 26.10, 立即被杀: the red horse c6-b8 (guarded by the pawn c8, which also blocks its way to
    // d9) offers itself to the black horse d9, which keeps the red rook a0 from mating on a9
    // (the pawn e7 takes e8 from the black king).
    (
        "taking the horse lets the rook mate on a9: the offer chases (26.10)",
        "3nk4/2P6/4P4/2N6/9/9/9/9/9/R2K5 w - - 0 1",
        "c6b8",
        "chase d9 protected",
    ),
    (
        "without the pawn e7 the king escapes to e8: an exchange, idle",
        "3nk4/2P6/9/2N6/9/9/9/9/9/R2K5 w - - 0 1",
        "c6b8",
        "idle",
    ),
    // 26.10, 如邀兑之子参与做杀: the red rook h0-h8 offers the exchange to the black rook a8 (each
    // guarded by a horse) and threatens Rh9 mate with the pawn e7.
    (
        "an offer whose rook also takes part in a mate threat: a mate threat (26.10, 26.6)",
        "4k4/r8/4P4/1n4N2/9/9/9/9/9/3K3R1 w - - 0 1",
        "h0h8",
        "threat",
    ),
    (
        "the same offer without the pawn threatens nothing: an exchange, idle",
        "4k4/r8/9/1n4N2/9/9/9/9/9/3K3R1 w - - 0 1",
        "h0h8",
        "idle",
    ),
    // 26.11: the red rook comes to a5 where, with the red horse e4, it contacts the black horse
    // c5, which attacks the horse e4 in turn; the elephants a7 and e7 guard c5.
    (
        "rook and horse against an unprotected horse: a chase (26.11)",
        "4k4/9/9/9/2n6/4N4/9/9/R8/3K5 w - - 0 1",
        "a1a5",
        "chase c5 unprotected",
    ),
    (
        "against a horse guarded by one elephant: the horse can accept, taking e4 (the pawn e3 \
         takes back), and the elephant is not lost: an exchange, idle (26.11), though by the plain \
         balance of 24 (the horse takes first, the elephant takes back, the rook takes the \
         elephant) Red would win an elephant",
        "4k4/9/4b4/9/2n6/4N4/4P4/9/R8/3K5 w - - 0 1",
        "a1a5",
        "idle",
    ),
    (
        "the same with the horse e4 unguarded: accepting wins it, the elephant is not lost: idle",
        "4k4/9/4b4/9/2n6/4N4/9/9/R8/3K5 w - - 0 1",
        "a1a5",
        "idle",
    ),
    (
        "against a horse guarded by the rook h5 along rank 5: once the horse has taken e4 the rook \
         a5 takes the unguarded rook h5, the root is lost: a chase (26.11)",
        "4k4/9/9/9/2n4r1/4N4/4P4/9/R8/3K5 w - - 0 1",
        "a1a5",
        "chase c5 protected",
    ),
    (
        "against a horse guarded by both elephants the guard survives the exchange: idle (兑)",
        "4k4/9/b3b4/9/2n6/4N4/9/9/R8/3K5 w - - 0 1",
        "a1a5",
        "idle",
    ),
    (
        "the red pawn c4 joins in (车方增加其他参与子力并产生新的捉): a chase",
        "4k4/9/b3b4/9/2n6/2P1N4/9/9/R8/3K5 w - - 0 1",
        "a1a5",
        "chase c5 protected",
    ),
    (
        "rook and cannon against a cannon guarded by both elephants: idle (兑)",
        "4k4/9/b3b4/9/2c6/9/2P6/9/R1C6/3K5 w - - 0 1",
        "a1a5",
        "idle",
    ),
    (
        "rook and cannon against a cannon guarded by one elephant: the cannon can take c1 over the \
         pawn, the elephant is not lost: idle (26.11)",
        "4k4/9/4b4/9/2c6/9/2P6/9/R1C6/3K5 w - - 0 1",
        "a1a5",
        "idle",
    ),
];

/// 26.10 (同兵种邀兑，被邀兑方兑子后立即被杀或子力价值受损，邀兑方按“捉”处理，反之，则按“兑”处理)
/// and 26.11 (车马同时与马(车炮同时与炮)产生接触，兑和捉的判断).
#[test]
fn articles_26_10_and_26_11_exchange_offers_chase_only_when_they_cannot_be_taken_up_without_loss() {
    for &(what, fen, text, expected) in OFFERS {
        eprintln!("{what}");
        let pos = Position::from_fen(fen).unwrap();
        let mv = parse_move(&pos, text);
        check_nature(&pos, mv, &classify_move(&pos, mv), expected);
    }
}

/// 26.10 and 26.11 in rulings, where the nature of the offer decides the game. Red's second move
/// in each cycle chases an unprotected piece (a cannon the horse or the rook newly attacks);
/// Black's king steps aside and back, idle. If the offer is a chase too, Red chases with every
/// move and loses (25.3); if it is an exchange, idle, Red's moves are allowed and the game is
/// drawn (25.2).
#[test]
fn articles_26_10_and_26_11_decide_rulings() {
    // 26.10: the horse c6-b8 offers itself to the black horse d9, which keeps the rook a0 from
    // mating on a9 (the pawn e7 takes e8 from the king): a chase. Without the pawn, an exchange.
    let horse = ["c6b8", "e9f9", "b8c6", "f9e9"];
    let offer = cycle(
        "3nk4/2P6/4P4/2N6/4c4/9/9/9/9/R2K5 w - - 0 1",
        &horse,
        &["chase d9 protected", "idle", "chase e5 unprotected", "idle"],
    );
    assert_win(&offer, Color::Black, Reason::PerpetualChase, "25.3");
    let exchange =
        cycle("3nk4/2P6/9/2N6/4c4/9/9/9/9/R2K5 w - - 0 1", &horse, &["idle", "idle", "chase e5 unprotected", "idle"]);
    assert_draw(&exchange, Reason::AllowedRepetition, "25.2");

    // 26.11: the rook a1-a5 contacts, with the horse e4, the black horse c5: unprotected, a chase;
    // guarded by both elephants, whose guard survives the exchange, an exchange. Back on a1 the
    // rook attacks the unprotected cannon g1.
    let rook = ["a1a5", "e9e8", "a5a1", "e8e9"];
    let contact = cycle(
        "4k4/9/9/9/2n6/4N4/9/9/R5c2/3K5 w - - 0 1",
        &rook,
        &["chase c5 unprotected", "idle", "chase g1 unprotected", "idle"],
    );
    assert_win(&contact, Color::Black, Reason::PerpetualChase, "25.3");
    let guarded =
        cycle("4k4/9/b3b4/9/2n6/4N4/9/9/R5c2/3K5 w - - 0 1", &rook, &["idle", "idle", "chase g1 unprotected", "idle"]);
    assert_draw(&guarded, Reason::AllowedRepetition, "25.2");
    // 26.11's accepted exchange: with one elephant the horse can accept and keep its root, an
    // exchange, where article 24's balance alone would see a chase and a lost game; with the rook
    // h5 for a root, accepting loses it, a chase.
    let accepted =
        cycle("4k4/9/4b4/9/2n6/4N4/4P4/9/R5c2/3K5 w - - 0 1", &rook, &["idle", "idle", "chase g1 unprotected", "idle"]);
    assert_draw(&accepted, Reason::AllowedRepetition, "25.2");
    let root_lost = cycle(
        "4k4/9/9/9/2n4r1/4N4/4P4/9/R5c2/3K5 w - - 0 1",
        &rook,
        &["chase c5 protected", "idle", "chase g1 unprotected", "idle"],
    );
    assert_win(&root_lost, Color::Black, Reason::PerpetualChase, "25.3");
}

/// King and pawn moves that attack: (what, FEN, move, nature). The crossed red pawn steps e5-f5
/// next to the black elephant g5, which the elephant e7 guards; the red rook g1 attacks it too.
const PAWN_PARTNERS: &[(&str, &str, &str, &str)] = &[
    (
        "pawn and rook win the guarded elephant only together (pawn takes, elephant takes back, \
         rook takes): a chase (26.2, 与其他子配合同时产生“捉”)",
        "3k5/9/4b4/9/4P1b2/9/9/9/6R2/4K4 w - - 0 1",
        "e5f5",
        "chase g5 protected",
    ),
    ("without the rook the pawn wins nothing: idle", "3k5/9/4b4/9/4P1b2/9/9/9/9/4K4 w - - 0 1", "e5f5", "idle"),
    (
        "an unguarded elephant the pawn wins alone: the pawn's own chase, allowed (26.1)",
        "3k5/9/9/9/4P1b2/9/9/9/9/4K4 w - - 0 1",
        "e5f5",
        "idle g5 pawn",
    ),
    (
        "a guarded horse is worth more than the pawn, which wins it alone, the rook \
         notwithstanding: allowed (26.1)",
        "3k5/9/4b4/9/4P1n2/9/9/9/6R2/4K4 w - - 0 1",
        "e5f5",
        "idle g5 pawn",
    ),
    (
        "the red king steps to e1 and becomes the screen of the cannon i1 against the unprotected \
         horse b1: the cannon's chase (26.2)",
        "3k5/9/9/9/9/9/9/9/1n6C/4K4 w - - 0 1",
        "e0e1",
        "chase b1 unprotected",
    ),
];

/// 26.1 and 26.2 on single king and pawn moves.
#[test]
fn article_26_2_a_pawn_chase_that_needs_another_piece_is_a_chase() {
    for &(what, fen, text, expected) in PAWN_PARTNERS {
        eprintln!("{what}");
        let pos = Position::from_fen(fen).unwrap();
        let mv = parse_move(&pos, text);
        check_nature(&pos, mv, &classify_move(&pos, mv), expected);
    }
}
