//! Books built from PGN files: games in each notation count like dataset games (mirrors,
//! transpositions, the ply limit), broken games are reported with their file and line and the rest
//! imported, and a dataset exported as PGN builds the same book as the dataset itself.

use std::path::Path;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use xiangqi::notation::MoveNotation;
use xqz_book::{BookBuilder, BuildConfig, SkipReason};
use xqz_dataset::export::write_game_pgn;
use xqz_dataset::synthetic::{SyntheticConfig, random_game};
use xqz_dataset::{DatasetWriter, GameRecord, WriterConfig};

/// Every row of both tables, in a fixed order, as text: two books with equal dumps are equal.
fn dump(path: &Path) -> Vec<String> {
    let conn = rusqlite::Connection::open(path).unwrap();
    let mut rows = Vec::new();
    let mut positions = conn.prepare("SELECT id, fen, games, ecco, opening FROM positions ORDER BY fen").unwrap();
    let mut it = positions.query([]).unwrap();
    while let Some(r) = it.next().unwrap() {
        let (id, fen, games): (i64, String, i64) = (r.get(0).unwrap(), r.get(1).unwrap(), r.get(2).unwrap());
        let (ecco, opening): (Option<String>, Option<String>) = (r.get(3).unwrap(), r.get(4).unwrap());
        rows.push(format!("{id} {fen} {games} {ecco:?} {opening:?}"));
    }
    let mut moves = conn
        .prepare(
            "SELECT p.fen, m.move, m.games, m.wins, m.draws, m.losses, m.avg_plies, m.min_ply FROM moves m \
             JOIN positions p ON p.id = m.position_id ORDER BY p.fen, m.move",
        )
        .unwrap();
    let mut it = moves.query([]).unwrap();
    while let Some(r) = it.next().unwrap() {
        let text: Vec<String> =
            (0..6).map(|i| r.get::<_, rusqlite::types::Value>(i).map(|v| format!("{v:?}")).unwrap()).collect();
        let (avg, min): (f64, i64) = (r.get(6).unwrap(), r.get(7).unwrap());
        rows.push(format!("{} {avg} {min}", text.join(" ")));
    }
    rows
}

fn random_games(n: u128) -> Vec<GameRecord> {
    let config = SyntheticConfig { max_plies: 60, policy_moves: 1, capture_bias: 0.2, ..SyntheticConfig::default() };
    let mut rng = ChaCha8Rng::seed_from_u64(29);
    (0..n).map(|id| random_game(&mut rng, id, &config).0).collect()
}

#[test]
fn a_dataset_exported_as_pgn_in_any_notation_builds_the_same_book() {
    let dir = tempfile::tempdir().unwrap();
    let games = random_games(80);
    let config = BuildConfig { max_ply: 30, min_games: 1 };
    let mut from_games = BookBuilder::new(config);
    for game in &games {
        from_games.add_game(game).unwrap();
    }
    let expected = dir.path().join("games.sqlite");
    let summary = from_games.write(&expected, false).unwrap();
    let expected = dump(&expected);
    assert!(summary.positions > 1000, "the games spread: {summary:?}");

    for notation in [MoveNotation::Iccs, MoveNotation::Wxf, MoveNotation::Chinese] {
        let pgn = dir.path().join(format!("{notation}.pgn"));
        let mut text = Vec::new();
        for game in &games {
            write_game_pgn(game, notation, &mut text).unwrap();
        }
        std::fs::write(&pgn, text).unwrap();
        let mut builder = BookBuilder::new(config);
        let import = builder.add_pgn(&pgn, |s| panic!("{notation}: {s}")).unwrap();
        assert_eq!((import.imported, import.skipped), (80, 0), "{notation}");
        let book = dir.path().join(format!("{notation}.sqlite"));
        let from_pgn = builder.write(&book, false).unwrap();
        assert_eq!(from_pgn, summary, "{notation}");
        assert_eq!(dump(&book), expected, "{notation}");
    }
}

#[test]
fn broken_games_are_skipped_with_file_and_line_and_the_rest_counted() {
    let dir = tempfile::tempdir().unwrap();
    let pgn = dir.path().join("mixed.pgn");
    std::fs::write(
        &pgn,
        "[Game \"Chinese Chess\"]\n[Format \"Chinese\"]\n\n1. 炮二平五 马8进7 2. 马二进三 1-0\n\n\
         [Game \"Chinese Chess\"]\n\n1. C8.5 H2+3 2. H8+7 {炮八平五: the mirror image} 0-1\n\n\
         [Game \"Chinese Chess\"]\n\n1. h2e2 h9g7 2. h0g2 h2h3 1/2-1/2\n\n\
         [Game \"Chinese Chess\"]\n\n1. H2-E2 H9-G7 *\n\n\
         [Game \"Chinese Chess\"]\n\n1. h2e2 h9g7 (1... b9c7) 2. h0g2 b9c7 1/2-1/2\n",
    )
    .unwrap();
    let mut builder = BookBuilder::new(BuildConfig { max_ply: 3, min_games: 1 });
    let mut skipped = Vec::new();
    let import = builder.add_pgn(&pgn, |s| skipped.push(s)).unwrap();
    assert_eq!((import.imported, import.skipped), (3, 2));
    let messages: Vec<String> = skipped.iter().map(|s| s.to_string()).collect();
    let file = pgn.display();
    assert_eq!(
        messages,
        [
            format!("{file}:12: ply 3, move \"h2h3\": illegal move h2h3 in this position"),
            format!("{file}:14: result * (unfinished or unknown): only games with a result are counted"),
        ]
    );
    assert!(matches!(skipped[1].reason, SkipReason::NoResult));
    // Three games of three plies each (the ply limit), all through the same three positions
    // up to the mirror image.
    assert_eq!((builder.games(), builder.plies(), builder.positions()), (3, 9, 3));

    let book_path = dir.path().join("book.sqlite");
    builder.write(&book_path, false).unwrap();
    let book = xqz_book::Book::open(&book_path).unwrap();
    let mut pos = xiangqi::Position::startpos();
    pos.play("h2e2".parse().unwrap()).unwrap();
    let entry = book.probe(&pos).unwrap().unwrap();
    let m = &entry.moves[0];
    assert_eq!((m.mv.to_string().as_str(), m.games, m.wins, m.draws, m.losses), ("h9g7", 3, 1, 1, 1));
    assert_eq!(m.avg_plies, 10.0 / 3.0, "the games' full lengths: 3, 3 and 4 plies");
}

#[test]
fn an_unreadable_pgn_file_is_an_error_naming_it() {
    let missing = Path::new("/nonexistent/games.pgn");
    let err = BookBuilder::new(BuildConfig::default()).add_pgn(missing, |_| {}).unwrap_err();
    assert_eq!(err.to_string(), "I/O error on /nonexistent/games.pgn");
}

#[test]
fn a_dataset_written_with_the_writer_reads_back_through_add_dataset_too() {
    // The PGN path and the dataset path agree on an actual dataset folder as well.
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let (mut writer, _) =
        DatasetWriter::open(&data, WriterConfig { flush_interval: None, ..WriterConfig::default() }).unwrap();
    let games = random_games(10);
    let mut text = Vec::new();
    for game in &games {
        write_game_pgn(game, MoveNotation::Wxf, &mut text).unwrap();
        writer.append(game.clone(), Vec::new()).unwrap();
    }
    writer.finish().unwrap();
    let pgn = dir.path().join("games.pgn");
    std::fs::write(&pgn, text).unwrap();
    let (a, b) = (dir.path().join("a.sqlite"), dir.path().join("b.sqlite"));
    let mut builder = BookBuilder::new(BuildConfig::default());
    assert_eq!(builder.add_dataset(data.as_path()).unwrap(), 10);
    builder.write(&a, false).unwrap();
    let mut builder = BookBuilder::new(BuildConfig::default());
    builder.add_pgn(&pgn, |s| panic!("{s}")).unwrap();
    builder.write(&b, false).unwrap();
    assert_eq!(dump(&a), dump(&b));
}
