//! A finished self-play game as the dataset stores it.

use std::time::{SystemTime, UNIX_EPOCH};

use xqz_dataset::{DatasetError, GameId, GameRecord, PlySearch, PolicyEntry, SampleRecord};
use xqz_mcts::SelfPlayGame;

fn unix_ms(time: SystemTime) -> i64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

/// The game row and one sample per move of a self-play game, with a fresh random game id; it
/// ended now.
pub fn to_records(
    game: &SelfPlayGame,
    model_version: u64,
    worker_id: &str,
) -> Result<(GameRecord, Vec<SampleRecord>), DatasetError> {
    let mut record = GameRecord::from_game(&game.game, GameId::from_u128(rand::random()))?;
    record.model_version = model_version;
    record.worker_id = worker_id.to_string();
    record.seed = game.seed;
    record.settings_version = game.settings_version;
    record.start_time_ms = unix_ms(game.started);
    record.end_time_ms = unix_ms(SystemTime::now()).max(record.start_time_ms);
    let searches: Vec<PlySearch> = game
        .plies
        .iter()
        .map(|ply| PlySearch {
            policy: ply.policy.iter().map(|&(mv, p)| PolicyEntry { mv, p }).collect(),
            root_wdl: ply.root_wdl,
            model_version,
            full_search: ply.full_search,
        })
        .collect();
    let samples = SampleRecord::from_game(&record, &searches)?;
    Ok((record, samples))
}
