//! `xqz train`: trains on the coordinator's dataset as it grows and publishes new models.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;
use xqz_dataset::{GrowingWindow, WindowSize};
use xqz_net::{ModelConfig, TrainConfig, parse_device};
use xqz_trainer::{GrpcPublisher, Publisher, Targets, TrainerConfig, train};

/// Options of `xqz train`.
#[derive(Args)]
pub struct TrainArgs {
    /// The coordinator to publish to (`http://HOST:PORT`).
    #[arg(long)]
    coordinator: String,
    /// Bearer token of the coordinator.
    #[arg(long)]
    token: Option<String>,
    /// The coordinator's dataset folder (`<coordinator data>/dataset`).
    #[arg(long)]
    data: PathBuf,
    /// The run folder: checkpoints and metrics.csv; an existing one is resumed.
    #[arg(long)]
    run: PathBuf,
    /// Model config: tiny, small, standard or a .toml file.
    #[arg(long, default_value = "small")]
    model: String,
    /// Device: cpu, cuda, cuda:N or auto.
    #[arg(long, default_value = "auto")]
    device: String,
    /// Rows per step.
    #[arg(long, default_value_t = 256)]
    batch_size: usize,
    /// Learning-rate schedule `STEP:RATE,...` (from each step on, its rate).
    #[arg(long, default_value = LR_SCHEDULE)]
    lr_schedule: String,
    /// Nesterov momentum.
    #[arg(long, default_value_t = 0.9)]
    momentum: f64,
    /// L2 weight decay.
    #[arg(long, default_value_t = 1e-4)]
    weight_decay: f64,
    /// Training samples allowed per self-play sample in the dataset.
    #[arg(long, default_value_t = 4.0)]
    samples_per_sample: f64,
    /// Share of the search's root estimate in the value target, 0 to 1 (the rest is the game's
    /// result).
    #[arg(long, default_value_t = 0.0, value_parser = parse_ratio)]
    value_q_ratio: f32,
    /// Share of a uniform spread over the recorded (legal) moves in the policy target, 0 to 1
    /// (the rest is the search's visits).
    #[arg(long, default_value_t = 0.0, value_parser = parse_ratio)]
    policy_smoothing: f32,
    /// Share of a material estimate of the position in the value target, 0 to 1 (knowledge put
    /// in, not learnt: it keeps more material better where won games' results saturate).
    #[arg(long, default_value_t = 0.0, value_parser = parse_ratio)]
    material_target: f32,
    /// Plies over which the game result's share of the value target fades, the search's root
    /// estimate taking the rest (TD(lambda)-like; 0: the share does not fade).
    #[arg(long, default_value_t = 0.0, value_parser = parse_horizon)]
    result_horizon: f32,
    /// Samples in the dataset before the first step.
    #[arg(long, default_value_t = 2048)]
    min_samples: usize,
    /// Steps between checkpoints.
    #[arg(long, default_value_t = 100)]
    checkpoint_every: u64,
    /// Steps between published models.
    #[arg(long, default_value_t = 500)]
    publish_every: u64,
    /// Stop after this many steps in all.
    #[arg(long)]
    max_steps: Option<u64>,
    /// Seed of the initial weights and of the sampling.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Print a line every this many steps.
    #[arg(long, default_value_t = 10)]
    log_every: u64,
}

/// The default learning-rate schedule of `xqz train` and `xqz run`.
pub const LR_SCHEDULE: &str = "0:0.02,20000:0.006,60000:0.002";

/// Parses a learning-rate schedule `STEP:RATE,...`.
pub fn parse_schedule(text: &str) -> Result<Vec<(u64, f64)>> {
    let mut schedule = text
        .split(',')
        .map(|part| {
            let (step, rate) = part.split_once(':').with_context(|| format!("bad schedule entry {part:?}"))?;
            Ok((step.trim().parse()?, rate.trim().parse()?))
        })
        .collect::<Result<Vec<(u64, f64)>>>()
        .with_context(|| format!("bad learning-rate schedule {text:?} (expected STEP:RATE,...)"))?;
    schedule.sort_by_key(|e| e.0);
    anyhow::ensure!(schedule.first().is_some_and(|e| e.0 == 0), "the schedule must start at step 0");
    anyhow::ensure!(schedule.iter().all(|e| e.1 > 0.0 && e.1.is_finite()), "rates must be positive");
    Ok(schedule)
}

/// Parses a number from 0 to 1.
pub fn parse_ratio(text: &str) -> Result<f32, String> {
    match text.parse::<f32>() {
        Ok(r) if (0.0..=1.0).contains(&r) => Ok(r),
        _ => Err(format!("expected a number from 0 to 1, got {text:?}")),
    }
}

/// A fade length in plies: 0 (off) or a positive, finite number.
pub fn parse_horizon(text: &str) -> Result<f32, String> {
    match text.parse::<f32>() {
        Ok(h) if h >= 0.0 && h.is_finite() => Ok(h),
        _ => Err(format!("expected a number of plies, 0 or more, got {text:?}")),
    }
}

pub fn run(args: &TrainArgs) -> Result<()> {
    let lr_schedule = parse_schedule(&args.lr_schedule)?;
    let config = TrainerConfig {
        data: args.data.clone(),
        run: args.run.clone(),
        model: ModelConfig::resolve(&args.model)?,
        device: parse_device(&args.device)?,
        optimizer: TrainConfig {
            learning_rate: lr_schedule[0].1,
            momentum: args.momentum,
            weight_decay: args.weight_decay,
        },
        lr_schedule,
        batch_size: args.batch_size,
        window: WindowSize::Growing(GrowingWindow::default()),
        samples_per_new_sample: args.samples_per_sample,
        targets: Targets {
            value_q_ratio: args.value_q_ratio,
            policy_smoothing: args.policy_smoothing,
            result_horizon: args.result_horizon,
            material_share: args.material_target,
        },
        min_samples: args.min_samples,
        checkpoint_every: args.checkpoint_every,
        publish_every: args.publish_every,
        max_steps: args.max_steps,
        poll: Duration::from_secs(2),
        seed: args.seed,
    };
    let mut publisher: Box<dyn Publisher> = Box::new(GrpcPublisher::new(
        &args.coordinator,
        args.token.clone(),
        &format!("trainer-{}", std::process::id()),
    )?);
    // SIGINT/SIGTERM end the loop after the current step, with a checkpoint.
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&stop))?;
    }
    let last = train(&config, publisher.as_mut(), &stop, |r| {
        if r.step % args.log_every.max(1) == 0 {
            println!(
                "step {} samples {} policy {:.4} value {:.4} lr {} {:.0} samples/s window {} of {} model v{}",
                r.step,
                r.samples_seen,
                r.policy_loss,
                r.value_loss,
                r.learning_rate,
                r.samples_per_second,
                r.window,
                r.dataset_samples,
                r.model_version
            );
        }
    })?;
    if let Some(r) = last {
        println!("stopped at step {} (model v{})", r.step, r.model_version);
    }
    Ok(())
}
