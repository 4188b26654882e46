//! Places on the ladder from games already played: the ladder table (`models/ladder.jsonl`,
//! built in), a player's rating from its games against rungs with the rungs held at the table's
//! ratings, and `xqz eval standings`, which rates every player of a folder so, without playing,
//! and plots them against hours of training.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Args;
use xqz_arena::ladder::{self, Against, RUNGS, Rating, Rung};
use xqz_arena::records::{Pairing, pairings, read_games};

/// The ladder table built in: `xqz eval ladder --json` over the rungs' round robin.
const LADDER: &str = include_str!("../../../models/ladder.jsonl");

/// A rung with its rating in the table: Elo and standard error.
pub type RatedRung = (&'static Rung, f64, f64);

/// One rung's rating in the table.
#[derive(serde::Deserialize)]
struct Row {
    player: String,
    elo: Option<f64>,
    stderr: Option<f64>,
}

/// The rungs of the ladder table at `path` (the built-in one if `None`) with their ratings,
/// weakest first.
pub fn table(path: Option<&Path>) -> Result<Vec<RatedRung>> {
    match path {
        Some(path) => {
            let text = std::fs::read_to_string(path).with_context(|| format!("read {}", path.display()))?;
            read_table(&text, &path.display().to_string())
        }
        None => read_table(LADDER, "the built-in ladder table"),
    }
}

fn read_table(text: &str, source: &str) -> Result<Vec<RatedRung>> {
    let mut rated = BTreeMap::new();
    for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let row: Row = serde_json::from_str(line).with_context(|| format!("{source}, line {}", n + 1))?;
        if let (Some(rung), Some(elo), Some(stderr)) = (Rung::find(&row.player), row.elo, row.stderr) {
            rated.insert(rung.name, (rung, elo, stderr));
        }
    }
    let mut rungs: Vec<RatedRung> = RUNGS.iter().filter_map(|r| rated.remove(r.name)).collect();
    rungs.sort_by(|x, y| x.1.total_cmp(&y.1));
    anyhow::ensure!(rungs.len() >= 2, "{source} rates fewer than two rungs");
    Ok(rungs)
}

/// A player's place on the ladder from its games against rungs.
#[derive(Debug)]
pub struct Standing {
    /// The player's name in the records.
    pub player: String,
    /// Its ladder Elo (R0 = 0) and standard error.
    pub rating: Rating,
    /// Its games against rungs.
    pub games: u32,
    /// The rungs it played.
    pub opponents: Vec<String>,
}

impl Standing {
    /// The 95% interval of the rating.
    pub fn interval(&self) -> (f64, f64) {
        (self.rating.elo - 1.96 * self.rating.stderr, self.rating.elo + 1.96 * self.rating.stderr)
    }

    /// The rating as one JSON object: `player`, `elo`, `stderr`, `lower`, `upper`, `games`,
    /// `opponents`.
    pub fn json(&self) -> serde_json::Value {
        let (lower, upper) = self.interval();
        serde_json::json!({
            "player": self.player, "elo": self.rating.elo, "stderr": self.rating.stderr, "lower": lower,
            "upper": upper, "games": self.games, "opponents": self.opponents,
        })
    }
}

impl std::fmt::Display for Standing {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (lower, upper) = self.interval();
        write!(
            f,
            "{}: ladder Elo {:+.0} ± {:.0} (95%: {lower:+.0} to {upper:+.0}; R0 = 0), from {} games against {}",
            self.player,
            self.rating.elo,
            1.96 * self.rating.stderr,
            self.games,
            self.opponents.join(", ")
        )
    }
}

/// `name`'s place on the ladder from its games in `pairings` against the rungs of `rungs`
/// (`None`: it played none).
pub fn standing(pairings: &[Pairing], name: &str, rungs: &[RatedRung]) -> Option<Standing> {
    let mut against = Vec::new();
    let mut opponents = Vec::new();
    for pairing in pairings {
        let pairing = if pairing.b == name { pairing.reversed() } else { pairing.clone() };
        let Some(&(rung, elo, stderr)) = rungs.iter().find(|r| r.0.name == pairing.b) else { continue };
        if pairing.a != name {
            continue;
        }
        let g = pairing.games;
        against.push(Against { elo, stderr, wins: g.wins, draws: g.draws, losses: g.losses });
        opponents.push(rung.name.to_string());
    }
    let games = against.iter().map(|g| g.wins + g.draws + g.losses).sum();
    Some(Standing { player: name.to_string(), rating: ladder::rate(&against)?, games, opponents })
}

/// Options of `xqz eval standings`.
#[derive(Args)]
pub struct StandingsArgs {
    /// The folder whose `eval/games.arrow` holds the games.
    #[arg(long)]
    run: PathBuf,
    /// A ladder table (JSON lines of `xqz eval ladder --json`); default: the table built in.
    #[arg(long)]
    ladder: Option<PathBuf>,
    /// A CSV file of `hours,player` rows, the hours of training behind each player named:
    /// their places are plotted against those hours to `ladder-hours.svg` in the folder.
    #[arg(long)]
    hours: Option<PathBuf>,
    /// Another folder of rated checkpoints (its `eval/games.arrow` and `hours.csv`), an earlier
    /// run's: its curve is drawn beside this one's in the plot, each named by its folder.
    #[arg(long, requires = "hours")]
    before: Option<PathBuf>,
    /// One JSON object per player, one per line (the fields of `xqz eval rate --json` but
    /// `between`).
    #[arg(long)]
    json: bool,
}

/// Rates every player of `--run` that played rungs there, least trained first, and plots those
/// `--hours` names.
pub fn run(args: &StandingsArgs) -> Result<()> {
    let rungs = table(args.ladder.as_deref())?;
    let standings = folder_standings(&args.run, &rungs)?;
    for standing in &standings {
        if args.json {
            println!("{}", standing.json());
        } else {
            println!("{standing}");
        }
    }
    if let Some(path) = &args.hours {
        let mut curves = vec![(folder_name(&args.run), hours(path, &standings)?)];
        if let Some(before) = &args.before {
            let theirs = folder_standings(before, &rungs)?;
            curves.push((folder_name(before), hours(&before.join("hours.csv"), &theirs)?));
        }
        let plot = xqz_run_folder::RunFolder::new(&args.run).ladder_hours_svg();
        let lines: Vec<(&str, f64)> = rungs.iter().map(|r| (r.0.name, r.1)).collect();
        crate::plot::ladder_hours(&curves, &lines, &plot)?;
        eprintln!("plotted in {}", plot.display());
    }
    Ok(())
}

/// Every player of the folder `run` that played rungs there, placed on the ladder, least
/// trained first.
fn folder_standings(run: &Path, rungs: &[RatedRung]) -> Result<Vec<Standing>> {
    let pairings = pairings(&read_games(run)?);
    let mut players: Vec<(Option<u64>, &str)> = pairings
        .iter()
        .flat_map(|p| [(p.a_steps, p.a.as_str()), (p.b_steps, p.b.as_str())])
        .filter(|(_, name)| Rung::find(name).is_none())
        .collect();
    players.sort_by(|x, y| (x.0.is_none(), x.0, x.1).cmp(&(y.0.is_none(), y.0, y.1)));
    players.dedup_by(|x, y| x.1 == y.1);
    let standings: Vec<Standing> = players.iter().filter_map(|(_, name)| standing(&pairings, name, rungs)).collect();
    anyhow::ensure!(!standings.is_empty(), "no games against ladder rungs in {} (eval/games.arrow)", run.display());
    Ok(standings)
}

/// A folder's last component, which names its curve in the plot.
fn folder_name(run: &Path) -> String {
    run.file_name().map_or_else(|| run.display().to_string(), |n| n.to_string_lossy().into_owned())
}

/// The (hours, Elo, standard error) of each player that the `hours,player` CSV at `path` names.
fn hours(path: &Path, standings: &[Standing]) -> Result<Vec<(f64, f64, f64)>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("read {}", path.display()))?;
    let mut points = Vec::new();
    for (n, line) in text.lines().enumerate().skip(1).filter(|(_, l)| !l.trim().is_empty()) {
        let at = || format!("{}, line {}", path.display(), n + 1);
        let (hours, player) = line.split_once(',').with_context(|| format!("{}: expected hours,player", at()))?;
        let hours: f64 = hours
            .trim()
            .parse()
            .ok()
            .filter(|h: &f64| h.is_finite() && *h >= 0.0)
            .with_context(|| format!("{}: hours {hours:?} is not a number of hours, 0 or more", at()))?;
        let standing = standings
            .iter()
            .find(|s| s.player == player.trim())
            .with_context(|| format!("{}: {player:?} played no rung in the folder", at()))?;
        points.push((hours, standing.rating.elo, standing.rating.stderr));
    }
    anyhow::ensure!(!points.is_empty(), "{} names no player (a header line, then hours,player rows)", path.display());
    Ok(points)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_table_rates_the_rungs_in_order_of_strength() {
        let rungs = table(None).unwrap();
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

    #[test]
    fn a_player_is_placed_by_its_games_against_rungs_alone_and_the_hours_file_is_checked() {
        let game = |a: &str, b: &str, a_score: f64| xqz_arena::records::GameRow {
            match_id: format!("{a}-{b}"),
            a: a.to_string(),
            b: b.to_string(),
            a_steps: Some(100),
            b_steps: None,
            pair: 0,
            opening: String::new(),
            a_score,
            reason: "checkmate".to_string(),
        };
        let rungs = table(None).unwrap();
        let r1 = rungs.iter().find(|r| r.0.name == "R1").unwrap().1;
        // Even against R1, and a won game against a non-rung that must not count.
        let games = pairings(&[game("ckpt", "R1", 1.0), game("ckpt", "R1", 0.0), game("ckpt", "other", 1.0)]);
        let standing = standing(&games, "ckpt", &rungs).unwrap();
        assert!((standing.rating.elo - r1).abs() < 1e-6, "{standing}");
        assert_eq!((standing.games, standing.opponents.clone()), (2, vec!["R1".to_string()]));
        assert!(self::standing(&games, "other", &rungs).is_none(), "no games against rungs");
        let dir = tempfile::tempdir().unwrap();
        let file = |text: &str| {
            let path = dir.path().join("hours.csv");
            std::fs::write(&path, text).unwrap();
            path
        };
        let standings = [standing];
        let points = hours(&file("hours,player\n2,ckpt\n"), &standings).unwrap();
        assert_eq!(points.len(), 1);
        assert_eq!(points[0].0, 2.0);
        let error = |text: &str| hours(&file(text), &standings).unwrap_err().to_string();
        assert!(error("hours,player\n2,nobody\n").contains("\"nobody\" played no rung"));
        assert!(error("hours,player\n-1,ckpt\n").contains("line 2: hours \"-1\""));
        assert!(error("hours,player\n").contains("names no player"));
    }
}
