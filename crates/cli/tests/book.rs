//! `xqz book build` and `xqz book probe` on a small dataset.

use std::path::Path;
use std::process::{Command, Output};

use xiangqi::game::{Game, GameConfig};
use xqz_dataset::{DatasetWriter, GameId, GameRecord, GameResult, WriterConfig};

fn xqz(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xqz")).args(args).output().expect("xqz runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
}

/// Three games of 中炮对屏风马 (one of them mirrored), won by Red, Black and drawn.
fn dataset(dir: &Path) {
    let (mut writer, _) =
        DatasetWriter::open(dir, WriterConfig { flush_interval: None, ..WriterConfig::default() }).unwrap();
    let games = [
        (1, "h2e2 h9g7 h0g2 b9c7", GameResult::RedWin),
        (2, "b2e2 b9c7 b0c2 h9g7", GameResult::BlackWin),
        (3, "h2e2 h9g7 h0g2 h7i7", GameResult::Draw),
    ];
    for (id, moves, result) in games {
        let mut game = Game::new(GameConfig { max_plies: Some(4), ..GameConfig::default() });
        for mv in moves.split_whitespace() {
            game.push_str(mv).unwrap();
        }
        let mut record = GameRecord::from_game(&game, GameId::from_u128(id)).unwrap();
        record.result = result;
        // The book reads games only; their samples may be absent.
        writer.append(record, Vec::new()).unwrap();
    }
    writer.finish().unwrap();
}

fn built(root: &Path) -> String {
    let data = root.join("data");
    dataset(&data);
    let book = root.join("book.sqlite");
    let out = xqz(&["book", "build", "--out", book.to_str().unwrap(), "--data", data.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("3 games, 12 plies, 4 positions, 5 moves"), "{}", text(&out.stdout));
    book.to_str().unwrap().to_string()
}

#[test]
fn book_build_then_probe_prints_moves_with_both_notations() {
    let root = tempfile::tempdir().unwrap();
    let book = built(root.path());
    let out = xqz(&["book", "probe", &book, "--moves", "h2e2 h9g7 h0g2"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines[0], "opening: B05 中炮对进左马", "{stdout}");
    let fields: Vec<&str> = lines[2].split_whitespace().collect();
    // No search has valued the moves of a book built from games.
    assert_eq!(fields, ["b9c7", "马2进3", "2", "1/0/1", "50.0%", "4.0", "3", "-", "-"], "{stdout}");
    let fields: Vec<&str> = lines[3].split_whitespace().collect();
    assert_eq!(fields[..4], ["h7i7", "炮8平9", "1", "0/1/0"], "{stdout}");
}

#[test]
fn book_probe_json_from_the_mirror_side() {
    let root = tempfile::tempdir().unwrap();
    let book = built(root.path());
    let fen = "rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/4C2C1/9/RNBAKABNR b - - 1 1"; // after 炮八平五
    let out = xqz(&["book", "probe", &book, "--fen", fen, "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let position: serde_json::Value = serde_json::from_str(&text(&out.stdout)).unwrap();
    // The position's own opening, once: after 炮二平五 (mirrored), 中炮.
    assert_eq!((position["ecco"].as_str(), position["opening"].as_str()), (Some("B00"), Some("中炮")));
    assert_eq!(position["fen"], fen);
    let rows = position["moves"].as_array().unwrap();
    assert_eq!(rows.len(), 1);
    let row = &rows[0];
    assert_eq!(row["move"], "b9c7");
    assert_eq!(row["chinese"], "马2进3");
    assert_eq!((row["games"].as_u64(), row["wins"].as_u64(), row["draws"].as_u64()), (Some(3), Some(1), Some(1)));
    assert_eq!(row["losses"], 1);
    // Each move with the opening it leads to: 马2进3 answers with the left horse, B05.
    assert_eq!((row["ecco"].as_str(), row["opening"].as_str()), (Some("B05"), Some("中炮对进左马")), "{position}");
    assert!(row["value"].is_null());
}

#[test]
fn book_build_refuses_bad_inputs() {
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join("book.sqlite");
    let not_data = xqz(&["book", "build", "--out", out.to_str().unwrap(), "--data", root.path().to_str().unwrap()]);
    assert!(!not_data.status.success());
    assert!(
        text(&not_data.stderr).contains("is not a dataset (it has no manifest.json)"),
        "{}",
        text(&not_data.stderr)
    );
    assert!(!out.exists());

    let book = built(root.path());
    let data = root.path().join("data");
    let again = xqz(&["book", "build", "--out", &book, "--data", data.to_str().unwrap()]);
    assert!(!again.status.success());
    assert!(text(&again.stderr).contains("already exists (pass --force to replace it)"), "{}", text(&again.stderr));
    let forced =
        xqz(&["book", "build", "--out", &book, "--data", data.to_str().unwrap(), "--force", "--min-games", "3"]);
    assert!(forced.status.success(), "{}", text(&forced.stderr));
    assert!(text(&forced.stdout).contains("3 positions, 3 moves"), "{}", text(&forced.stdout));

    let illegal = xqz(&["book", "probe", &book, "--moves", "h2e2 h2e9"]);
    assert!(!illegal.status.success());
    assert!(text(&illegal.stderr).contains("h2e9 is not legal"), "{}", text(&illegal.stderr));
}

#[test]
fn book_build_from_exported_pgn_matches_the_dataset_and_skips_broken_games() {
    let root = tempfile::tempdir().unwrap();
    let book = built(root.path());
    let data = root.path().join("data");
    let lines = ["", "h2e2", "h2e2 h9g7", "h2e2 h9g7 h0g2"];
    let probes = |book: &str| -> Vec<String> {
        lines.iter().map(|moves| text(&xqz(&["book", "probe", book, "--moves", moves, "--json"]).stdout)).collect()
    };
    let expected = probes(&book);
    for notation in ["iccs", "wxf", "chinese"] {
        let pgn = root.path().join(format!("{notation}.pgn"));
        let pgn_arg = pgn.to_str().unwrap();
        let out = xqz(&[
            "data",
            "export",
            data.to_str().unwrap(),
            "--format",
            "pgn",
            "--notation",
            notation,
            "--out",
            pgn_arg,
        ]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        // A broken game after the exported ones: reported, and the others still imported.
        let mut games = std::fs::read_to_string(&pgn).unwrap();
        let broken_line = games.lines().count() + 3;
        games.push_str("[Game \"Chinese Chess\"]\n\n1. h2e2 h2e9 1-0\n");
        std::fs::write(&pgn, games).unwrap();
        let from_pgn = root.path().join(format!("{notation}.sqlite"));
        let out = xqz(&["book", "build", "--out", from_pgn.to_str().unwrap(), "--pgn", pgn_arg]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let stderr = text(&out.stderr);
        assert!(
            stderr.contains(&format!(
                "skipped {pgn_arg}:{broken_line}: ply 1, move \"h2e9\": illegal move h2e9 in this position"
            )),
            "{stderr}"
        );
        assert!(stderr.contains(&format!("{pgn_arg}: 3 games imported, 1 skipped")), "{stderr}");
        assert!(text(&out.stdout).contains("3 games, 12 plies, 4 positions, 5 moves"), "{}", text(&out.stdout));
        assert_eq!(probes(from_pgn.to_str().unwrap()), expected, "{notation}");
    }
    let neither = xqz(&["book", "build", "--out", root.path().join("none.sqlite").to_str().unwrap()]);
    assert!(!neither.status.success());
    assert!(text(&neither.stderr).contains("--data"), "{}", text(&neither.stderr));
}

#[test]
fn book_export_writes_an_opening_suite_that_matches_play_from() {
    let root = tempfile::tempdir().unwrap();
    let book = built(root.path());
    let suite = root.path().join("suite.epd");
    let suite_arg = suite.to_str().unwrap();
    let out = xqz(&["book", "export", &book, "--format", "epd", "--out", suite_arg, "--ply", "2", "--min-games", "1"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let written = std::fs::read_to_string(&suite).unwrap();
    let lines: Vec<&str> = written.lines().filter(|l| !l.starts_with('#')).collect();
    // After 炮二平五 马8进7 (or its mirror image): three games, one won by each side, one drawn.
    assert_eq!(lines.len(), 1, "{written}");
    let fields: Vec<&str> = lines[0].split(" ; ").collect();
    assert!(fields[0].ends_with(" w - - 0 1"), "{written}");
    assert_eq!(fields[1..3], ["ecco B05", "opening 中炮对进左马"], "{written}");
    assert_eq!(fields[3..], ["games 3", "score 0.500"], "{written}");
    // A match plays from it.
    let out = xqz(&[
        "eval",
        "match",
        "--a",
        "material",
        "--b",
        "uniform",
        "--playouts",
        "4",
        "--pairs",
        "1",
        "--max-plies",
        "20",
        "--openings",
        suite_arg,
        "--out",
        root.path().to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("final: 2 games"), "{}", text(&out.stdout));
    // Nothing qualifies: a clear error, no file.
    let none = root.path().join("none.epd");
    let out = xqz(&["book", "export", &book, "--format", "epd", "--out", none.to_str().unwrap(), "--min-games", "4"]);
    assert!(!out.status.success() && text(&out.stderr).contains("no position"), "{}", text(&out.stderr));
    assert!(!none.exists());
}

/// `xqz uci --book BOOK` fed `commands` (a search that reads `quit` ends the session after its
/// answer); its output.
fn uci_session(book: &str, commands: &[&str]) -> String {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_xqz"))
        .args(["uci", "--model", "", "--book", book])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(commands.join("\n").as_bytes()).unwrap();
    text(&child.wait_with_output().unwrap().stdout)
}

#[test]
fn xqz_uci_plays_from_a_book_while_in_it() {
    let root = tempfile::tempdir().unwrap();
    let book = built(root.path());
    let stdout = uci_session(
        &book,
        &[
            "uci",
            // In the book (from the mirror side too): its most played move, said in an info string.
            "position startpos moves b2e2",
            "go nodes 1",
            // Out of the book: a search.
            "position startpos moves h2e2 h9g7 h0g2 b9c7 i0h0",
            "go nodes 1",
            "quit",
        ],
    );
    assert!(stdout.contains("option name OwnBook type check default true"), "{stdout}");
    assert!(stdout.lines().any(|l| l.starts_with("option name BookFile type string default ")), "{stdout}");
    let answers: Vec<&str> = stdout.lines().filter(|l| l.starts_with("bestmove ")).collect();
    assert_eq!(answers.len(), 2, "{stdout}");
    assert_eq!(answers[0], "bestmove b9c7", "the mirror image of 马8进7: {stdout}");
    let book_lines: Vec<&str> = stdout.lines().filter(|l| l.starts_with("info string book move")).collect();
    assert_eq!(book_lines.len(), 1, "{stdout}");
    assert!(book_lines[0].starts_with("info string book move b9c7: 3 games, 1/1/1"), "{stdout}");
    assert!(book_lines[0].contains("中炮"), "{stdout}");
    // OwnBook off: a search though the position is in the book.
    let stdout = uci_session(
        &book,
        &["setoption name OwnBook value false", "position startpos moves h2e2", "go nodes 1", "quit"],
    );
    assert!(stdout.contains("bestmove ") && !stdout.contains("book move"), "{stdout}");
}

#[test]
fn book_migrate_upgrades_a_book_of_the_first_layout() {
    let root = tempfile::tempdir().unwrap();
    let book = built(root.path());
    let before = xqz(&["book", "probe", &book, "--moves", "h2e2", "--json"]);
    assert!(before.status.success(), "{}", text(&before.stderr));
    let current = xqz(&["book", "migrate", &book, "--out", root.path().join("x.sqlite").to_str().unwrap()]);
    assert!(!current.status.success());
    assert!(text(&current.stderr).contains("already schema version 2"), "{}", text(&current.stderr));

    // The first layout, written by Python's sqlite3 from the book: positions numbered 1, 2, ...
    // and found by an indexed `key` column (left 0 here: the migration computes keys again).
    let old = root.path().join("old.sqlite");
    let script = r#"
import sqlite3, sys
c = sqlite3.connect(sys.argv[2])
c.executescript("""
CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE positions (id INTEGER PRIMARY KEY, key INTEGER NOT NULL, fen TEXT NOT NULL, games INTEGER NOT NULL,
    ecco TEXT, opening TEXT);
CREATE TABLE moves (position_id INTEGER NOT NULL REFERENCES positions(id), move TEXT NOT NULL,
    games INTEGER NOT NULL, wins INTEGER NOT NULL, draws INTEGER NOT NULL, losses INTEGER NOT NULL,
    avg_plies REAL NOT NULL, min_ply INTEGER NOT NULL, value REAL, visits INTEGER, prior REAL,
    PRIMARY KEY (position_id, move)) WITHOUT ROWID;
CREATE INDEX positions_key ON positions (key);
""")
c.execute("ATTACH DATABASE ? AS src", (sys.argv[1],))
c.executescript("""
INSERT INTO meta SELECT key, CASE key WHEN 'schema_version' THEN '1' ELSE value END FROM src.meta;
INSERT INTO positions SELECT row_number() OVER (ORDER BY fen), 0, fen, games, ecco, opening FROM src.positions;
INSERT INTO moves SELECT p.id, m.move, m.games, m.wins, m.draws, m.losses, m.avg_plies, m.min_ply, m.value,
    m.visits, m.prior FROM src.moves m JOIN src.positions s ON s.id = m.position_id JOIN positions p ON p.fen = s.fen;
""")
c.commit()
print("ok")
"#;
    let python = xqz_test_support::python::python("sqlite3");
    let out = Command::new(python).args(["-c", script]).arg(&book).arg(&old).output().unwrap();
    assert!(out.status.success() && text(&out.stdout).contains("ok"), "{}{}", text(&out.stdout), text(&out.stderr));
    let old = old.to_str().unwrap();
    let refused = xqz(&["book", "probe", old, "--moves", "h2e2"]);
    assert!(!refused.status.success());
    assert!(text(&refused.stderr).contains("upgrade it with `xqz book migrate"), "{}", text(&refused.stderr));

    let new = root.path().join("new.sqlite");
    let migrated = xqz(&["book", "migrate", old, "--out", new.to_str().unwrap()]);
    assert!(migrated.status.success(), "{}", text(&migrated.stderr));
    assert!(text(&migrated.stdout).contains("4 positions and 5 moves"), "{}", text(&migrated.stdout));
    let after = xqz(&["book", "probe", new.to_str().unwrap(), "--moves", "h2e2", "--json"]);
    assert!(after.status.success(), "{}", text(&after.stderr));
    assert_eq!(text(&after.stdout), text(&before.stdout));
    let again = xqz(&["book", "migrate", old, "--out", new.to_str().unwrap()]);
    assert!(text(&again.stderr).contains("already exists (pass --force to replace it)"), "{}", text(&again.stderr));
}

#[test]
fn book_export_parquet_is_read_by_pyarrow() {
    let root = tempfile::tempdir().unwrap();
    let book = built(root.path());
    let table = root.path().join("book.parquet");
    let out = xqz(&["book", "export", &book, "--format", "parquet", "--out", table.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("5 rows"), "{}", text(&out.stdout));
    let script = r#"
import sys
import pyarrow.parquet as pq
t = pq.read_table(sys.argv[1]).to_pylist()
assert len(t) == 5, t
start = [r for r in t if r["fen"].startswith("rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABNR w")]
assert len(start) == 1 and start[0]["games"] == 3, start
r = start[0]
assert (r["wins"], r["draws"], r["losses"]) == (1, 1, 1), r
assert r["chinese"] in ("炮二平五", "炮八平五") and r["value"] is None, r
assert all(x["min_ply"] >= 0 and x["avg_plies"] == 4.0 for x in t), t
print("ok")
"#;
    let python = xqz_test_support::python::python("pyarrow");
    let out = Command::new(python).args(["-c", script]).arg(&table).output().unwrap();
    assert!(out.status.success() && text(&out.stdout).contains("ok"), "{}{}", text(&out.stdout), text(&out.stderr));
}

#[test]
fn book_grow_searches_with_the_shipped_model_and_resumes() {
    let root = tempfile::tempdir().unwrap();
    let book = built(root.path());
    let grow = |positions: &str| {
        let args = ["book", "grow", &book, "--positions", positions, "--playouts", "16", "--device", "cpu"];
        let out = xqz(&args);
        assert!(out.status.success(), "{}", text(&out.stderr));
        text(&out.stdout)
    };
    let stdout = grow("2");
    assert!(stdout.contains("2 positions searched") && stdout.contains("2 searched positions in all"), "{stdout}");
    let stdout = grow("1");
    assert!(stdout.contains("1 positions searched") && stdout.contains("3 searched positions in all"), "{stdout}");

    let out = xqz(&["book", "probe", &book, "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let position: serde_json::Value = serde_json::from_str(&text(&out.stdout)).unwrap();
    let rows = position["moves"].as_array().unwrap();
    // The games' move keeps its counts and gets the search's statistics like the moves it added.
    assert_eq!((rows[0]["move"].as_str(), rows[0]["games"].as_u64()), (Some("b2e2"), Some(3)), "{rows:?}");
    for row in rows {
        let value = row["value"].as_f64().unwrap_or_else(|| panic!("no value: {row}"));
        assert!(value.abs() <= 1.0 && row["visits"].as_u64().is_some() && row["prior"].as_f64().is_some(), "{row}");
    }
    assert!(rows.iter().map(|r| r["visits"].as_u64().unwrap()).sum::<u64>() <= 16, "{rows:?}");

    let none = xqz(&["book", "grow", &book]);
    assert!(
        !none.status.success() && text(&none.stderr).contains("--minutes or --positions"),
        "{}",
        text(&none.stderr)
    );
    let bad = xqz(&["book", "grow", &book, "--minutes", "0"]);
    assert!(!bad.status.success() && text(&bad.stderr).contains("--minutes 0 must be"), "{}", text(&bad.stderr));
}

#[test]
fn book_export_html_is_browsed_in_headless_chromium() {
    let Some(browser) = xqz_test_support::browser::browser("the book's pages in a browser") else { return };
    let root = tempfile::tempdir().unwrap();
    let book = built(root.path());
    let html = root.path().join("html");
    let out = xqz(&["book", "export", &book, "--format", "html", "--out", html.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let pages = std::fs::read_dir(&html).unwrap().count();
    assert!(text(&out.stdout).contains(&format!("{pages} pages")), "{}", text(&out.stdout));

    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/book_html.py");
    let out = Command::new(&browser.python)
        .arg(script)
        .arg(&html)
        .arg(&browser.chromium)
        .arg(&browser.chromedriver)
        .output()
        .unwrap();
    assert!(out.status.success() && text(&out.stdout).contains("ok"), "{}{}", text(&out.stdout), text(&out.stderr));

    let small = root.path().join("small");
    let out =
        xqz(&["book", "export", &book, "--format", "html", "--out", small.to_str().unwrap(), "--max-positions", "1"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(std::fs::read_dir(&small).unwrap().count(), 1);
    assert!(text(&out.stderr).contains("left out (--max-positions 1)"), "{}", text(&out.stderr));
}
