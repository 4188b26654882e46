//! `xqz train`: trains on the coordinator's dataset as it grows and publishes new models.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use anyhow::Result;
use clap::{ArgMatches, Args};
use xqz_dataset::DatasetLocation;
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
    #[arg(long, value_parser = DatasetLocation::parse)]
    data: DatasetLocation,
    /// The run folder: checkpoints and metrics.csv; an existing one is resumed.
    #[arg(long)]
    run: PathBuf,
    /// Copy every checkpoint and metrics.csv to this folder or object store prefix
    /// (`s3://bucket/prefix`, ...) as they are written; a run folder without checkpoints resumes
    /// from the backup's latest, so a trainer whose disk does not outlive it loses nothing.
    #[arg(long, value_parser = DatasetLocation::parse)]
    backup: Option<DatasetLocation>,
    #[command(flatten)]
    device: crate::model::DeviceArg,
    /// A settings file (TOML; its [train] section), such as a run folder's settings.toml; flags
    /// given on the command line override it.
    #[arg(long)]
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

pub fn run(args: &TrainArgs, given: &ArgMatches) -> Result<()> {
    let settings = SettingsFile::role(args.settings.as_deref(), |f| f.train, &args.train, given)?;
    let mut config =
        settings.trainer_config(args.data.clone(), args.run.clone(), args.device.resolve()?, args.max_steps)?;
    config.backup = args.backup.clone();
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
