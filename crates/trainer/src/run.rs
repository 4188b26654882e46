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

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use xqz_dataset::{DatasetError, DatasetLocation, ReplayConfig, ReplayWindow, WindowSize};
use xqz_net::{
    CheckpointError, Device, DeviceBatch, ModelConfig, Network, StepLosses, TrainConfig, TrainError, Trainer,
    checkpoint,
};
use xqz_run_folder::{IoError, MetricsRow, RowError, RowWriter, TrainerFolder, write_atomic};

use crate::data::{DataError, Targets, TrainingData};
use crate::publish::{PublishError, Publisher};

/// How the trainer trains.
#[derive(Clone, Debug)]
pub struct TrainerConfig {
    /// The dataset the coordinator writes: a folder or an object store prefix.
    pub data: DatasetLocation,
    /// The trainer's folder (checkpoints, metrics).
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
    /// Training samples between checkpoints (one at the first step past each multiple).
    pub checkpoint_every_samples: u64,
    /// Training samples between published models (a multiple of `checkpoint_every_samples` is
    /// sensible): counted in samples, the cadence means the same on a CPU and a GPU, whatever
    /// the batch size.
    pub publish_every_samples: u64,
    /// Training samples between rows of `metrics.csv`, each with the mean losses since the last
    /// (losses are read from the device only for a row).
    pub metrics_every_samples: u64,
    /// Stop after this many steps in all (resumed ones included).
    pub max_steps: Option<u64>,
    /// How often to look for new data when waiting.
    pub poll: Duration,
    /// Seed of the initial weights and of the sampling.
    pub seed: u64,
    /// A checkpoint whose weights a new run starts from (instead of seeded random ones).
    pub start_from: Option<PathBuf>,
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
    /// `metrics.csv` could not be read or appended to.
    #[error(transparent)]
    Metrics(#[from] RowError),
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

impl From<IoError> for RunError {
    fn from(e: IoError) -> RunError {
        RunError::Io { path: e.path, source: e.source }
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> RunError + '_ {
    move |source| IoError::at(path)(source).into()
}

fn learning_rate(schedule: &[(u64, f64)], step: u64, default: f64) -> f64 {
    schedule.iter().take_while(|(from, _)| *from <= step).last().map_or(default, |&(_, lr)| lr)
}

/// The latest checkpoint of a run folder, if any.
pub fn latest_checkpoint(run: &Path) -> Option<PathBuf> {
    let folder = TrainerFolder::new(run);
    let name = fs::read_to_string(folder.latest_file()).ok()?;
    Some(folder.checkpoints_dir().join(name.trim()))
}

fn save_checkpoint(trainer: &Trainer, run: &Path, model_version: u64) -> Result<PathBuf, RunError> {
    let folder = TrainerFolder::new(run);
    let dir = folder.checkpoints_dir();
    fs::create_dir_all(&dir).map_err(io(&dir))?;
    let name = TrainerFolder::checkpoint_name(trainer.info().training_steps);
    let path = dir.join(&name);
    trainer.save(&path, model_version)?;
    write_atomic(&folder.latest_file(), name.as_bytes())?;
    Ok(path)
}

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

/// The files of the checkpoint whose metadata is `name`, beside it: weights, optimizer state
/// (when saved), metadata last.
fn checkpoint_files(name: &str) -> [String; 3] {
    let stem = name.strip_suffix(".json").unwrap_or(name);
    [format!("{stem}.safetensors"), format!("{stem}.optimizer.safetensors"), name.to_string()]
}

/// The files of a backup of the checkpoint at `path`, in the order to store them: the
/// checkpoint's, then `latest` naming it, then `metrics.csv`, so that a backup's `latest` always
/// names complete files.
fn backup_files(path: &Path, metrics: &Path) -> Result<Vec<(String, Vec<u8>)>, RunError> {
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
    files.push((TrainerFolder::LATEST.into(), name.as_bytes().to_vec()));
    match fs::read(metrics) {
        Ok(bytes) => files.push((TrainerFolder::METRICS_CSV.into(), bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(source) => return Err(RunError::Io { path: metrics.to_path_buf(), source }),
    }
    Ok(files)
}

/// Copies the checkpoint at `path` with `metrics.csv` to `backup` ([`backup_files`]).
fn back_up(backup: &DatasetLocation, path: &Path, metrics: &Path) -> Result<(), RunError> {
    backup.put_files(backup_files(path, metrics)?).map_err(backup_error(backup))
}

/// The trainer's part of a light state of the stopped trainer whose folder is `run`: the
/// checkpoint it published last (weights, optimizer state, counters), named as `latest`, and
/// `metrics.csv`, laid out as its backup, in the order to store them. Empty for a folder without
/// checkpoints.
///
/// The checkpoint published last, not the latest: its weights are the bytes of the coordinator's
/// latest model, which a light state keeps too, so that a repository stores them once. What the
/// light state loses is the steps since that publication (at most `publish_every_samples`).
pub fn light_state_files(run: &Path) -> Result<Vec<(String, Vec<u8>)>, RunError> {
    let Some(latest) = latest_checkpoint(run) else { return Ok(Vec::new()) };
    let version = checkpoint::read_meta(&latest)?.info.model_version;
    let mut chosen = latest;
    if version > 0 {
        let dir = TrainerFolder::new(run).checkpoints_dir();
        for entry in fs::read_dir(&dir).map_err(io(&dir))? {
            let path = entry.map_err(io(&dir))?.path();
            let is_checkpoint = path.extension().is_some_and(|e| e == "json")
                && path.file_name().is_some_and(|n| n.to_string_lossy().starts_with("step-"));
            // Names sort by step: the publication saved the first checkpoint of its version.
            if is_checkpoint && path < chosen && checkpoint::read_meta(&path)?.info.model_version == version {
                chosen = path;
            }
        }
    }
    backup_files(&chosen, &TrainerFolder::new(run).metrics_csv())
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
    let Some(latest) = backup.get_file(TrainerFolder::LATEST).map_err(error)? else { return Ok(None) };
    let name = String::from_utf8_lossy(&latest).trim().to_string();
    let well_formed = name
        .strip_prefix("step-")
        .and_then(|n| n.strip_suffix(".json"))
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    if !well_formed {
        let message = format!("its latest names {name:?}, not a checkpoint (step-N.json)");
        return Err(RunError::BadBackup { location: backup.to_string(), message });
    }
    let folder = TrainerFolder::new(run);
    let dir = folder.checkpoints_dir();
    fs::create_dir_all(&dir).map_err(io(&dir))?;
    for file in checkpoint_files(&name) {
        match backup.get_file(&file).map_err(error)? {
            Some(bytes) => write_atomic(&dir.join(&file), &bytes)?,
            None if file.ends_with(".optimizer.safetensors") => {}
            None => {
                let message = format!("its latest names {name}, but {file} is missing");
                return Err(RunError::BadBackup { location: backup.to_string(), message });
            }
        }
    }
    let metrics = folder.metrics_csv();
    if !metrics.exists()
        && let Some(bytes) = backup.get_file(TrainerFolder::METRICS_CSV).map_err(error)?
    {
        write_atomic(&metrics, &bytes)?;
    }
    write_atomic(&folder.latest_file(), name.as_bytes())?;
    Ok(Some(dir.join(name)))
}

/// `metrics.csv`, appended to a row at a time.
struct MetricsLog {
    rows: RowWriter<MetricsRow>,
    /// When the last row was written, and the samples seen then.
    last: (Instant, u64),
}

impl MetricsLog {
    /// Opens the file for appending.
    fn open(path: &Path, samples_seen: u64) -> Result<MetricsLog, RunError> {
        Ok(MetricsLog { rows: RowWriter::open(path)?, last: (Instant::now(), samples_seen) })
    }

    /// Whether a row is due at `samples_seen`.
    fn due(&self, samples_seen: u64, every: u64) -> bool {
        samples_seen >= self.last.1 + every
    }

    /// Writes the row of `trainer` now, with the mean `losses` since the last row.
    fn write(
        &mut self,
        trainer: &Trainer,
        window: &ReplayWindow,
        losses: xqz_net::Losses,
        model_version: u64,
    ) -> Result<MetricsRow, RunError> {
        let info = trainer.info();
        let secs = self.last.0.elapsed().as_secs_f64().max(1e-9);
        let row = MetricsRow {
            step: info.training_steps,
            samples_seen: info.samples_seen,
            dataset_samples: window.total_samples(),
            window: window.len() as u64,
            policy_loss: losses.policy,
            value_loss: losses.value,
            learning_rate: trainer.config().learning_rate,
            samples_per_second: info.samples_seen.saturating_sub(self.last.1) as f64 / secs,
            model_version,
        };
        self.last = (Instant::now(), info.samples_seen);
        self.rows.append(&row)?;
        Ok(row)
    }
}

/// The trainer and the latest model version of the folder's latest checkpoint, or of a new run
/// (whose step 0 is saved, and published when it starts from a given model).
fn resume_or_start(
    config: &TrainerConfig,
    publisher: &mut dyn Publisher,
    copy_to_backup: &dyn Fn(&Path) -> Result<(), RunError>,
) -> Result<(Trainer, u64), RunError> {
    Ok(match latest_checkpoint(&config.run) {
        Some(path) => {
            let mut trainer = Trainer::resume(&path, config.device, Some(&config.model))?;
            trainer.reconfigure(config.optimizer);
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
    })
}

/// The run's progress that outlives a sitting of the trainer: the samples-per-sample guard's
/// credit for the datasets of earlier sittings, and the seconds trained before this sitting.
///
/// A run resumed from a light state has its weights and counters but a new, empty dataset. The
/// guard then credits the earlier datasets with just enough samples that the trainer trains on
/// as the new dataset grows, at the recipe's ratio, but not more at once: the budget the last
/// sitting left unspent would otherwise be spent on the first few thousand new samples.
struct Progress {
    guard_credit: u64,
    seconds_before: u64,
    started: Instant,
}

impl Progress {
    /// The progress of `trainer`'s checkpoint over the dataset that `window` reads, under a guard
    /// of `ratio` training samples per self-play sample; whether the dataset is a new one.
    fn resume(trainer: &Trainer, window: &ReplayWindow, ratio: f64) -> (Progress, bool) {
        let info = trainer.info();
        let total = window.total_samples();
        let new_dataset = total < info.dataset_samples;
        let guard_credit = if new_dataset {
            let credit = ((info.samples_seen as f64 / ratio).ceil() as u64).saturating_sub(total);
            tracing::info!(
                checkpoint_dataset_samples = info.dataset_samples,
                dataset_samples = total,
                credit,
                "the dataset is newer than the checkpoint (a light resume): the guard credits the earlier ones"
            );
            credit
        } else {
            info.guard_credit
        };
        (Progress { guard_credit, seconds_before: info.train_seconds, started: Instant::now() }, new_dataset)
    }

    /// The self-play samples the guard counts: the dataset's and the credit.
    fn guard_samples(&self, window: &ReplayWindow) -> u64 {
        self.guard_credit + window.total_samples()
    }

    /// Notes the progress in `trainer`, for its next checkpoint.
    fn stamp(&self, trainer: &mut Trainer, window: &ReplayWindow) {
        let seconds = self.seconds_before + self.started.elapsed().as_secs();
        trainer.set_progress(window.total_samples(), self.guard_credit, seconds);
    }
}

/// Batches prepared ahead of the step, on a thread of their own.
const PREFETCH: usize = 2;

/// Whether going from `before` to `after` samples passed a multiple of `every`.
fn crossed(before: u64, after: u64, every: u64) -> bool {
    before / every.max(1) != after / every.max(1)
}

/// Trains until `stop` is set or `max_steps` is reached; `on_report` sees every row written to
/// `metrics.csv`. Returns the last.
///
/// A thread of its own turns replay batches into device batches ahead of the step, and the
/// losses stay on the device until a row reports them, so that a GPU is not kept waiting
/// for the host.
pub fn train(
    config: &TrainerConfig,
    publisher: &mut dyn Publisher,
    stop: &AtomicBool,
    mut on_report: impl FnMut(&MetricsRow),
) -> Result<Option<MetricsRow>, RunError> {
    fs::create_dir_all(&config.run).map_err(io(&config.run))?;
    if let Some(backup) = &config.backup
        && let Some(path) = restore(backup, &config.run)?
    {
        tracing::info!(checkpoint = %path.display(), backup = %backup, "resuming from the backup's latest checkpoint");
    }
    let metrics_path = TrainerFolder::new(&config.run).metrics_csv();
    // Every checkpoint goes to the backup once it is final (published, when it is published).
    let copy_to_backup = |path: &Path| config.backup.as_ref().map_or(Ok(()), |b| back_up(b, path, &metrics_path));
    let (mut trainer, mut model_version) = resume_or_start(config, publisher, &copy_to_backup)?;
    let mut metrics = MetricsLog::open(&metrics_path, trainer.info().samples_seen)?;
    let replay = ReplayConfig {
        window: config.window,
        batch_size: config.batch_size,
        seed: config.seed,
        drop_last: true,
        ..ReplayConfig::default()
    };
    let mut window = ReplayWindow::open_at(config.data.clone(), replay)?;
    let (progress, new_dataset) = Progress::resume(&trainer, &window, config.samples_per_new_sample);
    if new_dataset {
        // The new dataset and the credit are noted at once, so that a trainer stopped before its
        // next checkpoint does not take the samples made meanwhile for earlier ones.
        progress.stamp(&mut trainer, &window);
        copy_to_backup(&save_checkpoint(&trainer, &config.run, model_version)?)?;
    }
    let mut last = None;
    let mut round = trainer.info().training_steps;
    // The steps since the last row of metrics.
    let mut unreported: Vec<StepLosses> = Vec::new();
    let done = |trainer: &Trainer| config.max_steps.is_some_and(|m| trainer.info().training_steps >= m);
    while !stop.load(Ordering::Relaxed) && !done(&trainer) {
        window.refresh()?;
        let allowed = (config.samples_per_new_sample * progress.guard_samples(&window) as f64) as u64;
        let budget = allowed.saturating_sub(trainer.info().samples_seen) / config.batch_size as u64;
        if window.len() < config.min_samples.max(config.batch_size) || budget == 0 {
            std::thread::sleep(config.poll);
            continue;
        }
        // A fresh permutation after every refresh, so new data joins at once.
        round += 1;
        let (first, window, progress) = (trainer.info().samples_seen, &window, &progress);
        std::thread::scope(|scope| -> Result<(), RunError> {
            let (ready, batches) = std::sync::mpsc::sync_channel(PREFETCH);
            scope.spawn(move || {
                let mut seen = first;
                for batch in window.epoch(round).take(budget.min(64) as usize) {
                    // The targets at the samples the step will have seen, as if made just before it.
                    let prepared = TrainingData::from_replay(&batch, config.targets.at(seen))
                        .map_err(RunError::from)
                        .and_then(|data| Ok(DeviceBatch::new(&data.batch(), config.device)?));
                    seen += batch.size as u64;
                    // The loop hangs up when it stops early.
                    if ready.send(prepared).is_err() {
                        break;
                    }
                }
            });
            for prepared in batches {
                if stop.load(Ordering::Relaxed) || done(&trainer) {
                    break;
                }
                let before = trainer.info().samples_seen;
                let lr =
                    learning_rate(&config.lr_schedule, trainer.info().training_steps, config.optimizer.learning_rate);
                trainer.set_learning_rate(lr);
                unreported.push(trainer.step_on(&prepared?)?);
                let after = trainer.info().samples_seen;
                let publish_now = crossed(before, after, config.publish_every_samples);
                let checkpoint_now = publish_now || crossed(before, after, config.checkpoint_every_samples);
                if !checkpoint_now && !metrics.due(after, config.metrics_every_samples) {
                    continue;
                }
                // Read before a checkpoint, so that no checkpoint follows a step that failed unseen.
                let losses = StepLosses::mean(&unreported)?;
                if checkpoint_now {
                    progress.stamp(&mut trainer, window);
                    let mut path = save_checkpoint(&trainer, &config.run, model_version)?;
                    if publish_now {
                        (model_version, path) = publish(publisher, &trainer, &config.run, path)?;
                    }
                    copy_to_backup(&path)?;
                }
                unreported.clear();
                let row = metrics.write(&trainer, window, losses, model_version)?;
                on_report(&row);
                last = Some(row);
            }
            Ok(())
        })?;
    }
    if !unreported.is_empty() {
        let row = metrics.write(&trainer, &window, StepLosses::mean(&unreported)?, model_version)?;
        on_report(&row);
        last = Some(row);
    }
    if last.is_some() {
        progress.stamp(&mut trainer, &window);
        copy_to_backup(&save_checkpoint(&trainer, &config.run, model_version)?)?;
    }
    Ok(last)
}
