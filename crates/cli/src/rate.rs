//! `xqz eval rate`: a player's place on the ladder. It plays a first rung, estimates, then plays
//! the two rungs around the estimate, and rates the player from all its games against rungs in
//! the folder with the rungs' ratings held at the ladder table's (`models/ladder.jsonl`, built in).

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use xqz_arena::ladder::{self, Against, RUNGS, Rating, Rung};
use xqz_arena::records::{pairings, read_games};

use crate::eval_match::{MatchArgs, PlayArgs};

/// The ladder table built in: `xqz eval ladder --json` over the rungs' round robin.
const LADDER: &str = include_str!("../../../models/ladder.jsonl");

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

/// One rung's rating in the table.
#[derive(serde::Deserialize)]
struct Row {
    player: String,
    elo: Option<f64>,
    stderr: Option<f64>,
}

/// The rungs of a ladder table with their ratings, weakest first.
fn read_table(text: &str, source: &str) -> Result<Vec<(&'static Rung, f64, f64)>> {
    let mut rated = BTreeMap::new();
    for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let row: Row = serde_json::from_str(line).with_context(|| format!("{source}, line {}", n + 1))?;
        if let (Some(rung), Some(elo), Some(stderr)) = (Rung::find(&row.player), row.elo, row.stderr) {
            rated.insert(rung.name, (rung, elo, stderr));
        }
    }
    let mut rungs: Vec<(&'static Rung, f64, f64)> = RUNGS.iter().filter_map(|r| rated.remove(r.name)).collect();
    rungs.sort_by(|x, y| x.1.total_cmp(&y.1));
    anyhow::ensure!(rungs.len() >= 2, "{source} rates fewer than two rungs");
    Ok(rungs)
}

/// Rates `--player`.
pub fn run(args: &RateArgs) -> Result<()> {
    anyhow::ensure!(args.pairs >= 2, "--pairs must be at least 2");
    let text = match &args.ladder {
        Some(path) => std::fs::read_to_string(path).with_context(|| format!("read {}", path.display()))?,
        None => LADDER.to_string(),
    };
    let source = args.ladder.as_ref().map_or("the built-in ladder table".to_string(), |p| p.display().to_string());
    let rungs = read_table(&text, &source)?;
    let first = rungs.iter().find(|r| r.0.name == args.first).with_context(|| {
        let names: Vec<&str> = rungs.iter().map(|r| r.0.name).collect();
        format!("--first {:?} is not a rated rung; they are {}", args.first, names.join(", "))
    })?;
    let mut name = play(args, first.0, args.pairs / 2)?;
    let estimate = standing(args, &name, &rungs)?.0.context("no games against rungs")?;
    let below = rungs.iter().rev().find(|r| r.1 <= estimate.elo);
    let above = rungs.iter().find(|r| r.1 > estimate.elo);
    for rung in below.into_iter().chain(above) {
        name = play(args, rung.0, args.pairs)?;
    }
    let (rating, games, opponents) = standing(args, &name, &rungs)?;
    let rating = rating.context("no games against rungs")?;
    let (lower, upper) = (rating.elo - 1.96 * rating.stderr, rating.elo + 1.96 * rating.stderr);
    let between: Vec<&str> = [below, above].into_iter().flatten().map(|r| r.0.name).collect();
    if args.json {
        let json = serde_json::json!({
            "player": name, "elo": rating.elo, "stderr": rating.stderr, "lower": lower, "upper": upper,
            "games": games, "opponents": opponents, "between": between,
        });
        println!("{json}");
    } else {
        let at = |r: Option<&(&Rung, f64, f64)>| r.map_or("-".to_string(), |r| format!("{} ({:+.0})", r.0.name, r.1));
        println!(
            "{name}: ladder Elo {:+.0} ± {:.0} (95%: {lower:+.0} to {upper:+.0}; R0 = 0), from {games} games \
             against {}; between {} and {}",
            rating.elo,
            1.96 * rating.stderr,
            opponents.join(", "),
            at(below),
            at(above)
        );
    }
    Ok(())
}

/// Plays `pairs` pairs (those not in `--out` yet) of the player against `rung`; the player's
/// name in the records.
fn play(args: &RateArgs, rung: &Rung, pairs: u32) -> Result<String> {
    let spec = MatchArgs {
        a: args.player.clone(),
        b: format!("rung:{}", rung.name),
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

/// The player's rating from its games in `--out` against the table's rungs, with the games
/// counted and the rungs they were against.
fn standing(args: &RateArgs, name: &str, rungs: &[(&Rung, f64, f64)]) -> Result<(Option<Rating>, u32, Vec<String>)> {
    let mut against = Vec::new();
    let mut opponents = Vec::new();
    for pairing in pairings(&read_games(&args.out)?) {
        let pairing = if pairing.b == name { pairing.reversed() } else { pairing };
        let Some(&(rung, elo, stderr)) = rungs.iter().find(|r| r.0.name == pairing.b) else { continue };
        if pairing.a != name {
            continue;
        }
        let g = pairing.games;
        against.push(Against { elo, stderr, wins: g.wins, draws: g.draws, losses: g.losses });
        opponents.push(rung.name.to_string());
    }
    let games = against.iter().map(|g| g.wins + g.draws + g.losses).sum();
    Ok((ladder::rate(&against), games, opponents))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_table_rates_the_rungs_in_order_of_strength() {
        let rungs = read_table(LADDER, "the table").unwrap();
        assert!(rungs.len() >= 8, "{} rungs rated", rungs.len());
        let r0 = rungs.iter().find(|r| r.0.name == "R0").unwrap();
        assert_eq!(r0.1, 0.0, "R0 anchors the scale");
        let elo = |name| rungs.iter().find(|r| r.0.name == name).map(|r| r.1);
        assert!(elo("R-5") < elo("R1") && elo("R1") < elo("R5") && elo("R5") < elo("N100k"));
    }

    #[test]
    fn a_table_without_two_rated_rungs_is_refused() {
        let one = r#"{"player":"R0","elo":0.0,"stderr":0.0}"#;
        assert!(read_table(one, "t").unwrap_err().to_string().contains("fewer than two rungs"));
        let bad = "{\"player\": 3}";
        assert!(read_table(bad, "t").unwrap_err().to_string().contains("t, line 1"));
    }
}
