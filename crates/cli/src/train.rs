//! `xqz train`: trains on the coordinator's dataset as it grows and publishes new models.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::{Context, Result};
use clap::{ArgMatches, Args};
use xqz_dataset::DatasetLocation;
use xqz_run_folder::RunFolder;
use xqz_trainer::{GrpcPublisher, Publisher, TrainSettings, TrainerMetrics, train};

use crate::settings::SettingsFile;

/// Options of `xqz train`.
#[derive(Args)]
pub struct TrainArgs {
    /// The coordinator to publish to (`http://HOST:PORT`).
    #[arg(long)]
    coordinator: String,
    #[command(flatten)]
    token: crate::token::TokenArgs,
    #[command(flatten)]
    tls: crate::token::ClientTlsArgs,
    /// The coordinator's dataset: its folder (`<coordinator data>/dataset`) or the object store
    /// prefix it was given as --dataset (`s3://bucket/prefix`; credentials and endpoint from the
    /// AWS_* variables).
    #[arg(long, value_parser = DatasetLocation::parse, required_unless_present = "run_folder", conflicts_with = "run_folder")]
    data: Option<DatasetLocation>,
    /// The trainer's folder: checkpoints and metrics.csv; an existing one is resumed.
    #[arg(long, required_unless_present = "run_folder", conflicts_with = "run_folder")]
    run: Option<PathBuf>,
    /// A run folder of `xqz run`, instead of --data, --run and --settings: the dataset of its
    /// coordinator, its trainer/ folder and its settings.toml; where the run keeps its state
    /// elsewhere (`xqz run --state`), the state's dataset, and its trainer backup unless --backup
    /// names another.
    #[arg(long)]
    run_folder: Option<PathBuf>,
    /// Copy every checkpoint and metrics.csv to this folder or object store prefix
    /// (`s3://bucket/prefix`, ...) as they are written; a run folder without checkpoints resumes
    /// from the backup's latest, so a trainer whose disk does not outlive it loses nothing.
    #[arg(long, value_parser = DatasetLocation::parse)]
    backup: Option<DatasetLocation>,
    #[command(flatten)]
    device: crate::model::DeviceArg,
    /// A settings file (TOML; its [train] section), such as a run folder's settings.toml; flags
    /// given on the command line override it.
    #[arg(long, conflicts_with = "run_folder")]
    settings: Option<PathBuf>,
    #[command(flatten)]
    train: TrainSettings,
    /// Stop after this many steps in all.
    #[arg(long)]
    max_steps: Option<u64>,
    /// Serve Prometheus metrics (step, losses, learning rate, samples/s, model version) at
    /// `http://ADDR/metrics`, e.g. `0.0.0.0:9092`; they hold no secrets.
    #[arg(long)]
    metrics: Option<std::net::SocketAddr>,
}

impl TrainArgs {
    /// The dataset, the trainer's folder, the settings file and the backup: those of the run
    /// folder (and its state), or those given (clap requires one or the other).
    fn places(&self) -> Result<(DatasetLocation, PathBuf, Option<PathBuf>, Option<DatasetLocation>)> {
        if let Some(run) = self.run_folder.as_deref().map(RunFolder::new) {
            let (dataset, backup) = match run.state()? {
                Some(state) => {
                    let backup = match &self.backup {
                        Some(backup) => backup.clone(),
                        None => DatasetLocation::parse(&state.trainer())?,
                    };
                    (DatasetLocation::parse(&state.dataset())?, Some(backup))
                }
                None => (DatasetLocation::Local(run.dataset_dir()), self.backup.clone()),
            };
            return Ok((dataset, run.trainer().root().to_path_buf(), Some(run.settings_file()), backup));
        }
        let data = self.data.clone().context("--data or --run-folder")?;
        let run = self.run.clone().context("--run or --run-folder")?;
        Ok((data, run, self.settings.clone(), self.backup.clone()))
    }
}

pub fn run(args: &TrainArgs, given: &ArgMatches) -> Result<()> {
    let (data, folder, settings_file, backup) = args.places()?;
    let settings = SettingsFile::role(settings_file.as_deref(), |f| f.train, &args.train, given)?;
    let mut config = settings.trainer_config(data, folder, args.device.resolve()?, args.max_steps)?;
    config.backup = backup;
    let mut publisher: Box<dyn Publisher> = Box::new(GrpcPublisher::new(
        &args.coordinator,
        args.tls.resolve()?.as_ref(),
        args.token.resolve()?,
        &format!("trainer-{}", std::process::id()),
    )?);
    // SIGINT/SIGTERM end the loop after the current step, with a checkpoint.
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&stop))?;
    }
    let mut registry = xqz_metrics::Registry::default();
    let metrics = TrainerMetrics::register(&mut registry);
    let _server = crate::metrics::serve(args.metrics, registry, "trainer")?;
    let last = train(&config, publisher.as_mut(), &stop, |r| {
        metrics.observe(r);
        // A line for each row of metrics.csv (--metrics-every-samples).
        tracing::info!(
            step = r.step,
            samples = r.samples_seen,
            policy_loss = r.policy_loss,
            value_loss = r.value_loss,
            lr = r.learning_rate,
            samples_per_s = r.samples_per_second.round(),
            window = r.window,
            dataset_samples = r.dataset_samples,
            model_version = r.model_version,
            "trained"
        );
    })?;
    if let Some(r) = last {
        tracing::info!(step = r.step, model_version = r.model_version, "stopped");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use clap::Parser;

    use super::*;

    /// `xqz train`'s arguments alone.
    #[derive(Parser)]
    struct Train {
        #[command(flatten)]
        args: TrainArgs,
    }

    fn parse(flags: &[&str]) -> Result<Train, clap::Error> {
        Train::try_parse_from(["train", "--coordinator", "http://127.0.0.1:1"].iter().chain(flags))
    }

    #[test]
    fn a_run_folder_stands_for_the_dataset_the_trainer_folder_and_the_settings() {
        let (data, folder, settings, backup) = parse(&["--run-folder", "runs/a"]).unwrap().args.places().unwrap();
        assert!(matches!(&data, DatasetLocation::Local(p) if p == Path::new("runs/a/coordinator/dataset")), "{data:?}");
        assert_eq!((folder, settings), ("runs/a/trainer".into(), Some("runs/a/settings.toml".into())));
        assert!(backup.is_none());
        let (_, folder, settings, _) = parse(&["--data", "d", "--run", "t"]).unwrap().args.places().unwrap();
        assert_eq!((folder, settings), ("t".into(), None));
        assert!(parse(&["--run-folder", "runs/a", "--data", "d"]).is_err(), "one or the other");
        assert!(parse(&["--data", "d"]).is_err(), "--run is needed without a run folder");
    }

    #[test]
    fn a_run_folder_with_a_state_location_trains_on_the_state_s_dataset_and_backs_up_there() {
        let dir = tempfile::tempdir().unwrap();
        let run = RunFolder::new(dir.path().join("run"));
        run.create().unwrap();
        run.set_state(&xqz_run_folder::RunState::new(dir.path().join("state").to_str().unwrap())).unwrap();
        let flags = ["--run-folder", run.root().to_str().unwrap()];
        let (data, _, _, backup) = parse(&flags).unwrap().args.places().unwrap();
        assert_eq!(data.as_local(), Some(dir.path().join("state/dataset").as_path()));
        assert_eq!(backup.unwrap().as_local(), Some(dir.path().join("state/trainer").as_path()));
        let given = parse(&[flags[0], flags[1], "--backup", "elsewhere"]).unwrap().args.places().unwrap();
        assert_eq!(given.3.unwrap().as_local(), Some(Path::new("elsewhere")), "--backup wins");
    }
}
