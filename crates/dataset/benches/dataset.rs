//! Dataset throughput: shard writing (zstd and lz4), reading back, and the replay loader.
//!
//! Run with `cargo bench -p xqz-dataset`. Generates synthetic self-play games once (not timed;
//! `XQZ_BENCH_GAMES` games, 300 by default, up to 200 plies, 40-move policies), then prints:
//! - write: samples/s and MB/s (bytes on disk) through `DatasetWriter`, fsyncs included;
//! - read: samples/s and MB/s decoding every shard into `SampleRecord`s and into the replay
//!   window's columns;
//! - replay: batches/s of 256 from `ReplayWindow::epoch` in this thread and from the background
//!   `ReplayLoader` (mirror probability 0.5).
//!
//! The dataset lives in a temporary folder under `$TMPDIR` (set it to choose the disk).

use std::time::Instant;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use xqz_dataset::synthetic::{SyntheticConfig, random_game};
use xqz_dataset::{
    Compression, Dataset, DatasetWriter, GameRecord, ReplayConfig, ReplayLoader, ReplayWindow, SampleColumns,
    SampleRecord, ShardEntry, WindowSize, WriterConfig,
};

const BATCH: usize = 256;

fn mb(bytes: u64) -> f64 {
    bytes as f64 / 1e6
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n_games: usize = std::env::var("XQZ_BENCH_GAMES").ok().and_then(|v| v.parse().ok()).unwrap_or(300);
    let config = SyntheticConfig { max_plies: 200, policy_moves: 40, ..SyntheticConfig::default() };
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let t = Instant::now();
    let games: Vec<(GameRecord, Vec<SampleRecord>)> =
        (0..n_games as u128).map(|i| random_game(&mut rng, i, &config)).collect();
    let n_samples: usize = games.iter().map(|(_, s)| s.len()).sum();
    let entries: usize = games.iter().flat_map(|(_, s)| s.iter().map(|x| x.policy.len())).sum();
    println!(
        "data: {n_games} games, {n_samples} samples, {:.1} policy entries/sample (generated in {:.2}s, not timed)",
        entries as f64 / n_samples as f64,
        t.elapsed().as_secs_f64()
    );

    let mut zstd_dir = None;
    for compression in [Compression::Zstd, Compression::Lz4] {
        let dir = tempfile::tempdir()?;
        let writer_config = WriterConfig {
            shard_rows: 16_384,
            flush_interval: None,
            compression,
            writer_name: "bench".into(),
            ..WriterConfig::default()
        };
        let t = Instant::now();
        let (mut writer, _) = DatasetWriter::open(dir.path(), writer_config)?;
        for (game, samples) in &games {
            writer.append(game.clone(), samples.clone())?;
        }
        writer.finish()?;
        let secs = t.elapsed().as_secs_f64();
        let dataset = Dataset::open(dir.path())?;
        let bytes: u64 = dataset.shards().iter().map(ShardEntry::bytes).sum();
        println!(
            "write {compression:?}: {:>9.0} samples/s {:>7.1} MB/s on disk ({} shards, {:.1} MB, {:.0} B/sample)",
            n_samples as f64 / secs,
            mb(bytes) / secs,
            dataset.shards().len(),
            mb(bytes),
            bytes as f64 / n_samples as f64
        );

        let t = Instant::now();
        let samples = dataset.samples()?;
        let games_back = dataset.games()?;
        let secs = t.elapsed().as_secs_f64();
        assert_eq!((samples.len(), games_back.len()), (n_samples, n_games));
        println!(
            "read  {compression:?} (records): {:>9.0} samples/s {:>7.1} MB/s",
            n_samples as f64 / secs,
            mb(bytes) / secs
        );
        let t = Instant::now();
        let mut rows = 0;
        let mut sample_bytes = 0;
        for shard in dataset.shards() {
            rows += SampleColumns::read(&dataset, shard)?.len();
            sample_bytes += shard.samples_bytes;
        }
        let secs = t.elapsed().as_secs_f64();
        assert_eq!(rows, n_samples);
        println!(
            "read  {compression:?} (columns): {:>9.0} samples/s {:>7.1} MB/s",
            n_samples as f64 / secs,
            mb(sample_bytes) / secs
        );
        if compression == Compression::Zstd {
            zstd_dir = Some(dir);
        }
    }

    let dir = zstd_dir.ok_or("no dataset")?;
    let replay = ReplayConfig {
        window: WindowSize::Fixed(usize::MAX),
        batch_size: BATCH,
        seed: 3,
        epochs: Some(3),
        ..ReplayConfig::default()
    };
    let t = Instant::now();
    let window = ReplayWindow::open(dir.path(), replay.clone())?;
    let load = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let mut batches = 0;
    for epoch in 0..3 {
        for batch in window.epoch(epoch) {
            std::hint::black_box(&batch);
            batches += 1;
        }
    }
    let secs = t.elapsed().as_secs_f64();
    println!(
        "replay window (this thread): {:>8.0} batches/s of {BATCH} ({:.0} samples/s; window of {} loaded in {:.2}s)",
        batches as f64 / secs,
        (batches * BATCH) as f64 / secs,
        window.len(),
        load
    );
    let t = Instant::now();
    let mut loader_batches = 0;
    for batch in ReplayLoader::spawn(dir.path(), replay)? {
        std::hint::black_box(&batch?);
        loader_batches += 1;
    }
    let secs = t.elapsed().as_secs_f64();
    println!(
        "replay loader (background thread, load included): {:>8.0} batches/s of {BATCH} ({:.0} samples/s)",
        loader_batches as f64 / secs,
        (loader_batches * BATCH) as f64 / secs
    );
    Ok(())
}
