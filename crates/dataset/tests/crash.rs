//! Crash safety: torn temporary files, a partial manifest and uncommitted shards are ignored and
//! reported; everything committed stays readable.

mod common;

use std::fs;
use std::process::Command;
use std::time::{Duration, Instant};

use xqz_dataset::layout::{MANIFEST_FILE, tmp_name};
use xqz_dataset::{Compression, Dataset, DatasetWriter, IgnoredReason, ShardKind};

use common::*;

#[test]
fn a_shard_killed_mid_write_is_ignored_and_the_rest_is_intact() {
    let games = games(10, 0, 9, &short());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path();
    // Two committed shards.
    write_all(path, small_shards(10_000, Compression::Zstd), &games[..3]);
    write_all(path, small_shards(10_000, Compression::Zstd), &games[3..6]);
    let committed = Dataset::open(path).unwrap();
    let manifest_before = fs::read(path.join(MANIFEST_FILE)).unwrap();

    // A third shard, written completely elsewhere, to take real bytes from.
    let scratch = tempfile::tempdir().unwrap();
    write_all(scratch.path(), small_shards(10_000, Compression::Zstd), &games[6..]);
    let games_bytes = fs::read(scratch.path().join(ShardKind::Games.file_name(1))).unwrap();
    let samples_bytes = fs::read(scratch.path().join(ShardKind::Samples.file_name(1))).unwrap();
    let manifest_bytes = fs::read(scratch.path().join(MANIFEST_FILE)).unwrap();

    // The kill: shard 3 half-written under its temporary names, a partial manifest update.
    fs::write(path.join(tmp_name(&ShardKind::Games.file_name(3))), &games_bytes).unwrap();
    fs::write(path.join(tmp_name(&ShardKind::Samples.file_name(3))), &samples_bytes[..samples_bytes.len() / 2])
        .unwrap();
    fs::write(path.join(tmp_name(MANIFEST_FILE)), &manifest_bytes[..manifest_bytes.len() / 3]).unwrap();
    // An earlier kill between the renames and the manifest update: shard 4 complete but unlisted.
    fs::write(path.join(ShardKind::Games.file_name(4)), &games_bytes).unwrap();

    assert_eq!(fs::read(path.join(MANIFEST_FILE)).unwrap(), manifest_before);
    let dataset = Dataset::open(path).unwrap();
    assert_eq!(dataset.shards(), committed.shards());
    assert_eq!(dataset.games().unwrap(), games[..6].iter().map(|(g, _)| g.clone()).collect::<Vec<_>>());
    assert_eq!(dataset.samples().unwrap(), games[..6].iter().flat_map(|(_, s)| s.clone()).collect::<Vec<_>>());
    let ignored: Vec<_> = dataset
        .report()
        .ignored
        .iter()
        .map(|f| (f.path.file_name().unwrap().to_string_lossy().into_owned(), f.reason.clone()))
        .collect();
    assert_eq!(
        ignored,
        vec![
            ("games-00000003.arrow.tmp".to_string(), IgnoredReason::Temporary),
            ("games-00000004.arrow".to_string(), IgnoredReason::Unlisted),
            ("manifest.json.tmp".to_string(), IgnoredReason::Temporary),
            ("samples-00000003.arrow.tmp".to_string(), IgnoredReason::Temporary),
        ]
    );

    // Recovery on the next writer's start: temporary files go, the unlisted shard's id is skipped.
    let (mut writer, report) = DatasetWriter::open(path, small_shards(10_000, Compression::Zstd)).unwrap();
    assert_eq!(report.ignored.len(), 4);
    assert!(!path.join(tmp_name(MANIFEST_FILE)).exists());
    assert!(!path.join(tmp_name(&ShardKind::Samples.file_name(3))).exists());
    for (g, s) in &games[6..] {
        writer.append(g.clone(), s.clone()).unwrap();
    }
    let shard = writer.finish().unwrap().unwrap();
    assert_eq!(shard.id, 5);
    let dataset = Dataset::open(path).unwrap();
    assert_eq!(dataset.games().unwrap(), games.iter().map(|(g, _)| g.clone()).collect::<Vec<_>>());
    assert_eq!(dataset.report().ignored.len(), 1, "only the unlisted shard 4 remains: {}", dataset.report());
}

#[test]
fn a_damaged_committed_shard_is_skipped_and_reported() {
    let games = games(11, 0, 6, &short());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path();
    write_all(path, small_shards(10_000, Compression::Zstd), &games[..3]);
    write_all(path, small_shards(10_000, Compression::Zstd), &games[3..]);
    let victim = path.join(ShardKind::Samples.file_name(1));
    let bytes = fs::read(&victim).unwrap();
    fs::write(&victim, &bytes[..bytes.len() - 10]).unwrap();
    fs::remove_file(path.join(ShardKind::Games.file_name(1))).unwrap();

    let dataset = Dataset::open(path).unwrap();
    assert_eq!(dataset.shards().iter().map(|s| s.id).collect::<Vec<_>>(), vec![2]);
    assert_eq!(dataset.games().unwrap(), games[3..].iter().map(|(g, _)| g.clone()).collect::<Vec<_>>());
    let reasons: Vec<_> = dataset.report().ignored.iter().map(|f| f.reason.clone()).collect();
    assert_eq!(reasons.len(), 2);
    assert!(reasons.contains(&IgnoredReason::Missing));
    assert!(reasons.iter().any(|r| matches!(r, IgnoredReason::SizeMismatch { .. })));
}

#[test]
fn a_corrupt_manifest_is_an_error_not_an_empty_dataset() {
    let games = games(12, 0, 2, &short());
    let dir = tempfile::tempdir().unwrap();
    write_all(dir.path(), small_shards(10_000, Compression::Zstd), &games);
    fs::write(dir.path().join(MANIFEST_FILE), "{\"format\": \"xqz-dataset\", \"shards\": [").unwrap();
    let err = Dataset::open(dir.path()).unwrap_err();
    assert!(err.to_string().contains("manifest"), "{err}");
}

/// Set in the child process of [`a_writer_killed_at_a_random_moment_leaves_a_readable_dataset`].
const CHILD_DIR: &str = "XQZ_DATASET_CRASH_CHILD_DIR";

/// Not a test of its own: the child process that writes shards until it is killed.
#[test]
fn crash_child_writer() {
    let Some(dir) = std::env::var_os(CHILD_DIR) else { return };
    let games = games(14, 0, 10, &short());
    let (mut writer, _) = DatasetWriter::open(&dir, small_shards(60, Compression::Zstd)).unwrap();
    append_until_killed(&mut writer, &games);
}

#[test]
fn a_writer_killed_at_a_random_moment_leaves_a_readable_dataset() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path();
    for round in 0..3u64 {
        let before = Dataset::open(path).unwrap().shards().len();
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["crash_child_writer", "--exact", "--nocapture"])
            .env(CHILD_DIR, path)
            .spawn()
            .unwrap();
        // Let it commit a few shards, then kill it somewhere in the middle of one.
        let start = Instant::now();
        while Dataset::open(path).unwrap().shards().len() < before + 2 {
            assert!(start.elapsed() < Duration::from_secs(20), "the child writer made no progress");
            std::thread::sleep(Duration::from_millis(2));
        }
        std::thread::sleep(Duration::from_micros(round * 1700 % 5000));
        child.kill().unwrap();
        child.wait().unwrap();

        let dataset = Dataset::open(path).unwrap();
        let games = dataset.games().unwrap();
        let samples = dataset.samples().unwrap();
        assert_eq!(games.len() as u64, dataset.num_games());
        // Every stored game has all its samples (one per ply in these games) and no other.
        let plies: usize = games.iter().map(|g| g.moves.len()).sum();
        assert_eq!(samples.len(), plies, "round {round}: a game is half-stored");
        for file in &dataset.report().ignored {
            assert!(matches!(file.reason, IgnoredReason::Temporary | IgnoredReason::Unlisted), "round {round}: {file}");
        }
    }
}
