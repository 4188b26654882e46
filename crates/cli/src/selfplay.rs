//! `xqz selfplay`: local self-play games into a dataset folder.

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use indicatif::{ProgressBar, ProgressStyle};
use xiangqi::game::{GameConfig, Ruleset};
use xqz_mcts::{PolicyTarget, ResignConfig, SearchConfig, SelfPlayConfig, UniformEvaluator};
use xqz_net::service::{InferenceService, ServiceConfig};
use xqz_net::{ModelConfig, Network, checkpoint, parse_device};
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

/// Self-play's own rules, which evaluation matches do not use: adjudications that end games the
/// rules would draw, and the policy target; and its mate search. Shared by `selfplay`,
/// `coordinator` and `run`.
#[derive(Args, Clone, Debug, Default)]
pub struct SelfPlayRules {
    /// Material lead in pawns that wins a self-play game reaching the natural move limit or
    /// --max-plies (0: such games are draws, as under the rules).
    #[arg(long, default_value_t = 0)]
    pub material_adjudication: u32,
    /// A self-play repetition the rules call a draw is lost by the side that completed it, so
    /// that neither side learns to shuffle (evaluation matches keep the rules' draws).
    #[arg(long)]
    pub repeater_loses: bool,
    /// What full searches record as the policy target: the visit fractions, Gumbel MuZero's
    /// completed-Q policy (the priors shifted by the searched values), or the softmax of the
    /// searched values alone (q-softmax).
    #[arg(long, value_enum, default_value_t = PolicyTargetArg::Visits)]
    pub policy_target: PolicyTargetArg,
    #[command(flatten)]
    pub mate_search: MateSearch,
}

impl SelfPlayRules {
    /// The same rules as command-line flags, for a child process.
    pub fn to_args(&self) -> Vec<String> {
        let mut args = vec![
            "--material-adjudication".to_string(),
            self.material_adjudication.to_string(),
            "--mate-moves".to_string(),
            self.mate_search.mate_moves.to_string(),
            "--policy-target".to_string(),
            self.policy_target.to_possible_value().expect("no variant is skipped").get_name().to_string(),
        ];
        if self.repeater_loses {
            args.push("--repeater-loses".into());
        }
        args
    }
}

/// [`PolicyTarget`] as a command-line value.
#[derive(ValueEnum, Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum PolicyTargetArg {
    /// The visit fractions.
    #[default]
    Visits,
    /// Gumbel MuZero's completed-Q policy.
    CompletedQ,
    /// The softmax of the searched values alone.
    QSoftmax,
}

impl From<PolicyTargetArg> for PolicyTarget {
    fn from(arg: PolicyTargetArg) -> PolicyTarget {
        match arg {
            PolicyTargetArg::Visits => PolicyTarget::Visits,
            PolicyTargetArg::CompletedQ => PolicyTarget::CompletedQ,
            PolicyTargetArg::QSoftmax => PolicyTarget::QSoftmax,
        }
    }
}

/// Where the network comes from.
#[derive(Args)]
#[group(required = true, multiple = false)]
pub struct ModelSource {
    /// A checkpoint (its `.json` metadata file).
    #[arg(long)]
    pub model: Option<PathBuf>,
    /// A randomly initialised network of this config (tiny, small, standard or a .toml file).
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
    /// Playouts of a full search.
    #[arg(long, default_value_t = 200)]
    playouts: u32,
    /// Playouts of a cheap search (playout cap randomization).
    #[arg(long, default_value_t = 40)]
    cheap_playouts: u32,
    /// Move temperature after the opening plies (0: the most visited move).
    #[arg(long, default_value_t = xqz_mcts::SelfPlayConfig::default().late_temperature)]
    late_temperature: f32,
    /// Softmax temperature of the network's priors at the root of full self-play searches (above
    /// 1 flattens them against the policy's collapse with few playouts).
    #[arg(long, default_value_t = xqz_mcts::SelfPlayConfig::default().root_policy_temperature, value_parser = crate::selfplay::parse_temperature)]
    root_policy_temperature: f32,
    /// Fraction of moves with a full search (1 turns playout cap randomization off).
    #[arg(long, default_value_t = 0.25)]
    full_fraction: f64,
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
    /// Length cap in plies (a draw when reached; 0: no cap).
    #[arg(long, default_value_t = 300)]
    max_plies: u32,
    /// Repetition rules: chinese2011, wxf or simple.
    #[arg(long, default_value = "chinese2011")]
    ruleset: Ruleset,
    #[command(flatten)]
    rules: SelfPlayRules,
    /// Play every game to its end.
    #[arg(long)]
    no_resign: bool,
    /// Device of the network: cpu, cuda, cuda:N or auto.
    #[arg(long, default_value = "auto")]
    device: String,
}

/// The network a run plays with, and its version, if any.
pub fn load_network(source: &ModelSource, device: &str) -> Result<Option<(Network, u64)>> {
    if source.uniform {
        return Ok(None);
    }
    let device = parse_device(device)?;
    if let Some(path) = &source.model {
        let (net, meta) = checkpoint::load(path, device, None)?;
        return Ok(Some((net, meta.info.model_version)));
    }
    let name = source.init.as_deref().context("one of --model, --init, --uniform")?;
    Ok(Some((Network::new(&ModelConfig::resolve(name)?, device), 0)))
}

impl SelfPlayArgs {
    fn config(&self) -> SelfPlayConfig {
        SelfPlayConfig {
            playouts: self.playouts,
            cheap_playouts: self.cheap_playouts,
            late_temperature: self.late_temperature,
            root_policy_temperature: self.root_policy_temperature,
            policy_target: self.rules.policy_target.into(),
            search: SearchConfig { mate_moves: self.rules.mate_search.mate_moves, ..SearchConfig::default() },
            full_search_probability: self.full_fraction,
            threads: self.threads,
            games_per_thread: self.games_per_thread,
            seed: self.seed,
            resign: (!self.no_resign).then(ResignConfig::default),
            game: GameConfig::self_play(
                self.ruleset,
                self.max_plies,
                self.rules.material_adjudication,
                self.rules.repeater_loses,
            ),
            ..SelfPlayConfig::default()
        }
    }
}

/// Parses a positive, finite temperature.
pub fn parse_temperature(text: &str) -> Result<f32, String> {
    match text.parse::<f32>() {
        Ok(t) if t > 0.0 && t.is_finite() => Ok(t),
        _ => Err(format!("expected a positive temperature, got {text:?}")),
    }
}

pub fn run(args: &SelfPlayArgs) -> Result<()> {
    anyhow::ensure!(args.playouts > 0 && args.cheap_playouts > 0, "playouts must be positive");
    anyhow::ensure!((0.0..=1.0).contains(&args.full_fraction), "--full-fraction must lie in [0, 1]");
    let config = args.config();
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
    let report = match network {
        None => {
            let run = LocalSelfPlay { games: args.games, model_version: 0, worker_id };
            play_into(&args.out, &config, UniformEvaluator, &run, progress)?
        }
        Some((net, version)) => {
            let service = InferenceService::spawn(net, ServiceConfig::default());
            let run = LocalSelfPlay { games: args.games, model_version: version, worker_id };
            play_into(&args.out, &config, service.client(), &run, progress)?
        }
    };
    bar.finish();
    print_report(&report, args);
    Ok(())
}

fn print_report(report: &LocalReport, args: &SelfPlayArgs) {
    let s = &report.stats;
    println!("{}; {} samples written to {}", s, report.samples, args.out.display());
    println!("average length {:.1} moves", s.moves as f64 / s.games.max(1) as f64);
    if report.resign_checks.0 > 0 {
        println!(
            "resignation check: {} games would have resigned with resigning off, {} of them wrongly",
            report.resign_checks.0, report.resign_checks.1
        );
    }
}
