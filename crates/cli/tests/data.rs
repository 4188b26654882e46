//! `xqz data inspect|stats|export` on a small synthetic dataset.

use std::fs;
use std::path::Path;
use std::process::{Command, Output};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use xqz_dataset::synthetic::{SyntheticConfig, random_game};
use xqz_dataset::{DatasetWriter, ShardKind, WriterConfig};

fn xqz(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xqz")).args(args).output().expect("xqz runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).unwrap()
}

/// Two shards of three games each.
fn dataset(dir: &Path) {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let config = SyntheticConfig { max_plies: 30, policy_moves: 4, ..SyntheticConfig::default() };
    let (mut writer, _) =
        DatasetWriter::open(dir, WriterConfig { flush_interval: None, ..WriterConfig::default() }).unwrap();
    for id in 0..6 {
        let (game, samples) = random_game(&mut rng, id, &config);
        writer.append(game, samples).unwrap();
        if id == 2 {
            writer.flush().unwrap();
        }
    }
    writer.finish().unwrap();
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
}

#[test]
fn export_writes_parquet_and_a_text_listing() {
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
    let out = xqz(&["data", "export", path, "--format", "text", "--out", "-"]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let listing = text(&out.stdout);
    assert_eq!(listing.matches("[Game \"").count(), 6);
    assert!(listing.contains("[FEN \"rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABNR w - - 0 1\"]"));
    // Every move line starts with its number and carries coordinate and Chinese notation.
    let first = listing.lines().find(|l| l.starts_with("1. ")).unwrap();
    let words: Vec<&str> = first.split_whitespace().collect();
    assert_eq!(words.len(), 5, "{first}");
    assert!(words[1].len() == 4 && words[2].chars().count() == 4, "{first}");
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
