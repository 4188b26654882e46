//! `xqz eval rate`: a player's place on the ladder. It plays a first rung, estimates, then plays
//! the two rungs around the estimate, and rates the player from all its games against rungs in
//! the folder with the rungs' ratings held at the ladder table's (`models/ladder.jsonl`, built in).

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use xqz_arena::ladder::Rung;
use xqz_arena::records::{pairings, read_games};

use crate::eval_match::{MatchArgs, PlayArgs};
use crate::standings::{RatedRung, Standing, standing, table};

/// Options of `xqz eval rate`.
#[derive(Args)]
pub struct RateArgs {
    /// The player to rate, as `--a` of `xqz eval match` (a checkpoint, `shipped@800`, ...).
    #[arg(long)]
    player: String,
    /// Pairs of games against each of the two rungs around the estimate (against the first
    /// rung, half as many first).
    #[arg(long, default_value_t = 50)]
    pairs: u32,
    /// The rung played first.
    #[arg(long, default_value = "R2")]
    first: String,
    /// A ladder table (JSON lines of `xqz eval ladder --json`: `player`, `elo`, `stderr`);
    /// default: the table built in.
    #[arg(long)]
    ladder: Option<PathBuf>,
    #[command(flatten)]
    play: PlayArgs,
    /// Folder for the records (`eval/games.arrow` and `eval/games.pgn`); games already there
    /// between the player and rungs count, and matches go on from the pairs they hold.
    #[arg(long, default_value = "runs/rate")]
    out: PathBuf,
    /// Print the rating as one JSON object (`player`, `elo`, `stderr`, `lower`, `upper`,
    /// `games`, `between`).
    #[arg(long)]
    json: bool,
}

/// Rates `--player`.
pub fn run(args: &RateArgs) -> Result<()> {
    anyhow::ensure!(args.pairs >= 2, "--pairs must be at least 2");
    let rungs = table(args.ladder.as_deref())?;
    let first = rungs.iter().find(|r| r.0.name == args.first).with_context(|| {
        let names: Vec<&str> = rungs.iter().map(|r| r.0.name).collect();
        format!("--first {:?} is not a rated rung; they are {}", args.first, names.join(", "))
    })?;
    let mut name = play(args, first.0, args.pairs / 2)?;
    let estimate = placed(args, &name, &rungs)?.rating;
    let below = rungs.iter().rev().find(|r| r.1 <= estimate.elo);
    let above = rungs.iter().find(|r| r.1 > estimate.elo);
    for rung in below.into_iter().chain(above) {
        name = play(args, rung.0, args.pairs)?;
    }
    let standing = placed(args, &name, &rungs)?;
    let between: Vec<&str> = [below, above].into_iter().flatten().map(|r| r.0.name).collect();
    if args.json {
        let mut json = standing.json();
        json["between"] = serde_json::json!(between);
        println!("{json}");
    } else {
        let at = |r: Option<&RatedRung>| r.map_or("-".to_string(), |r| format!("{} ({:+.0})", r.0.name, r.1));
        println!("{standing}; between {} and {}", at(below), at(above));
    }
    Ok(())
}

/// Plays `pairs` pairs (those not in `--out` yet) of the player against `rung`; the player's
/// name in the records.
fn play(args: &RateArgs, rung: &Rung, pairs: u32) -> Result<String> {
    let spec = MatchArgs {
        a: args.player.clone(),
        b: format!("rung:{}", rung.name),
        a_precision: None,
        b_precision: None,
        pairs,
        resume: true,
        sprt: None,
        play: args.play.clone(),
        out: args.out.clone(),
        json: false,
        quiet: args.json,
    };
    Ok(crate::eval_match::play(&spec)?.a)
}

/// The player's place from its games in `--out` against the table's rungs.
fn placed(args: &RateArgs, name: &str, rungs: &[RatedRung]) -> Result<Standing> {
    standing(&pairings(&read_games(&args.out)?), name, rungs).context("no games against rungs")
}
