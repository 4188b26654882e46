//! Compaction: a writer that flushes after every few games merges its newest shards, so the
//! manifest stays short whatever the number of flushes, and readers see every row in order.

mod common;

use std::path::Path;

use xqz_dataset::manifest::RETIRED_GRACE_MS;
use xqz_dataset::{Compaction, Compression, Dataset, DatasetWriter, GameRecord, Manifest, ReplayConfig, ReplayWindow};
use xqz_dataset::{SampleRecord, WindowSize, WriterConfig};

use common::*;

fn compacting(fan_in: usize, max_samples: u64) -> WriterConfig {
    WriterConfig { compaction: Some(Compaction { fan_in, max_samples }), ..small_shards(usize::MAX, Compression::Zstd) }
}

/// Flushes each game as its own shard, compacting after each flush, as the coordinator does.
fn flush_each(dir: &Path, config: WriterConfig, games: &[(GameRecord, Vec<SampleRecord>)]) {
    let (mut writer, _) = DatasetWriter::open(dir, config).unwrap();
    for (game, samples) in games {
        writer.append(game.clone(), samples.clone()).unwrap();
        writer.flush().unwrap().expect("a shard");
        writer.compact().unwrap();
    }
    writer.finish().unwrap();
}

fn levels(dataset: &Dataset) -> Vec<u32> {
    dataset.shards().iter().map(|s| s.level).collect()
}

#[test]
fn forty_flushes_in_fours_leave_four_shards_with_every_row_in_order() {
    let games = games(7, 0, 40, &short());
    let dir = tempfile::tempdir().unwrap();
    flush_each(dir.path(), compacting(4, u64::MAX), &games);

    let dataset = Dataset::open(dir.path()).unwrap();
    // 40 = 2 x 16 + 2 x 4: two shards merged twice, two merged once.
    assert_eq!(levels(&dataset), [2, 2, 1, 1]);
    assert_eq!(dataset.games().unwrap(), games.iter().map(|(g, _)| g.clone()).collect::<Vec<_>>());
    assert_eq!(dataset.samples().unwrap(), games.iter().flat_map(|(_, s)| s.clone()).collect::<Vec<_>>());
    assert_eq!(dataset.num_games(), 40);
    // The merged shards' old files are kept for readers of older manifests, and not reported.
    assert!(dataset.report().is_clean(), "{}", dataset.report());
    let retired = &dataset.manifest().retired;
    // 12 merges of 4 shards each: 10 of level 0, 2 of level 1.
    assert_eq!(retired.iter().map(|r| r.shards.len()).collect::<Vec<_>>(), [4; 12]);
    assert!(retired.iter().flat_map(|r| r.files()).all(|name| dir.path().join(name).exists()));
    // Every id is new: the merged shards come after every shard they replaced.
    let ids: Vec<u64> = dataset.shards().iter().map(|s| s.id).collect();
    assert!(ids.windows(2).all(|w| w[0] < w[1]), "{ids:?}");
    assert_eq!(dataset.manifest().next_shard_id, 40 + 10 + 2 + 1);

    // The replay window reads the newest samples across merged shards.
    let total = dataset.num_samples() as usize;
    let config = ReplayConfig { window: WindowSize::Fixed(total), ..ReplayConfig::default() };
    let window = ReplayWindow::open(dir.path(), config).unwrap();
    assert_eq!(window.len(), total);
}

#[test]
fn shards_that_would_merge_into_more_than_max_samples_stay_as_they_are() {
    let games = games(8, 0, 12, &short());
    let per_game: Vec<u64> = games.iter().map(|(_, s)| s.len() as u64).collect();
    // Four games always fit; sixteen never do.
    let max = per_game.iter().sum::<u64>() - 1;
    let dir = tempfile::tempdir().unwrap();
    flush_each(dir.path(), compacting(4, max), &games);
    let dataset = Dataset::open(dir.path()).unwrap();
    assert_eq!(levels(&dataset), [1, 1, 1]);
    // More flushes: new level-1 shards sit beside the old ones, which never merge.
    let more = common::games(9, 100, 16, &short());
    flush_each(dir.path(), compacting(4, max), &more);
    let dataset = Dataset::open(dir.path()).unwrap();
    assert_eq!(levels(&dataset), [1; 7]);
    assert_eq!(dataset.num_games(), 28);
}

#[test]
fn retired_files_are_deleted_once_their_grace_has_passed() {
    let games = games(10, 0, 4, &short());
    let dir = tempfile::tempdir().unwrap();
    flush_each(dir.path(), compacting(4, u64::MAX), &games);
    let games = common::games(12, 100, 4, &short());
    flush_each(dir.path(), compacting(4, u64::MAX), &games);
    let mut manifest = Manifest::load(dir.path()).unwrap();
    assert_eq!(manifest.retired.len(), 2, "two merges");
    let (old, new) = (manifest.retired[0].clone(), manifest.retired[1].clone());
    // One file is gone already (a crash after deleting it, before the manifest forgot it).
    std::fs::remove_file(dir.path().join(old.files().next().unwrap())).unwrap();
    manifest.retired[0].retired_unix_ms -= RETIRED_GRACE_MS;
    manifest.store(dir.path()).unwrap();

    let (mut writer, _) = DatasetWriter::open(dir.path(), compacting(4, u64::MAX)).unwrap();
    assert!(writer.compact().unwrap().is_empty(), "nothing to merge");
    writer.finish().unwrap();
    let after = Manifest::load(dir.path()).unwrap();
    assert_eq!(after.retired, std::slice::from_ref(&new));
    assert!(old.files().all(|name| !dir.path().join(&name).exists()), "deleted");
    assert!(new.files().all(|name| dir.path().join(&name).exists()), "kept");
    let dataset = Dataset::open(dir.path()).unwrap();
    assert!(dataset.report().is_clean(), "{}", dataset.report());
    assert_eq!(dataset.games().unwrap().len(), 8);
}

#[test]
fn a_writer_without_compaction_never_merges() {
    let games = games(11, 0, 20, &short());
    let dir = tempfile::tempdir().unwrap();
    flush_each(dir.path(), small_shards(usize::MAX, Compression::Zstd), &games);
    assert_eq!(levels(&Dataset::open(dir.path()).unwrap()), [0; 20]);
    let bad = WriterConfig { compaction: Some(Compaction { fan_in: 1, max_samples: 10 }), ..WriterConfig::default() };
    let err = DatasetWriter::open(dir.path(), bad).unwrap_err();
    assert!(err.to_string().contains("fan_in must be at least 2"), "{err}");
}

#[test]
fn a_dataset_written_without_compaction_merges_its_runs_of_small_shards_later() {
    let games = games(10, 0, 12, &short());
    let dir = tempfile::tempdir().unwrap();
    // Twelve one-game shards, as a writer without compaction leaves them.
    flush_each(dir.path(), small_shards(usize::MAX, Compression::Zstd), &games);
    let per_game: Vec<u64> = games.iter().map(|(_, s)| s.len() as u64).collect();
    // Room for the first five games' samples, not six.
    let max = per_game[..5].iter().sum::<u64>();

    let (mut writer, _) = DatasetWriter::open(dir.path(), small_shards(usize::MAX, Compression::Zstd)).unwrap();
    let merged = writer.compact_all(max).unwrap();
    writer.finish().unwrap();
    let dataset = Dataset::open(dir.path()).unwrap();
    assert!(merged.len() >= 2 && dataset.shards().len() < 12, "{} shards", dataset.shards().len());
    assert!(dataset.shards().iter().all(|s| s.samples <= max || s.level == 0));
    assert_eq!(dataset.shards()[0].games, 5, "the first run holds as many games as fit");
    assert_eq!(dataset.games().unwrap(), games.iter().map(|(g, _)| g.clone()).collect::<Vec<_>>());
    assert_eq!(dataset.samples().unwrap(), games.iter().flat_map(|(_, s)| s.clone()).collect::<Vec<_>>());
    assert!(dataset.report().is_clean(), "{}", dataset.report());
    let retired: usize = dataset.manifest().retired.iter().map(|r| r.shards.len()).sum();
    assert_eq!(retired + dataset.shards().len(), 12 + merged.len());

    // Nothing more fits together: a second pass merges nothing.
    let (mut writer, _) = DatasetWriter::open(dir.path(), small_shards(usize::MAX, Compression::Zstd)).unwrap();
    let shards = writer.manifest().shards.len();
    assert_eq!(writer.compact_all(max).unwrap(), []);
    assert_eq!(writer.manifest().shards.len(), shards);
}
