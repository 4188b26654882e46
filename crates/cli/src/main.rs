//! `xqz`: the one binary of xqzero, with a subcommand per role.

use std::time::Instant;

use anyhow::{Context, Result};
use clap::{Parser, Subcommand};
use xiangqi::{Position, START_FEN, divide, perft};

#[derive(Parser)]
#[command(name = "xqz", version, about = "xqzero: AlphaZero-style Xiangqi training pipeline")]
struct Cli {
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
}

fn main() -> Result<()> {
    match Cli::parse().command {
        Command::Perft { fen, depth, divide: split } => run_perft(&fen, depth, split),
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
