//! `xqz run`, the main job, for a bounded time with the tiny net: the loop closes — models are
//! published, workers play with them, checkpoints load, the losses are plotted, the strength
//! matches against the anchor are recorded.

use std::collections::BTreeSet;
use std::process::Command;

#[test]
fn the_local_pipeline_publishes_models_that_workers_play() {
    let runs = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_xqz"))
        .args(["run", "--name", "e2e", "--model", "tiny", "--device", "cpu", "--minutes", "1.2"])
        .args(["--playouts", "16", "--cheap-playouts", "8", "--max-plies", "40", "--games-per-thread", "8"])
        .args(["--batch-size", "64", "--min-samples", "256", "--publish-every-samples", "640"])
        .args(["--match-games", "2", "--match-playouts", "8", "--runs"])
        .arg(runs.path())
        .output()
        .unwrap();
    let dir = runs.path().join("e2e");
    let log = |name: &str| std::fs::read_to_string(dir.join("logs").join(name)).unwrap_or_default();
    assert!(
        out.status.success(),
        "{}\n--- coordinator\n{}\n--- worker\n{}\n--- trainer\n{}",
        String::from_utf8_lossy(&out.stderr),
        log("coordinator.log"),
        log("worker-0.log"),
        log("trainer.log")
    );

    // Without a terminal, the status comes as log lines on stderr; stdout starts with the run's line.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.starts_with("run e2e in ") && stdout.contains(" | dashboard http://"), "{stdout}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.lines().any(|l| l.contains(" INFO ") && l.contains(" status ") && l.contains(" games=")),
        "{stderr}"
    );

    let models: Vec<_> = std::fs::read_dir(dir.join("coordinator/models"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json") && n.starts_with('v'))
        .collect();
    assert!(models.len() >= 2, "published models: {models:?}");

    let games = xqz_dataset::Dataset::open(dir.join("coordinator/dataset")).unwrap().games().unwrap();
    let versions: BTreeSet<u64> = games.iter().map(|g| g.model_version).collect();
    assert!(versions.contains(&0) && versions.iter().any(|&v| v >= 1), "versions in the games table: {versions:?}");

    let latest = xqz_trainer::latest_checkpoint(&dir.join("trainer")).expect("a checkpoint");
    let (_, meta) = xqz_net::checkpoint::load(&latest, xqz_net::Device::Cpu, None).unwrap();
    assert!(meta.info.training_steps >= 20 && meta.info.model_version >= 2, "{:?}", meta.info);
    assert!(dir.join("losses.svg").exists());
    let run = xqz_run_folder::RunFolder::new(&dir);
    assert!(run.started().is_some(), "a new run notes when it began");
    let rows = xqz_run_folder::RowReader::<xqz_run_folder::StrengthRow>::new(run.strength_csv()).read_all().unwrap();
    // Each measured model played the anchor, the material searcher at the match playouts.
    assert!(!rows.is_empty() && rows.iter().all(|r| r.opponent == "material@8"), "strength matches: {rows:?}");
    // The strength matches' games are in the run's evaluation table, as `xqz eval match` records.
    let games = xqz_arena::records::read_games(&dir).unwrap();
    let first = format!("v{}", rows[0].version);
    assert_eq!(games.iter().filter(|g| g.a == first && g.b == "material@8").count(), 2, "{games:?}");
    assert!(dir.join("strength.svg").exists());
}

/// `xqz run` for `minutes` in `runs` with the tiny net and extra `flags`.
fn short_run(runs: &std::path::Path, flags: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_xqz"))
        .args(["run", "--name", "kept", "--model", "tiny", "--device", "cpu", "--minutes", "0.05"])
        .args(["--games-per-thread", "2", "--max-plies", "20", "--match-games", "0", "--runs"])
        .arg(runs)
        .args(flags)
        .output()
        .unwrap()
}

#[test]
fn a_resumed_run_keeps_its_settings_unless_overridden() {
    let runs = tempfile::tempdir().unwrap();
    let settings = runs.path().join("kept/settings.toml");
    let out = short_run(runs.path(), &["--playouts", "12", "--cheap-playouts", "4", "--policy-target", "q-softmax"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stored = std::fs::read_to_string(&settings).unwrap();
    assert!(stored.contains("playouts = 12") && stored.contains("policy_target = \"q-softmax\""), "{stored}");
    // The coordinator was handed the file: its settings history holds them as version 1.
    let history = std::fs::read_to_string(runs.path().join("kept/coordinator/settings.json")).unwrap();
    assert!(history.contains("\"playouts\": 12") && history.contains("\"version\": 1"), "{history}");

    // Resumed without flags: the stored settings, unchanged.
    let out = short_run(runs.path(), &[]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), stored);

    // A contradicting flag is refused, naming both values, and changes nothing.
    let out = short_run(runs.path(), &["--playouts", "20"]);
    let error = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(error.contains("--playouts 20 (was playouts = 12)") && error.contains("--override"), "{error}");
    assert_eq!(std::fs::read_to_string(&settings).unwrap(), stored);

    // With --override the run proceeds under the new value, and says so in the file and the log.
    let out = short_run(runs.path(), &["--playouts", "20", "--override"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let changed = std::fs::read_to_string(&settings).unwrap();
    assert!(changed.contains("playouts = 20") && changed.contains("cheap_playouts = 4"), "{changed}");
    let log = std::fs::read_to_string(runs.path().join("kept/logs/settings.log")).unwrap();
    assert!(log.contains("--playouts 20 (was playouts = 12)"), "{log}");
    let history = std::fs::read_to_string(runs.path().join("kept/coordinator/settings.json")).unwrap();
    assert!(history.contains("\"playouts\": 20") && history.contains("\"version\": 2"), "{history}");
}

#[test]
fn a_run_on_a_gpu_that_is_not_there_is_refused_before_it_starts() {
    if tch::Cuda::is_available() {
        return;
    }
    let runs = tempfile::tempdir().unwrap();
    // The workers' default count depends on the device, so the device is checked first.
    let out = Command::new(env!("CARGO_BIN_EXE_xqz"))
        .args(["run", "--name", "kept", "--model", "tiny", "--device", "cuda:0", "--minutes", "0.05", "--runs"])
        .arg(runs.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("CUDA is not available"), "{out:?}");
    assert!(!runs.path().join("kept").exists(), "a refused run leaves no folder");
}
