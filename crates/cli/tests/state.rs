//! A run that outlives its machine: `xqz run --state` killed with SIGKILL in every role, then
//! resumed in a new run folder (a new machine, as far as the run can tell) from its state in a
//! folder or an S3 bucket, and from a light state (`xqz state light`). The counters, the
//! schedules and the settings go on from where the state left them; no acknowledged game is lost.

#[path = "common/run_guard.rs"]
mod run_guard;

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::killpg;
use run_guard::RunGuard;
use xqz_dataset::DatasetLocation;
use xqz_run_folder::RunFolder;

/// `xqz run` with the tiny net, small games and quick publications, in `runs/NAME`, keeping its
/// state at `state`.
fn run_command(runs: &Path, name: &str, state: &str, minutes: &str, env: &[(&str, String)]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_xqz"));
    command
        .args(["run", "--name", name, "--model", "tiny", "--device", "cpu", "--minutes", minutes])
        .args(["--playouts", "8", "--cheap-playouts", "4", "--max-plies", "24", "--cap-growth", "2"])
        .args(["--cap-limit", "5000", "--games-per-thread", "8", "--batch-size", "32", "--min-samples", "128"])
        .args(["--publish-every-samples", "320", "--checkpoint-every-samples", "160", "--match-games", "0"])
        .args(["--state", state, "--runs"])
        .arg(runs)
        .envs(env.iter().map(|(k, v)| (k, v)));
    command
}

/// The trainer's latest backed-up checkpoint at `state`: (steps, samples, model version), if any.
fn backed_up(trainer: &DatasetLocation) -> Option<(u64, u64, u64)> {
    let name = String::from_utf8(trainer.get_file("latest").ok()??).ok()?;
    let meta: serde_json::Value = serde_json::from_slice(&trainer.get_file(&name).ok()??).ok()?;
    let info = &meta["info"];
    Some((info["training_steps"].as_u64()?, info["samples_seen"].as_u64()?, info["model_version"].as_u64()?))
}

/// The model versions a coordinator's registry (at a location or in a folder) lists.
fn registry_versions(registry: Option<Vec<u8>>) -> u64 {
    registry.map_or(0, |bytes| {
        let listing: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
        listing["models"].as_array().map_or(0, |m| m.len() as u64)
    })
}

/// The settings versions of a coordinator's history: (versions, the last one's max_plies).
fn settings_versions(history: &[u8]) -> (usize, u64) {
    let history: serde_json::Value = serde_json::from_slice(history).unwrap();
    let versions = history["versions"].as_array().unwrap();
    (versions.len(), versions.last().unwrap()["settings"]["max_plies"].as_u64().unwrap())
}

/// Starts the run in `run` as a terminal starts it, waits until its state holds a published
/// model and a checkpoint past it, then kills the run and every role at once with SIGKILL. What
/// the state held then: (trainer steps, models, settings versions, games).
fn run_then_kill_everything(
    mut command: Command,
    run: &Path,
    state: &str,
    env: &[(&str, String)],
) -> (u64, u64, usize, usize) {
    let parse = |part: &str| DatasetLocation::parse_with(&format!("{state}/{part}"), env.iter().cloned()).unwrap();
    let (trainer, coordinator) = (parse("trainer"), parse("coordinator"));
    let mut guard = RunGuard::start(command.stdout(Stdio::null()).stderr(Stdio::null()), RunFolder::new(run));
    let deadline = Instant::now() + Duration::from_secs(240);
    loop {
        assert!(guard.child.try_wait().unwrap().is_none(), "the run stopped before it was killed");
        assert!(Instant::now() < deadline, "no model and later checkpoint in the state after 4 minutes");
        let models = registry_versions(coordinator.get_file("registry.json").unwrap());
        if models >= 1 && backed_up(&trainer).is_some_and(|(_, _, version)| version >= 1) {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    // Every process group at once: the supervisor's, the coordinator's, the worker's and the
    // trainer's.
    let groups = guard.kill_everything();
    assert_eq!(groups.len(), 4, "the run and its three roles: {groups:?}");
    // The roles are gone when their groups are empty (or only zombies wait for their reaper).
    let gone = Instant::now() + Duration::from_secs(10);
    while groups.iter().any(|&group| killpg(group, None).is_ok()) && Instant::now() < gone {
        std::thread::sleep(Duration::from_millis(50));
    }
    let steps = backed_up(&trainer).unwrap().0;
    let models = registry_versions(coordinator.get_file("registry.json").unwrap());
    let settings = settings_versions(&coordinator.get_file("settings.json").unwrap().unwrap()).0;
    let games = games_in(&parse("dataset"));
    (steps, models, settings, games)
}

fn games_in(dataset: &DatasetLocation) -> usize {
    xqz_dataset::Dataset::open_existing(dataset.clone()).unwrap().games().unwrap().len()
}

fn succeeded(out: &Output, run: &Path) -> String {
    let log = |name: &str| std::fs::read_to_string(run.join("logs").join(name)).unwrap_or_default();
    format!(
        "{}\n--- coordinator\n{}\n--- trainer\n{}",
        String::from_utf8_lossy(&out.stderr),
        log("coordinator.log"),
        log("trainer.log")
    )
}

/// What a resumed run folder shows after its run: (trainer steps, models, settings versions and
/// the last one's cap).
fn resumed(run: &Path) -> (u64, u64, (usize, u64)) {
    let latest = xqz_trainer::latest_checkpoint(&run.join("trainer")).expect("a checkpoint");
    let steps = xqz_net::checkpoint::read_meta(&latest).unwrap().info.training_steps;
    let models = registry_versions(std::fs::read(run.join("coordinator/models/registry.json")).ok());
    (steps, models, settings_versions(&std::fs::read(run.join("coordinator/settings.json")).unwrap()))
}

#[test]
fn a_run_killed_in_every_role_resumes_in_a_new_folder_from_its_state_and_from_a_light_state() {
    let (first, second, third, state) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let at = state.path().to_str().unwrap();
    let (steps, models, settings, games) =
        run_then_kill_everything(run_command(first.path(), "a", at, "10", &[]), &first.path().join("a"), at, &[]);

    // A new folder, as on another machine: everything comes from the state.
    let out = run_command(second.path(), "b", at, "0.4", &[]).output().unwrap();
    let run = second.path().join("b");
    assert!(out.status.success(), "{}", succeeded(&out, &run));
    assert!(String::from_utf8_lossy(&out.stdout).contains("(resumed)"));
    assert_eq!(
        std::fs::read(run.join("settings.toml")).unwrap(),
        std::fs::read(first.path().join("a/settings.toml")).unwrap()
    );
    let (after_steps, after_models, (after_settings, cap)) = resumed(&run);
    assert!(after_steps > steps, "the trainer went on from step {steps}: {after_steps}");
    assert!(after_models > models, "models {models} were kept and more published: {after_models}");
    // The cap grows 2 plies a model from 24: the schedule went on from the models kept.
    assert!(after_settings > settings, "{after_settings} settings versions, {settings} before");
    assert_eq!(cap, 24 + 2 * after_models, "{after_models} models");
    let dataset = DatasetLocation::Local(state.path().join("dataset"));
    assert!(games_in(&dataset) >= games, "every game acknowledged before the kill is kept");
    let metrics = std::fs::read_to_string(run.join("trainer/metrics.csv")).unwrap();
    let first_row: u64 = metrics.lines().nth(1).and_then(|row| row.split(',').next()?.parse().ok()).unwrap();
    assert!(first_row <= steps, "metrics.csv came along from before the kill: {metrics}");

    // A light state of the stopped run: no dataset, the latest model's weights alone.
    let light = third.path().join("light");
    let out = Command::new(env!("CARGO_BIN_EXE_xqz"))
        .args(["state", "light", "--run", run.to_str().unwrap(), "--out", light.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!light.join("dataset").exists());
    let weights = std::fs::read_dir(light.join("coordinator"))
        .unwrap()
        .filter(|e| e.as_ref().unwrap().file_name().to_string_lossy().ends_with(".safetensors"))
        .count();
    assert_eq!(weights, 1, "the latest model's weights alone");
    // The trainer's checkpoint is the one published last: its weights are the latest model's
    // bytes, which a repository then stores once.
    let checkpoint = std::fs::read_to_string(light.join("trainer/latest")).unwrap();
    let trainer_weights =
        std::fs::read(light.join("trainer").join(checkpoint.replace(".json", ".safetensors"))).unwrap();
    let model = registry_versions(std::fs::read(light.join("coordinator/registry.json")).ok());
    assert_eq!(trainer_weights, std::fs::read(light.join(format!("coordinator/v{model}.safetensors"))).unwrap());
    let out = run_command(third.path(), "c", light.to_str().unwrap(), "0.4", &[]).output().unwrap();
    let run = third.path().join("c");
    assert!(out.status.success(), "{}", succeeded(&out, &run));
    let kept = xqz_net::checkpoint::read_meta(&light.join("trainer").join(checkpoint.trim())).unwrap().info;
    assert!(kept.training_steps <= after_steps && kept.model_version == after_models, "{kept:?}");
    let (light_steps, light_models, (_, light_cap)) = resumed(&run);
    assert!(
        light_steps > kept.training_steps && light_models > after_models,
        "{light_steps} steps, {light_models} models"
    );
    assert_eq!(light_cap, 24 + 2 * light_models, "the schedule went on: {light_models} models");
    let log = std::fs::read_to_string(run.join("logs/trainer.log")).unwrap();
    assert!(log.contains("a light resume"), "{log}");
    // The workers played the model the light state kept: games of it or later are in the new dataset.
    let games = xqz_dataset::Dataset::open(light.join("dataset")).unwrap().games().unwrap();
    assert!(games.iter().any(|g| g.model_version >= after_models), "{:?}", games.len());
}

#[test]
fn a_run_killed_in_every_role_resumes_from_its_state_in_an_s3_bucket() {
    let moto = xqz_test_support::moto::Moto::start("run-state");
    let env: Vec<(&str, String)> = moto.env().into_iter().collect();
    let (first, second) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let at = moto.url("runs/long");
    let (steps, models, _, games) =
        run_then_kill_everything(run_command(first.path(), "a", &at, "10", &env), &first.path().join("a"), &at, &env);
    // The killed coordinator's lease on the dataset lapses after 30 s; until then a new one is
    // refused (it could still be writing).
    std::thread::sleep(Duration::from_secs(31));
    let out = run_command(second.path(), "a", &at, "0.4", &env).output().unwrap();
    let run = second.path().join("a");
    assert!(out.status.success(), "{}", succeeded(&out, &run));
    let (after_steps, after_models, _) = resumed(&run);
    assert!(after_steps > steps && after_models > models, "{after_steps} steps, {after_models} models");
    let dataset = DatasetLocation::parse_with(&format!("{at}/dataset"), env.iter().cloned()).unwrap();
    assert!(games_in(&dataset) >= games, "every game acknowledged before the kill is kept");
    assert!(!run.join("coordinator/dataset").exists(), "the dataset lives in the bucket alone");
}
