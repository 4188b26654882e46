//! `xqz data inspect|stats|export` on a small synthetic dataset.

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use xiangqi::notation::{Chinese, Wxf};
use xiangqi::{Move, Position};
use xqz_dataset::synthetic::{SyntheticConfig, random_game};
use xqz_dataset::{DatasetLocation, DatasetWriter, ShardKind, WriterConfig};

fn xqz(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xqz")).args(args).output().expect("xqz runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
}

/// Two shards of three games each.
fn dataset(dir: &Path) {
    dataset_at(dir.into());
}

/// Two shards of three games each, at `location`.
fn dataset_at(location: DatasetLocation) {
    let config = SyntheticConfig { max_plies: 30, policy_moves: 4, ..SyntheticConfig::default() };
    open_writer(location, 5, 6, &config, 3).finish().unwrap();
}

/// A writer of the dataset at `location`, left open, that has stored `games` random games (seed
/// `seed`) in shards of `per_shard` games, the last one buffered if it is not full.
fn open_writer(
    location: DatasetLocation,
    seed: u64,
    games: u128,
    config: &SyntheticConfig,
    per_shard: u128,
) -> DatasetWriter {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let (mut writer, _) =
        DatasetWriter::open_at(location, WriterConfig { flush_interval: None, ..WriterConfig::default() }).unwrap();
    for id in 0..games {
        let (game, samples) = random_game(&mut rng, id, config);
        writer.append(game, samples).unwrap();
        if (id + 1) % per_shard == 0 {
            writer.flush().unwrap();
        }
    }
    writer
}

#[test]
fn inspect_lists_shards_and_reports_ignored_files() {
    let dir = tempfile::tempdir().unwrap();
    dataset(dir.path());
    let path = dir.path().to_str().unwrap();
    let out = xqz(&["data", "inspect", path, "--verify"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains("2 shards (2 listed), 6 games"), "{stdout}");
    assert!(stdout.contains("ignored files: none"), "{stdout}");
    assert!(stdout.contains("verified 2 shards"), "{stdout}");

    fs::write(dir.path().join(format!("{}.tmp", ShardKind::Samples.file_name(3))), b"torn").unwrap();
    let out = xqz(&["data", "inspect", path]);
    let stdout = text(&out.stdout);
    assert!(out.status.success());
    assert!(stdout.contains("1 ignored file(s)") && stdout.contains("samples-00000003.arrow.tmp"), "{stdout}");
}

#[test]
fn stats_prints_results_terminations_and_a_histogram() {
    let dir = tempfile::tempdir().unwrap();
    dataset(dir.path());
    let out = xqz(&["data", "stats", dir.path().to_str().unwrap(), "--bucket", "10"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    for needle in ["games 6", "results", "terminations", "max_length", "game length (plies)", "30-39"] {
        assert!(stdout.contains(needle), "no {needle:?} in\n{stdout}");
    }
    // The same as one JSON object.
    let out = xqz(&["data", "stats", dir.path().to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stats: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(stats["games"], 6, "{stats}");
    let by_result: u64 = stats["results"].as_object().unwrap().values().map(|v| v.as_u64().unwrap()).sum();
    let by_reason: u64 = stats["terminations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| ["red", "black", "draw"].iter().map(|k| t[*k].as_u64().unwrap()).sum::<u64>())
        .sum();
    assert_eq!((by_result, by_reason), (6, 6), "{stats}");
    assert!(stats["lengths"]["min"].as_u64() <= stats["lengths"]["max"].as_u64(), "{stats}");
}

#[test]
fn export_writes_parquet_and_pgn_our_parsers_read_back() {
    let dir = tempfile::tempdir().unwrap();
    dataset(dir.path());
    let path = dir.path().to_str().unwrap();
    let out_dir = dir.path().join("export");
    let out = xqz(&["data", "export", path, "--out", out_dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    for name in ["games.parquet", "samples.parquet"] {
        let bytes = fs::read(out_dir.join(name)).unwrap();
        assert!(bytes.starts_with(b"PAR1") && bytes.ends_with(b"PAR1"), "{name}");
    }
    // PGN in each notation, read back by our own parsers: the moves of every stored game.
    let stored: Vec<Vec<Move>> =
        xqz_dataset::Dataset::open(dir.path()).unwrap().games().unwrap().into_iter().map(|g| g.moves).collect();
    for notation in ["iccs", "wxf", "chinese"] {
        let out = xqz(&["data", "export", path, "--format", "pgn", "--notation", notation, "--out", "-"]);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let listing = text(&out.stdout);
        assert_eq!(listing.matches("[Game \"Chinese Chess\"]").count(), 6);
        let format = format!(
            "[Format \"{}\"]",
            ["ICCS", "WXF", "Chinese"][["iccs", "wxf", "chinese"].iter().position(|n| *n == notation).unwrap()]
        );
        assert_eq!(listing.matches(&format).count(), 6, "{listing}");
        assert!(!listing.contains("[FEN "), "games from the start position carry no FEN tag");
        let games: Vec<Vec<Move>> = listing
            .split("[Game ")
            .skip(1)
            .map(|game| {
                let mut pos = Position::startpos();
                let mut moves = Vec::new();
                // Move lines are `N. ...`; the result line (`{...} 1/2-1/2`) is not one.
                let numbered =
                    |l: &&str| l.split_once(". ").is_some_and(|(n, _)| n.bytes().all(|b| b.is_ascii_digit()));
                for line in game.lines().filter(numbered) {
                    for word in line.split_whitespace().skip(1).filter(|w| *w != "...") {
                        let mv = match notation {
                            "iccs" => word.replace('-', "").to_ascii_lowercase().parse::<Move>().unwrap(),
                            "wxf" => word.parse::<Wxf>().unwrap().resolve(&pos).unwrap(),
                            _ => word.parse::<Chinese>().unwrap().resolve(&pos).unwrap(),
                        };
                        pos.play(mv).unwrap();
                        moves.push(mv);
                    }
                }
                moves
            })
            .collect();
        assert_eq!(games, stored, "{notation}");
    }
}

/// Fairy-Stockfish (PyPI's pyffish) reads our ICCS export by the PGN grammar and finds every
/// move legal in sequence: the file is what other Xiangqi tools read, not only what our parsers do.
#[test]
fn pyffish_finds_every_move_of_an_iccs_export_legal() {
    let dir = tempfile::tempdir().unwrap();
    // Long games, so that captures, checks and late endgames are among the moves.
    let config = SyntheticConfig { max_plies: 200, policy_moves: 2, ..SyntheticConfig::default() };
    open_writer(dir.path().into(), 11, 12, &config, u128::MAX).finish().unwrap();
    let pgn = dir.path().join("games.pgn");
    let out = xqz(&[
        "data",
        "export",
        dir.path().to_str().unwrap(),
        "--format",
        "pgn",
        "--notation",
        "iccs",
        "--out",
        pgn.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let moves: usize =
        xqz_dataset::Dataset::open(dir.path()).unwrap().games().unwrap().iter().map(|g| g.moves.len()).sum();

    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/pgn_pyffish.py");
    let checked = Command::new(xqz_test_support::python::python("pyffish")).arg(&script).arg(&pgn).output().unwrap();
    let report = format!("{}{}", text(&checked.stdout), text(&checked.stderr));
    assert!(checked.status.success(), "{report}");
    assert_eq!(report.trim(), format!("ok 12 games {moves} moves"));
}

#[test]
fn data_errors_go_through_the_error_printer() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    let out = xqz(&["data", "stats", missing.to_str().unwrap()]);
    assert!(!out.status.success());
    let stderr = text(&out.stderr);
    assert!(stderr.starts_with("error: cannot open dataset"), "{stderr}");
    fs::write(dir.path().join("manifest.json"), "{").unwrap();
    let out = xqz(&["data", "inspect", dir.path().to_str().unwrap()]);
    assert!(text(&out.stderr).contains("manifest"), "{}", text(&out.stderr));
}

/// `xqz data` and `xqz book build` read a dataset in an S3 bucket (moto) in place, with the
/// endpoint and credentials from the usual environment variables; a prefix with no dataset is
/// named as such.
#[test]
fn data_and_book_read_a_dataset_in_an_s3_bucket() {
    let moto = xqz_test_support::moto::Moto::start("xqz-data");
    let url = moto.url("run/dataset");
    dataset_at(DatasetLocation::parse_with(&url, moto.env()).unwrap());
    let xqz_s3 = |args: &[&str]| Command::new(env!("CARGO_BIN_EXE_xqz")).args(args).envs(moto.env()).output().unwrap();

    let out = xqz_s3(&["data", "inspect", &url, "--verify"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.starts_with(&format!("dataset {url}\n")), "{stdout}");
    assert!(stdout.contains("2 shards (2 listed), 6 games") && stdout.contains("verified 2 shards"), "{stdout}");

    let out = xqz_s3(&["data", "stats", &url, "--json"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stats: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(stats["games"], 6, "{stats}");

    let dir = tempfile::tempdir().unwrap();
    let book = dir.path().join("book.sqlite");
    let out = xqz_s3(&["book", "build", "--out", book.to_str().unwrap(), "--data", &url]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains(&format!("{url}: 6 games")), "{}", text(&out.stderr));

    let empty = moto.url("no/such/prefix");
    let out = xqz_s3(&["book", "build", "--out", dir.path().join("b.sqlite").to_str().unwrap(), "--data", &empty]);
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains(&format!("{empty} is not a dataset (it has no manifest.json)")),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn compact_merges_small_shards_and_refuses_a_dataset_in_use() {
    let dir = tempfile::tempdir().unwrap();
    let config = SyntheticConfig { max_plies: 30, policy_moves: 4, ..SyntheticConfig::default() };
    let writer = open_writer(dir.path().into(), 6, 8, &config, 1);
    let path = dir.path().to_str().unwrap();
    let out = xqz(&["data", "compact", path]);
    assert!(!out.status.success(), "a dataset whose writer is open is refused");
    assert!(text(&out.stderr).contains("cannot open"), "{}", text(&out.stderr));
    writer.finish().unwrap();

    let out = xqz(&["data", "compact", path]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(text(&out.stdout).contains("8 shards, 1 after 1 merge(s)"), "{}", text(&out.stdout));
    let out = xqz(&["data", "inspect", path, "--verify"]);
    let stdout = text(&out.stdout);
    assert!(stdout.contains("1 shards (1 listed), 8 games") && stdout.contains("verified 1 shards"), "{stdout}");
    let out = xqz(&["data", "compact", path, "--max-samples", "0"]);
    assert!(text(&out.stderr).contains("--max-samples must be positive"), "{}", text(&out.stderr));
    let missing = dir.path().join("missing");
    let out = xqz(&["data", "compact", missing.to_str().unwrap()]);
    assert!(!out.status.success() && text(&out.stderr).contains("cannot open dataset"), "{}", text(&out.stderr));
    assert!(!missing.exists(), "no dataset is made where there was none");
}
