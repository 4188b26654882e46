//! `xqz selfplay`: local self-play games into a dataset folder.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use xqz_mcts::{PlaySettings, SearchConfig, UniformEvaluator};
use xqz_net::service::InferenceService;
use xqz_net::{ModelConfig, Network};
use xqz_worker::{LocalReport, LocalSelfPlay, play_into};

/// The mate search of searching players; shared by every command that searches.
#[derive(Args, Clone, Copy, Debug)]
pub struct MateSearch {
    /// Longest forced mate by checks, in moves, that searches look for at each leaf (one more at
    /// the root); 1 looks for mates in one only.
    #[arg(long, default_value_t = SearchConfig::default().mate_moves, value_parser = clap::value_parser!(u32).range(1..=4))]
    pub mate_moves: u32,
}

impl Default for MateSearch {
    fn default() -> MateSearch {
        MateSearch { mate_moves: SearchConfig::default().mate_moves }
    }
}

/// Where the network comes from.
#[derive(Args)]
#[group(required = true, multiple = false)]
pub struct ModelSource {
    /// A checkpoint (its `.json` metadata file).
    #[arg(long)]
    pub model: Option<PathBuf>,
    /// A randomly initialised network of this config (tiny, mid, small, standard or a .toml file).
    #[arg(long)]
    pub init: Option<String>,
    /// No network: uniform priors and a draw value everywhere (the search plays on the rules alone).
    #[arg(long)]
    pub uniform: bool,
}

/// Options of `xqz selfplay`.
#[derive(Args)]
pub struct SelfPlayArgs {
    #[command(flatten)]
    source: ModelSource,
    /// Games to play.
    #[arg(long)]
    games: u64,
    /// Dataset folder (created if missing; games are appended).
    #[arg(long)]
    out: PathBuf,
    /// Search threads.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Games each thread plays at once (their leaves share one evaluator batch).
    #[arg(long, default_value_t = 32)]
    games_per_thread: usize,
    /// Seed of the run (game i plays with a seed derived from it).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// The opening suite that --opening-share of games start from (an EPD file or a book; see
    /// `xqz coordinator --openings`).
    #[arg(long)]
    openings: Option<PathBuf>,
    #[command(flatten)]
    play: PlaySettings,
    #[command(flatten)]
    device: crate::model::DeviceArg,
}

/// The network a run plays with, and its version, if any.
pub fn load_network(source: &ModelSource, device: &crate::model::DeviceArg) -> Result<Option<(Network, u64)>> {
    if source.uniform {
        return Ok(None);
    }
    let device = device.resolve()?;
    if let Some(path) = &source.model {
        let (net, meta) = crate::model::load(path, device)?;
        return Ok(Some((net, meta.info.model_version)));
    }
    let name = source.init.as_deref().context("one of --model, --init, --uniform")?;
    Ok(Some((Network::new(&ModelConfig::resolve(name)?, device), 0)))
}

/// Parses a positive, finite temperature.
pub fn parse_temperature(text: &str) -> Result<f32, String> {
    match text.parse::<f32>() {
        Ok(t) if t > 0.0 && t.is_finite() => Ok(t),
        _ => Err(format!("expected a positive temperature, got {text:?}")),
    }
}

pub fn run(args: &SelfPlayArgs) -> Result<()> {
    args.play.validate()?;
    anyhow::ensure!(
        args.play.opening_share == 0.0 || args.openings.is_some(),
        "--opening-share {} needs an opening suite: give one with --openings FILE",
        args.play.opening_share
    );
    let config = xqz_mcts::SelfPlayConfig {
        openings: args.openings.as_deref().map(crate::book::load_suite).transpose()?.map(std::sync::Arc::new),
        ..args.play.self_play_config(args.threads, args.games_per_thread, args.seed)
    };
    let network = load_network(&args.source, &args.device)?;
    let bar = ProgressBar::new(args.games);
    bar.set_style(
        ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} games {msg}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    bar.enable_steady_tick(Duration::from_millis(500));
    let start = std::time::Instant::now();
    let (mut plies, mut games) = (0u64, 0u64);
    let progress = |game: &xqz_mcts::SelfPlayGame| {
        games += 1;
        plies += game.game.len() as u64;
        bar.inc(1);
        bar.set_message(format!(
            "{:.1} moves/s, average length {:.1}",
            plies as f64 / start.elapsed().as_secs_f64(),
            plies as f64 / games as f64
        ));
    };
    let worker_id = format!("selfplay-{}", std::process::id());
    let (report, precision) = match network {
        None => {
            let run = LocalSelfPlay { games: args.games, model_version: 0, worker_id };
            (play_into(&args.out, &config, UniformEvaluator, &run, progress)?, None)
        }
        Some((net, version)) => {
            let service = args.device.service(crate::model::SELF_PLAY_PRECISION);
            let precision = service.precision.on(net.device());
            let service = InferenceService::spawn(net, service);
            let run = LocalSelfPlay { games: args.games, model_version: version, worker_id };
            (play_into(&args.out, &config, service.client(), &run, progress)?, Some(precision))
        }
    };
    bar.finish();
    print_report(&report, args, precision);
    Ok(())
}

/// The run's totals; `precision` is the network's, where one played.
fn print_report(report: &LocalReport, args: &SelfPlayArgs, precision: Option<xqz_net::Precision>) {
    let s = &report.stats;
    println!("{}; {} samples written to {}", s, report.samples, args.out.display());
    if let Some(precision) = precision {
        println!("the network's convolutions ran in {precision}");
    }
    println!("average length {:.1} moves", s.moves as f64 / s.games.max(1) as f64);
    if report.resign_checks.0 > 0 {
        println!(
            "resignation check: {} games would have resigned with resigning off, {} of them wrongly",
            report.resign_checks.0, report.resign_checks.1
        );
    }
}
