//! Helpers for the tests of the repetition rules: moves in either notation, expectations on a
//! move's nature, cycles played to their ruling.

use xiangqi::game::{Game, GameConfig, MoveNature, Natures, Outcome, Ruleset, classify_move_in_game};
use xiangqi::notation::Chinese;
use xiangqi::{Move, Position};

/// Parses a move written in coordinates (`h2e2`) or in Chinese notation (`炮二平五`).
pub fn parse_move(pos: &Position, text: &str) -> Move {
    if text.is_ascii() {
        text.parse().unwrap_or_else(|e| panic!("{text}: {e}"))
    } else {
        let chinese: Chinese = text.parse().unwrap_or_else(|e| panic!("{text}: {e}"));
        chinese.resolve(pos).unwrap_or_else(|e| panic!("{text} in {pos}: {e}"))
    }
}

/// Checks one move's natures against an expectation such as `idle`, `check`, `threat`,
/// `chase a7` or `chase b8 rook unprotected; g0` (targets separated by `;`, each with flags). A
/// target flagged `pawn` is one a pawn attacks (allowed, so not chased: `idle e1 pawn`).
pub fn check_nature(pos: &Position, mv: Move, natures: &Natures, expected: &str) {
    let context = format!("{mv} in {pos}: {natures:?}");
    let (word, targets) = expected.split_once(' ').unwrap_or((expected, ""));
    let heaviest = match word {
        "idle" => MoveNature::Idle,
        "check" => MoveNature::Check,
        "threat" => MoveNature::MateThreat,
        "chase" => MoveNature::Chase,
        other => panic!("bad expectation {other}"),
    };
    assert_eq!(natures.heaviest(), heaviest, "{context}");
    for target in targets.split(';').map(str::trim).filter(|t| !t.is_empty()) {
        let mut words = target.split_whitespace();
        let name = words.next().unwrap();
        let sq = format!("{name}{name}").parse::<Move>().unwrap().from();
        let flags: Vec<&str> = words.collect();
        if flags.contains(&"pawn") {
            assert!(natures.pawn_chased.contains(sq), "a pawn attacks {name}: {context}");
            continue;
        }
        assert!(natures.chased.contains(sq), "{name} is chased: {context}");
        for flag in flags {
            match flag {
                "rook" => assert!(natures.chased_rooks.contains(sq), "{name} is a chased rook: {context}"),
                "unprotected" => {
                    assert!(natures.chased_unprotected.contains(sq), "{name} is unprotected: {context}")
                }
                "protected" => {
                    assert!(!natures.chased_unprotected.contains(sq), "{name} is protected: {context}")
                }
                other => panic!("bad flag {other}"),
            }
        }
    }
}

/// Plays `moves` (one cycle, coordinates or Chinese) from `fen`, checking each move's nature,
/// then plays the cycle again under the 2011 rules: the game must go on until the last ply, the
/// third occurrence of the start position, and is returned there.
pub fn cycle(fen: &str, moves: &[&str], natures: &[&str]) -> Game {
    cycle_under(Ruleset::Chinese2011, fen, moves, natures)
}

/// [`cycle`] under `ruleset`.
pub fn cycle_under(ruleset: Ruleset, fen: &str, moves: &[&str], natures: &[&str]) -> Game {
    assert_eq!(moves.len(), natures.len());
    let start = Position::from_fen(fen).unwrap_or_else(|e| panic!("{fen}: {e}"));
    let mut pos = start.clone();
    let mut positions = Vec::new();
    let mut cycle = Vec::new();
    for text in moves {
        let mv = parse_move(&pos, text);
        assert!(pos.is_legal(mv), "{text} ({mv}) is legal in {pos}");
        positions.push(pos.clone());
        pos.play(mv).unwrap();
        cycle.push(mv);
    }
    assert_eq!(pos.hash(), start.hash(), "the moves form a cycle");
    // Each move is judged knowing the move before it, the cycle's last for its first (26.5).
    for (i, expected) in natures.iter().enumerate() {
        let prev = (i + cycle.len() - 1) % cycle.len();
        let natures = classify_move_in_game(Some((&positions[prev], cycle[prev])), &positions[i], cycle[i]);
        check_nature(&positions[i], cycle[i], &natures, expected);
    }
    let mut game = Game::from_position(start, GameConfig { ruleset, ..GameConfig::default() });
    let plies = 2 * cycle.len();
    for (i, &mv) in cycle.iter().cycle().take(plies).enumerate() {
        assert_eq!(game.outcome(), Outcome::Ongoing, "ruled early, before ply {i}");
        game.push(mv).unwrap();
    }
    rule_pending(&mut game, &cycle);
    game
}

/// At a repetition's third occurrence (the pending position, 待判局面) of a game that started
/// with `cycle`, plays the cycle on until the ruling and checks that it comes when the ruleset
/// says, the pending ruling unchanged until then:
/// - 2011 (23.5): a perpetual check at once; otherwise the side that must vary has two rounds to
///   (the ruling comes with its second move), and a draw comes after two rounds of both sides.
/// - 1999: a perpetual check and a draw at once (24.1, 24.2); the side that must vary loses once
///   it has repeated one more cycle (24.3).
/// - WXF and the simple rules: at once.
pub fn rule_pending(game: &mut Game, cycle: &[Move]) {
    let Some(pending) = game.pending_ruling() else { return };
    let last_mover = !game.position().turn();
    let loser_moves_after = |moves: usize| match pending.winner() {
        // The loser's moves come first when it did not complete the third occurrence.
        Some(winner) if !winner == last_mover => 2 * moves,
        Some(_) => 2 * moves - 1,
        None => 2 * moves,
    };
    let plies = match (game.config().ruleset, pending) {
        (Ruleset::Chinese2011, _) => loser_moves_after(2),
        (Ruleset::Chinese1999, Outcome::Win { .. }) => loser_moves_after(cycle.len() / 2),
        (ruleset, _) => panic!("no ruling is pending under {ruleset}: {pending:?}"),
    };
    for k in 0..plies {
        assert_eq!(game.outcome(), Outcome::Ongoing, "ruled {k} plies after the pending position, not {plies}");
        assert_eq!(game.pending_ruling(), Some(pending), "the pending ruling holds");
        game.push(cycle[game.len() % cycle.len()]).unwrap();
    }
    assert_eq!(game.outcome(), pending, "ruled {plies} plies after the pending position");
}

/// Plays `moves` over and over from `fen` under `ruleset` until the game ends or `max_plies` were
/// played, and returns the game: for rulings that come before a third occurrence (23.4) or that
/// must not come at all.
pub fn play_out(ruleset: Ruleset, fen: &str, moves: &[&str], max_plies: usize) -> Game {
    let start = Position::from_fen(fen).unwrap_or_else(|e| panic!("{fen}: {e}"));
    let mut game = Game::from_position(start, GameConfig { ruleset, ..GameConfig::default() });
    for text in moves.iter().cycle().take(max_plies) {
        if game.outcome().is_over() {
            break;
        }
        let mv = parse_move(game.position(), text);
        game.push(mv).unwrap_or_else(|e| panic!("{text}: {e}"));
    }
    game
}
