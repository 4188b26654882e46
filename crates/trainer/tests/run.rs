//! The training loop: checkpoints, publishing, resuming, the samples-per-new-sample guard, and
//! determinism from a seed.

use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use xqz_dataset::synthetic::{SyntheticConfig, random_game};
use xqz_dataset::{DatasetLocation, DatasetWriter, GrowingWindow, WindowSize, WriterConfig};
use xqz_net::{Device, ModelConfig, TrainConfig};
use xqz_trainer::{Publisher, Targets, TrainerConfig, latest_checkpoint, train};

fn dataset(dir: &Path, games: u128) -> u64 {
    dataset_at(dir.into(), games)
}

fn dataset_at(location: DatasetLocation, games: u128) -> u64 {
    games_at(location, 0..games, 3)
}

/// Appends random games with ids `ids` to the dataset at `location`; their samples.
fn games_at(location: DatasetLocation, ids: std::ops::Range<u128>, seed: u64) -> u64 {
    let (mut writer, _) = DatasetWriter::open_at(location, WriterConfig::default()).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut samples = 0;
    for id in ids {
        let (game, rows) = random_game(&mut rng, id, &SyntheticConfig { max_plies: 60, ..SyntheticConfig::default() });
        samples += rows.len() as u64;
        writer.append(game, rows).unwrap();
    }
    writer.finish().unwrap();
    samples
}

fn config(data: &Path, run: &Path, max_steps: u64) -> TrainerConfig {
    TrainerConfig {
        data: data.into(),
        run: run.to_path_buf(),
        backup: None,
        model: ModelConfig::builtin("tiny").unwrap(),
        device: Device::Cpu,
        optimizer: TrainConfig::default(),
        lr_schedule: vec![(0, 0.02), (6, 0.01)],
        batch_size: 32,
        window: WindowSize::Growing(GrowingWindow::default()),
        samples_per_new_sample: 100.0,
        targets: Targets::default(),
        min_samples: 64,
        checkpoint_every_samples: 4 * 32,
        publish_every_samples: 8 * 32,
        metrics_every_samples: 32,
        max_steps: Some(max_steps),
        poll: Duration::from_millis(50),
        seed: 5,
        start_from: None,
    }
}

/// Counts publications and hands out versions 1, 2, ...
#[derive(Default)]
struct Counting(Vec<std::path::PathBuf>);

impl Publisher for Counting {
    fn publish(&mut self, path: &Path) -> Result<u64, xqz_trainer::PublishError> {
        assert!(path.exists());
        self.0.push(path.to_path_buf());
        Ok(self.0.len() as u64)
    }
}

fn metrics_rows(run: &Path) -> Vec<String> {
    std::fs::read_to_string(run.join("metrics.csv")).unwrap().lines().skip(1).map(str::to_string).collect()
}

#[test]
fn trains_checkpoints_publishes_and_resumes() {
    let (data, run) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    dataset(data.path(), 20);
    let mut publisher = Counting::default();
    let last =
        train(&config(data.path(), run.path(), 12), &mut publisher, &AtomicBool::new(false), |_| {}).unwrap().unwrap();
    assert_eq!(last.step, 12);
    assert_eq!(last.learning_rate, 0.01);
    assert_eq!((publisher.0.len(), last.model_version), (1, 1));
    assert_eq!(metrics_rows(run.path()).len(), 12);
    let latest = latest_checkpoint(run.path()).unwrap();
    let meta = xqz_net::checkpoint::read_meta(&latest).unwrap();
    assert_eq!((meta.info.training_steps, meta.info.model_version, meta.info.samples_seen), (12, 1, 12 * 32));

    // Again in the same folder: resumes at step 12.
    let last =
        train(&config(data.path(), run.path(), 18), &mut publisher, &AtomicBool::new(false), |_| {}).unwrap().unwrap();
    assert_eq!(last.step, 18);
    assert_eq!(publisher.0.len(), 2, "published again at step 16");
    let steps: Vec<u64> =
        metrics_rows(run.path()).iter().map(|r| r.split(',').next().unwrap().parse().unwrap()).collect();
    assert_eq!(steps, (1..=18).collect::<Vec<_>>());
}

#[test]
fn cadences_are_counted_in_samples_and_a_row_reports_the_mean_losses_since_the_last() {
    let (data, run) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    dataset(data.path(), 20);
    // Rows every 5 steps of 32 samples, a checkpoint at every 3 steps' worth (96 samples), a
    // model at every 7 (224): each a row of its own, and one at the end for the steps left.
    let config = TrainerConfig {
        metrics_every_samples: 5 * 32,
        checkpoint_every_samples: 96,
        publish_every_samples: 224,
        ..config(data.path(), run.path(), 16)
    };
    let mut publisher = Counting::default();
    let mut reports = Vec::new();
    let last = train(&config, &mut publisher, &AtomicBool::new(false), |r| reports.push(r.clone())).unwrap().unwrap();
    let steps: Vec<u64> = reports.iter().map(|r| r.step).collect();
    assert_eq!(
        steps,
        [3, 6, 7, 9, 12, 14, 15, 16],
        "rows at checkpoints (3, 6, 9, 12, 15), models (7, 14) and the end"
    );
    assert_eq!(publisher.0.len(), 2);
    assert_eq!((last.step, last.model_version), (16, 2));
    let rows = metrics_rows(run.path());
    assert_eq!(rows.len(), steps.len());
    for (row, report) in rows.iter().zip(&reports) {
        let policy: f64 = row.split(',').nth(4).unwrap().parse().unwrap();
        assert!((policy - report.policy_loss).abs() < 1e-6 && policy.is_finite() && policy > 0.0, "{row}");
    }
    let checkpoints: Vec<String> = std::fs::read_dir(run.path().join("checkpoints"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json"))
        .collect();
    for step in [0, 3, 6, 7, 9, 12, 14, 15, 16] {
        assert!(checkpoints.contains(&format!("step-{step:08}.json")), "no checkpoint at step {step}: {checkpoints:?}");
    }
}

#[test]
fn a_new_run_starts_from_another_runs_checkpoint_with_fresh_counters_and_publishes_it_first() {
    let (data, first, second) =
        (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    dataset(data.path(), 20);
    train(&config(data.path(), first.path(), 12), &mut Counting::default(), &AtomicBool::new(false), |_| {}).unwrap();
    let start = latest_checkpoint(first.path()).unwrap();

    let config = TrainerConfig { start_from: Some(start.clone()), ..config(data.path(), second.path(), 4) };
    let mut publisher = Counting::default();
    let last = train(&config, &mut publisher, &AtomicBool::new(false), |_| {}).unwrap().unwrap();
    assert_eq!((last.step, last.samples_seen), (4, 4 * 32), "the counters start at 0");
    assert_eq!(publisher.0.len(), 1, "the model started from is published before any step");
    let step0 = second.path().join("checkpoints/step-00000000.json");
    assert_eq!(publisher.0[0], step0);
    let weights = |path: &Path| {
        let meta = xqz_net::checkpoint::read_meta(path).unwrap();
        std::fs::read(path.with_file_name(meta.weights.file)).unwrap()
    };
    assert_eq!(weights(&step0), weights(&start), "step 0 holds the weights started from");
    assert_eq!(xqz_net::checkpoint::read_meta(&step0).unwrap().info.model_version, 1);

    // Another model config than the checkpoint's is refused by name; so is a missing file.
    let other =
        TrainerConfig { model: ModelConfig::builtin("mid").unwrap(), run: data.path().join("r3"), ..config.clone() };
    let error = train(&other, &mut Counting::default(), &AtomicBool::new(false), |_| {}).unwrap_err().to_string();
    assert!(error.contains("mid") && error.contains("tiny"), "{error}");
    let missing =
        TrainerConfig { start_from: Some(data.path().join("nope.json")), run: data.path().join("r4"), ..config };
    let error = train(&missing, &mut Counting::default(), &AtomicBool::new(false), |_| {}).unwrap_err().to_string();
    assert!(error.contains("nope.json"), "{error}");
}

#[test]
fn trains_from_a_dataset_in_an_s3_bucket_and_publishes() {
    let moto = xqz_test_support::moto::Moto::start("trainer");
    let location = DatasetLocation::parse_with(&moto.url("run/dataset"), moto.env()).unwrap();
    dataset_at(location.clone(), 20);
    let (scratch, run) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let config = TrainerConfig { data: location, ..config(scratch.path(), run.path(), 8) };
    let mut publisher = Counting::default();
    let last = train(&config, &mut publisher, &AtomicBool::new(false), |_| {}).unwrap().unwrap();
    assert_eq!((last.step, publisher.0.len(), last.model_version), (8, 1, 1));
    assert!(last.dataset_samples > 0);
    assert!(std::fs::read_dir(scratch.path()).unwrap().next().is_none(), "nothing read or written locally");
}

/// A trainer whose run folder is lost resumes from the checkpoints it backed up to the bucket:
/// a new, empty run folder continues at the last backed-up step, with its metrics.
#[test]
fn a_trainer_on_a_fresh_disk_resumes_from_its_backup_in_an_s3_bucket() {
    let moto = xqz_test_support::moto::Moto::start("trainer-backup");
    let backup = DatasetLocation::parse_with(&moto.url("run/trainer"), moto.env()).unwrap();
    let data = tempfile::tempdir().unwrap();
    dataset(data.path(), 20);
    let first = tempfile::tempdir().unwrap();
    let config = |run: &Path, steps| TrainerConfig { backup: Some(backup.clone()), ..config(data.path(), run, steps) };
    let mut publisher = Counting::default();
    train(&config(first.path(), 10), &mut publisher, &AtomicBool::new(false), |_| {}).unwrap().unwrap();
    let latest = String::from_utf8(backup.get_file("latest").unwrap().unwrap()).unwrap();
    assert_eq!(latest, "step-00000010.json");
    drop(first);

    let second = tempfile::tempdir().unwrap();
    let mut steps = Vec::new();
    train(&config(second.path(), 14), &mut publisher, &AtomicBool::new(false), |r| steps.push(r.step)).unwrap();
    assert_eq!(steps, vec![11, 12, 13, 14], "resumed after step 10");
    let rows: Vec<u64> =
        metrics_rows(second.path()).iter().map(|r| r.split(',').next().unwrap().parse().unwrap()).collect();
    assert_eq!(rows, (1..=14).collect::<Vec<_>>(), "the backed-up metrics continue");
    assert_eq!(latest_checkpoint(second.path()).unwrap(), second.path().join("checkpoints/step-00000014.json"));
    let latest = String::from_utf8(backup.get_file("latest").unwrap().unwrap()).unwrap();
    assert_eq!(latest, "step-00000014.json");

    // A backup whose latest names a checkpoint that is not there is refused, by name.
    backup.put_files(vec![("latest", b"step-00000099.json".to_vec())]).unwrap();
    let third = tempfile::tempdir().unwrap();
    let err = train(&config(third.path(), 20), &mut publisher, &AtomicBool::new(false), |_| {}).unwrap_err();
    assert!(
        err.to_string().contains("its latest names step-00000099.json, but step-00000099.safetensors is missing"),
        "{err}"
    );
}

/// Trains until no step has come for 3 s (the trainer waits for data that never comes); the
/// last row.
fn train_until_idle(config: &TrainerConfig) -> Option<xqz_run_folder::MetricsRow> {
    let stop = AtomicBool::new(false);
    let last_step = std::sync::Mutex::new(std::time::Instant::now());
    std::thread::scope(|s| {
        s.spawn(|| {
            while last_step.lock().unwrap().elapsed() < Duration::from_secs(3) {
                std::thread::sleep(Duration::from_millis(100));
            }
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
        });
        train(config, &mut Counting::default(), &stop, |_| *last_step.lock().unwrap() = std::time::Instant::now())
            .unwrap()
    })
}

#[test]
fn waits_when_ahead_of_self_play() {
    let (data, run) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let samples = dataset(data.path(), 10);
    // One training sample per two self-play samples: the budget is samples / 2 / 32 steps.
    let config =
        TrainerConfig { samples_per_new_sample: 0.5, max_steps: Some(10_000), ..config(data.path(), run.path(), 0) };
    assert_eq!(train_until_idle(&config).unwrap().step, samples / 2 / 32);
}

/// A run resumed from a light state has its weights and counters, but a new, empty dataset.
/// The trainer waits for the new dataset to fill, then trains on at the recipe's ratio of the
/// new samples alone: the budget the last sitting left unspent is not spent on the first few
/// games (nor is the run held back until the new dataset is as large as the old one).
#[test]
fn a_light_resume_trains_on_at_the_ratio_of_the_new_dataset_s_samples() {
    let (old, new, run) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let old_samples = dataset(old.path(), 20);
    train(&config(old.path(), run.path(), 12), &mut Counting::default(), &AtomicBool::new(false), |_| {}).unwrap();
    let info = |run: &Path| xqz_net::checkpoint::read_meta(&latest_checkpoint(run).unwrap()).unwrap().info;
    assert_eq!((info(run.path()).dataset_samples, info(run.path()).samples_seen), (old_samples, 12 * 32));

    // A new dataset of 3 games, under a guard of 0.5 training samples per self-play sample: had
    // the run made 768 samples (12 steps of 32 at 0.5), its budget would be spent, so it is 0.
    let first = games_at(new.path().into(), 0..3, 7);
    assert!((64..768).contains(&first), "{first} samples: above --min-samples, below 768");
    let config =
        TrainerConfig { samples_per_new_sample: 0.5, max_steps: Some(10_000), ..config(new.path(), run.path(), 0) };
    assert!(train_until_idle(&config).is_none(), "no step on the budget of the old dataset");
    let resumed = info(run.path());
    assert_eq!((resumed.training_steps, resumed.dataset_samples, resumed.guard_credit), (12, first, 768 - first));

    // The new dataset grows: half a training sample per new sample.
    let more = games_at(new.path().into(), 3..23, 8);
    let last = train_until_idle(&config).unwrap();
    assert_eq!(last.step, 12 + more / 2 / 32, "{more} new samples");
    assert_eq!(last.samples_seen, last.step * 32, "the counters went on");
    let end = info(run.path());
    assert_eq!((end.dataset_samples, end.guard_credit), (first + more, 768 - first));
    assert!(end.train_seconds >= 3, "the seconds trained add up over the sittings: {}", end.train_seconds);
}

#[test]
fn the_same_seed_trains_the_same() {
    let data = tempfile::tempdir().unwrap();
    dataset(data.path(), 12);
    let runs: Vec<Vec<String>> = (0..2)
        .map(|_| {
            let run = tempfile::tempdir().unwrap();
            train(&config(data.path(), run.path(), 6), &mut Counting::default(), &AtomicBool::new(false), |_| {})
                .unwrap();
            // Losses and everything but the speed column.
            metrics_rows(run.path())
                .iter()
                .map(|r| {
                    r.split(',').enumerate().filter(|(i, _)| *i != 7).map(|(_, f)| f).collect::<Vec<_>>().join(",")
                })
                .collect()
        })
        .collect();
    assert_eq!(runs[0], runs[1]);
}
