//! Game adjudication, each ruling built from a concrete position and move sequence. Article
//! numbers refer to the Chinese Xiangqi Association's 2011 competition rules.

mod common;

use common::{assert_draw, assert_win};
use xiangqi::Position;
use xiangqi::game::{Game, GameConfig, GameError, Outcome, Reason, Ruleset, axf_chased};
use xiangqi::{Color, Move};

fn play(fen: &str, ruleset: Ruleset, moves: &str) -> Game {
    play_under(fen, GameConfig { ruleset, ..GameConfig::default() }, moves)
}

/// Plays `moves`; if they end in a repetition whose ruling is pending (the side that must vary
/// has two rounds to, 23.5), plays the cycle of the last four plies on until the ruling comes,
/// which must be the pending one. The timing itself is tested in `rules2011.rs`.
fn play_under(fen: &str, config: GameConfig, moves: &str) -> Game {
    let mut game = Game::from_position(Position::from_fen(fen).unwrap(), config);
    for (i, mv) in moves.split_whitespace().enumerate() {
        game.push_str(mv).unwrap_or_else(|e| panic!("move {i} ({mv}): {e}"));
    }
    let pending = game.pending_ruling();
    while game.pending_ruling().is_some() {
        let mv = game.moves().nth(game.len() - 4).expect("a cycle of four plies");
        game.push(mv).unwrap_or_else(|e| panic!("{mv} continuing the cycle: {e}"));
    }
    if let Some(pending) = pending.filter(|_| !config.repeater_loses) {
        assert_eq!(game.outcome(), pending, "the pending ruling is given");
    }
    game
}

/// Red's rook checks from h9/h8 while the black king steps d9/d8.
const PERPETUAL_CHECK: (&str, &str) =
    ("3k5/9/7R1/9/9/9/9/9/9/4K4 w - - 0 1", "h7h9 d9d8 h9h8 d8d9 h8h9 d9d8 h9h8 d8d9 h8h9");

#[test]
fn article_25_1_one_sided_perpetual_check_loses() {
    let (fen, moves) = PERPETUAL_CHECK;
    for ruleset in [Ruleset::Chinese2011, Ruleset::Wxf, Ruleset::Simple] {
        let game = play(fen, ruleset, moves);
        assert_win(&game, Color::Black, Reason::PerpetualCheck, "25.1");
    }
}

#[test]
fn repetition_is_judged_at_the_third_occurrence_not_the_second() {
    let (fen, moves) = PERPETUAL_CHECK;
    let all: Vec<&str> = moves.split_whitespace().collect();
    let game = play(fen, Ruleset::Chinese2011, &all[..all.len() - 1].join(" "));
    assert_eq!(game.outcome(), Outcome::Ongoing);
}

#[test]
fn article_25_2_both_sides_idle_is_a_draw() {
    let game = play(xiangqi::START_FEN, Ruleset::Chinese2011, "b0c2 b9c7 c2b0 c7b9 b0c2 b9c7 c2b0 c7b9");
    assert_draw(&game, Reason::AllowedRepetition, "25.2");
}

/// Black's horse shuttles a5/c6; Red's rook follows it on ranks 5 and 6.
const HORSE_CHASE_MOVES: &str = "a5c6 i5i6 c6a5 i6i5 a5c6 i5i6 c6a5 i6i5";

#[test]
fn article_25_3_perpetual_chase_of_an_unprotected_horse_loses() {
    let game = play("5k3/4a4/9/9/n7R/9/9/9/9/3AKA3 b - - 0 1", Ruleset::Chinese2011, HORSE_CHASE_MOVES);
    assert_win(&game, Color::Black, Reason::PerpetualChase, "25.3");
}

#[test]
fn article_24_chase_of_a_protected_horse_by_a_rook_is_no_chase() {
    // The black rook on c9 guards c6 and the pawn on a6 guards a5: taking the horse loses the rook.
    let game = play("2r2k3/4a4/9/p8/n7R/9/9/9/9/3AKA3 b - - 0 1", Ruleset::Chinese2011, HORSE_CHASE_MOVES);
    assert_draw(&game, Reason::AllowedRepetition, "25.2");
}

#[test]
fn article_23_2_a_capture_as_first_move_of_the_cycle_is_not_counted() {
    // Red's rook takes the horse on h9 with check and then checks perpetually: the position right
    // after the capture does not count, so the ruling comes one ply later than without it.
    let fen = "3k3n1/9/7R1/9/9/9/9/9/9/4K4 w - - 0 1";
    let (_, moves) = PERPETUAL_CHECK;
    let early = play(fen, Ruleset::Chinese2011, moves);
    assert_eq!(early.outcome(), Outcome::Ongoing);
    let late = play(fen, Ruleset::Chinese2011, &format!("{moves} d9d8"));
    assert_win(&late, Color::Black, Reason::PerpetualCheck, "25.1");
}

#[test]
fn article_4_2_4_natural_move_limit_at_exactly_120_plies() {
    let fen = "3k5/9/9/9/9/9/9/9/4R4/5K3 w - - 118 60";
    assert_eq!(play(fen, Ruleset::Chinese2011, "e1e2").outcome(), Outcome::Ongoing);
    assert_draw(&play(fen, Ruleset::Chinese2011, "e1e2 d9d8"), Reason::NaturalMoveLimit, "4.2.4");
}

#[test]
fn article_4_2_2_no_possible_win_with_only_kings_advisors_and_elephants() {
    let game = play("3k1a3/4a4/9/9/9/9/9/9/4A4/2B1K4 w - - 0 1", Ruleset::Chinese2011, "");
    assert_draw(&game, Reason::NoPossibleWin, "4.2.2");
    let not_dead = play("3k1a3/4a4/9/9/9/9/9/9/4A4/2B1K3R w - - 0 1", Ruleset::Chinese2011, "");
    assert_eq!(not_dead.outcome(), Outcome::Ongoing);
}

#[test]
fn checkmate_and_stalemate_lose_for_the_side_to_move() {
    // Two rooks mate on the back rank.
    let mate = play("4k4/R8/9/9/9/9/9/9/9/1R1K5 w - - 0 1", Ruleset::Chinese2011, "b0b9");
    assert_win(&mate, Color::Red, Reason::Checkmate, "4.1.1");
    assert!(mate.position().is_checkmate());
}

fn adjudicated(fen: &str, moves: &str, margin: u32) -> Game {
    play_under(
        fen,
        GameConfig { max_plies: Some(4), material_adjudication: Some(margin), ..GameConfig::default() },
        moves,
    )
}

#[test]
fn material_adjudication_gives_length_limits_to_the_side_ahead_by_the_margin() {
    const ADJUDICATION: &str = "self-play material adjudication";
    // At the cap: Red's cannon has taken a pawn (one pawn up).
    let pawn_up = "h2e2 h9g7 e2e6 i9h9";
    assert_win(&adjudicated(xiangqi::START_FEN, pawn_up, 1), Color::Red, Reason::MaterialAdjudication, ADJUDICATION);
    assert_draw(&adjudicated(xiangqi::START_FEN, pawn_up, 2), Reason::MaxLength, "self-play length cap");
    // At the natural move limit: a rook (9 pawns) against a bare king, for either side.
    let red_rook = "3k5/9/9/9/9/9/9/9/4R4/5K3 w - - 118 60";
    assert_win(&adjudicated(red_rook, "e1e2 d9d8", 9), Color::Red, Reason::MaterialAdjudication, ADJUDICATION);
    assert_draw(&adjudicated(red_rook, "e1e2 d9d8", 10), Reason::NaturalMoveLimit, "4.2.4");
    let black_rook = "3k5/9/9/9/9/9/9/9/4r4/5K3 b - - 118 60";
    assert_win(&adjudicated(black_rook, "e1e2 f0f1", 9), Color::Black, Reason::MaterialAdjudication, ADJUDICATION);
    // Other endings stay the rules' own: here the side a rook up loses by perpetual check.
    let (fen, moves) = PERPETUAL_CHECK;
    let game = play_under(fen, GameConfig { material_adjudication: Some(1), ..GameConfig::default() }, moves);
    assert_win(&game, Color::Black, Reason::PerpetualCheck, "25.1");
}

fn repeater_loses(fen: &str, moves: &str) -> Game {
    play_under(fen, GameConfig { repeater_loses: true, ..GameConfig::default() }, moves)
}

#[test]
fn repeater_loses_gives_an_allowed_repetition_to_the_side_that_did_not_complete_it() {
    const ADJUDICATION: &str = "self-play repetition adjudication";
    // Both sides idle: Black's eighth ply makes the third occurrence, and its twelfth ends the two
    // rounds to vary in (23.5), so Red wins.
    let idle = "b0c2 b9c7 c2b0 c7b9 b0c2 b9c7 c2b0 c7b9";
    let game = repeater_loses(xiangqi::START_FEN, idle);
    assert_win(&game, Color::Red, Reason::RepetitionAdjudication, ADJUDICATION);
    assert_eq!(game.len(), 12);
    // Red idles first from the third ply on: Red's ninth ply completes it and its thirteenth ends
    // the rounds, so Black wins.
    let late = "b0c2 b9c7 h0g2 c7b9 g2h0 b9c7 h0g2 c7b9 g2h0";
    let game = repeater_loses(xiangqi::START_FEN, late);
    assert_win(&game, Color::Black, Reason::RepetitionAdjudication, ADJUDICATION);
    // Before the third occurrence nothing is decided.
    let all: Vec<&str> = late.split_whitespace().collect();
    assert_eq!(repeater_loses(xiangqi::START_FEN, &all[..all.len() - 1].join(" ")).outcome(), Outcome::Ongoing);
    // Forbidden repetitions keep their rulings: the perpetual checker loses.
    let (fen, moves) = PERPETUAL_CHECK;
    assert_win(&repeater_loses(fen, moves), Color::Black, Reason::PerpetualCheck, "25.1");
}

#[test]
fn material_counts_half_pawns_and_crossed_pawns_double() {
    let start = Position::startpos();
    assert_eq!(start.material(Color::Red), 96);
    assert_eq!(start.material(Color::Black), 96);
    // A red pawn across the river (e5) counts 4, one at home 2; the black side has a rook and a cannon.
    let pos = Position::from_fen("3k5/9/9/9/4P4/9/P8/9/2r1c4/4K4 w - - 0 1").unwrap();
    assert_eq!((pos.material(Color::Red), pos.material(Color::Black)), (6, 27));
}

#[test]
fn max_length_cap_draws_self_play_games() {
    let config = GameConfig { max_plies: Some(4), ..GameConfig::default() };
    let mut game = Game::new(config);
    for mv in ["h2e2", "h9g7", "h0g2"] {
        game.push_str(mv).unwrap();
    }
    assert_eq!(game.outcome(), Outcome::Ongoing);
    game.push_str("i9h9").unwrap();
    assert_draw(&game, Reason::MaxLength, "self-play length cap");
}

#[test]
fn moves_after_the_end_and_illegal_moves_are_rejected_and_leave_the_game_unchanged() {
    let mut game = Game::new(GameConfig::default());
    let err = game.push_str("a0a5").unwrap_err();
    assert_eq!(err, GameError::Illegal { mv: "a0a5".parse::<Move>().unwrap(), ply: 0 });
    assert_eq!(game.len(), 0);
    let mut mated = play("4k4/R8/9/9/9/9/9/9/9/1R1K5 w - - 0 1", Ruleset::Chinese2011, "b0b9");
    assert!(matches!(mated.push_str("e9e8"), Err(GameError::GameOver { ply: 1, .. })));
}

mod natures {
    //! Move natures (article 24 and the general rules of 26), one position each.
    use xiangqi::Position;
    use xiangqi::game::{MoveNature, Natures, classify_move};

    fn classify(fen: &str, mv: &str) -> Natures {
        let pos = Position::from_fen(fen).unwrap();
        let mv = mv.parse().unwrap();
        assert!(pos.is_legal(mv), "{mv} is legal in {fen}");
        classify_move(&pos, mv)
    }

    fn sq(name: &str) -> xiangqi::Bitboard {
        let mv: xiangqi::Move = format!("{name}{name}").parse().unwrap();
        xiangqi::Bitboard::from_square(mv.from())
    }

    #[test]
    fn article_24_rook_attacking_an_unprotected_horse_chases_it() {
        let n = classify("5k3/9/9/4n4/3R5/9/9/9/9/4K4 w - - 0 1", "d5e5");
        assert_eq!(n.heaviest(), MoveNature::Chase);
        assert_eq!(n.chased, sq("e6"));
        assert_eq!(n.chased_unprotected, sq("e6"));
    }

    #[test]
    fn article_26_1_a_pawn_may_chase() {
        let n = classify("5k3/9/9/4n4/3P5/9/9/9/9/4K4 w - - 0 1", "d5e5");
        assert_eq!(n.heaviest(), MoveNature::Idle);
    }

    #[test]
    fn article_26_1_a_king_may_chase() {
        let n = classify("3k5/9/9/9/9/9/9/9/5n3/4K4 w - - 0 1", "e0f0");
        assert_eq!(n.heaviest(), MoveNature::Idle, "the king steps next to the horse on f1");
    }

    #[test]
    fn article_26_2_a_pawn_move_that_uncovers_a_rook_chase_is_a_chase() {
        let n = classify("5k3/9/9/R1P1n4/9/9/9/9/9/4K4 w - - 0 1", "c6c7");
        assert_eq!(n.heaviest(), MoveNature::Chase);
        assert_eq!(n.chased, sq("e6"));
    }

    #[test]
    fn article_24_a_rook_taking_a_protected_horse_gains_nothing() {
        // The black rook on e8 guards the horse on e6.
        let n = classify("9/3kr4/3a5/4n4/R8/9/9/9/9/4K4 w - - 0 1", "a5a6");
        assert_eq!(n.heaviest(), MoveNature::Idle);
    }

    #[test]
    fn article_24_false_protection_by_a_pinned_piece_counts_as_unprotected() {
        // As above, but the red rook on i8 pins the guard against its king.
        let n = classify("9/3kr3R/3a5/4n4/R8/9/9/9/9/4K4 w - - 0 1", "a5a6");
        assert_eq!(n.heaviest(), MoveNature::Chase);
        assert_eq!(n.chased_unprotected, sq("e6"));
    }

    #[test]
    fn article_24_an_attack_that_was_already_there_is_no_new_chase() {
        // Figure 4's idea: the rook could take the horse before and still can after sliding.
        let n = classify("5k3/9/9/4n4/9/9/9/9/4R4/3K5 w - - 0 1", "e1e2");
        assert_eq!(n.heaviest(), MoveNature::Idle);
    }

    #[test]
    fn article_26_3_a_king_move_answering_check_is_idle_even_if_it_uncovers_a_chase() {
        // The king leaves the e-file; the rook behind it now attacks the unprotected black rook.
        let n = classify("3k5/9/4r4/9/9/9/9/9/4K4/4R4 w - - 0 1", "e1f1");
        assert_eq!(n.heaviest(), MoveNature::Idle);
    }

    #[test]
    fn article_24_a_move_that_threatens_mate_by_checks_is_a_mate_threat() {
        // The rook comes to the f-file; the black king cannot step onto the open e-file, so Rf6
        // would mate next.
        let n = classify("5k3/9/9/9/8R/9/9/9/9/3AKA3 w - - 0 1", "i5i6");
        assert_eq!(n.heaviest(), MoveNature::MateThreat);
    }
}

#[test]
fn article_25_3_one_check_one_chase_is_forbidden() {
    // Red's rook checks from i9 and chases the unprotected horse on a6 from i6.
    let fen = "3k5/9/9/n7R/9/9/9/9/9/4K4 w - - 0 1";
    let moves = "i6i9 d9d8 i9i6 d8d9 i6i9 d9d8 i9i6 d8d9";
    let game = play(fen, Ruleset::Chinese2011, moves);
    assert_win(&game, Color::Black, Reason::MixedForbidden, "25.3");
    assert_draw(&play(fen, Ruleset::Simple, moves), Reason::AllowedRepetition, "25.2");
}

#[test]
fn article_25_3_perpetual_mate_threat_loses() {
    // The black king cannot step onto the e-file (the kings would face), so the rook on i5 or i6
    // always threatens Rf5/Rf6 mate; Black's horse shuttles.
    let game = play("5k3/9/9/9/n7R/9/9/9/9/3AKA3 b - - 0 1", Ruleset::Chinese2011, HORSE_CHASE_MOVES);
    assert_win(&game, Color::Black, Reason::PerpetualMateThreat, "25.3");
    assert_draw(
        &play("5k3/9/9/9/n7R/9/9/9/9/3AKA3 b - - 0 1", Ruleset::Simple, HORSE_CHASE_MOVES),
        Reason::AllowedRepetition,
        "25.2",
    );
}

#[test]
fn article_26_9_chase_of_an_unprotected_piece_against_chase_of_a_rook_is_a_draw() {
    // As in the 2011 text's figure 3 (长捉无根子 against 长捉车, 双方不变作和). Red's cannon goes
    // c3-d3, attacking Black's unprotected cannon on d0 over the horse, and back, uncovering the
    // rook on d8 against it. Black's horse goes d2-c0, letting its cannon hit the rook over the red
    // cannon, and back, becoming the cannon's screen itself.
    let fen = "9/3R5/5k3/9/9/9/2C6/3nK4/9/3c5 w - - 0 1";
    let moves = "c3d3 d2c0 d3c3 c0d2 c3d3 d2c0 d3c3 c0d2";
    assert_draw(&play(fen, Ruleset::Chinese2011, moves), Reason::MutualForbidden, "26.9");
}

#[test]
fn article_24_a_move_that_wins_a_rook_through_a_check_next_is_a_chase() {
    // The horse goes to b6; next Nc8+ forks the king on e9 and the rook on a7.
    let pos = Position::from_fen("4k4/9/r8/9/3N5/9/9/9/9/3K5 w - - 0 1").unwrap();
    let natures = xiangqi::game::classify_move(&pos, "d5b6".parse().unwrap());
    assert_eq!(natures.heaviest(), xiangqi::game::MoveNature::Chase);
    let a7: Move = "a7a7".parse().unwrap();
    assert!(natures.chased_rooks.contains(a7.from()));
}

#[test]
fn article_26_3_answering_check_chases_only_what_the_answer_newly_attacks() {
    // The black cannon checks from e5; Red blocks with the cannon b2-e2, which now attacks the
    // checker over the pawn on e3: a new chase (26.3, second half). Red's other captures (the
    // rook on a7, the cannon on h9...) were illegal while in check, but the attacks were there
    // all along, so they are not new.
    let mut pos = Position::from_fen("1nbCk3r/4a4/rc2b4/p1p1p1p2/7cp/9/P1P1P1P1P/BC7/8R/RN1AKABN1 b - - 0 7").unwrap();
    pos.play("h5e5".parse().unwrap()).unwrap();
    assert!(pos.is_check());
    let natures = xiangqi::game::classify_move(&pos, "b2e2".parse().unwrap());
    let e5: Move = "e5e5".parse().unwrap();
    assert_eq!(natures.chased, xiangqi::Bitboard::from_square(e5.from()), "{natures:?}");
}

// WXF rulings, which follow Fairy-Stockfish (checked against it by tests/repetition_wxf.rs).

#[test]
fn wxf_counts_the_position_right_after_a_capture() {
    // As in the 23.2 test, but under WXF the position after the capture is an occurrence.
    let (_, moves) = PERPETUAL_CHECK;
    let game = play("3k3n1/9/7R1/9/9/9/9/9/9/4K4 w - - 0 1", Ruleset::Wxf, moves);
    assert_win(&game, Color::Black, Reason::PerpetualCheck, "25.1");
}

#[test]
fn wxf_natural_move_limit_comes_before_repetition() {
    // The third occurrence comes with the 100th ply without capture: a draw, not a perpetual check.
    let (_, moves) = PERPETUAL_CHECK;
    let game = play("3k5/9/7R1/9/9/9/9/9/9/4K4 w - - 91 1", Ruleset::Wxf, moves);
    assert_draw(&game, Reason::NaturalMoveLimit, "natural-move-limit");
    let game = play("3k5/9/7R1/9/9/9/9/9/9/4K4 w - - 90 1", Ruleset::Wxf, moves);
    assert_win(&game, Color::Black, Reason::PerpetualCheck, "25.1");
}

fn axf_chased_after(fen: &str, mv: &str) -> Vec<String> {
    let pos = Position::from_fen(fen).unwrap();
    axf_chased(&pos, mv.parse().unwrap()).map(|s| s.to_string()).collect()
}

#[test]
fn axf_a_horse_chases_a_rook_even_when_protected() {
    assert_eq!(axf_chased_after("2r1k4/9/9/2r6/9/9/3N5/9/9/3K5 w - - 0 1", "d3b4"), ["c6"]);
}

#[test]
fn axf_a_rook_chases_an_unprotected_horse_but_not_a_rook() {
    assert_eq!(axf_chased_after("4k4/9/9/9/n8/9/9/9/1R7/3K5 w - - 0 1", "b1b5"), ["a5"]);
    assert!(axf_chased_after("4k4/9/9/9/r8/9/9/9/1R7/3K5 w - - 0 1", "b1b5").is_empty());
}

#[test]
fn axf_a_check_chases_too() {
    assert_eq!(axf_chased_after("9/n3k4/9/9/9/9/9/9/2R6/3K5 w - - 0 1", "c1c8"), ["a8"]);
}

/// Where the 2011 rules and WXF (as Fairy-Stockfish applies them) deliberately part ways, the
/// same game gets different rulings.
mod chinese2011_versus_wxf {
    use super::*;

    #[test]
    fn one_check_one_chase_loses_under_25_3_but_is_a_draw_under_wxf() {
        // WXF only punishes cycles of checks alone or of chases of one and the same piece.
        let fen = "3k5/9/9/n7R/9/9/9/9/9/4K4 w - - 0 1";
        let moves = "i6i9 d9d8 i9i6 d8d9 i6i9 d9d8 i9i6 d8d9";
        assert_win(&play(fen, Ruleset::Chinese2011, moves), Color::Black, Reason::MixedForbidden, "25.3");
        assert!(matches!(play(fen, Ruleset::Wxf, moves).outcome(), Outcome::Draw { .. }));
    }

    #[test]
    fn perpetual_mate_threat_is_its_own_offence_in_2011_wxf_sees_only_the_chase() {
        let fen = "5k3/9/9/9/n7R/9/9/9/9/3AKA3 b - - 0 1";
        assert_win(
            &play(fen, Ruleset::Chinese2011, HORSE_CHASE_MOVES),
            Color::Black,
            Reason::PerpetualMateThreat,
            "25.3",
        );
        match play(fen, Ruleset::Wxf, HORSE_CHASE_MOVES).outcome() {
            Outcome::Win { winner: Color::Black, verdict } => assert_eq!(verdict.reason, Reason::PerpetualChase),
            other => panic!("expected Red to lose by perpetual chase under wxf, got {other:?}"),
        }
    }

    #[test]
    fn the_position_after_a_capture_counts_under_wxf_but_not_under_23_2() {
        let fen = "3k3n1/9/7R1/9/9/9/9/9/9/4K4 w - - 0 1";
        let (_, moves) = PERPETUAL_CHECK;
        assert_eq!(play(fen, Ruleset::Chinese2011, moves).outcome(), Outcome::Ongoing);
        assert_win(&play(fen, Ruleset::Wxf, moves), Color::Black, Reason::PerpetualCheck, "25.1");
    }
}
