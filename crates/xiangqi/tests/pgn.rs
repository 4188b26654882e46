//! Reading PGN: games in each notation, the movetext conventions, broken games reported with
//! their line and skipped, the size limit, and round trips through the project's own writer.
mod common;

use proptest::prelude::*;
use xiangqi::Position;
use xiangqi::notation::{MoveNotation, PgnErrorKind, PgnGame, PgnReader, PgnResult, ResolvedGame, pgn};

/// Every game of `text`: resolved, or the error's line and message.
fn read(text: &str) -> Vec<Result<ResolvedGame, (usize, String)>> {
    PgnReader::new(text.as_bytes())
        .map(|game| game.and_then(|g| g.resolve()).map_err(|e| (e.line, e.kind.to_string())))
        .collect()
}

fn coords(game: &ResolvedGame) -> String {
    game.moves.iter().map(|m| m.to_string()).collect::<Vec<_>>().join(" ")
}

#[test]
fn the_same_game_reads_in_each_notation() {
    let games = [
        "[Game \"Chinese Chess\"]\n[Format \"ICCS\"]\n[Result \"1-0\"]\n\n1. H2-E2 H9-G7\n2. H0-G2 1-0\n",
        "[Format \"WXF\"]\n\n1. C2.5 H8+7 2. H2+3 1-0\n",
        "[Format \"Chinese\"]\n\n1. 炮二平五 马8进7 2. 马二进三 1-0\n",
        // No [Format]: the first move tells.
        "[Event \"x\"]\n\n1. h2e2 h9g7 2. h0g2 1-0\n",
        "[Event \"x\"]\n\n1. C2.5 H8+7 2. H2+3 1-0\n",
        "[Event \"x\"]\n\n1. 炮二平五 馬８進７ 2. 马二进三 1-0\n",
    ];
    for text in games {
        let read = read(text);
        assert_eq!(read.len(), 1, "{text}");
        let game = read[0].as_ref().unwrap_or_else(|e| panic!("{text}: {e:?}"));
        assert_eq!(coords(game), "h2e2 h9g7 h0g2", "{text}");
        assert_eq!(game.result, PgnResult::RedWin);
        assert_eq!(game.start, Position::startpos());
    }
}

#[test]
fn movetext_conventions_are_read_and_skipped() {
    let text = "\u{feff}[Game \"Chinese Chess\"]\r\n[Red \"A \\\"quoted\\\" name\"]\r\n\r\n\
% an escaped line\n\
1.h2e2 {a comment\nover two lines (with a paren)} h9g7! ; the rest of the line 1. a0a1\n\
( 1... h7e7 (1... b9c7 {nested}) 2. h0g2 ) $14\n\
2. h0g2?! 2... i9h9 3. … i0h0\n\
1/2-1/2\n";
    let games: Vec<PgnGame> = PgnReader::new(text.as_bytes()).map(Result::unwrap).collect();
    assert_eq!(games.len(), 1);
    assert_eq!(games[0].tag("Red"), Some("A \"quoted\" name"));
    assert_eq!(games[0].line, 1);
    let texts: Vec<(&str, usize)> = games[0].moves.iter().map(|m| (m.text.as_str(), m.line)).collect();
    assert_eq!(texts, [("h2e2", 5), ("h9g7", 6), ("h0g2", 8), ("i9h9", 8), ("i0h0", 8)]);
    let game = games[0].resolve().unwrap();
    assert_eq!(game.result, PgnResult::Draw);
}

#[test]
fn a_fen_tag_sets_the_start_and_the_result_tag_stands_in_for_a_missing_terminator() {
    let fen = "4k4/9/9/9/9/9/9/9/R8/3K5 w - - 0 1";
    let text = format!("[FEN \"{fen}\"]\n[Result \"0-1\"]\n\n1. a1a2\n");
    let game = read(&text).remove(0).unwrap();
    assert_eq!(game.start, Position::from_fen(fen).unwrap());
    assert_eq!(coords(&game), "a1a2");
    assert_eq!(game.result, PgnResult::BlackWin);
    // No result anywhere: unknown, as `*`.
    assert_eq!(read("1. h2e2\n").remove(0).unwrap().result, PgnResult::Unknown);
}

#[test]
fn broken_games_are_reported_at_their_line_and_the_rest_is_read() {
    let text = "\
[Game \"Chinese Chess\"]\n\
\n\
1. h2e2 h9g7 2. h0g2 1-0\n\
\n\
[Game \"Chinese Chess\"]\n\
\n\
1. h2e2 h9g7\n\
2. h2h9 0-1\n\
\n\
[Game \"Chinese Chess\"\n\
\n\
1. h2e2 *\n\
\n\
[Format \"WXF\"]\n\
\n\
1. C2.5 H8+7 2. Q2+3 1-0\n\
\n\
[Format \"Chinese\"]\n\
1. 炮二平五 马2进5 1-0\n\
[Format \"DhtmlXQ\"]\n\
1. h2e2 1-0\n\
[Event \"no notation\"]\n\
1. xyz 1-0\n\
[Result \"1-0\"]\n\
1. h2e2 0-1\n\
[Game \"Chess\"]\n\
1. e2e4 1-0\n\
[Event \"open comment\"]\n\
1. h2e2 {never closed\n\
[Event \"last\"]\n\
1. b2e2 b9c7 1/2-1/2\n";
    let read = read(text);
    let errors: Vec<(usize, String)> = read.iter().filter_map(|r| r.as_ref().err().cloned()).collect();
    assert_eq!(
        errors,
        [
            (8, "ply 2, move \"h2h9\": illegal move h2h9 in this position".to_string()),
            (10, "bad tag \"[Game \\\"Chinese Chess\\\"\" (expected [Name \"value\"])".to_string()),
            (16, "move \"Q2+3\": bad WXF move \"Q2+3\": 'Q' is not a piece letter (K A E H R C P)".to_string()),
            (19, "ply 1, move \"马2进5\": no black horse that fits the description can move that way".to_string()),
            (20, "unknown notation [Format \"DhtmlXQ\"] (expected ICCS, WXF or Chinese)".to_string()),
            (23, "move \"xyz\" is not in ICCS, WXF or Chinese notation".to_string()),
            (25, "the result 0-1 contradicts [Result \"1-0\"]".to_string()),
            (26, "[Game \"Chess\"] is not Chinese Chess".to_string()),
            // The comment swallows the next tag line, so the two games are one.
            (29, "a {comment} is not closed before the end of the game".to_string()),
        ],
        "{read:?}"
    );
    let good: Vec<String> = read.iter().filter_map(|r| r.as_ref().ok()).map(coords).collect();
    assert_eq!(good, ["h2e2 h9g7 h0g2"]);
}

#[test]
fn a_game_over_the_limit_is_an_error_and_the_next_game_is_read() {
    let long = format!("[Event \"long\"]\n\n1. h2e2 {{{}}} h9g7 *\n", "x".repeat(5000));
    let text = format!("[Event \"short\"]\n\n1. h2e2 *\n\n{long}\n[Event \"after\"]\n\n1. b2e2 *\n");
    let results: Vec<_> = PgnReader::with_limit(text.as_bytes(), 1000).collect();
    assert_eq!(results.len(), 3);
    let err = results[1].as_ref().unwrap_err();
    assert_eq!(err.line, 5);
    assert!(matches!(err.kind, PgnErrorKind::TooLarge { limit: 1000 }));
    assert_eq!(err.to_string(), "line 5: the game is larger than 1000 bytes, the limit of one game");
    assert_eq!(results[2].as_ref().unwrap().moves[0].text, "b2e2");
}

#[test]
fn text_that_is_not_utf8_names_its_line() {
    let mut bytes = b"[Event \"gbk\"]\n\n1. ".to_vec();
    bytes.extend_from_slice(&[0xc5, 0xda, 0xb6, 0xfe]); // 炮二 in GBK
    bytes.extend_from_slice(b"\n[Event \"next\"]\n1. h2e2 *\n");
    let results: Vec<_> = PgnReader::new(&bytes[..]).collect();
    let err = results[0].as_ref().unwrap_err();
    assert_eq!((err.line, matches!(err.kind, PgnErrorKind::NotUtf8)), (3, true));
    assert!(results[1].is_ok());
}

/// Writes `game` with the project's writer in `notation`.
fn written(game: &common::RandomGame, notation: MoveNotation, result: &str) -> String {
    let tags = [("Result", result.to_string())];
    pgn(&tags, &game.start, &game.moves, notation, result, Some("{a} (comment)")).unwrap()
}

#[test]
fn random_games_written_in_every_notation_read_back() {
    let games = common::random_games(0x9e11, 60, 120);
    for notation in [MoveNotation::Iccs, MoveNotation::Wxf, MoveNotation::Chinese] {
        let text: String = games.iter().map(|g| written(g, notation, "1/2-1/2")).collect();
        let read: Vec<ResolvedGame> = PgnReader::new(text.as_bytes()).map(|g| g.unwrap().resolve().unwrap()).collect();
        assert_eq!(read.len(), games.len(), "{notation}");
        for (a, b) in games.iter().zip(&read) {
            assert_eq!((&a.start, &a.moves), (&b.start, &b.moves), "{notation}");
            assert_eq!(b.result, PgnResult::Draw);
        }
    }
}

proptest! {
    /// Writing then reading gives back the game, from any start a random game reaches.
    #[test]
    fn write_then_read_is_the_identity(seed in any::<u64>(), skip in 0usize..40, notation in 0usize..3) {
        let game = common::random_games(seed, 1, 80).remove(0);
        // Start from a later position of the game, so that the [FEN] tag is exercised too.
        let skip = skip.min(game.moves.len());
        let mut start = game.start.clone();
        for &mv in &game.moves[..skip] {
            start.play_unchecked(mv);
        }
        let tail = common::RandomGame { start, moves: game.moves[skip..].to_vec() };
        let notation = [MoveNotation::Iccs, MoveNotation::Wxf, MoveNotation::Chinese][notation];
        let text = written(&tail, notation, "0-1");
        let read: Vec<_> = PgnReader::new(text.as_bytes()).collect();
        prop_assert_eq!(read.len(), 1);
        let game = read[0].as_ref().unwrap().resolve().unwrap();
        prop_assert_eq!(&game.start, &tail.start);
        prop_assert_eq!(&game.moves, &tail.moves);
        prop_assert_eq!(game.result, PgnResult::BlackWin);
    }

    /// Arbitrary bytes never panic the reader, nor resolving what it read; every game is
    /// accounted for as a game or an error.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..600)) {
        // Errors end no reading: the reader goes on with the next game.
        for game in PgnReader::with_limit(&bytes[..], 256).flatten() {
            let _ = game.resolve();
        }
    }

    /// Nor do texts made of PGN's own pieces in any order.
    #[test]
    fn pgn_like_text_never_panics(
        parts in proptest::collection::vec(
            prop_oneof![
                Just("[Game \"Chinese Chess\"]\n"), Just("[FEN \"4k4/9/9/9/9/9/9/9/R8/3K5 w - - 0 1\"]\n"),
                Just("[Format \"WXF\"]\n"), Just("[Result \"*\"]\n"), Just("["), Just("]"), Just("\""),
                Just("{"), Just("}"), Just("("), Just(")"), Just(";"), Just("\n"), Just(" "), Just("1."),
                Just("1..."), Just("$3"), Just("h2e2"), Just("H2-E2"), Just("C2.5"), Just("33.4"),
                Just("炮二平五"), Just("马8进7"), Just("1-0"), Just("*"), Just("%"), Just("\\"), Just("…"),
            ],
            0..40,
        )
    ) {
        let text: String = parts.concat();
        // Errors end no reading: the reader goes on with the next game.
        for game in PgnReader::with_limit(text.as_bytes(), 200).flatten() {
            let _ = game.resolve();
        }
    }
}
