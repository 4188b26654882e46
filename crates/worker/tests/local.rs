//! Local self-play writes complete, valid games to a dataset that reads back.

use xqz_dataset::Dataset;
use xqz_mcts::{MaterialEvaluator, PlaySettings};
use xqz_worker::{LocalSelfPlay, play_into};

#[test]
fn local_self_play_fills_a_dataset() {
    let dir = tempfile::tempdir().unwrap();
    let settings = PlaySettings {
        playouts: 16,
        cheap_playouts: 4,
        max_plies: 30,
        material_adjudication: 0,
        repeater_loses: false,
        ..PlaySettings::default()
    };
    let config = settings.self_play_config(2, 3, 9);
    let run = LocalSelfPlay { games: 7, model_version: 3, worker_id: "test-worker".into() };
    let mut seen = 0;
    let report = play_into(dir.path(), &config, MaterialEvaluator, &run, |_| seen += 1).unwrap();
    assert_eq!((report.stats.games, seen), (7, 7));
    let dataset = Dataset::open(dir.path()).unwrap();
    let games = dataset.games().unwrap();
    let samples = dataset.samples().unwrap();
    assert_eq!(games.len(), 7);
    assert_eq!(samples.len() as u64, report.samples);
    assert_eq!(report.samples, games.iter().map(|g| g.len() as u64).sum::<u64>());
    for g in &games {
        assert_eq!((g.model_version, g.worker_id.as_str()), (3, "test-worker"));
        assert!(g.end_time_ms >= g.start_time_ms && g.start_time_ms > 0);
    }
    assert!(samples.iter().any(|s| s.full_search) && samples.iter().any(|s| !s.full_search));
}
