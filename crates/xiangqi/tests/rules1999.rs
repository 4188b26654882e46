//! The 1999 edition of the Chinese rules (`Ruleset::Chinese1999`,
//! 中國象棋競賽規則, 1999) against the 2011 rules, one cycle per row: where
//! the books agree and where they differ.
//!
//! The books differ where both sides make forbidden moves: the 1999 rules call that a draw
//! whatever the moves (its 26.3, 雙方均為禁止著法（不包括一方為長將），雙方不變作和), where the
//! 2011 rules' 26.9 makes the side that threatens mate or chases a rook or an unprotected piece
//! vary. A pawn's own chases are allowed under both (1999: 27.2, 2011: 26.1), but the 1999 rules
//! count them once both sides attack perpetually (如形成相互長打局面,則應按捉處理): a forbidden side
//! facing a pawn that attacks with every move is in a mutual perpetual attack, a draw. The
//! articles cited are each book's own: perpetual check 26.1 (2011: 25.1), allowed moves 26.2
//! (25.2), one side forbidden 26.4 (25.3), stalemate 4.1.3 (4.1.2), no possible win 4.2.1
//! (4.2.2).
//!
//! The positions of the 26.9 rows and of the figures of the 2011 text are those of
//! `rules2011.rs`, where each is explained.

mod common;

use common::rules::cycle_under;
use common::{assert_draw, assert_win};
use xiangqi::game::{Game, GameConfig, Outcome, ParseRulesetError, Reason, Ruleset};
use xiangqi::{Color, Position};

/// A ruling expected at the end of a cycle.
#[derive(Copy, Clone, Debug)]
enum Ruling {
    /// The side wins, by the reason, under the article.
    Win(Color, Reason, &'static str),
    /// A draw of allowed moves under the article.
    Draw(&'static str),
    /// A draw of forbidden moves on both sides under the article.
    Mutual(&'static str),
}

use Color::{Black, Red};
use Reason::{MixedForbidden, PerpetualChase, PerpetualMateThreat};
use Ruling::{Draw, Mutual, Win};

/// One cycle and its ruling under each book.
struct Case {
    what: &'static str,
    fen: &'static str,
    moves: [&'static str; 4],
    natures: [&'static str; 4],
    chinese2011: Ruling,
    chinese1999: Ruling,
}

const EYE: [&str; 2] = ["chase a7 protected", "chase e7 protected"];

const CASES: &[Case] = &[
    Case {
        what: "perpetual mate threat against chases of protected pieces",
        fen: "r1N2k3/n1P6/9/Nc7/P8/8R/9/9/9/3AKA3 w - - 0 1",
        moves: ["i4i3", "a8c7", "i3i4", "c7a8"],
        natures: ["threat", "chase a6 protected", "threat", "chase c9 protected"],
        chinese2011: Win(Black, PerpetualMateThreat, "26.9"),
        chinese1999: Mutual("26.3"),
    },
    Case {
        what: "one check one mate threat against chases of protected pieces",
        fen: "3k5/4P4/N3N4/Pc2P4/2b6/1R7/9/9/9/4K4 w - - 0 1",
        moves: ["b4d4", "b6d6", "d4b4", "d6b6"],
        natures: ["check", EYE[0], "threat", EYE[1]],
        chinese2011: Win(Black, MixedForbidden, "26.9"),
        chinese1999: Mutual("26.3"),
    },
    Case {
        what: "perpetual chase of rooks against chases of protected pieces",
        fen: "3k2rr1/4P4/N3N4/Pc2P4/2b3PP1/9/9/9/4A1C2/4K4 w - - 0 1",
        moves: ["g1h1", "b6d6", "h1g1", "d6b6"],
        natures: ["chase h9 rook protected", EYE[0], "chase g9 rook protected", EYE[1]],
        chinese2011: Win(Black, PerpetualChase, "26.9"),
        chinese1999: Mutual("26.3"),
    },
    Case {
        what: "perpetual chase of unprotected pieces against chases of protected pieces",
        fen: "3k1ann1/4P4/N3N4/Pc2P4/2b3PP1/9/9/9/4A1C2/4K4 w - - 0 1",
        moves: ["g1h1", "b6d6", "h1g1", "d6b6"],
        natures: ["chase h9 unprotected", EYE[0], "chase g9 unprotected", EYE[1]],
        chinese2011: Win(Black, PerpetualChase, "26.9"),
        chinese1999: Mutual("26.3"),
    },
    Case {
        what: "one check one rook chase against chases of protected pieces",
        fen: "3k5/1r7/N3C4/Pc2P4/2b6/1R7/9/9/9/4K4 w - - 0 1",
        moves: ["b4d4", "b6d6", "d4b4", "d6b6"],
        natures: ["check", EYE[0], "chase b8 rook", EYE[1]],
        chinese2011: Win(Black, MixedForbidden, "26.9"),
        chinese1999: Mutual("26.3"),
    },
    Case {
        what: "a rook chase by one piece against a joint rook chase",
        fen: "3akar1r/9/4b4/1c2p4/6b1p/1ppp5/9/6C2/1R1R5/3AKA3 w - - 0 1",
        moves: ["g2i2", "b6d6", "i2g2", "d6b6"],
        natures: ["chase i9 rook", "chase d1 rook", "chase g9 rook", "chase b1 rook"],
        chinese2011: Win(Black, PerpetualChase, "26.9"),
        chinese1999: Mutual("26.3"),
    },
    // Where the books agree.
    Case {
        what: "both sides must vary under 2011 too",
        fen: "3k2rr1/4P4/N3N4/1c7/2b3PP1/9/9/9/4A1C2/4K4 w - - 0 1",
        moves: ["g1h1", "b6d6", "h1g1", "d6b6"],
        natures: ["chase h9 rook", "chase a7 unprotected", "chase g9 rook", "chase e7 unprotected"],
        chinese2011: Mutual("26.9"),
        chinese1999: Mutual("26.3"),
    },
    Case {
        what: "figure 3: chases of unprotected horses against chases of rooks",
        fen: "3aka3/9/9/7R1/6R2/9/9/2n1B2r1/N2KA4/2n5r w - - 0 1",
        moves: ["相五退三", "车8平7", "相三进五", "车7平8"],
        natures: ["chase c0 unprotected", "chase g5 rook", "chase c2 unprotected", "chase h6 rook"],
        chinese2011: Mutual("26.9"),
        chinese1999: Mutual("26.3"),
    },
    Case {
        what: "figure 2: two chases against a chase and an exchange offer (one side forbidden)",
        fen: "4k3r/9/6n2/7N1/9/9/9/6N1C/9/3K3R1 w - - 0 1",
        moves: ["马二退一", "车9平8", "马一进二", "车8平9"],
        natures: ["chase i9 rook unprotected", "idle", "chase h9 rook", "chase i2 unprotected"],
        chinese2011: Win(Black, PerpetualChase, "25.3"),
        chinese1999: Win(Black, PerpetualChase, "26.4"),
    },
    Case {
        what: "figure 5: chases against idle moves (one side forbidden)",
        fen: "3aka3/9/8b/9/2b6/5N3/6p2/2C1B1n2/9/4K4 w - - 0 1",
        moves: ["马四退六", "象9进7", "马六进四", "象7退9"],
        natures: ["chase c5 unprotected", "idle", "chase g2 protected", "idle"],
        chinese2011: Win(Black, PerpetualChase, "25.3"),
        chinese1999: Win(Black, PerpetualChase, "26.4"),
    },
    Case {
        what: "figure 4: one check one idle move against idle moves (both allowed)",
        fen: "2R2a3/4k4/9/9/9/9/9/9/9/3K5 w - - 0 1",
        moves: ["车七退五", "将5退1", "车七进五", "将5进1"],
        natures: ["idle", "idle", "check", "idle"],
        chinese2011: Draw("25.2"),
        chinese1999: Draw("26.2"),
    },
    Case {
        what: "perpetual check",
        fen: "3k5/7R1/9/9/9/9/9/9/9/4K4 w - - 0 1",
        moves: ["h8h9", "d9d8", "h9h8", "d8d9"],
        natures: ["check", "idle", "check", "idle"],
        chinese2011: Win(Black, Reason::PerpetualCheck, "25.1"),
        chinese1999: Win(Black, Reason::PerpetualCheck, "26.1"),
    },
    // 27.2: Red's rook a6/a8 chases the unprotected black horse h6 and cannon h8; Black's crossed
    // pawn d2/e2 attacks the unprotected red cannon e1 and horse d1 with every move.
    Case {
        what: "a rook's perpetual chase against a pawn's perpetual attack (1999: mutual, 27.2)",
        fen: "3k5/7c1/9/R6n1/9/9/9/3p5/3NC4/5K3 w - - 0 1",
        moves: ["a6a8", "d2e2", "a8a6", "e2d2"],
        natures: ["chase h8 unprotected", "idle e1 pawn", "chase h6 unprotected", "idle d1 pawn"],
        chinese2011: Win(Black, PerpetualChase, "25.3"),
        chinese1999: Mutual("27.2"),
    },
    Case {
        what: "the same without the red cannon: one pawn move attacks nothing, no mutual attack",
        fen: "3k5/7c1/9/R6n1/9/9/9/3p5/3N5/5K3 w - - 0 1",
        moves: ["a6a8", "d2e2", "a8a6", "e2d2"],
        natures: ["chase h8 unprotected", "idle", "chase h6 unprotected", "idle d1 pawn"],
        chinese2011: Win(Black, PerpetualChase, "25.3"),
        chinese1999: Win(Black, PerpetualChase, "26.4"),
    },
];

fn assert_ruling(game: &Game, ruling: Ruling, ruleset: Ruleset, what: &str) {
    let verdict = game.outcome().verdict().unwrap_or_else(|| panic!("{what}: no ruling under {ruleset}"));
    assert_eq!(verdict.ruleset, ruleset, "{what}");
    match ruling {
        Win(winner, reason, article) => assert_win(game, winner, reason, article),
        Draw(article) => assert_draw(game, Reason::AllowedRepetition, article),
        Mutual(article) => assert_draw(game, Reason::MutualForbidden, article),
    }
}

#[test]
fn the_1999_and_2011_rulings_of_each_cycle() {
    for case in CASES {
        for (ruleset, ruling) in [(Ruleset::Chinese2011, case.chinese2011), (Ruleset::Chinese1999, case.chinese1999)] {
            let game = cycle_under(ruleset, case.fen, &case.moves, &case.natures);
            assert_ruling(&game, ruling, ruleset, case.what);
        }
    }
}

/// The rows where both sides make forbidden moves are all drawn under 1999 (26.3), and every
/// row the 2011 rules give to a side by 26.9 is such a row.
#[test]
fn article_26_3_both_sides_forbidden_is_always_a_draw() {
    let mutual: Vec<&Case> =
        CASES.iter().filter(|c| matches!(c.chinese2011, Win(_, _, "26.9") | Mutual("26.9"))).collect();
    assert_eq!(mutual.len(), 8);
    assert!(mutual.iter().all(|c| matches!(c.chinese1999, Mutual("26.3"))));
}

fn game_1999(fen: &str, moves: &[&str]) -> Game {
    let config = GameConfig { ruleset: Ruleset::Chinese1999, ..GameConfig::default() };
    let mut game = Game::from_position(Position::from_fen(fen).unwrap(), config);
    for mv in moves {
        game.push_str(mv).unwrap();
    }
    game
}

#[test]
fn the_1999_articles_of_mate_stalemate_dead_draws_and_the_natural_move_limit() {
    // Two rooks mate on the back rank (4.1.1 in both books).
    assert_win(&game_1999("4k4/R8/9/9/9/9/9/9/9/1R1K5 w - - 0 1", &["b0b9"]), Red, Reason::Checkmate, "4.1.1");
    // The black king on d9 has no move: d8 is the pawn's, e9 the rook's (1999: 4.1.3).
    assert_win(&game_1999("3k5/9/3PR4/9/9/9/9/9/9/5K3 b - - 0 1", &[]), Red, Reason::Stalemate, "4.1.3");
    // Only kings, advisors and elephants (1999: 4.2.1).
    assert_draw(&game_1999("3k1a3/4a4/9/9/9/9/9/9/4A4/2B1K4 w - - 0 1", &[]), Reason::NoPossibleWin, "4.2.1");
    // Sixty rounds without a capture (4.2.4 in both books).
    let fen = "3k5/9/9/9/9/9/9/9/4R4/5K3 w - - 118 60";
    assert_eq!(game_1999(fen, &["e1e2"]).outcome(), Outcome::Ongoing);
    assert_draw(&game_1999(fen, &["e1e2", "d9d8"]), Reason::NaturalMoveLimit, "4.2.4");
}

#[test]
fn the_1999_ruleset_is_chosen_by_its_name() {
    assert_eq!("chinese1999".parse::<Ruleset>(), Ok(Ruleset::Chinese1999));
    assert_eq!(Ruleset::Chinese1999.name(), "chinese1999");
    assert_eq!(Ruleset::Chinese1999.to_string(), "chinese1999");
    assert_eq!(Ruleset::Chinese1999.default_natural_limit(), 120);
    assert!(Ruleset::ALL.contains(&Ruleset::Chinese1999));
    let unknown = "chinese2000".parse::<Ruleset>().unwrap_err();
    assert_eq!(unknown, ParseRulesetError("chinese2000".into()));
    assert!(unknown.to_string().contains("chinese1999"), "{unknown}");
}

/// 23.4 is a 2011 article: the 1999 rules wait for the third occurrence (ply 24), and then for the
/// one more cycle of 24.3.
#[test]
fn the_1999_rules_have_no_nine_round_rule() {
    let fen = "4k4/9/9/9/7n1/9/7c1/9/R6n1/3K5 w - - 0 1";
    let moves = ["a1a3", "e9e8", "a3a5", "e8e9", "a5a1", "e9e8", "a1a3", "e8e9", "a3a5", "e9e8", "a5a1", "e8e9"];
    let game = common::rules::play_out(Ruleset::Chinese1999, fen, &moves, 34);
    assert_eq!(game.outcome(), Outcome::Ongoing, "Red has its one more cycle to vary in (24.3)");
    let game = common::rules::play_out(Ruleset::Chinese1999, fen, &moves, 35);
    assert_eq!(game.len(), 35, "{:?}", game.outcome());
    assert_win(&game, Black, PerpetualChase, "26.4");
}
