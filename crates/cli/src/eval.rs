//! `xqz eval`: matches (`eval_match.rs`, the full build's), a folder's games pooled by pairing
//! (`results.rs`), a ladder that rates every player of a folder's games jointly, and a run
//! folder's plots.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, Subcommand};

/// `xqz eval` subcommands.
#[derive(Subcommand)]
pub enum EvalCommand {
    /// Play a match between two players and report W/D/L, pair counts, Elo, LOS and SPRT.
    #[cfg(feature = "torch")]
    Match(Box<crate::eval_match::MatchArgs>),
    /// A player's place on the ladder of Fairy-Stockfish rungs (`models/ladder.jsonl`): a first
    /// rung, then the two around the estimate, rated with the rungs held at the table's Elo.
    #[cfg(feature = "torch")]
    Rate(Box<crate::rate::RateArgs>),
    /// Rate every player in a folder's match games jointly (Bradley-Terry) and plot Elo
    /// against training steps.
    Ladder(LadderArgs),
    /// Each player of a folder's games against ladder rungs placed on the ladder from those
    /// games (the rungs held at the table's Elo, as `rate` does), without playing; with
    /// `--hours`, plotted against hours of training.
    Standings(crate::standings::StandingsArgs),
    /// Every pairing of a folder's match games pooled over its matches (a match played in
    /// parts scores as one): W/D/L, pair counts, Elo with its 95% interval, LOS.
    Results {
        /// The folder whose `eval/games.arrow` holds the games.
        #[arg(long)]
        run: PathBuf,
        /// One JSON object per pairing, one per line (the fields of `xqz eval match --json` up
        /// to `sprt`, which is null, and `matches`), instead of the lines.
        #[arg(long)]
        json: bool,
    },
    /// How often the coordinator's gate (`--gate`) passes a model of a given true Elo and how many
    /// pairs its match plays, simulated over the pentanomial shape of the project's matches.
    SimulateGate(crate::simulate_gate::SimulateGateArgs),
    /// Queue a match for a coordinator's workers to play (`xqz worker --eval-share`): its games go
    /// to the coordinator's match table, its SPRT decides there; the trainer's token if one is set.
    Submit(Box<crate::eval_jobs::SubmitArgs>),
    /// A coordinator's matches with their standing, newest first.
    Jobs {
        #[command(flatten)]
        coordinator: crate::eval_jobs::CoordinatorArgs,
        /// One JSON object per match, one per line (fields in docs/CLI.md).
        #[arg(long)]
        json: bool,
    },
    /// Build a balanced opening suite over the ECCO families for anchor matches: lines walked
    /// by an engine's near-best moves, kept where its deeper search calls them even.
    Suite(crate::suite::SuiteArgs),
    /// Plot a run folder's curves now, as `xqz run` does when it stops: `losses.svg` and
    /// `strength.svg` (Elo against the anchor over hours).
    Plot {
        /// The run folder (`runs/NAME`).
        #[arg(long)]
        run: PathBuf,
    },
    /// An eval command of the full build, met in the build without libtorch.
    #[cfg(not(feature = "torch"))]
    #[command(external_subcommand)]
    Other(Vec<String>),
}

/// Options of `xqz eval ladder`.
#[derive(Args)]
pub struct LadderArgs {
    /// The folder whose `eval/games.arrow` holds the games (in a run folder, also its strength
    /// matches).
    #[arg(long)]
    run: PathBuf,
    /// Virtual draws added between each pair of players that met, keeping perfect scores finite.
    #[arg(long, default_value_t = 1.0)]
    prior_draws: f64,
    /// The player rated 0, by its name in the table (e.g. `material@64`, or an engine with its
    /// settings); by default the least trained checkpoint.
    #[arg(long)]
    anchor: Option<String>,
    /// One JSON object per player, one per line (`player`, `steps`, `elo`, `stderr`, `games`,
    /// `anchor`), instead of the table.
    #[arg(long)]
    json: bool,
}

/// Runs an `xqz eval` command; the exit status of a match with an SPRT is its decision.
pub fn run(command: EvalCommand) -> Result<ExitCode> {
    match command {
        #[cfg(feature = "torch")]
        EvalCommand::Match(args) => crate::eval_match::run(&args),
        #[cfg(feature = "torch")]
        EvalCommand::Rate(args) => {
            crate::rate::run(&args)?;
            Ok(ExitCode::SUCCESS)
        }
        EvalCommand::Plot { run } => {
            let done = crate::plot::plot_run(&xqz_run_folder::RunFolder::new(&run));
            anyhow::ensure!(!done.is_empty(), "{} has neither trainer/metrics.csv nor strength.csv", run.display());
            for line in done {
                println!("{line}");
            }
            Ok(ExitCode::SUCCESS)
        }
        EvalCommand::SimulateGate(args) => {
            crate::simulate_gate::run(&args)?;
            Ok(ExitCode::SUCCESS)
        }
        EvalCommand::Submit(args) => crate::eval_jobs::submit(&args),
        EvalCommand::Jobs { coordinator, json } => {
            crate::eval_jobs::jobs(&coordinator, json)?;
            Ok(ExitCode::SUCCESS)
        }
        EvalCommand::Suite(args) => {
            crate::suite::run(&args)?;
            Ok(ExitCode::SUCCESS)
        }
        EvalCommand::Results { run, json } => {
            crate::results::pooled(&run, json)?;
            Ok(ExitCode::SUCCESS)
        }
        EvalCommand::Standings(args) => {
            crate::standings::run(&args)?;
            Ok(ExitCode::SUCCESS)
        }
        EvalCommand::Ladder(args) => {
            crate::ladder::run(&args.run, args.prior_draws, args.anchor.as_deref(), args.json)?;
            Ok(ExitCode::SUCCESS)
        }
        #[cfg(not(feature = "torch"))]
        EvalCommand::Other(words) => Err(crate::without_torch(&format!("eval {}", words[0]))),
    }
}
