//! Books built from small datasets with known counts: mirror images and transpositions merge,
//! probes work from either side, ECCO names land on the positions, and the file is plain SQLite.

use std::path::Path;
use std::process::Command;

use xiangqi::game::{Game, GameConfig};
use xiangqi::{Move, Position, START_FEN};
use xqz_book::{Book, BookBuilder, BookError, BuildConfig, Entry};
use xqz_dataset::{DatasetWriter, GameId, GameRecord, GameResult, PlySearch, PolicyEntry, SampleRecord, WriterConfig};

/// 炮二平五 马8进7 马二进三 马2进3 车一平二, won by Red.
const SCREEN_HORSES: &str = "h2e2 h9g7 h0g2 b9c7 i0h0";
/// Its mirror image, 炮八平五 马2进3 马八进七 马8进7 车九平八, won by Black.
const MIRRORED: &str = "b2e2 b9c7 b0c2 h9g7 a0b0";
/// The horses the other way round, 炮二平五 马2进3 马二进三 马8进7 车一平二, drawn: after four plies
/// it reaches the first game's position.
const TRANSPOSED: &str = "h2e2 b9c7 h0g2 h9g7 i0h0";
/// 兵三进一 炮8平7, won by Red, in a second dataset.
const PAWN: &str = "g3g4 h7g7";

fn record(id: u128, moves: &str, result: GameResult) -> (GameRecord, Vec<SampleRecord>) {
    let n = moves.split_whitespace().count() as u32;
    let mut game = Game::new(GameConfig { max_plies: Some(n), ..GameConfig::default() });
    for mv in moves.split_whitespace() {
        game.push_str(mv).unwrap();
    }
    let mut record = GameRecord::from_game(&game, GameId::from_u128(id)).unwrap();
    record.result = result;
    let searches: Vec<PlySearch> =
        record.moves.iter().map(|&mv| PlySearch::full(vec![PolicyEntry { mv, p: 1.0 }], [0.3, 0.4, 0.3], 1)).collect();
    let samples = SampleRecord::from_game(&record, &searches).unwrap();
    (record, samples)
}

fn write_dataset(dir: &Path, games: &[(u128, &str, GameResult)]) {
    let (mut writer, _) =
        DatasetWriter::open(dir, WriterConfig { flush_interval: None, ..WriterConfig::default() }).unwrap();
    for &(id, moves, result) in games {
        let (game, samples) = record(id, moves, result);
        writer.append(game, samples).unwrap();
    }
    writer.finish().unwrap();
}

/// Two datasets: the three five-ply games in one, the pawn opening in the other.
fn datasets(root: &Path) -> [std::path::PathBuf; 2] {
    let (a, b) = (root.join("a"), root.join("b"));
    write_dataset(
        &a,
        &[
            (1, SCREEN_HORSES, GameResult::RedWin),
            (2, MIRRORED, GameResult::BlackWin),
            (3, TRANSPOSED, GameResult::Draw),
        ],
    );
    write_dataset(&b, &[(4, PAWN, GameResult::RedWin)]);
    [a, b]
}

fn build(root: &Path, config: BuildConfig) -> (Book, xqz_book::BuildSummary) {
    let mut builder = BookBuilder::new(config);
    for dir in datasets(root) {
        builder.add_dataset(dir.as_path()).unwrap();
    }
    let path = root.join("book.sqlite");
    let summary = builder.write(&path, false).unwrap();
    (Book::open(&path).unwrap(), summary)
}

fn after(moves: &str) -> Position {
    let mut pos = Position::startpos();
    for mv in moves.split_whitespace() {
        pos.play(mv.parse().unwrap()).unwrap();
    }
    pos
}

fn probe(book: &Book, moves: &str) -> Entry {
    book.probe(&after(moves)).unwrap().unwrap_or_else(|| panic!("{moves:?} is not in the book"))
}

/// `(move, games, wins, draws, losses)` of each book move, most played first.
fn counts(entry: &Entry) -> Vec<(String, u64, u64, u64, u64)> {
    entry.moves.iter().map(|m| (m.mv.to_string(), m.games, m.wins, m.draws, m.losses)).collect()
}

fn row(mv: &str, games: u64, wins: u64, draws: u64, losses: u64) -> (String, u64, u64, u64, u64) {
    (mv.to_string(), games, wins, draws, losses)
}

#[test]
fn counts_are_exact_and_mirror_images_merge() {
    let root = tempfile::tempdir().unwrap();
    let (book, summary) = build(root.path(), BuildConfig::default());
    assert_eq!((summary.games, summary.plies), (4, 17));
    // start, after the cannon, after each horse, after each third ply, the transposed position,
    // and after the pawn: 8 positions, 10 moves.
    assert_eq!((summary.positions, summary.moves), (8, 10));

    // In the start position 炮二平五 and 炮八平五 are one row (the smaller code, b2e2).
    let start = book.probe(&Position::startpos()).unwrap().unwrap();
    assert_eq!(start.fen, START_FEN);
    assert_eq!(counts(&start), [row("b2e2", 3, 1, 1, 1), row("c3c4", 1, 1, 0, 0)]);
    assert_eq!(start.moves[0].avg_plies, 5.0);
    assert_eq!(start.moves[1].avg_plies, 2.0);
    assert_eq!(start.moves[0].min_ply, 0);
    assert_eq!((start.ecco, start.opening), (None, None));

    // Black's view after the central cannon: the horse games from either side.
    let cannon = probe(&book, "h2e2");
    assert_eq!(counts(&cannon), [row("h9g7", 2, 1, 0, 1), row("b9c7", 1, 0, 1, 0)]);
    assert_eq!(cannon.moves[0].min_ply, 1);
    assert!(cannon.moves.iter().all(|m| m.value.is_none() && m.visits.is_none() && m.prior.is_none()));
}

#[test]
fn probes_find_an_entry_from_either_mirror_side() {
    let root = tempfile::tempdir().unwrap();
    let (book, _) = build(root.path(), BuildConfig::default());
    let left = probe(&book, "b2e2");
    assert_eq!(counts(&left), [row("b9c7", 2, 1, 0, 1), row("h9g7", 1, 0, 1, 0)]);
    assert_eq!(left.fen, probe(&book, "h2e2").fen, "one stored entry");
    let mirrored = probe(&book, "b2e2 b9c7 b0c2");
    assert_eq!(counts(&mirrored), [row("h9g7", 2, 1, 0, 1)]);
    for m in &mirrored.moves {
        assert!(after("b2e2 b9c7 b0c2").is_legal(m.mv), "{} is legal in the probed frame", m.mv);
    }
}

#[test]
fn transpositions_merge() {
    let root = tempfile::tempdir().unwrap();
    let (book, _) = build(root.path(), BuildConfig::default());
    // Reached by both horse orders (and, mirrored, by the third game).
    let merged = probe(&book, "h2e2 h9g7 h0g2 b9c7");
    assert_eq!(merged, probe(&book, "h2e2 b9c7 h0g2 h9g7"));
    assert_eq!(counts(&merged), [row("i0h0", 3, 1, 1, 1)]);
    assert_eq!(merged.moves[0].min_ply, 4);
    // The positions in between differ and stay apart.
    assert_eq!(counts(&probe(&book, "h2e2 h9g7 h0g2")), [row("b9c7", 2, 1, 0, 1)]);
    assert_eq!(counts(&probe(&book, "h2e2 b9c7 h0g2")), [row("h9g7", 1, 0, 1, 0)]);
}

#[test]
fn positions_carry_the_ecco_name_of_their_line() {
    let root = tempfile::tempdir().unwrap();
    let (book, _) = build(root.path(), BuildConfig::default());
    let name = |moves: &str| {
        let entry = probe(&book, moves);
        (entry.ecco.unwrap(), entry.opening.unwrap())
    };
    assert_eq!(name("h2e2"), ("B00".into(), "中炮".into()));
    assert_eq!(name("b2e2"), ("B00".into(), "中炮".into()));
    assert_eq!(name("h2e2 h9g7"), ("B05".into(), "中炮对进左马".into()));
    assert_eq!(name("h2e2 b9c7"), ("B01".into(), "中炮对进右马".into()));
    assert_eq!(name("h2e2 h9g7 h0g2 b9c7"), ("C00".into(), "中炮对屏风马".into()));
    assert_eq!(name("g3g4"), ("E00".into(), "仙人指路".into()));
    assert!(book.probe(&after("g3g4 h7g7")).unwrap().is_none(), "no move was played from the last position");
}

#[test]
fn ply_limit_and_minimum_games_leave_rows_out() {
    let root = tempfile::tempdir().unwrap();
    let (_, first_ply) = build(root.path(), BuildConfig { max_ply: 1, min_games: 1 });
    assert_eq!((first_ply.plies, first_ply.positions, first_ply.moves), (4, 1, 2));

    let root = tempfile::tempdir().unwrap();
    let (book, popular) = build(root.path(), BuildConfig { max_ply: 40, min_games: 2 });
    assert_eq!((popular.positions, popular.moves), (5, 5));
    assert_eq!(counts(&book.probe(&Position::startpos()).unwrap().unwrap()), [row("b2e2", 3, 1, 1, 1)]);
    assert!(book.probe(&after("h2e2 b9c7")).unwrap().is_none());
}

#[test]
fn an_existing_book_is_replaced_only_when_asked() {
    let root = tempfile::tempdir().unwrap();
    let [a, _] = datasets(root.path());
    let path = root.path().join("book.sqlite");
    let mut builder = BookBuilder::new(BuildConfig::default());
    builder.add_dataset(a.as_path()).unwrap();
    builder.write(&path, false).unwrap();
    assert!(matches!(builder.write(&path, false), Err(BookError::Exists { .. })));
    assert_eq!(builder.write(&path, true).unwrap().positions, 7);
    assert!(!root.path().join("book.sqlite.tmp").exists());
}

#[test]
fn bad_inputs_are_named() {
    let root = tempfile::tempdir().unwrap();
    let mut builder = BookBuilder::new(BuildConfig::default());
    let err = builder.add_dataset(root.path()).unwrap_err();
    assert_eq!(err.to_string(), format!("{} is not a dataset (it has no manifest.json)", root.path().display()));

    let unwritable = root.path().join("no-such-folder").join("book.sqlite");
    let err = builder.write(&unwritable, false).unwrap_err();
    assert!(matches!(err, BookError::Sqlite { .. }), "{err:?}");
    assert!(err.to_string().contains("no-such-folder"), "{err}");

    // A book of the first layout (the hash in an indexed `key` column) is refused by name.
    let old = root.path().join("old.sqlite");
    builder.write(&old, false).unwrap();
    rusqlite::Connection::open(&old)
        .unwrap()
        .execute("UPDATE meta SET value = '1' WHERE key = 'schema_version'", [])
        .unwrap();
    let err = Book::open(&old).err().unwrap();
    assert!(
        err.to_string().contains("schema version 1 (this build reads 2): upgrade it with `xqz book migrate"),
        "{err}"
    );

    let not_a_book = root.path().join("plain.sqlite");
    std::fs::write(&not_a_book, "a text file, not a database, long enough to fill a header").unwrap();
    assert!(matches!(Book::open(&not_a_book), Err(BookError::NotABook { .. })));
    assert!(matches!(Book::open(root.path().join("missing.sqlite")), Err(BookError::Io { .. })));
}

/// The first layout (schema version 1): positions numbered in order, found by their hash in an
/// indexed `key` column. Kept here as the specification of what `migrate` reads.
const SCHEMA_1: &str = "
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE positions (id INTEGER PRIMARY KEY, key INTEGER NOT NULL, fen TEXT NOT NULL, games INTEGER NOT NULL,
    ecco TEXT, opening TEXT);
CREATE TABLE moves (position_id INTEGER NOT NULL REFERENCES positions(id), move TEXT NOT NULL, games INTEGER NOT NULL,
    wins INTEGER NOT NULL, draws INTEGER NOT NULL, losses INTEGER NOT NULL, avg_plies REAL NOT NULL,
    min_ply INTEGER NOT NULL, value REAL, visits INTEGER, prior REAL, PRIMARY KEY (position_id, move)) WITHOUT ROWID;
CREATE INDEX positions_key ON positions (key);
";

/// Writes the book at `book` again in the first layout at `old`, numbering its positions in FEN
/// order; the keys are left 0, which `migrate` must not trust.
fn downgrade(book: &Path, old: &Path) {
    let conn = rusqlite::Connection::open(old).unwrap();
    conn.execute_batch(SCHEMA_1).unwrap();
    conn.execute("ATTACH DATABASE ?1 AS src", [book.to_str().unwrap()]).unwrap();
    conn.execute_batch(
        "INSERT INTO meta SELECT key, CASE key WHEN 'schema_version' THEN '1' ELSE value END FROM src.meta;
         INSERT INTO positions (id, key, fen, games, ecco, opening)
             SELECT row_number() OVER (ORDER BY fen), 0, fen, games, ecco, opening FROM src.positions;
         INSERT INTO moves SELECT p.id, m.move, m.games, m.wins, m.draws, m.losses, m.avg_plies, m.min_ply,
             m.value, m.visits, m.prior
             FROM src.moves m JOIN src.positions s ON s.id = m.position_id JOIN positions p ON p.fen = s.fen;
         DETACH DATABASE src;",
    )
    .unwrap();
}

#[test]
fn a_book_of_the_first_layout_migrates_with_every_row_and_search_result() {
    let root = tempfile::tempdir().unwrap();
    let (book, summary) = build(root.path(), BuildConfig::default());
    let old = root.path().join("old.sqlite");
    downgrade(book.path(), &old);
    // What a grown book has and a rebuild from games would lose: a searched move.
    let conn = rusqlite::Connection::open(&old).unwrap();
    conn.execute("UPDATE moves SET value = 0.25, visits = 7, prior = 0.5 WHERE move = 'b2e2'", []).unwrap();
    conn.execute(
        "INSERT INTO moves SELECT id, 'h0g2', 0, 0, 0, 0, 0, 0, -0.5, 3, 0.125 FROM positions \
         WHERE fen = ?1",
        [xqz_book::Book::open(book.path()).unwrap().probe(&Position::startpos()).unwrap().unwrap().fen],
    )
    .unwrap();
    drop(conn);

    let new = root.path().join("new.sqlite");
    let migrated = xqz_book::migrate(&old, &new, false).unwrap();
    assert_eq!((migrated.from_version, migrated.positions, migrated.moves), (1, summary.positions, summary.moves + 1));
    let migrated_book = Book::open(&new).unwrap();
    assert_eq!(migrated_book.meta("migrated_from").unwrap().as_deref(), Some("schema version 1"));
    assert_eq!(migrated_book.meta("games").unwrap(), book.meta("games").unwrap());
    for moves in ["", "h2e2", "b2e2 h9g7", "h2e2 h9g7", "h0g2", "c3c4"] {
        let (was, now) = (book.probe(&after(moves)).unwrap(), migrated_book.probe(&after(moves)).unwrap());
        match (was, now) {
            (Some(mut was), Some(now)) if moves.is_empty() => {
                let searched = now.moves.iter().find(|m| m.mv.to_string() == "b2e2").unwrap();
                assert_eq!((searched.value, searched.visits, searched.prior), (Some(0.25), Some(7), Some(0.5)));
                let added = now.moves.iter().find(|m| m.mv.to_string() == "h0g2").unwrap();
                assert_eq!((added.games, added.value, added.visits), (0, Some(-0.5), Some(3)));
                was.moves.iter_mut().filter(|m| m.mv.to_string() == "b2e2").for_each(|m| {
                    (m.value, m.visits, m.prior) = (Some(0.25), Some(7), Some(0.5));
                });
                assert_eq!(counts(&was), counts(&Entry { moves: now.moves[..was.moves.len()].to_vec(), ..now }));
            }
            (was, now) => assert_eq!(was, now, "after {moves:?}"),
        }
    }

    // Refused: an existing output, a book already migrated, a position not in the book frame.
    assert!(matches!(xqz_book::migrate(&old, &new, false), Err(BookError::Exists { .. })));
    let err = xqz_book::migrate(&new, &root.path().join("again.sqlite"), false).unwrap_err();
    assert!(err.to_string().contains("already schema version 2: nothing to migrate"), "{err}");
    let conn = rusqlite::Connection::open(&old).unwrap();
    let stored = book.probe(&after("h2e2")).unwrap().unwrap().fen;
    let mirrored = Position::from_fen(&stored).unwrap().mirror().to_string();
    conn.execute("UPDATE positions SET fen = ?1 WHERE id = 1", [&mirrored]).unwrap();
    drop(conn);
    let err = xqz_book::migrate(&old, &new, true).unwrap_err();
    assert!(err.to_string().contains("position 1") && err.to_string().contains("mirror"), "{err}");
    assert!(Book::open(&new).is_ok(), "a failed migration leaves the earlier output as it was");
    assert!(!root.path().join("new.sqlite.tmp").exists());
}

#[test]
fn python_sqlite3_reads_the_layout() {
    let root = tempfile::tempdir().unwrap();
    let (book, _) = build(root.path(), BuildConfig::default());
    let key_of_start = Position::startpos().hash() as i64;
    let script = r#"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
q = lambda sql, *a: db.execute(sql, a).fetchall()
print(q("SELECT value FROM meta WHERE key = 'schema_version'")[0][0])
print(q("SELECT value FROM meta WHERE key = 'games'")[0][0])
print(q("SELECT count(*) FROM positions")[0][0], q("SELECT count(*) FROM moves")[0][0])
pos = q("SELECT id, fen, games, ecco FROM positions WHERE id = ?", int(sys.argv[2]))
print(len(pos), pos[0][0] == int(sys.argv[2]), pos[0][1], pos[0][2], pos[0][3])
rows = q("SELECT move, games, wins, draws, losses, avg_plies, min_ply, value FROM moves WHERE position_id = ? ORDER BY games DESC", pos[0][0])
for r in rows:
    print(*r)
print(q("SELECT opening FROM positions WHERE ecco = 'C00'")[0][0])
"#;
    let out = Command::new(xqz_test_support::python::python("book sqlite3"))
        .args(["-c", script, book.path().to_str().unwrap(), &key_of_start.to_string()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let expected = format!(
        "2\n4\n8 10\n1 True {START_FEN} 4 None\nb2e2 3 1 1 1 5.0 0 None\nc3c4 1 1 0 0 2.0 0 None\n中炮对屏风马\n"
    );
    assert_eq!(String::from_utf8(out.stdout).unwrap(), expected);
}

#[test]
fn building_from_many_random_games_matches_replaying_them() {
    use rand::SeedableRng;
    use xqz_dataset::synthetic::{SyntheticConfig, random_game};
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
    let config = SyntheticConfig { max_plies: 30, policy_moves: 1, ..SyntheticConfig::default() };
    let games: Vec<GameRecord> = (0..200).map(|id| random_game(&mut rng, id, &config).0).collect();
    let mut builder = BookBuilder::new(BuildConfig::default());
    for game in &games {
        builder.add_game(game).unwrap();
    }
    let root = tempfile::tempdir().unwrap();
    let path = root.path().join("book.sqlite");
    let summary = builder.write(&path, false).unwrap();
    assert_eq!(summary.plies, games.iter().map(|g| g.len() as u64).sum::<u64>());
    let book = Book::open(&path).unwrap();
    // Every position of every game is found, with its move among the book's, and the counts of
    // all moves from the start position add up to the games.
    let start = book.probe(&Position::startpos()).unwrap().unwrap();
    assert_eq!(start.moves.iter().map(|m| m.games).sum::<u64>(), 200);
    for game in games.iter().take(20) {
        let mut pos = Position::startpos();
        for &mv in &game.moves {
            let entry = book.probe(&pos).unwrap().unwrap();
            let seen: Vec<Move> = entry.moves.iter().map(|m| m.mv).collect();
            assert!(seen.contains(&mv) || seen.contains(&mv.mirror()), "{mv} not among {seen:?}");
            pos.play(mv).unwrap();
        }
    }
}
