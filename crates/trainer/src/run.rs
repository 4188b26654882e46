//! The training loop: reads the replay window as it grows, trains, checkpoints, publishes.
//!
//! KataGo's guard against over-fitting when self-play is slow: the trainer takes at most
//! `samples_per_new_sample` training samples per self-play sample in the dataset, and waits for
//! more data when it is ahead. A run folder holds `checkpoints/` (`step-N.json` and its weights
//! and optimizer state; `latest` names the newest) and `metrics.csv`; starting again in the same
//! folder resumes from the latest checkpoint.
//!
//! With a backup location ([`TrainerConfig::backup`], e.g. an object store prefix), every
//! checkpoint and `metrics.csv` are copied there as they are written, and a run folder without
//! checkpoints starts from the backup's latest: a trainer on a disk that does not outlive it (a
//! pod's `emptyDir`, another node) resumes where the last one stopped.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use xqz_dataset::{DatasetError, DatasetLocation, ReplayConfig, ReplayWindow, WindowSize};
use xqz_net::{CheckpointError, Device, ModelConfig, Network, TrainConfig, TrainError, Trainer, checkpoint};

use crate::data::{DataError, Targets, TrainingData};
use crate::publish::PublishError;

/// How the trainer trains.
#[derive(Clone, Debug)]
pub struct TrainerConfig {
    /// The dataset the coordinator writes: a folder or an object store prefix.
    pub data: DatasetLocation,
    /// The run folder (checkpoints, metrics).
    pub run: PathBuf,
    /// Where checkpoints and metrics are backed up and resumed from when the run folder has none.
    pub backup: Option<DatasetLocation>,
    /// The network's shape (a resumed run must match it).
    pub model: ModelConfig,
    /// The device to train on.
    pub device: Device,
    /// Optimizer settings; the learning rate is the schedule's first.
    pub optimizer: TrainConfig,
    /// Learning-rate schedule: from each step on, its rate (sorted by step; the first entry
    /// applies from step 0).
    pub lr_schedule: Vec<(u64, f64)>,
    /// Rows per step.
    pub batch_size: usize,
    /// The replay window.
    pub window: WindowSize,
    /// Training samples allowed per self-play sample in the dataset.
    pub samples_per_new_sample: f64,
    /// How batches become value and policy targets.
    pub targets: Targets,
    /// Samples in the dataset before the first step.
    pub min_samples: usize,
    /// Steps between checkpoints.
    pub checkpoint_every: u64,
    /// Steps between published models (a multiple of `checkpoint_every` is sensible).
    pub publish_every: u64,
    /// Stop after this many steps in all (resumed ones included).
    pub max_steps: Option<u64>,
    /// How often to look for new data when waiting.
    pub poll: Duration,
    /// Seed of the initial weights and of the sampling.
    pub seed: u64,
    /// A checkpoint whose weights a new run starts from (instead of seeded random ones).
    pub start_from: Option<PathBuf>,
}

/// Where published models go (the coordinator, or nowhere in a local test).
pub trait Publisher {
    /// Publishes the checkpoint whose metadata is at `path`; returns its model version.
    fn publish(&mut self, path: &Path) -> Result<u64, PublishError>;
}

/// One row of `metrics.csv`.
#[derive(Clone, Debug, PartialEq)]
pub struct StepReport {
    /// Steps taken in all.
    pub step: u64,
    /// Samples trained on in all.
    pub samples_seen: u64,
    /// Samples in the dataset.
    pub dataset_samples: u64,
    /// Samples in the replay window.
    pub window: usize,
    /// Policy loss.
    pub policy_loss: f64,
    /// Value loss.
    pub value_loss: f64,
    /// Learning rate used.
    pub learning_rate: f64,
    /// Training samples per second over the last interval.
    pub samples_per_second: f64,
    /// Latest published model version.
    pub model_version: u64,
}

/// Why training stopped with an error.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Reading the dataset failed.
    #[error(transparent)]
    Dataset(#[from] DatasetError),
    /// A batch could not be converted.
    #[error(transparent)]
    Data(#[from] DataError),
    /// A step failed.
    #[error(transparent)]
    Train(#[from] TrainError),
    /// A checkpoint could not be written or read.
    #[error(transparent)]
    Checkpoint(#[from] CheckpointError),
    /// The run folder could not be written.
    #[error("run folder {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The backup location could not be read or written.
    #[error("checkpoint backup {location}: {source}")]
    Backup {
        /// The backup location.
        location: String,
        /// Why.
        source: Box<DatasetError>,
    },
    /// The backup location holds something other than a checkpoint this trainer wrote.
    #[error("checkpoint backup {location}: {message}")]
    BadBackup {
        /// The backup location.
        location: String,
        /// What is wrong.
        message: String,
    },
    /// Publishing failed.
    #[error("publishing {path}: {source}")]
    Publish {
        /// The checkpoint.
        path: PathBuf,
        /// Why.
        source: PublishError,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> RunError + '_ {
    move |source| RunError::Io { path: path.to_path_buf(), source }
}

const METRICS_HEADER: &str =
    "step,samples_seen,dataset_samples,window,policy_loss,value_loss,learning_rate,samples_per_second,model_version";

fn learning_rate(schedule: &[(u64, f64)], step: u64, default: f64) -> f64 {
    schedule.iter().take_while(|(from, _)| *from <= step).last().map_or(default, |&(_, lr)| lr)
}

/// The latest checkpoint of a run folder, if any.
pub fn latest_checkpoint(run: &Path) -> Option<PathBuf> {
    let dir = run.join("checkpoints");
    let name = fs::read_to_string(dir.join("latest")).ok()?;
    Some(dir.join(name.trim()))
}

fn save_checkpoint(trainer: &Trainer, run: &Path, model_version: u64) -> Result<PathBuf, RunError> {
    let dir = run.join("checkpoints");
    fs::create_dir_all(&dir).map_err(io(&dir))?;
    let name = format!("step-{:08}.json", trainer.info().training_steps);
    let path = dir.join(&name);
    trainer.save(&path, model_version)?;
    write_synced(&dir.join("latest"), name.as_bytes())?;
    Ok(path)
}

/// The files of the checkpoint whose metadata is `name`, beside it: weights, optimizer state
/// (when saved), metadata last.
/// Publishes the checkpoint at `path`, then saves it again naming the version it was published
/// as; returns that version and the checkpoint.
fn publish(
    publisher: &mut dyn Publisher,
    trainer: &Trainer,
    run: &Path,
    path: PathBuf,
) -> Result<(u64, PathBuf), RunError> {
    let version = publisher.publish(&path).map_err(|source| RunError::Publish { path: path.clone(), source })?;
    Ok((version, save_checkpoint(trainer, run, version)?))
}

fn checkpoint_files(name: &str) -> [String; 3] {
    let stem = name.strip_suffix(".json").unwrap_or(name);
    [format!("{stem}.safetensors"), format!("{stem}.optimizer.safetensors"), name.to_string()]
}

/// Copies the checkpoint at `path`, then `latest` naming it, then `metrics.csv` to `backup`: a
/// backup's `latest` always names complete files.
fn back_up(backup: &DatasetLocation, path: &Path, metrics: &Path) -> Result<(), RunError> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    let mut files = Vec::new();
    for file in checkpoint_files(name) {
        let local = dir.join(&file);
        match fs::read(&local) {
            Ok(bytes) => files.push((file, bytes)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && file.ends_with(".optimizer.safetensors") => {}
            Err(source) => return Err(RunError::Io { path: local, source }),
        }
    }
    files.push(("latest".into(), name.as_bytes().to_vec()));
    match fs::read(metrics) {
        Ok(bytes) => files.push(("metrics.csv".into(), bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(source) => return Err(RunError::Io { path: metrics.to_path_buf(), source }),
    }
    backup.put_files(files).map_err(backup_error(backup))
}

/// How a failed read or write of `backup` is reported.
fn backup_error(backup: &DatasetLocation) -> impl Fn(DatasetError) -> RunError + '_ {
    move |source| RunError::Backup { location: backup.to_string(), source: Box::new(source) }
}

/// Fills a run folder that has no checkpoint from the backup's latest one (and its
/// `metrics.csv`); returns the checkpoint restored, if any.
fn restore(backup: &DatasetLocation, run: &Path) -> Result<Option<PathBuf>, RunError> {
    if latest_checkpoint(run).is_some() {
        return Ok(None);
    }
    let error = &backup_error(backup);
    let Some(latest) = backup.get_file("latest").map_err(error)? else { return Ok(None) };
    let name = String::from_utf8_lossy(&latest).trim().to_string();
    let well_formed = name
        .strip_prefix("step-")
        .and_then(|n| n.strip_suffix(".json"))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    if !well_formed {
        let message = format!("its latest names {name:?}, not a checkpoint (step-N.json)");
        return Err(RunError::BadBackup { location: backup.to_string(), message });
    }
    let dir = run.join("checkpoints");
    fs::create_dir_all(&dir).map_err(io(&dir))?;
    for file in checkpoint_files(&name) {
        match backup.get_file(&file).map_err(error)? {
            Some(bytes) => write_synced(&dir.join(&file), &bytes)?,
            None if file.ends_with(".optimizer.safetensors") => {}
            None => {
                let message = format!("its latest names {name}, but {file} is missing");
                return Err(RunError::BadBackup { location: backup.to_string(), message });
            }
        }
    }
    let metrics = run.join("metrics.csv");
    if !metrics.exists()
        && let Some(bytes) = backup.get_file("metrics.csv").map_err(error)?
    {
        write_synced(&metrics, &bytes)?;
    }
    write_synced(&dir.join("latest"), name.as_bytes())?;
    Ok(Some(dir.join(name)))
}

/// Writes `path` through a synced temporary file and a rename.
fn write_synced(path: &Path, bytes: &[u8]) -> Result<(), RunError> {
    let tmp = path.with_extension("tmp");
    fs::write(&tmp, bytes).and_then(|()| File::open(&tmp)?.sync_all()).map_err(io(&tmp))?;
    fs::rename(&tmp, path).map_err(io(path))
}

/// Trains until `stop` is set or `max_steps` is reached; `on_step` sees every step's report.
/// Returns the last report.
pub fn train(
    config: &TrainerConfig,
    publisher: &mut dyn Publisher,
    stop: &AtomicBool,
    mut on_step: impl FnMut(&StepReport),
) -> Result<Option<StepReport>, RunError> {
    fs::create_dir_all(&config.run).map_err(io(&config.run))?;
    if let Some(backup) = &config.backup
        && let Some(path) = restore(backup, &config.run)?
    {
        tracing::info!(checkpoint = %path.display(), backup = %backup, "resuming from the backup's latest checkpoint");
    }
    let metrics_path = config.run.join("metrics.csv");
    // Every checkpoint goes to the backup once it is final (published, when it is published).
    let copy_to_backup = |path: &Path| config.backup.as_ref().map_or(Ok(()), |b| back_up(b, path, &metrics_path));
    let (mut trainer, mut model_version) = match latest_checkpoint(&config.run) {
        Some(path) => {
            let mut trainer = Trainer::resume(&path, config.device, Some(&config.model))?;
            trainer.set_average_samples(config.optimizer.average_samples);
            let version = trainer.info().model_version;
            (trainer, version)
        }
        None => {
            let net = match &config.start_from {
                Some(start) => checkpoint::load(start, config.device, Some(&config.model))?.0,
                None => Network::seeded(&config.model, config.device, config.seed),
            };
            let trainer = Trainer::new(net, config.optimizer);
            // Step 0 is kept: the model the run started from, the baseline of its evaluations.
            let mut path = save_checkpoint(&trainer, &config.run, 0)?;
            let mut version = 0;
            if config.start_from.is_some() {
                // Workers play the model started from at once, not a random network until the
                // first publication.
                (version, path) = publish(publisher, &trainer, &config.run, path)?;
            }
            copy_to_backup(&path)?;
            (trainer, version)
        }
    };
    let new_file = !metrics_path.exists();
    let mut metrics = OpenOptions::new().create(true).append(true).open(&metrics_path).map_err(io(&metrics_path))?;
    if new_file {
        writeln!(metrics, "{METRICS_HEADER}").map_err(io(&metrics_path))?;
    }
    let replay = ReplayConfig {
        window: config.window,
        batch_size: config.batch_size,
        seed: config.seed,
        drop_last: true,
        ..ReplayConfig::default()
    };
    let mut window = ReplayWindow::open_at(config.data.clone(), replay)?;
    let mut last = None;
    let mut round = trainer.info().training_steps;
    let mut clock = (Instant::now(), trainer.info().samples_seen);
    let done = |trainer: &Trainer| config.max_steps.is_some_and(|m| trainer.info().training_steps >= m);
    while !stop.load(Ordering::Relaxed) && !done(&trainer) {
        window.refresh()?;
        let allowed = (config.samples_per_new_sample * window.total_samples() as f64) as u64;
        let budget = allowed.saturating_sub(trainer.info().samples_seen) / config.batch_size as u64;
        if window.len() < config.min_samples.max(config.batch_size) || budget == 0 {
            std::thread::sleep(config.poll);
            continue;
        }
        // A fresh permutation after every refresh, so new data joins at once.
        round += 1;
        for batch in window.epoch(round).take(budget.min(64) as usize) {
            if stop.load(Ordering::Relaxed) || done(&trainer) {
                break;
            }
            let step = trainer.info().training_steps;
            let lr = learning_rate(&config.lr_schedule, step, config.optimizer.learning_rate);
            trainer.set_learning_rate(lr);
            let targets = config.targets.at(trainer.info().samples_seen);
            let losses = trainer.step(&TrainingData::from_replay(&batch, targets)?.batch())?;
            let info = trainer.info();
            let step = info.training_steps;
            if step % config.publish_every.max(1) == 0 || step % config.checkpoint_every.max(1) == 0 {
                let mut path = save_checkpoint(&trainer, &config.run, model_version)?;
                if step % config.publish_every.max(1) == 0 {
                    (model_version, path) = publish(publisher, &trainer, &config.run, path)?;
                }
                copy_to_backup(&path)?;
            }
            let secs = clock.0.elapsed().as_secs_f64().max(1e-9);
            let report = StepReport {
                step,
                samples_seen: info.samples_seen,
                dataset_samples: window.total_samples(),
                window: window.len(),
                policy_loss: losses.policy,
                value_loss: losses.value,
                learning_rate: lr,
                samples_per_second: (info.samples_seen - clock.1) as f64 / secs,
                model_version,
            };
            clock = (Instant::now(), info.samples_seen);
            writeln!(
                metrics,
                "{},{},{},{},{:.6},{:.6},{},{:.1},{}",
                report.step,
                report.samples_seen,
                report.dataset_samples,
                report.window,
                report.policy_loss,
                report.value_loss,
                report.learning_rate,
                report.samples_per_second,
                report.model_version
            )
            .map_err(io(&metrics_path))?;
            on_step(&report);
            last = Some(report);
        }
    }
    metrics.flush().map_err(io(&metrics_path))?;
    if last.is_some() {
        copy_to_backup(&save_checkpoint(&trainer, &config.run, model_version)?)?;
    }
    Ok(last)
}
