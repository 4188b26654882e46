//! A finished self-play game as the dataset stores it, and what a game does not know about itself
//! (its id, model and times), which the dataset and the wire both record.

use std::time::{SystemTime, UNIX_EPOCH};

use xqz_dataset::{DatasetError, GameId, GameRecord, PlySearch, PolicyEntry, SampleRecord};
use xqz_mcts::SelfPlayGame;
use xqz_proto::wire::GameStamp;

fn unix_ms(time: SystemTime) -> i64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

/// The stamp of `game`, which ended now, credited to `model_version`, under a fresh random id.
pub(crate) fn stamp(game: &SelfPlayGame, model_version: u64) -> GameStamp {
    let start_time_ms = unix_ms(game.started);
    GameStamp {
        game_id: GameId::from_u128(rand::random()),
        model_version,
        start_time_ms,
        end_time_ms: unix_ms(SystemTime::now()).max(start_time_ms),
    }
}

/// The game row and one sample per move of a self-play game, with a fresh random game id; it
/// ended now.
pub(crate) fn to_records(
    game: &SelfPlayGame,
    model_version: u64,
    worker_id: &str,
) -> Result<(GameRecord, Vec<SampleRecord>), DatasetError> {
    let stamp = stamp(game, model_version);
    let mut record = GameRecord::from_game(&game.game, stamp.game_id)?;
    record.model_version = model_version;
    record.worker_id = worker_id.to_string();
    record.seed = game.seed;
    record.settings_version = game.settings_version;
    record.start_time_ms = stamp.start_time_ms;
    record.end_time_ms = stamp.end_time_ms;
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
