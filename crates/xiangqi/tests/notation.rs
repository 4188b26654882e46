//! WXF and Chinese move notation: fixed examples from the rules and the WXF notation page, the
//! tandem-piece conventions, error cases, and round trips (print, re-parse, resolve) over every
//! legal move of random games and of random positions with stacked pieces.
mod common;

use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use xiangqi::notation::{Chinese, ParseChineseError, ParseWxfError, ResolveError, Wxf};
use xiangqi::{Color, File, Move, Piece, PieceKind, Position, Rank, Setup, Square};

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

fn sq(name: &str) -> Square {
    let b = name.as_bytes();
    Square::new(File::from_char(b[0] as char).unwrap(), Rank::new(b[1] - b'0').unwrap())
}

fn mv(text: &str) -> Move {
    text.parse().unwrap()
}

/// A position from FEN letters on named points, e.g. `[('K', "f0"), ('k', "d9")]`.
fn position(pieces: &[(char, &str)], turn: Color) -> Position {
    let mut board = [None; 90];
    for &(c, name) in pieces {
        let square = sq(name);
        assert!(board[square.index()].is_none(), "{name} placed twice");
        board[square.index()] = Some(Piece::from_fen_char(c).unwrap());
    }
    Position::from_setup(&Setup { board, turn, halfmove_clock: 0, fullmoves: 1 }).unwrap()
}

/// Asserts that `coord` prints as `wxf` and `chinese` in `pos`, and that both texts resolve back.
#[track_caller]
fn check(pos: &Position, coord: &str, wxf: &str, chinese: &str) {
    let m = mv(coord);
    assert_eq!(Wxf::from_move(pos, m).unwrap().to_string(), wxf, "WXF of {coord} in {pos}");
    assert_eq!(Chinese::from_move(pos, m).unwrap().to_string(), chinese, "Chinese of {coord} in {pos}");
    assert_eq!(wxf.parse::<Wxf>().unwrap().resolve(pos), Ok(m), "{wxf} in {pos}");
    assert_eq!(chinese.parse::<Chinese>().unwrap().resolve(pos), Ok(m), "{chinese} in {pos}");
}

#[track_caller]
fn wxf_resolves(pos: &Position, text: &str) -> Result<Move, ResolveError> {
    text.parse::<Wxf>().unwrap().resolve(pos)
}

#[track_caller]
fn chinese_resolves(pos: &Position, text: &str) -> Result<Move, ResolveError> {
    text.parse::<Chinese>().unwrap().resolve(pos)
}

fn after(moves: &[&str]) -> Position {
    let mut pos = Position::startpos();
    for m in moves {
        pos.play(mv(m)).unwrap();
    }
    pos
}

// ---------------------------------------------------------------------------------------------
// Fixed examples
// ---------------------------------------------------------------------------------------------

/// The opening moves from the CXA rules' example record (炮二平五 马8进7 马二进三 车9平8 车一平二
/// 炮8进4), with files counted from each mover's right.
#[test]
fn rules_example_record_from_the_start() {
    let record = [
        ("h2e2", "C2.5", "炮二平五"),
        ("h9g7", "H8+7", "马8进7"),
        ("h0g2", "H2+3", "马二进三"),
        ("i9h9", "R9.8", "车9平8"),
        ("i0h0", "R1.2", "车一平二"),
        ("h7h3", "C8+4", "炮8进4"),
    ];
    let mut pos = Position::startpos();
    for (coord, wxf, chinese) in record {
        check(&pos, coord, wxf, chinese);
        pos.play(mv(coord)).unwrap();
    }
}

/// 马二进三 is h0g2 for Red; Black's 马8进7 (after 炮二平五) is h9g7: each side counts from its right.
#[test]
fn files_count_from_the_movers_right() {
    let start = Position::startpos();
    check(&start, "h0g2", "H2+3", "马二进三");
    check(&start, "b0c2", "H8+7", "马八进七");
    check(&start, "h2e2", "C2.5", "炮二平五");
    let pos = after(&["h2e2"]);
    check(&pos, "h9g7", "H8+7", "马8进7");
    check(&pos, "b9c7", "H2+3", "马2进3");
    check(&pos, "b7e7", "C2.5", "炮2平5");
    check(&pos, "h7e7", "C8.5", "炮8平5");
}

/// Straight movers give ranks moved forward/back; diagonal movers give the target file; kings,
/// advisors, elephants and pawns use their own characters per side.
#[test]
fn steps_for_straight_movers_files_for_diagonal_movers() {
    let start = Position::startpos();
    check(&start, "i0i2", "R1+2", "车一进二");
    check(&start, "b2b9", "C8+7", "炮八进七");
    check(&start, "b2b1", "C8-1", "炮八退一");
    check(&start, "e0e1", "K5+1", "帅五进一");
    check(&start, "f0e1", "A4+5", "仕四进五");
    check(&start, "d0e1", "A6+5", "仕六进五");
    check(&start, "g0e2", "E3+5", "相三进五");
    check(&start, "c0a2", "E7+9", "相七进九");
    check(&start, "e3e4", "P5+1", "兵五进一");
    let black = after(&["h2e2"]);
    check(&black, "e9e8", "K5+1", "将5进1");
    check(&black, "d9e8", "A4+5", "士4进5");
    check(&black, "c9e7", "E3+5", "象3进5");
    check(&black, "c6c5", "P3+1", "卒3进1");
    check(&black, "a9a7", "R1+2", "车1进2");
    // Black going back: the cannon on b7 retreats one rank towards its own back rank.
    check(&black, "b7b8", "C2-1", "炮2退1");
}

/// Two rooks or horses on one file: WXF replaces the file by `+`/`-`, Chinese writes 前/后 (the
/// CXA rules' examples 前马退四, 后车平六).
#[test]
fn two_like_pieces_on_a_file_are_front_and_rear() {
    let pos = position(
        &[('K', "f0"), ('k', "d9"), ('R', "h3"), ('R', "h7"), ('N', "c2"), ('N', "c4"), ('C', "a2"), ('C', "a5")],
        Color::Red,
    );
    check(&pos, "h7d7", "R+.6", "前车平六");
    check(&pos, "h3d3", "R-.6", "后车平六");
    check(&pos, "h3h5", "R-+2", "后车进二");
    check(&pos, "h7h9", "R++2", "前车进二");
    check(&pos, "c4d6", "H++6", "前马进六");
    check(&pos, "c4d2", "H+-6", "前马退六");
    check(&pos, "c2b0", "H--8", "后马退八");
    check(&pos, "a5a4", "C+-1", "前炮退一");
    check(&pos, "a2a1", "C--1", "后炮退一");
}

/// The same for Black, whose front piece is the one on the lower rank.
#[test]
fn black_front_is_towards_red() {
    let pos = position(&[('K', "f0"), ('k', "d9"), ('r', "b8"), ('r', "b3"), ('n', "g9"), ('n', "g6")], Color::Black);
    check(&pos, "b3d3", "R+.4", "前车平4");
    check(&pos, "b8b5", "R-+3", "后车进3");
    check(&pos, "g6f4", "H++6", "前马进6");
    check(&pos, "g9h7", "H-+8", "后马进8");
}

/// Three pawns on a file: WXF `P+`, plain `P3` for the middle one, `P-`; Chinese 前兵 中兵 后兵.
#[test]
fn three_pawns_on_a_file_are_front_middle_rear() {
    let pos = position(&[('K', "f0"), ('k', "d9"), ('P', "g5"), ('P', "g6"), ('P', "g7")], Color::Red);
    check(&pos, "g7f7", "P+.4", "前兵平四");
    check(&pos, "g6f6", "P3.4", "中兵平四");
    check(&pos, "g5f5", "P-.4", "后兵平四");
    check(&pos, "g7g8", "P++1", "前兵进一");
    check(&pos, "g6h6", "P3.2", "中兵平二");
    let black = position(&[('K', "f0"), ('k', "d9"), ('p', "c2"), ('p', "c3"), ('p', "c4")], Color::Black);
    check(&black, "c2d2", "P+.4", "前卒平4");
    check(&black, "c3d3", "P3.4", "中卒平4");
    check(&black, "c4d4", "P-.4", "后卒平4");
}

/// Four pawns on a file: WXF `++`, `P+`, `P-`, `--`; Chinese counts from the front 一兵..四兵.
#[test]
fn four_pawns_on_a_file_are_counted_from_the_front() {
    let pos = position(&[('K', "f0"), ('k', "d9"), ('P', "g5"), ('P', "g6"), ('P', "g7"), ('P', "g8")], Color::Red);
    check(&pos, "g8f8", "++.4", "一兵平四");
    check(&pos, "g7f7", "P+.4", "二兵平四");
    check(&pos, "g6f6", "P-.4", "三兵平四");
    check(&pos, "g5f5", "--.4", "四兵平四");
    check(&pos, "g8g9", "+++1", "一兵进一");
}

/// Five pawns on a file: `++`, `P+`, `P3` (middle), `P-`, `--` (the WXF page's example);
/// Chinese 一兵..五兵, Black writing digits 1卒..5卒.
#[test]
fn five_pawns_on_a_file() {
    let pawns = [('P', "g5"), ('P', "g6"), ('P', "g7"), ('P', "g8"), ('P', "g9")];
    let pos = position(&[&[('K', "f0"), ('k', "d9")][..], &pawns].concat(), Color::Red);
    check(&pos, "g9f9", "++.4", "一兵平四");
    check(&pos, "g8f8", "P+.4", "二兵平四");
    check(&pos, "g7f7", "P3.4", "三兵平四");
    check(&pos, "g6f6", "P-.4", "四兵平四");
    check(&pos, "g5f5", "--.4", "五兵平四");
    let black = position(
        &[('K', "f0"), ('k', "d9"), ('p', "c0"), ('p', "c1"), ('p', "c2"), ('p', "c3"), ('p', "c4")],
        Color::Black,
    );
    check(&black, "c0b0", "++.2", "1卒平2");
    check(&black, "c2b2", "P3.2", "3卒平2");
    check(&black, "c4b4", "--.2", "5卒平2");
}

/// Pawns stacked on two files: WXF writes the file instead of `P` (`3+.4`, `33.4`, `3-.4`,
/// `7+.6`, `7-.6`, the WXF page's example), Chinese writes the file instead of 兵 (前三平四).
#[test]
fn pawns_stacked_on_two_files_name_the_file() {
    let pos = position(
        &[('K', "f0"), ('k', "d9"), ('P', "g5"), ('P', "g6"), ('P', "g7"), ('P', "c5"), ('P', "c6")],
        Color::Red,
    );
    check(&pos, "g7f7", "3+.4", "前三平四");
    check(&pos, "g6f6", "33.4", "中三平四");
    check(&pos, "g5f5", "3-.4", "后三平四");
    check(&pos, "c6d6", "7+.6", "前七平六");
    check(&pos, "c5d5", "7-.6", "后七平六");
    check(&pos, "c6c7", "7++1", "前七进一");
    // Two files of two pawns each, for Black.
    let black = position(&[('K', "f0"), ('k', "d9"), ('p', "c3"), ('p', "c4"), ('p', "g3"), ('p', "g4")], Color::Black);
    check(&black, "c3d3", "3+.4", "前3平4");
    check(&black, "c4d4", "3-.4", "后3平4");
    check(&black, "g4f4", "7-.6", "后7平6");
    check(&black, "g3g2", "7++1", "前7进1");
    // A lone pawn next to two stacks keeps the plain form.
    let lone = position(
        &[('K', "f0"), ('k', "d9"), ('P', "g5"), ('P', "g6"), ('P', "c5"), ('P', "c6"), ('P', "e6")],
        Color::Red,
    );
    check(&lone, "e6d6", "P5.6", "兵五平六");
}

/// Advisors and elephants sharing a file keep their file: the direction tells them apart.
#[test]
fn advisors_and_elephants_are_named_by_file_even_when_stacked() {
    let pos = position(&[('K', "f1"), ('k', "d9"), ('A', "d0"), ('A', "d2"), ('B', "c0"), ('B', "c4")], Color::Red);
    check(&pos, "d0e1", "A6+5", "仕六进五");
    check(&pos, "d2e1", "A6-5", "仕六退五");
    check(&pos, "c0e2", "E7+5", "相七进五");
    check(&pos, "c4e2", "E7-5", "相七退五");
    check(&pos, "c4a2", "E7-9", "相七退九");
    check(&pos, "c0a2", "E7+9", "相七进九");
    // 前/后 and +/- are still understood.
    assert_eq!(wxf_resolves(&pos, "A-+5"), Ok(mv("d0e1")));
    assert_eq!(chinese_resolves(&pos, "前相退五"), Ok(mv("c4e2")));
    let black = position(&[('K', "f0"), ('k', "d8"), ('a', "f9"), ('a', "f7")], Color::Black);
    check(&black, "f9e8", "A6+5", "士6进5");
    check(&black, "f7e8", "A6-5", "士6退5");
}

// ---------------------------------------------------------------------------------------------
// Reading variants
// ---------------------------------------------------------------------------------------------

/// Traditional and variant characters, full-width digits, and either side's piece characters
/// are read; printing uses the simplified standard.
#[test]
fn chinese_reads_traditional_and_variant_characters() {
    let start = Position::startpos();
    for text in ["傌二進三", "馬二进三", "马二進三"] {
        assert_eq!(chinese_resolves(&start, text), Ok(mv("h0g2")), "{text}");
        assert_eq!(text.parse::<Chinese>().unwrap().to_string(), "马二进三");
    }
    assert_eq!(chinese_resolves(&start, "俥一進一"), Ok(mv("i0i1")));
    assert_eq!(chinese_resolves(&start, "車一进一"), Ok(mv("i0i1")));
    assert_eq!(chinese_resolves(&start, "砲二平五"), Ok(mv("h2e2")));
    assert_eq!(chinese_resolves(&start, "帥五進一"), Ok(mv("e0e1")));
    assert_eq!(chinese_resolves(&start, "士四进五"), Ok(mv("f0e1")));
    assert_eq!(chinese_resolves(&start, "象三进五"), Ok(mv("g0e2")));
    assert_eq!(chinese_resolves(&start, "卒五进一"), Ok(mv("e3e4")));
    let black = after(&["h2e2"]);
    for text in ["馬８進７", "马8进７", "馬8進7"] {
        assert_eq!(chinese_resolves(&black, text), Ok(mv("h9g7")), "{text}");
        assert_eq!(text.parse::<Chinese>().unwrap().to_string(), "马8进7");
    }
    assert_eq!(chinese_resolves(&black, "將5進1"), Ok(mv("e9e8")));
    assert_eq!(chinese_resolves(&black, "砲２平５"), Ok(mv("b7e7")));
    assert_eq!(chinese_resolves(&black, "兵3进1"), Ok(mv("c6c5")));
    let rooks = position(&[('K', "f0"), ('k', "d9"), ('R', "h3"), ('R', "h7")], Color::Red);
    assert_eq!(chinese_resolves(&rooks, "後俥平六"), Ok(mv("h3d3")));
}

/// `=` for sideways and lower-case letters, `B`/`N` for elephant/horse are read; printing is canonical.
#[test]
fn wxf_reads_variant_spellings() {
    let start = Position::startpos();
    for (text, coord) in [("C2=5", "h2e2"), ("c2.5", "h2e2"), ("N2+3", "h0g2"), ("h2+3", "h0g2"), ("B3+5", "g0e2")] {
        assert_eq!(wxf_resolves(&start, text), Ok(mv(coord)), "{text}");
    }
    assert_eq!("c2=5".parse::<Wxf>().unwrap().to_string(), "C2.5");
    assert_eq!("n2+3".parse::<Wxf>().unwrap().to_string(), "H2+3");
    assert_eq!("b3+5".parse::<Wxf>().unwrap().to_string(), "E3+5");
}

/// A file digit (or a Chinese file) for one of two stacked pieces is accepted when only one of them
/// can make the move; `++`/`--`, 前/后 and ordinals work for two or three pawns; the five-character
/// 前兵七进一 names the file and the pawn.
#[test]
fn lenient_forms_that_still_name_one_move() {
    let pos = position(&[('K', "f0"), ('k', "d9"), ('R', "h3"), ('R', "h7"), ('P', "g7")], Color::Red);
    assert_eq!(wxf_resolves(&pos, "R2.3"), Ok(mv("h3g3")));
    assert_eq!(chinese_resolves(&pos, "车二平三"), Ok(mv("h3g3")));
    let pawns = position(
        &[('K', "f0"), ('k', "d9"), ('P', "g5"), ('P', "g6"), ('P', "g7"), ('P', "c5"), ('P', "c6")],
        Color::Red,
    );
    assert_eq!(chinese_resolves(&pawns, "前兵三平四"), Ok(mv("g7f7")));
    assert_eq!(chinese_resolves(&pawns, "中兵三平四"), Ok(mv("g6f6")));
    assert_eq!(chinese_resolves(&pawns, "后兵七平六"), Ok(mv("c5d5")));
    // Sign before the letter, as some older English texts write it.
    assert_eq!(wxf_resolves(&pos, "+R+1"), Ok(mv("h7h8")));
    assert_eq!(wxf_resolves(&pos, "-r+2"), Ok(mv("h3h5")));
    assert_eq!("+R+1".parse::<Wxf>().unwrap().to_string(), "R++1");
    let three = position(&[('K', "f0"), ('k', "d9"), ('P', "g5"), ('P', "g6"), ('P', "g7")], Color::Red);
    assert_eq!(wxf_resolves(&three, "++.4"), Ok(mv("g7f7")));
    assert_eq!(wxf_resolves(&three, "--.4"), Ok(mv("g5f5")));
    assert_eq!(wxf_resolves(&three, "3+.4"), Ok(mv("g7f7")));
    assert_eq!(wxf_resolves(&three, "33.4"), Ok(mv("g6f6")));
    assert_eq!(chinese_resolves(&three, "二兵平四"), Ok(mv("g6f6")));
    assert_eq!(chinese_resolves(&three, "三兵平四"), Ok(mv("g5f5")));
    let five = position(
        &[('K', "f0"), ('k', "d9"), ('P', "g5"), ('P', "g6"), ('P', "g7"), ('P', "g8"), ('P', "g9")],
        Color::Red,
    );
    assert_eq!(chinese_resolves(&five, "前兵平四"), Ok(mv("g9f9")));
    assert_eq!(chinese_resolves(&five, "中兵平四"), Ok(mv("g7f7")));
    assert_eq!(chinese_resolves(&five, "后兵平四"), Ok(mv("g5f5")));
}

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

/// Each malformed WXF text gets the error that names what is wrong.
#[test]
fn wxf_parse_errors_say_what_is_wrong() {
    let err = |s: &str| s.parse::<Wxf>().unwrap_err();
    assert!(matches!(err(""), ParseWxfError::Length(_)));
    assert!(matches!(err("C2.55"), ParseWxfError::Length(_)));
    assert!(matches!(err("C2."), ParseWxfError::Length(_)));
    assert!(matches!(err("X2.5"), ParseWxfError::Piece { found: 'X', .. }));
    assert!(matches!(err("炮2.5"), ParseWxfError::Piece { found: '炮', .. }));
    assert!(matches!(err("C0.5"), ParseWxfError::Which { .. }));
    assert!(matches!(err("+-.4"), ParseWxfError::Which { .. }));
    assert!(matches!(err("+X.4"), ParseWxfError::Which { .. }));
    assert!(matches!(err("34.4"), ParseWxfError::Which { .. }));
    assert!(matches!(err("3x.4"), ParseWxfError::Which { .. }));
    assert!(matches!(err("C2*5"), ParseWxfError::Direction { found: '*', .. }));
    assert!(matches!(err("C2.0"), ParseWxfError::Number { found: '0', .. }));
    assert!(matches!(err("C2.５"), ParseWxfError::Number { found: '５', .. }));
    assert!(matches!(err("H2.3"), ParseWxfError::Impossible { kind: PieceKind::Horse, backward: false, .. }));
    assert!(matches!(err("P3-1"), ParseWxfError::Impossible { kind: PieceKind::Pawn, backward: true, .. }));
    assert!(matches!(err("++-1"), ParseWxfError::Impossible { kind: PieceKind::Pawn, backward: true, .. }));
    assert_eq!(err("X2.5").to_string(), "bad WXF move \"X2.5\": 'X' is not a piece letter (K A E H R C P)");
}

/// Each malformed Chinese text gets the error that names what is wrong.
#[test]
fn chinese_parse_errors_say_what_is_wrong() {
    let err = |s: &str| s.parse::<Chinese>().unwrap_err();
    assert!(matches!(err(""), ParseChineseError::Length(_)));
    assert!(matches!(err("炮二平"), ParseChineseError::Length(_)));
    assert!(matches!(err("炮二平五五五"), ParseChineseError::Length(_)));
    assert!(matches!(err("C2.5"), ParseChineseError::Piece { found: 'C', .. }));
    assert!(matches!(err("王二平五"), ParseChineseError::Piece { found: '王', .. }));
    assert!(matches!(err("炮十平五"), ParseChineseError::Number { found: '十', .. }));
    assert!(matches!(err("炮二平十"), ParseChineseError::Number { found: '十', .. }));
    assert!(matches!(err("炮0平5"), ParseChineseError::Number { found: '0', .. }));
    assert!(matches!(err("前前进一"), ParseChineseError::Which { .. }));
    assert!(matches!(err("炮二平五五"), ParseChineseError::Which { .. }));
    assert!(matches!(err("炮二走五"), ParseChineseError::Direction { found: '走', .. }));
    assert!(matches!(err("炮二平5"), ParseChineseError::MixedNumerals(_)));
    assert!(matches!(err("前七进1"), ParseChineseError::MixedNumerals(_)));
    assert!(matches!(err("马二平三"), ParseChineseError::Impossible { kind: PieceKind::Horse, backward: false, .. }));
    assert!(matches!(err("兵七退一"), ParseChineseError::Impossible { kind: PieceKind::Pawn, backward: true, .. }));
    assert!(matches!(err("相三平五"), ParseChineseError::Impossible { kind: PieceKind::Elephant, .. }));
}

/// Resolving fails precisely: no such piece, a move the piece cannot make, an illegal move,
/// an ambiguous description, or a Chinese move written for the other side.
#[test]
fn resolve_errors() {
    let start = Position::startpos();
    let red = Color::Red;
    assert_eq!(wxf_resolves(&start, "C3.5"), Err(ResolveError::NoSuchPiece { color: red, kind: PieceKind::Cannon }));
    assert_eq!(wxf_resolves(&start, "R+.3"), Err(ResolveError::NoSuchPiece { color: red, kind: PieceKind::Rook }));
    assert_eq!(wxf_resolves(&start, "++.4"), Err(ResolveError::NoSuchPiece { color: red, kind: PieceKind::Pawn }));
    assert_eq!(
        chinese_resolves(&start, "前炮平五"),
        Err(ResolveError::NoSuchPiece { color: red, kind: PieceKind::Cannon })
    );
    assert_eq!(wxf_resolves(&start, "H2+5"), Err(ResolveError::Unreachable { color: red, kind: PieceKind::Horse }));
    assert_eq!(wxf_resolves(&start, "C2+9"), Err(ResolveError::Unreachable { color: red, kind: PieceKind::Cannon }));
    assert_eq!(wxf_resolves(&start, "C2.2"), Err(ResolveError::Unreachable { color: red, kind: PieceKind::Cannon }));
    assert_eq!(wxf_resolves(&start, "E3+4"), Err(ResolveError::Unreachable { color: red, kind: PieceKind::Elephant }));
    assert_eq!(wxf_resolves(&start, "R1+9"), Err(ResolveError::Illegal(mv("i0i9"))));
    assert_eq!(wxf_resolves(&start, "K5-1"), Err(ResolveError::Unreachable { color: red, kind: PieceKind::King }));
    assert_eq!(wxf_resolves(&start, "K5.4"), Err(ResolveError::Illegal(mv("e0f0"))));
    assert_eq!(
        chinese_resolves(&start, "马8进7"),
        Err(ResolveError::WrongSide { written: Color::Black, to_move: Color::Red })
    );
    // Two rooks on one file that can both go to file 6: the file digit does not say which.
    let rooks = position(&[('K', "f0"), ('k', "d9"), ('R', "h3"), ('R', "h7")], Color::Red);
    assert_eq!(wxf_resolves(&rooks, "R2.6"), Err(ResolveError::Ambiguous(vec![mv("h7d7"), mv("h3d3")])));
    assert_eq!(chinese_resolves(&rooks, "车二平六"), Err(ResolveError::Ambiguous(vec![mv("h7d7"), mv("h3d3")])));
    // Two pawn stacks: 前兵 does not say which file.
    let pawns = position(&[('K', "f0"), ('k', "d9"), ('P', "g5"), ('P', "g6"), ('P', "c5"), ('P', "c6")], red);
    assert!(matches!(chinese_resolves(&pawns, "前兵进一"), Err(ResolveError::Ambiguous(v)) if v.len() == 2));
    // P+ fits both front pawns, but only the one on file 3 can step sideways to file 4.
    assert_eq!(wxf_resolves(&pawns, "P+.4"), Ok(mv("g6f6")));
    // No middle pawn among two.
    assert_eq!(
        chinese_resolves(&pawns, "中兵平四"),
        Err(ResolveError::NoSuchPiece { color: red, kind: PieceKind::Pawn })
    );
    assert_eq!(wxf_resolves(&pawns, "33.4"), Err(ResolveError::NoSuchPiece { color: red, kind: PieceKind::Pawn }));
    // from_move refuses illegal moves.
    assert!(Wxf::from_move(&start, mv("a0a5")).is_err());
    assert!(Chinese::from_move(&start, mv("e5e6")).is_err());
    // Error messages read well.
    assert_eq!(
        ResolveError::Ambiguous(vec![mv("h7d7"), mv("h3d3")]).to_string(),
        "ambiguous: the description fits the legal moves h7d7, h3d3"
    );
    assert_eq!(
        ResolveError::NoSuchPiece { color: red, kind: PieceKind::Cannon }.to_string(),
        "no red cannon fits the description"
    );
}

proptest! {
    /// The parsers never panic, whatever the text (notation characters, ASCII or any Unicode).
    #[test]
    fn parsers_never_panic(s in "[KAEHRCPBN0-9+\\-.=xX 帅帥将將仕士相象马馬傌车車俥炮砲兵卒前中后後一二三四五六七八九十１２３４５６７８９进進退平]{0,7}") {
        let _ = s.parse::<Wxf>();
        let _ = s.parse::<Chinese>();
    }

    /// The parsers never panic on arbitrary Unicode text either, and what parses prints and re-parses
    /// to the same value.
    #[test]
    fn parsed_values_reprint_stably(s in "\\PC{0,6}") {
        if let Ok(w) = s.parse::<Wxf>() {
            prop_assert_eq!(w.to_string().parse::<Wxf>(), Ok(w));
        }
        if let Ok(c) = s.parse::<Chinese>() {
            prop_assert_eq!(c.to_string().parse::<Chinese>(), Ok(c));
        }
    }
}

/// Every parseable text over a small alphabet resolves without panicking in a position with stacked
/// pieces, and whatever it resolves to prints back to a text that resolves to the same move.
#[test]
fn every_short_text_resolves_consistently() {
    let pos = position(
        &[
            ('K', "f0"),
            ('k', "d9"),
            ('P', "g5"),
            ('P', "g6"),
            ('P', "g7"),
            ('P', "c5"),
            ('P', "c6"),
            ('R', "h3"),
            ('R', "h7"),
        ],
        Color::Red,
    );
    let alphabet = ['R', 'P', '1', '2', '3', '4', '6', '7', '+', '-', '.'];
    let mut resolved = 0;
    for a in alphabet {
        for b in alphabet {
            for c in alphabet {
                for d in alphabet {
                    let text: String = [a, b, c, d].iter().collect();
                    let Ok(w) = text.parse::<Wxf>() else { continue };
                    if let Ok(m) = w.resolve(&pos) {
                        resolved += 1;
                        let printed = Wxf::from_move(&pos, m).unwrap();
                        assert_eq!(printed.resolve(&pos), Ok(m), "{text} -> {m} -> {printed}");
                    }
                }
            }
        }
    }
    assert!(resolved >= 40, "only {resolved} texts resolved");
}

// ---------------------------------------------------------------------------------------------
// Round trips
// ---------------------------------------------------------------------------------------------

/// Prints `m` in both notations, re-parses the text, and checks it resolves to `m`.
fn round_trip(pos: &Position, m: Move) {
    let wxf = Wxf::from_move(pos, m).unwrap();
    let text = wxf.to_string();
    let parsed: Wxf = text.parse().unwrap_or_else(|e| panic!("{text} from {m} in {pos}: {e}"));
    assert_eq!(parsed, wxf, "{text}");
    assert_eq!(parsed.resolve(pos), Ok(m), "{text} in {pos}");
    let chinese = Chinese::from_move(pos, m).unwrap();
    let text = chinese.to_string();
    let parsed: Chinese = text.parse().unwrap_or_else(|e| panic!("{text} from {m} in {pos}: {e}"));
    assert_eq!(parsed, chinese, "{text}");
    assert_eq!(parsed.color(), pos.turn());
    assert_eq!(parsed.resolve(pos), Ok(m), "{text} in {pos}");
}

/// Every legal move of every position of 300 random games prints in WXF and Chinese, re-parses to
/// the same value and resolves back to the move.
#[test]
fn round_trip_every_legal_move_of_random_games() {
    let mut moves = 0;
    for game in common::random_games(0x5eed_0007, 300, 200) {
        for (pos, _) in game.positions() {
            for &m in pos.legal_moves().iter() {
                round_trip(&pos, m);
                moves += 1;
            }
        }
    }
    eprintln!("round trip: {moves} moves of 300 random games");
    assert!(moves > 100_000, "only {moves} moves checked");
}

fn put(board: &mut [Option<Piece>; 90], piece: Piece, file: u8, rank: u8) -> bool {
    let s = Square::new(File::new(file).unwrap(), Rank::new(rank).unwrap());
    if board[s.index()].is_some() {
        return false;
    }
    board[s.index()] = Some(piece);
    true
}

/// A random legal position where like pieces often share files: up to five pawns per side, often
/// crowded onto one or two files, pairs of rooks, horses and cannons often stacked, advisors and
/// elephants on their points.
fn random_stacked_position(rng: &mut ChaCha8Rng) -> Option<Position> {
    let mut board: [Option<Piece>; 90] = [None; 90];
    // The rank seen from Red of a rank counted from `color`'s side.
    let abs = |color: Color, r: u8| if color == Color::Red { r } else { 9 - r };
    for color in Color::ALL {
        let king = Piece::new(color, PieceKind::King);
        put(&mut board, king, rng.random_range(3..=5), abs(color, rng.random_range(0..=2)));
    }
    for color in Color::ALL {
        let piece = |kind| Piece::new(color, kind);
        // 0: pawns anywhere, 1: crowded onto one file, 2: onto two files.
        let mode = rng.random_range(0..3);
        let files = [rng.random_range(0..9u8), rng.random_range(0..9u8)];
        for _ in 0..rng.random_range(0..=5) {
            for _ in 0..30 {
                let file = match mode {
                    1 if rng.random_bool(0.9) => files[0],
                    2 if rng.random_bool(0.9) => files[rng.random_range(0..2)],
                    _ => rng.random_range(0..9),
                };
                let rank = rng.random_range(3..=9u8);
                if rank < 5 && file % 2 == 1 {
                    continue;
                }
                if put(&mut board, piece(PieceKind::Pawn), file, abs(color, rank)) {
                    break;
                }
            }
        }
        for kind in [PieceKind::Rook, PieceKind::Horse, PieceKind::Cannon] {
            let file = rng.random_range(0..9u8);
            for _ in 0..rng.random_range(0..=2) {
                let f = if rng.random_bool(0.6) { file } else { rng.random_range(0..9) };
                put(&mut board, piece(kind), f, rng.random_range(0..10));
            }
        }
        let advisor_points = [(3, 0), (5, 0), (4, 1), (3, 2), (5, 2)];
        let elephant_points = [(2, 0), (6, 0), (0, 2), (4, 2), (8, 2), (2, 4), (6, 4)];
        for (kind, points) in [(PieceKind::Advisor, &advisor_points[..]), (PieceKind::Elephant, &elephant_points[..])] {
            for _ in 0..rng.random_range(0..=2) {
                let (f, r) = points[rng.random_range(0..points.len())];
                put(&mut board, piece(kind), f, abs(color, r));
            }
        }
    }
    let turn = if rng.random_bool(0.5) { Color::Red } else { Color::Black };
    Position::from_setup(&Setup { board, turn, halfmove_clock: 0, fullmoves: 1 }).ok()
}

/// Every legal move of 4000 random positions with stacked pieces round-trips through both
/// notations; the sample must cover three, four and five pawns on a file and two stacked files.
#[test]
fn round_trip_every_legal_move_of_stacked_positions() {
    let mut rng = ChaCha8Rng::seed_from_u64(0x057a_c4ed);
    let (mut positions, mut moves) = (0, 0);
    let mut seen = std::collections::HashSet::new();
    while positions < 4000 {
        let Some(pos) = random_stacked_position(&mut rng) else { continue };
        positions += 1;
        for &m in pos.legal_moves().iter() {
            round_trip(&pos, m);
            moves += 1;
            let chinese = Chinese::from_move(&pos, m).unwrap().to_string();
            let wxf = Wxf::from_move(&pos, m).unwrap().to_string();
            let first = chinese.chars().next().unwrap();
            let wxf_head: String = wxf.chars().take(2).collect();
            if "中一二三四五12345".contains(first) && !"一二三四五".contains(chinese.chars().nth(1).unwrap())
            {
                seen.insert(format!("ordinal {first}"));
            }
            if wxf_head == "++" || wxf_head == "--" {
                seen.insert("wxf extreme".to_string());
            }
            if wxf.starts_with(|c: char| c.is_ascii_digit()) {
                seen.insert("wxf pawn file".to_string());
            }
        }
    }
    for label in ["ordinal 中", "ordinal 四", "ordinal 五", "ordinal 4", "ordinal 5", "wxf extreme", "wxf pawn file"]
    {
        assert!(seen.contains(label), "no move of kind {label:?} in the sample: {seen:?}");
    }
    eprintln!("round trip: {moves} moves of {positions} stacked positions; seen {seen:?}");
    assert!(moves > 50_000, "only {moves} moves checked");
}
