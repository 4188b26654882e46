//! WXF (`C2.5`, `+2=5`) and Chinese (`炮二平五`) notation.
//!
//! The input picks a position (a base position, then moves chosen by bytes) and supplies text.
//! Parsing and resolving never panic; anything printed parses back to the same text; a resolved
//! move is legal, and its canonical notation resolves to it again; and every legal move of the
//! position has a notation that resolves back to it.

use xiangqi::notation::{Chinese, Wxf};
use xiangqi::{Move, Position};

/// Bases with pieces that need disambiguation: tandem pawns on two files, doubled rooks,
/// cannons and horses, for both colours.
const BASES: [&str; 4] = [
    xiangqi::START_FEN,
    "4k4/9/9/2P1P4/2P1P4/4P4/9/9/9/3K5 w",
    "3k5/9/9/4p1p2/4p1p2/6p2/9/9/9/4K4 b",
    "2r1k4/2r6/9/2n1c4/2n1c4/4R4/4R4/2N1C4/2N1C4/3K5 w",
];

fn check_wxf(pos: &Position, text: &str) {
    let Ok(wxf) = text.parse::<Wxf>() else { return };
    let printed = wxf.to_string();
    let again: Wxf = printed.parse().unwrap_or_else(|e| panic!("printed WXF {printed:?} does not parse: {e:?}"));
    assert_eq!(again, wxf, "WXF {text:?} printed as {printed:?}");
    assert_eq!(again.to_string(), printed);
    if let Ok(mv) = wxf.resolve(pos) {
        assert!(pos.is_legal(mv), "WXF {text:?} resolved to illegal {mv} at {pos}");
        let canonical = Wxf::from_move(pos, mv).expect("a legal move has a WXF");
        assert_eq!(canonical.resolve(pos).ok(), Some(mv), "WXF {canonical} at {pos}");
    }
}

fn check_chinese(pos: &Position, text: &str) {
    let Ok(chinese) = text.parse::<Chinese>() else { return };
    let printed = chinese.to_string();
    let again: Chinese =
        printed.parse().unwrap_or_else(|e| panic!("printed Chinese {printed:?} does not parse: {e:?}"));
    assert_eq!(again, chinese, "Chinese {text:?} printed as {printed:?}");
    assert_eq!(again.to_string(), printed);
    if let Ok(mv) = chinese.resolve(pos) {
        assert!(pos.is_legal(mv), "Chinese {text:?} resolved to illegal {mv} at {pos}");
        let canonical = Chinese::from_move(pos, mv).expect("a legal move has a Chinese notation");
        assert_eq!(canonical.resolve(pos).ok(), Some(mv), "Chinese {canonical} at {pos}");
    }
}

/// Every legal move survives from_move -> text -> parse -> resolve in both notations.
fn check_all_moves(pos: &Position) {
    for &mv in &pos.legal_moves() {
        let wxf = Wxf::from_move(pos, mv).unwrap_or_else(|e| panic!("no WXF for legal {mv} at {pos}: {e:?}"));
        let text = wxf.to_string();
        let parsed: Wxf = text.parse().unwrap_or_else(|e| panic!("WXF {text:?} does not parse: {e:?}"));
        assert_eq!(parsed.resolve(pos).ok(), Some(mv), "WXF {text} for {mv} at {pos}");

        let chinese =
            Chinese::from_move(pos, mv).unwrap_or_else(|e| panic!("no Chinese for legal {mv} at {pos}: {e:?}"));
        let text = chinese.to_string();
        let parsed: Chinese = text.parse().unwrap_or_else(|e| panic!("Chinese {text:?} does not parse: {e:?}"));
        assert_eq!(parsed.resolve(pos).ok(), Some(mv), "Chinese {text} for {mv} at {pos}");
    }
    let illegal: Move = "a0a0".parse().unwrap();
    assert!(Wxf::from_move(pos, illegal).is_err());
    assert!(Chinese::from_move(pos, illegal).is_err());
}

/// The target's check of one input: panics where a property fails.
pub fn check(data: &[u8]) {
    let [selector, rest @ ..] = data else { return };
    let plies = usize::from(selector >> 2) % 48;
    let (choices, text) = rest.split_at(plies.min(rest.len()));
    let mut pos = Position::from_fen(BASES[usize::from(selector & 3)]).expect("base positions are valid");
    for &choice in choices {
        let moves = pos.legal_moves();
        if moves.is_empty() {
            break;
        }
        pos.play_unchecked(moves[usize::from(choice) % moves.len()]);
    }
    check_all_moves(&pos);
    if let Ok(text) = std::str::from_utf8(text) {
        check_wxf(&pos, text);
        check_chinese(&pos, text);
    }
}
