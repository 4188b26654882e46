//! `xqz`: the one binary of xqzero, with a subcommand per role.

mod bench;
mod bench_ingest;
#[cfg(feature = "torch")]
mod bench_net;
mod bench_output;
#[cfg(feature = "torch")]
mod bench_precision;
mod book;
#[cfg(feature = "torch")]
mod book_grow;
mod coordinator;
mod data;
mod eval;
mod eval_jobs;
#[cfg(feature = "torch")]
mod eval_match;
mod ladder;
mod logs;
#[cfg(feature = "torch")]
mod metrics;
#[cfg(feature = "torch")]
mod model;
#[cfg(feature = "torch")]
mod pipeline;
mod plot;
#[cfg(feature = "torch")]
mod rate;
mod results;
mod roles;
#[cfg(feature = "torch")]
mod run_status;
#[cfg(feature = "torch")]
mod selfplay;
mod settings;
mod simulate_gate;
mod standings;
#[cfg(feature = "torch")]
mod state;
mod status;
#[cfg(feature = "torch")]
mod strength;
mod suite;
#[cfg(feature = "torch")]
mod supervisor;
mod token;
#[cfg(feature = "torch")]
mod train;
#[cfg(feature = "torch")]
mod uci;
#[cfg(feature = "torch")]
mod worker;

use std::process::ExitCode;
use std::time::Instant;

use anyhow::{Context, Result};
use clap::{ArgMatches, CommandFactory, FromArgMatches, Parser, Subcommand};
use xiangqi::game::{Game, GameConfig, Ruleset};
use xiangqi::{Position, START_FEN, divide, perft};

#[derive(Parser)]
#[command(name = "xqz", version, about = "xqzero: AlphaZero-style Xiangqi training pipeline")]
struct Cli {
    /// Log lines on stderr as text or JSON lines (default: the XQZ_LOG_FORMAT variable, else
    /// text); RUST_LOG filters them (default `info`).
    #[arg(long, global = true, value_enum)]
    log_format: Option<logs::LogFormat>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Count the leaves of the legal move tree (move-generator test and benchmark).
    Perft {
        /// Position in FEN (default: the start position).
        #[arg(long, default_value = START_FEN)]
        fen: String,
        /// Depth in plies.
        #[arg(long)]
        depth: u32,
        /// Also print the count below each root move.
        #[arg(long)]
        divide: bool,
    },
    /// Replay a game and print its adjudication as one line of JSON.
    Adjudicate {
        /// Start position in FEN (default: the start position).
        #[arg(long, default_value = START_FEN)]
        fen: String,
        /// The moves in coordinate notation, separated by spaces (`"h2e2 h9g7"`).
        #[arg(long, default_value = "")]
        moves: String,
        /// Repetition rules: chinese2011 (official 2011 rules), chinese1999 (its 1999 edition), wxf or simple.
        #[arg(long, default_value = "chinese2011")]
        ruleset: Ruleset,
        /// Plies without capture that draw the game (default: 120, or 100 under wxf).
        #[arg(long)]
        natural_limit: Option<u32>,
        /// Cap on the game length in plies (a draw when reached).
        #[arg(long)]
        max_plies: Option<u32>,
        /// Material lead in pawns that wins a game ending at a length limit (self-play's rule).
        #[arg(long)]
        material_adjudication: Option<u32>,
        /// A repetition the rules call a draw is lost by the side that completed it (self-play's
        /// rule).
        #[arg(long)]
        repeater_loses: bool,
    },
    /// Self-play datasets: inspect shards, statistics, Parquet and text export.
    Data {
        #[command(subcommand)]
        command: data::DataCommand,
    },
    /// Serve the coordinator: validate and store submitted games, publish models.
    Coordinator(Box<coordinator::CoordinatorArgs>),
    #[cfg(feature = "torch")]
    /// Play self-play games on this machine and append them to a dataset folder.
    Selfplay(selfplay::SelfPlayArgs),
    #[cfg(feature = "torch")]
    /// Play self-play games for a coordinator: download its models, upload the games.
    Worker(worker::WorkerArgs),
    #[cfg(feature = "torch")]
    /// The whole pipeline on this machine: coordinator, workers and trainer on 127.0.0.1.
    Run(pipeline::RunArgs),
    #[cfg(feature = "torch")]
    /// Train on the coordinator's dataset as it grows and publish new models to it.
    Train(train::TrainArgs),
    #[cfg(feature = "torch")]
    /// A run's state: the light state of a stopped run, to resume it anywhere (`xqz run --state`).
    State {
        #[command(subcommand)]
        command: state::StateCommand,
    },
    /// Evaluate checkpoints: matches against each other or external engines, and ladders.
    Eval {
        #[command(subcommand)]
        command: eval::EvalCommand,
    },
    #[cfg(feature = "torch")]
    /// Play as a UCI engine on stdin/stdout (the Pikafish dialect), with a checkpoint.
    Uci(uci::UciArgs),
    #[cfg(feature = "torch")]
    /// Copy a checkpoint's network for shipping: weights only, in half precision.
    Export(model::ExportArgs),
    /// A running coordinator's state at a glance: model, workers, games.
    Status(status::StatusArgs),
    /// Opening books: build one from datasets, probe a position.
    Book {
        #[command(subcommand)]
        command: book::BookCommand,
    },
    /// Benchmarks that print numbers (the network; more in `cargo bench` and `scripts/bench*`).
    Bench {
        #[command(subcommand)]
        command: bench::BenchCommand,
    },
    /// A command of the full build (those that run a network), met in the build without libtorch.
    #[cfg(not(feature = "torch"))]
    #[command(external_subcommand)]
    Other(Vec<String>),
}

fn main() -> ExitCode {
    let matches = Cli::command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    // Which flags were given, not defaulted: settings files yield to those alone.
    let given = matches.subcommand().map(|(_, m)| m.clone()).unwrap_or_default();
    if let Err(err) = logs::init(cli.log_format) {
        eprintln!("error: {err:#}");
        return ExitCode::FAILURE;
    }
    match run(cli.command, &given) {
        Ok(code) => code,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// Runs a command; the exit status is success unless the command's outcome says otherwise
/// (`xqz eval match` with an SPRT).
fn run(command: Command, given: &ArgMatches) -> Result<ExitCode> {
    let done = |outcome: Result<()>| outcome.map(|()| ExitCode::SUCCESS);
    match command {
        Command::Perft { fen, depth, divide: split } => done(run_perft(&fen, depth, split)),
        Command::Adjudicate {
            fen,
            moves,
            ruleset,
            natural_limit,
            max_plies,
            material_adjudication,
            repeater_loses,
        } => {
            let start = Position::from_fen(&fen).with_context(|| format!("invalid FEN {fen:?}"))?;
            let config = GameConfig { ruleset, natural_limit, max_plies, material_adjudication, repeater_loses };
            let mut game = Game::from_position(start, config);
            for text in moves.split_whitespace() {
                game.push_str(text)?;
            }
            // A repetition whose side must vary still has its rounds (23.5): the game goes on, and
            // the ruling it will get if nobody varies is shown.
            match game.pending_ruling() {
                Some(ruling) => println!(r#"{{"status":"pending","ruling":{}}}"#, ruling.to_json()),
                None => println!("{}", game.outcome().to_json()),
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Data { command } => done(data::run(command)),
        Command::Book { command } => done(book::run(command)),
        Command::Bench { command } => done(bench::run(command)),
        #[cfg(feature = "torch")]
        Command::Selfplay(args) => done(selfplay::run(&args)),
        Command::Coordinator(args) => done(coordinator::run(&args, given)),
        #[cfg(feature = "torch")]
        Command::Worker(args) => done(worker::run(args)),
        #[cfg(feature = "torch")]
        Command::Train(args) => done(train::run(&args, given)),
        #[cfg(feature = "torch")]
        Command::Run(args) => done(pipeline::run(&args, given)),
        #[cfg(feature = "torch")]
        Command::State { command } => done(state::run(command)),
        #[cfg(feature = "torch")]
        Command::Uci(args) => done(uci::run(&args)),
        #[cfg(feature = "torch")]
        Command::Export(args) => done(model::export(&args)),
        Command::Status(args) => done(status::run(&args)),
        Command::Eval { command } => eval::run(command),
        #[cfg(not(feature = "torch"))]
        Command::Other(words) => Err(without_torch(&words[0])),
    }
}

/// The commands of the full build that this build, without libtorch, leaves out.
#[cfg(not(feature = "torch"))]
const TORCH_COMMANDS: [&str; 11] = [
    "selfplay",
    "worker",
    "run",
    "train",
    "state",
    "uci",
    "export",
    "eval match",
    "book grow",
    "bench net",
    "bench selfplay",
];

/// The error for `command`, a word that names no command of this build: a command of the full
/// build is named as such, anything else is unknown.
#[cfg(not(feature = "torch"))]
pub fn without_torch(command: &str) -> anyhow::Error {
    if TORCH_COMMANDS.contains(&command) {
        anyhow::anyhow!(
            "`xqz {command}` runs a network, and this xqz is built without libtorch (cargo feature \
             `torch` off, as for the coordinator's image); use the full build"
        )
    } else {
        anyhow::anyhow!("unknown command `{command}`; `xqz --help` lists them")
    }
}

fn run_perft(fen: &str, depth: u32, split: bool) -> Result<()> {
    let pos = Position::from_fen(fen).with_context(|| format!("invalid FEN {fen:?}"))?;
    let start = Instant::now();
    let nodes = if split && depth > 0 {
        let rows = divide(&pos, depth);
        for (mv, n) in &rows {
            println!("{mv} {n}");
        }
        rows.iter().map(|(_, n)| n).sum()
    } else {
        perft(&pos, depth)
    };
    let secs = start.elapsed().as_secs_f64();
    println!("nodes {nodes}");
    println!("nps {}", (nodes as f64 / secs.max(1e-9)) as u64);
    Ok(())
}

/// Parses a number of seconds, 0 or more.
pub(crate) fn parse_seconds(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(s) if s >= 0.0 && s.is_finite() && s < 1e9 => Ok(s),
        _ => Err(format!("expected a number of seconds, 0 or more, got {text:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Flag groups flattened into one command must not share a name (clap checks this only
    /// when a command is built, so every subcommand is built here).
    #[test]
    fn the_command_line_is_well_formed() {
        Cli::command().debug_assert();
    }
}
