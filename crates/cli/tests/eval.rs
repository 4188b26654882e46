//! `xqz eval`: a short match between `xqz uci` (a checkpoint) and Debian's Fairy-Stockfish, in
//! which every game must end with a legal, adjudicated result that the records keep; an SPRT
//! that stops a lopsided match early; and the ladder over the recorded games.

mod common;

use std::fs::File;
use std::path::Path;
use std::process::{Command, Output};

use arrow_array::{Array, Float64Array, RecordBatch, StringArray, UInt32Array};
use arrow_ipc::reader::StreamReader;
use xiangqi::game::{Game, GameConfig, Outcome, Ruleset};
use xiangqi::{Color, Position};
use xqz_dataset::GameResult;
use xqz_test_support::fairy_stockfish;

/// `xqz` with `args`, whatever its exit status.
fn xqz_status(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xqz")).args(args).output().unwrap()
}

/// `xqz` with `args`, which must succeed.
fn xqz(args: &[&str]) -> Output {
    let out = xqz_status(args);
    assert!(
        out.status.success(),
        "xqz {args:?} failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The error `xqz` with `args` fails with.
fn refused(args: &[&str]) -> String {
    let out = xqz_status(args);
    assert!(!out.status.success(), "xqz {args:?} succeeded");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn read_table(dir: &Path) -> Vec<RecordBatch> {
    // An Arrow IPC stream, one batch per game appended.
    let file = File::open(dir.join("eval/games.arrow")).unwrap();
    StreamReader::try_new(file, None).unwrap().map(Result::unwrap).collect()
}

fn text<'a>(batch: &'a RecordBatch, name: &str) -> &'a StringArray {
    batch.column_by_name(name).unwrap().as_any().downcast_ref::<StringArray>().unwrap()
}

/// Replays every recorded game under `ruleset` and checks its result against our adjudication.
fn check_games(batch: &RecordBatch, max_plies: u32, ruleset: Ruleset) {
    let plies = batch.column_by_name("plies").unwrap().as_any().downcast_ref::<UInt32Array>().unwrap();
    let score = batch.column_by_name("a_score").unwrap().as_any().downcast_ref::<Float64Array>().unwrap();
    for i in 0..batch.num_rows() {
        let start = Position::from_fen(text(batch, "start_fen").value(i)).unwrap();
        let mut game =
            Game::from_position(start, GameConfig { max_plies: Some(max_plies), ruleset, ..GameConfig::default() });
        let moves = text(batch, "moves").value(i);
        for mv in moves.split_whitespace() {
            game.push_str(mv).unwrap_or_else(|e| panic!("game {i}: {e} in {moves}"));
        }
        assert_eq!(game.len() as u32, plies.value(i));
        let forfeit = batch.column_by_name("forfeit").unwrap();
        assert!(forfeit.is_null(i), "game {i} was forfeited: {}", text(batch, "forfeit").value(i));
        let outcome = game.outcome();
        assert_ne!(outcome, Outcome::Ongoing, "game {i} stopped before its end");
        let result = GameResult::from_outcome(outcome).unwrap();
        assert_eq!(text(batch, "result").value(i), result.pgn(), "game {i}");
        assert_eq!(text(batch, "reason").value(i), outcome.verdict().unwrap().reason.to_string());
        let a_color = if text(batch, "a_color").value(i) == "red" { Color::Red } else { Color::Black };
        let expected = match outcome.winner() {
            None => 0.5,
            Some(w) if w == a_color => 1.0,
            Some(_) => 0.0,
        };
        assert_eq!(score.value(i), expected, "game {i}");
    }
}

#[test]
fn a_checkpoint_through_xqz_uci_against_fairy_stockfish() {
    let dir = tempfile::tempdir().unwrap();
    let model = common::tiny_checkpoint(dir.path());
    let ours = format!("uci:{} uci --model {} --device cpu --threads 1", env!("CARGO_BIN_EXE_xqz"), model.display());
    let fsf = format!("fairy-stockfish:{};Hash=8", fairy_stockfish::engine_path().display());
    let out = dir.path().join("run");
    let output = xqz(&[
        "eval",
        "match",
        "--a",
        &ours,
        "--b",
        &fsf,
        "--pairs",
        "2",
        "--concurrency",
        "2",
        "--engine-nodes",
        "64",
        "--max-plies",
        "80",
        "--out",
        out.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.contains("final: 4 games") && stdout.contains("wxf rules"), "{stdout}");
    assert!(stdout.contains("pairs [") && stdout.contains("LOS"), "{stdout}");
    let batches = read_table(&out);
    assert_eq!(batches.iter().map(RecordBatch::num_rows).sum::<usize>(), 4);
    for batch in &batches {
        // A match with Fairy-Stockfish is ruled by the rules it knows, from the balanced suite.
        check_games(batch, 80, Ruleset::Wxf);
        let suite =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/data/openings/balanced.epd"))
                .unwrap();
        for i in 0..batch.num_rows() {
            let start = text(batch, "start_fen").value(i);
            assert!(suite.lines().any(|line| line.starts_with(start)), "{start} is not in the balanced suite");
        }
        // Both engines played: Fairy-Stockfish's moves came through its 1-10 ranks.
        assert!((0..batch.num_rows()).all(|i| text(batch, "red").value(i) != text(batch, "black").value(i)));
    }
    let pgn = std::fs::read_to_string(out.join("eval/games.pgn")).unwrap();
    assert_eq!(pgn.matches("[Event ").count(), 4);
    assert!(pgn.contains("[Red \"Fairy-Stockfish") && pgn.contains("[Black \"xqz "), "{pgn}");
    assert!(
        pgn.contains("炮") || pgn.contains("马") || pgn.contains("兵") || pgn.contains("车"),
        "Chinese notation: {pgn}"
    );
}

#[test]
fn a_network_plays_itself_in_another_precision_under_its_own_name() {
    let dir = tempfile::tempdir().unwrap();
    let model = common::tiny_checkpoint(dir.path());
    let model = model.to_str().unwrap();
    let out = dir.path().join("bf16");
    let base = ["eval", "match", "--a", model, "--b", model, "--pairs", "1", "--playouts", "8", "--max-plies", "40"];
    let error = refused(&base);
    assert!(error.contains("both") && error.contains("--a-precision"), "{error}");
    let mut args = base.to_vec();
    args.extend(["--a-precision", "bf16", "--json", "--out", out.to_str().unwrap()]);
    let result: serde_json::Value = serde_json::from_slice(&xqz(&args).stdout).unwrap();
    assert_eq!(result["a"].as_str(), Some(format!("{model} bf16").as_str()), "{result}");
    assert_eq!(result["b"].as_str(), Some(model), "{result}");
    assert_eq!(result["games"], 2, "{result}");
    for batch in read_table(&out) {
        check_games(&batch, 40, Ruleset::Chinese2011);
    }
    // `auto` is named in the records by the format it resolved to on this CPU.
    let mut args = vec!["eval", "match", "--a", model, "--b", "material", "--a-precision", "auto"];
    args.extend(["--pairs", "1", "--playouts", "8", "--max-plies", "40", "--json", "--out", out.to_str().unwrap()]);
    let result: serde_json::Value = serde_json::from_slice(&xqz(&args).stdout).unwrap();
    let named = result["a"].as_str().unwrap();
    assert!(named == model || named == format!("{model} bf16"), "{result}");
    let error = refused(&["eval", "match", "--a", model, "--b", "material", "--a-precision", "fp8"]);
    assert!(error.contains("expected f32, bf16 or auto"), "{error}");
}

#[test]
fn an_sprt_stops_a_lopsided_match_and_the_ladder_rates_the_players() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().to_str().unwrap();
    // Material counting against the bare rules wins most pairs; SPRT(0, 200) decides early.
    let output = xqz(&[
        "eval",
        "match",
        "--a",
        "material",
        "--b",
        "uniform",
        "--playouts",
        "64",
        "--pairs",
        "60",
        "--max-plies",
        "150",
        "--sprt",
        "0,200",
        "--out",
        out,
    ]);
    let stdout = String::from_utf8_lossy(&output.stdout);
    let last = stdout.lines().find(|l| l.starts_with("final: ")).unwrap();
    assert!(last.contains("H1 accepted"), "{stdout}");
    assert_eq!(output.status.code(), Some(0), "H1 accepted exits 0");
    let games: usize = read_table(dir.path()).iter().map(RecordBatch::num_rows).sum();
    assert!(games < 120, "the test stopped the match early ({games} games)");
    for batch in read_table(dir.path()) {
        check_games(&batch, 150, Ruleset::Chinese2011);
    }
    // A second match appends to the same table; one pair decides nothing, and the exit status
    // says so.
    let undecided = xqz_status(&[
        "eval",
        "match",
        "--a",
        "uniform",
        "--b",
        "material",
        "--playouts",
        "16",
        "--pairs",
        "1",
        "--max-plies",
        "60",
        "--sprt",
        "0,200",
        "--json",
        "--out",
        out,
    ]);
    assert_eq!(undecided.status.code(), Some(11), "{}", String::from_utf8_lossy(&undecided.stdout));
    // --json: the result as one object, nothing else on stdout.
    let result: serde_json::Value = serde_json::from_slice(&undecided.stdout).unwrap();
    assert_eq!((result["a"].as_str(), result["b"].as_str()), (Some("uniform@16"), Some("material@16")), "{result}");
    assert_eq!(result["games"], 2, "{result}");
    let record = ["wins", "draws", "losses"].map(|k| result[k].as_u64().unwrap());
    assert_eq!(record.iter().sum::<u64>(), 2, "{result}");
    assert_eq!(result["sprt"]["state"], "continue", "{result}");
    assert_eq!(result["terminations"].as_object().unwrap().values().filter_map(|v| v.as_u64()).sum::<u64>(), 2);
    let batches = read_table(dir.path());
    assert_eq!(batches.iter().map(RecordBatch::num_rows).sum::<usize>(), games + 2);
    // The lopsided match the other way round: H0 accepted, exit status 10.
    let rejected = xqz_status(&[
        "eval",
        "match",
        "--a",
        "uniform",
        "--b",
        "material",
        "--playouts",
        "16",
        "--pairs",
        "60",
        "--max-plies",
        "100",
        "--sprt",
        "0,200",
        "--out",
        &dir.path().join("h0").display().to_string(),
    ]);
    let stdout = String::from_utf8_lossy(&rejected.stdout);
    assert!(stdout.lines().any(|l| l.starts_with("final: ") && l.contains("H0 accepted")), "{stdout}");
    assert_eq!(rejected.status.code(), Some(10), "{stdout}");

    // Each built-in searcher at its two budgets is two players; any of them can be the anchor, and
    // the ladder rates the players that games connect to it.
    let json = xqz(&["eval", "ladder", "--run", out, "--anchor", "uniform@64", "--json"]);
    let players: Vec<serde_json::Value> =
        String::from_utf8_lossy(&json.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(players[0]["player"], "uniform@64");
    assert_eq!(players[0]["elo"], 0.0);
    assert!(players.iter().all(|p| p["anchor"] == "uniform@64" && p["games"].as_u64().unwrap() > 0));
    let output = xqz(&["eval", "ladder", "--run", out, "--anchor", "uniform@64"]);
    let ladder = String::from_utf8_lossy(&output.stdout);
    let elo = |ladder: &str, name: &str| -> Option<f64> {
        let line = ladder.lines().find(|l| l.split_whitespace().next() == Some(name))?;
        line.split_whitespace().nth(2)?.parse().ok()
    };
    assert!(ladder.starts_with("Elo relative to uniform@64"), "{ladder}");
    assert_eq!(elo(&ladder, "uniform@64"), Some(0.0), "{ladder}");
    assert!(elo(&ladder, "material@64").unwrap() > 0.0, "{ladder}");
    // The players at 16 playouts never met those at 64: they are left out, and said so.
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("left out of the ladder: 2") && stderr.contains("material@16"), "{stderr}");
    assert_eq!((elo(&ladder, "material@16"), elo(&ladder, "uniform@16")), (None, None), "{ladder}");
    let output = xqz(&["eval", "ladder", "--run", out, "--anchor", "uniform@16"]);
    let ladder = String::from_utf8_lossy(&output.stdout);
    assert!(elo(&ladder, "material@16").is_some(), "{ladder}");
    let unknown = Command::new(env!("CARGO_BIN_EXE_xqz"))
        .args(["eval", "ladder", "--run", out, "--anchor", "material"])
        .output()
        .unwrap();
    let error = String::from_utf8_lossy(&unknown.stderr);
    assert!(!unknown.status.success() && error.contains("no player \"material\""), "{error}");
}

#[test]
fn a_match_cut_short_goes_on_from_its_pairs_and_its_parts_score_as_one() {
    let dir = tempfile::tempdir().unwrap();
    let (whole, parts) = (dir.path().join("whole"), dir.path().join("parts"));
    let matched = |out: &Path, a: &str, b: &str, extra: &[&str]| -> serde_json::Value {
        let mut args = vec!["eval", "match", "--a", a, "--b", b, "--playouts", "16", "--max-plies", "60"];
        args.extend_from_slice(&["--seed", "5", "--concurrency", "1", "--json", "--out", out.to_str().unwrap()]);
        args.extend_from_slice(extra);
        serde_json::from_slice(&xqz(&args).stdout).unwrap()
    };
    let report = matched(&whole, "material", "uniform", &["--pairs", "3"]);
    // The same match cut short after its first pair, then gone on with.
    matched(&parts, "material", "uniform", &["--pairs", "1"]);
    let rest = matched(&parts, "material", "uniform", &["--pairs", "3", "--resume"]);
    assert_eq!(rest["games"], 4, "{rest}");
    // Gone on with once more, it has nothing left to play.
    let done = matched(&parts, "material", "uniform", &["--pairs", "3", "--resume"]);
    assert_eq!(done["games"], 0, "{done}");
    // In text it sums up the whole match, with no line for the games it did not play.
    let mut args = vec!["eval", "match", "--a", "material", "--b", "uniform", "--playouts", "16", "--max-plies", "60"];
    args.extend_from_slice(&["--seed", "5", "--concurrency", "1", "--out", parts.to_str().unwrap(), "--pairs", "3"]);
    args.push("--resume");
    let stdout = String::from_utf8_lossy(&xqz(&args).stdout).into_owned();
    assert!(stdout.contains("all games of the two in the folder (2 matches): 6 games"), "{stdout}");
    assert!(!stdout.contains("final:"), "{stdout}");
    // The parts played the whole match's openings, and so (the players being deterministic) its
    // games.
    let games = |dir: &Path| -> Vec<(u32, String, String, String)> {
        let mut games = Vec::new();
        for batch in read_table(dir) {
            let pair = batch.column_by_name("pair").unwrap().as_any().downcast_ref::<UInt32Array>().unwrap();
            for i in 0..batch.num_rows() {
                let [color, start, moves] =
                    ["a_color", "start_fen", "moves"].map(|c| text(&batch, c).value(i).to_string());
                games.push((pair.value(i), color, start, moves));
            }
        }
        games.sort();
        games
    };
    assert_eq!(games(&parts), games(&whole));
    assert_eq!(games(&whole).iter().map(|g| g.0).collect::<Vec<_>>(), [0, 0, 1, 1, 2, 2]);

    let results = |dir: &Path| -> Vec<serde_json::Value> {
        let out = xqz(&["eval", "results", "--run", dir.to_str().unwrap(), "--json"]);
        String::from_utf8_lossy(&out.stdout).lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    };
    // One match's pooled result is that match's own report; two parts of it, the same.
    // The report of a resumed match adds the whole match's.
    let fields = ["a", "b", "games", "wins", "draws", "losses", "score", "pairs", "elo", "nelo", "los"];
    for (dir, matches) in [(&whole, 1), (&parts, 2)] {
        let pooled = results(dir);
        assert_eq!(pooled.len(), 1, "{pooled:?}");
        assert_eq!(pooled[0]["matches"], matches, "{pooled:?}");
        // Every game's ending is counted once, by who won and why.
        let endings: u64 = pooled[0]["endings"].as_object().unwrap().values().map(|n| n.as_u64().unwrap()).sum();
        assert_eq!(Some(endings), pooled[0]["games"].as_u64(), "{pooled:?}");
        for field in fields {
            assert_eq!(pooled[0][field], report[field], "{field} of {}: {pooled:?} against {report}", dir.display());
            assert_eq!(done["whole"][field], report[field], "{field}: {done} against {report}");
        }
    }
    // A match the other way round joins the pairing, its scores turned to the first player's.
    let reverse = matched(&parts, "uniform", "material", &["--pairs", "1"]);
    let pooled = results(&parts);
    assert_eq!(pooled.len(), 1, "{pooled:?}");
    assert_eq!((pooled[0]["a"].as_str(), pooled[0]["matches"].as_u64()), (Some("material@16"), Some(3)));
    for (won, lost) in [("wins", "losses"), ("draws", "draws"), ("losses", "wins")] {
        let sum = report[won].as_u64().unwrap() + reverse[lost].as_u64().unwrap();
        assert_eq!(pooled[0][won].as_u64(), Some(sum), "{won}: {pooled:?}");
    }
    let pairs =
        |v: &serde_json::Value| v["pairs"].as_array().unwrap().iter().map(|n| n.as_u64().unwrap()).collect::<Vec<_>>();
    let mut expected = pairs(&report);
    for (i, n) in pairs(&reverse).iter().enumerate() {
        expected[4 - i] += n;
    }
    assert_eq!(pairs(&pooled[0]), expected);
    // The lines: one per pairing.
    let lines = xqz(&["eval", "results", "--run", parts.to_str().unwrap()]);
    let lines = String::from_utf8_lossy(&lines.stdout);
    assert!(lines.starts_with("material@16 vs uniform@16 (3 matches): 8 games:"), "{lines}");

    // A folder without games is refused, and so is a test over a resumed match (it would count
    // only the part).
    assert!(refused(&["eval", "results", "--run", dir.path().to_str().unwrap()]).contains("no games in"));
    let error = refused(&["eval", "match", "--a", "material", "--b", "uniform", "--resume", "--sprt", "0,10"]);
    assert!(error.contains("--resume") && error.contains("--sprt"), "{error}");
}

#[test]
fn a_player_is_rated_on_the_ladder_from_the_rungs_around_it() {
    let dir = tempfile::tempdir().unwrap();
    // A table of three rungs (the rating is what the games and this table make of it).
    let table = dir.path().join("ladder.jsonl");
    let rows = [("R-10", -300.0), ("R-5", -150.0), ("R0", 0.0)]
        .map(|(rung, elo)| format!(r#"{{"player":"{rung}","elo":{elo},"stderr":20.0,"anchor":"R0"}}"#));
    std::fs::write(&table, rows.join("\n")).unwrap();
    let out = dir.path().join("rate");
    // The rungs find Fairy-Stockfish as the tests do (XQZ_FAIRY_STOCKFISH, PATH, Debian's path).
    fairy_stockfish::engine_path();
    let rate = |first: &str| -> serde_json::Value {
        let output = xqz(&[
            "eval",
            "rate",
            "--player",
            "material@8",
            "--first",
            first,
            "--pairs",
            "2",
            "--ladder",
            table.to_str().unwrap(),
            "--max-plies",
            "40",
            "--concurrency",
            "2",
            "--out",
            out.to_str().unwrap(),
            "--json",
        ]);
        serde_json::from_slice(&output.stdout).unwrap()
    };
    let json = rate("R-5");
    let (elo, lower, upper) =
        (json["elo"].as_f64().unwrap(), json["lower"].as_f64().unwrap(), json["upper"].as_f64().unwrap());
    assert!(lower < elo && elo < upper, "{json}");
    // The rungs played are those around the first estimate, each to its pairs.
    let between: Vec<&str> = json["between"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    assert!(!between.is_empty() && between.iter().all(|r| ["R-10", "R-5", "R0"].contains(r)), "{json}");
    let games = json["games"].as_u64().unwrap();
    assert!((4..=10).contains(&games), "{json}");
    let mut players: Vec<String> = Vec::new();
    for batch in read_table(&out) {
        check_games(&batch, 40, Ruleset::Wxf);
        players.extend((0..batch.num_rows()).map(|i| text(&batch, "b").value(i).to_string()));
    }
    assert!(players.iter().all(|b| ["R-10", "R-5", "R0"].contains(&b.as_str())), "{players:?}");
    // Asked again, the games in the folder count and no pair is played twice.
    let again = rate("R-5");
    assert_eq!(again["games"], json["games"], "{again}");
    assert_eq!(again["elo"], json["elo"], "{again}");
    // The folder's standings place the player as the rating did, from the same games, and plot
    // it against the hours a file gives.
    let hours = dir.path().join("hours.csv");
    std::fs::write(&hours, "hours,player\n1.5,material@8\n").unwrap();
    let (out_arg, table_arg, hours_arg) = (out.to_str().unwrap(), table.to_str().unwrap(), hours.to_str().unwrap());
    let output = xqz(&["eval", "standings", "--run", out_arg, "--ladder", table_arg, "--hours", hours_arg, "--json"]);
    let standing: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!((&standing["player"], &standing["games"]), (&json["player"], &json["games"]), "{standing}");
    assert!((standing["elo"].as_f64().unwrap() - elo).abs() < 1e-9, "{standing}");
    let plot = std::fs::read_to_string(out.join("ladder-hours.svg")).unwrap();
    assert!(plot.starts_with("<svg") && plot.contains("R-5"), "the plot draws the rungs");
    // An earlier run's curve is drawn beside it, both named in a legend; the earlier folder
    // must have its own hours file.
    let legend = |name: &str| format!(">\n{name}\n</text>");
    assert!(!plot.contains(&legend("rate")), "one curve needs no legend");
    let before = dir.path().join("before");
    std::fs::create_dir_all(before.join("eval")).unwrap();
    std::fs::copy(out.join("eval/games.arrow"), before.join("eval/games.arrow")).unwrap();
    let before_arg = before.to_str().unwrap();
    let args =
        ["eval", "standings", "--run", out_arg, "--ladder", table_arg, "--hours", hours_arg, "--before", before_arg];
    let error = refused(&args);
    assert!(error.contains("hours.csv"), "{error}");
    std::fs::write(
        before.join("hours.csv"),
        "hours,player
3,material@8
",
    )
    .unwrap();
    xqz(&args);
    let plot = std::fs::read_to_string(out.join("ladder-hours.svg")).unwrap();
    assert!(plot.contains(&legend("rate")) && plot.contains(&legend("before")), "both curves are named");
    std::fs::write(&hours, "hours,player\n1,uniform@8\n").unwrap();
    let error = refused(&["eval", "standings", "--run", out_arg, "--ladder", table_arg, "--hours", hours_arg]);
    assert!(error.contains("\"uniform@8\" played no rung"), "{error}");

    let error =
        refused(&["eval", "rate", "--player", "material", "--first", "R9", "--ladder", table.to_str().unwrap()]);
    assert!(error.contains("not a rated rung"), "{error}");
    let error = refused(&["eval", "match", "--a", "material", "--b", "rung:R9", "--pairs", "1"]);
    assert!(error.contains("no rung \"R9\"") && error.contains("R-5"), "{error}");
}

#[test]
fn a_suite_is_built_from_every_family_and_reads_back_as_openings() {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("suite.epd");
    let engine = format!("fairy-stockfish:{}", fairy_stockfish::engine_path().display());
    let build = |depth: &str, tries: &str| {
        vec![
            "eval".to_string(),
            "suite".into(),
            "--engine".into(),
            engine.clone(),
            "--positions".into(),
            "5".into(),
            "--walk-depth".into(),
            depth.into(),
            "--judge-depth".into(),
            depth.into(),
            "--balance".into(),
            "400".into(),
            "--tries".into(),
            tries.into(),
            "--out".into(),
            suite.to_str().unwrap().into(),
        ]
    };
    let args = build("4", "200");
    let output = xqz(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.starts_with("5 positions in"), "{stdout}");
    let text = std::fs::read_to_string(&suite).unwrap();
    let lines: Vec<&str> = text.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(lines.len(), 5, "{text}");
    // A fifth of the suite from each group of families, two fifths from the central cannon's
    // (B or C by Black's defence), each line replaying from the start to its FEN.
    let mut letters: Vec<char> = Vec::new();
    for line in &lines {
        let fields: Vec<&str> = line.split(" ; ").collect();
        letters.push(fields[2].strip_prefix("ecco ").unwrap().chars().next().unwrap());
        let mut game = Game::new(GameConfig::default());
        let moves: Vec<&str> = fields[1].strip_prefix("moves ").unwrap().split(' ').collect();
        assert!((4..=10).contains(&moves.len()), "{line}");
        for mv in moves {
            game.push_str(mv).unwrap();
        }
        assert_eq!(game.position().to_string(), fields[0], "{line}");
        let score: i32 = fields[3].strip_prefix("score ").unwrap().parse().unwrap();
        assert!(score.abs() <= 400, "{line}");
    }
    letters.sort();
    let central = letters.iter().filter(|l| ['B', 'C'].contains(l)).count();
    assert_eq!(
        (central, letters.contains(&'A'), letters.contains(&'D'), letters.contains(&'E')),
        (2, true, true, true)
    );
    // Too few tries for the positions asked: an error that says what to change.
    let args = build("2", "2");
    let error = refused(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert!(error.contains("raise --tries"), "{error}");
}
