//! Shared helpers for the integration tests: small synthetic datasets in temp folders.
#![allow(dead_code)] // each test binary uses a different subset

use std::path::Path;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use xqz_dataset::synthetic::{SyntheticConfig, random_game};
use xqz_dataset::{Compression, DatasetWriter, GameRecord, SampleRecord, WriterConfig};

/// Random games with their samples; ids `first_id..first_id + n`.
pub fn games(seed: u64, first_id: u128, n: usize, config: &SyntheticConfig) -> Vec<(GameRecord, Vec<SampleRecord>)> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..n as u128).map(|i| random_game(&mut rng, first_id + i, config)).collect()
}

/// Short games (fast tests).
pub fn short() -> SyntheticConfig {
    SyntheticConfig { max_plies: 40, policy_moves: 8, ..SyntheticConfig::default() }
}

/// A writer config with small shards and no time-based flush.
pub fn small_shards(shard_rows: usize, compression: Compression) -> WriterConfig {
    WriterConfig {
        shard_rows,
        flush_interval: None,
        compression,
        batch_rows: 50,
        writer_name: "test".into(),
        compaction: None,
    }
}

/// Writes `games` into `dir` with `config`, finishing the writer.
pub fn write_all(dir: &Path, config: WriterConfig, games: &[(GameRecord, Vec<SampleRecord>)]) {
    let (mut writer, report) = DatasetWriter::open(dir, config).unwrap();
    assert!(report.is_clean(), "{report}");
    for (game, samples) in games {
        writer.append(game.clone(), samples.clone()).unwrap();
    }
    writer.finish().unwrap();
}

/// Appends `games` over and over, each time under a fresh game id, until the process is killed:
/// the body of the crash tests' child writers.
pub fn append_until_killed(writer: &mut DatasetWriter, games: &[(GameRecord, Vec<SampleRecord>)]) -> ! {
    for id in 0u128.. {
        let (mut game, mut samples) = games[id as usize % games.len()].clone();
        game.game_id = xqz_dataset::GameId::from_u128(id);
        samples.iter_mut().for_each(|s| s.game_id = game.game_id);
        writer.append(game, samples).unwrap();
    }
    unreachable!("game ids ran out")
}

/// Tags each sample with a unique number in `root_wdl[0]`, to follow samples through batches.
pub fn tag_samples(games: &mut [(GameRecord, Vec<SampleRecord>)]) -> usize {
    let mut n = 0;
    for (_, samples) in games {
        for s in samples {
            s.root_wdl = [n as f32, 0.0, 0.0];
            n += 1;
        }
    }
    n
}
