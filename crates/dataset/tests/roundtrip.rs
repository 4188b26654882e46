//! Writing and reading back: same rows, shard layout, metadata, locking, validation.

mod common;

use std::time::Duration;

use xqz_dataset::schema::{self, meta};
use xqz_dataset::{Compression, Dataset, DatasetError, DatasetWriter, ShardKind, read_ipc_file};

use common::*;

#[test]
fn write_then_read_gives_the_same_rows() {
    let games = games(1, 100, 12, &short());
    for compression in [Compression::Zstd, Compression::Lz4, Compression::None] {
        let dir = tempfile::tempdir().unwrap();
        write_all(dir.path(), small_shards(120, compression), &games);
        let dataset = Dataset::open(dir.path()).unwrap();
        assert!(dataset.report().is_clean(), "{}", dataset.report());
        assert!(dataset.shards().len() > 1, "small shards should give several");
        let expected_games: Vec<_> = games.iter().map(|(g, _)| g.clone()).collect();
        let expected_samples: Vec<_> = games.iter().flat_map(|(_, s)| s.clone()).collect();
        assert_eq!(dataset.games().unwrap(), expected_games, "{compression:?}");
        assert_eq!(dataset.samples().unwrap(), expected_samples, "{compression:?}");
        assert_eq!(dataset.num_games(), 12);
        assert_eq!(dataset.num_samples(), expected_samples.len() as u64);
    }
}

#[test]
fn a_game_and_its_samples_share_a_shard() {
    let games = games(2, 0, 10, &short());
    let dir = tempfile::tempdir().unwrap();
    write_all(dir.path(), small_shards(50, Compression::Zstd), &games);
    let dataset = Dataset::open(dir.path()).unwrap();
    for shard in dataset.shards() {
        let ids: std::collections::BTreeSet<_> = dataset.read_games(shard).unwrap().iter().map(|g| g.game_id).collect();
        let samples = dataset.read_samples(shard).unwrap();
        assert!(samples.iter().all(|s| ids.contains(&s.game_id)));
        let expected: usize = games.iter().filter(|(g, _)| ids.contains(&g.game_id)).map(|(_, s)| s.len()).sum();
        assert_eq!(samples.len(), expected);
        // A shard holds at most shard_rows samples plus one game's.
        assert!(shard.samples < 50 + 40, "shard {} has {} samples", shard.id, shard.samples);
    }
}

#[test]
fn shards_describe_themselves() {
    let games = games(3, 0, 3, &short());
    let dir = tempfile::tempdir().unwrap();
    write_all(dir.path(), small_shards(10_000, Compression::Zstd), &games);
    let dataset = Dataset::open(dir.path()).unwrap();
    let shard = &dataset.shards()[0];
    for (kind, base) in [(ShardKind::Games, schema::games_schema()), (ShardKind::Samples, schema::samples_schema())] {
        let data = read_ipc_file(&dataset.shard_path(shard, kind), &base, Some(shard.id)).unwrap();
        let m = data.schema.metadata();
        assert_eq!(m[meta::SCHEMA_VERSION], "1");
        assert_eq!(m[meta::KIND], kind.name());
        assert_eq!(m[meta::RULESET], "chinese2011");
        assert_eq!(m[meta::MODEL_VERSION_MIN], "1");
        assert_eq!(m[meta::MODEL_VERSION_MAX], "1");
        assert!(m[meta::WRITER].starts_with("xqz-dataset ") && m[meta::WRITER].ends_with("(test)"));
        assert!(m[meta::BOARD_ENCODING].contains("rank*9+file"));
        assert_eq!(m[meta::SHARD_ID], shard.id.to_string());
    }
}

#[test]
fn reopening_appends_new_shards() {
    let games = games(4, 0, 6, &short());
    let dir = tempfile::tempdir().unwrap();
    write_all(dir.path(), small_shards(10_000, Compression::Zstd), &games[..3]);
    write_all(dir.path(), small_shards(10_000, Compression::Zstd), &games[3..]);
    let dataset = Dataset::open(dir.path()).unwrap();
    assert_eq!(dataset.shards().iter().map(|s| s.id).collect::<Vec<_>>(), vec![1, 2]);
    assert_eq!(dataset.games().unwrap(), games.iter().map(|(g, _)| g.clone()).collect::<Vec<_>>());
}

#[test]
fn a_second_writer_is_locked_out() {
    let dir = tempfile::tempdir().unwrap();
    let (writer, _) = DatasetWriter::open(dir.path(), small_shards(10, Compression::Zstd)).unwrap();
    let second = DatasetWriter::open(dir.path(), small_shards(10, Compression::Zstd));
    assert!(matches!(second, Err(DatasetError::Locked { .. })), "{second:?}");
    drop(writer);
    DatasetWriter::open(dir.path(), small_shards(10, Compression::Zstd)).unwrap();
}

#[test]
fn flush_interval_and_explicit_flushes() {
    let games = games(5, 0, 3, &short());
    let dir = tempfile::tempdir().unwrap();
    let mut config = small_shards(10_000, Compression::Zstd);
    config.flush_interval = Some(Duration::ZERO);
    let (mut writer, _) = DatasetWriter::open(dir.path(), config).unwrap();
    for (g, s) in &games {
        let shard = writer.append(g.clone(), s.clone()).unwrap();
        assert!(shard.is_some(), "a zero interval flushes every game");
        assert_eq!(writer.pending_games(), 0);
    }
    assert_eq!(writer.flush().unwrap(), None, "nothing buffered");
    assert_eq!(writer.manifest().shards.len(), 3);
}

#[test]
fn inconsistent_records_are_rejected() {
    let games = games(6, 0, 2, &short());
    let dir = tempfile::tempdir().unwrap();
    let (mut writer, _) = DatasetWriter::open(dir.path(), small_shards(10_000, Compression::Zstd)).unwrap();
    let (g0, s0) = &games[0];
    let (_, s1) = &games[1];
    let cases = [
        ("foreign sample", s1.clone()),
        ("bad plies_to_end", {
            let mut s = s0.clone();
            s[0].plies_to_end += 1;
            s
        }),
        ("bad result", {
            let mut s = s0.clone();
            s[0].result = if s[0].result == 1 { -1 } else { 1 };
            s
        }),
        ("duplicate ply", {
            let mut s = s0.clone();
            s.push(s[0].clone());
            s
        }),
        ("NaN policy", {
            let mut s = s0.clone();
            s[0].policy[0].p = f32::NAN;
            s
        }),
    ];
    for (what, samples) in cases {
        let err = writer.append(g0.clone(), samples).unwrap_err();
        assert!(matches!(err, DatasetError::InvalidRecord(_)), "{what}: {err}");
    }
    assert_eq!(writer.pending_games(), 0, "rejected games are not buffered");
}
