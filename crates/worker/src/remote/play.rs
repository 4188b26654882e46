//! What self-play plays under and what it hands on: the config of the coordinator's settings on
//! this worker, the settings announced with a model (games that start afterwards play under
//! them, games in progress finish under theirs), and each finished game as its submission.

use std::sync::Arc;

use tracing::{info, warn};
use xqz_mcts::{LiveConfig, OpeningSuite, PlaySettings, SelfPlayConfig, SelfPlayGame};
use xqz_proto::v1::{GameSubmission, ModelAnnouncement};
use xqz_proto::wire::{UnfinishedGame, encode_self_play, settings_from_wire};

use super::RemoteConfig;

/// `game` as this worker submits it, credited to model `played_by`: encoded from what was played,
/// under a fresh id, ended now.
pub(super) fn submission(game: &SelfPlayGame, played_by: u64) -> Result<GameSubmission, UnfinishedGame> {
    encode_self_play(game, &crate::record::stamp(game, played_by))
}

/// The self-play config of `settings` (and their version) with the coordinator's `openings` on
/// this worker.
pub(super) fn self_play_config(
    settings: &(PlaySettings, u64),
    openings: Option<Arc<OpeningSuite>>,
    config: &RemoteConfig,
) -> SelfPlayConfig {
    SelfPlayConfig {
        settings_version: settings.1,
        openings,
        ..settings.0.self_play_config(config.threads, config.games_per_thread, rand::random())
    }
}

/// Games that start from now on play under the settings `model` announces, if they are new and
/// usable; unusable ones are reported and the settings in force kept.
pub(super) fn follow_settings(model: &ModelAnnouncement, config: &RemoteConfig, live: &LiveConfig) {
    let Some(wire) = &model.settings else { return };
    if wire.version == live.current().settings_version {
        return;
    }
    match settings_from_wire(wire) {
        Ok(settings) => {
            info!(settings_version = settings.1, "new games play under the announced settings");
            // The suite is the coordinator's for the session; settings announced later keep it.
            live.replace(self_play_config(&settings, live.current().openings.clone(), config));
        }
        Err(e) => {
            warn!(
                kept = live.current().settings_version,
                announced = wire.version,
                error = %e,
                "keeping the settings in force: the announced ones cannot be used"
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicBool;

    use xqz_mcts::{MaterialEvaluator, self_play};
    use xqz_proto::wire::{decode_game, settings_to_wire};

    use super::*;
    use crate::WorkerMetrics;

    fn config() -> RemoteConfig {
        RemoteConfig {
            coordinator: "http://127.0.0.1:1".into(),
            token: None,
            tls: None,
            dir: std::env::temp_dir(),
            name: "test".into(),
            threads: 2,
            games_per_thread: 3,
            max_games: None,
            batch_games: 4,
            batch_interval: std::time::Duration::from_secs(1),
            heartbeat_interval: std::time::Duration::from_secs(1),
            drain: std::time::Duration::from_secs(1),
            metrics: WorkerMetrics::default(),
            eval_share: 0.0,
        }
    }

    fn announcement(settings: &PlaySettings, version: u64) -> ModelAnnouncement {
        ModelAnnouncement { version: 5, settings: Some(settings_to_wire(settings, version)), ..Default::default() }
    }

    #[test]
    fn announced_settings_apply_to_games_that_start_afterwards_and_keep_the_suite() {
        let suite = Arc::new(OpeningSuite::parse(xiangqi::START_FEN).unwrap());
        let first = PlaySettings::default();
        let live = LiveConfig::new(self_play_config(&(first.clone(), 1), Some(suite.clone()), &config()));
        let second = PlaySettings { playouts: 77, ..first.clone() };
        follow_settings(&announcement(&second, 2), &config(), &live);
        let now = live.current();
        assert_eq!((now.settings_version, &now.settings), (2, &second));
        assert_eq!((now.threads, now.games_per_thread), (2, 3));
        assert_eq!(now.openings.as_deref(), Some(&*suite), "the suite is the session's");
    }

    #[test]
    fn the_settings_in_force_stay_when_the_announcement_brings_nothing_new_or_nothing_usable() {
        let first = PlaySettings::default();
        let live = LiveConfig::new(self_play_config(&(first.clone(), 1), None, &config()));
        // The same version again, even with other values: the worker already plays under it.
        follow_settings(&announcement(&PlaySettings { playouts: 5, ..first.clone() }, 1), &config(), &live);
        // A new version that does not validate.
        follow_settings(&announcement(&PlaySettings { playouts: 0, ..first.clone() }, 2), &config(), &live);
        // No settings at all (an older coordinator).
        follow_settings(&ModelAnnouncement { version: 6, ..Default::default() }, &config(), &live);
        let now = live.current();
        assert_eq!((now.settings_version, &now.settings), (1, &first));
    }

    #[test]
    fn a_finished_game_is_submitted_as_it_was_played() {
        let settings = PlaySettings { playouts: 8, cheap_playouts: 4, max_plies: 12, ..PlaySettings::default() };
        let config = SelfPlayConfig { settings_version: 3, ..settings.self_play_config(1, 2, 11) };
        let mut games = Vec::new();
        self_play(&config, MaterialEvaluator, 2, &AtomicBool::new(false), |g| games.push(g)).unwrap();
        let subs: Vec<GameSubmission> = games.iter().map(|g| submission(g, 4).unwrap()).collect();
        assert_ne!(subs[0].game_id, subs[1].game_id, "each game has its own id");
        for (game, sub) in games.iter().zip(&subs) {
            let decoded = decode_game(sub).unwrap();
            assert_eq!(decoded.moves, game.game.moves().collect::<Vec<_>>());
            assert_eq!((decoded.model_version, decoded.settings_version, decoded.seed), (4, 3, game.seed));
            assert!(decoded.searches.iter().all(|s| s.model_version == 4));
            let policies: Vec<_> =
                decoded.searches.iter().map(|s| s.policy.iter().map(|e| (e.mv, e.p)).collect::<Vec<_>>()).collect();
            assert_eq!(policies, game.plies.iter().map(|p| p.policy.clone()).collect::<Vec<_>>());
            assert!(decoded.start_time_ms <= decoded.end_time_ms && decoded.start_time_ms > 0);
        }
    }
}
