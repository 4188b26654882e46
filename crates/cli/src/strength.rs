//! Strength over time for `xqz run`: every newly published model plays a short match (paired
//! colours, fixed playouts, the rules' draws, 300 plies at most) against the previous one and the
//! first one. The matches are played and recorded as `xqz eval match` plays and records its own
//! (one runner, one table: the run folder's `eval/games.arrow`, models named `vN`, v0 the random
//! network), so `xqz eval ladder --run` rates them with every other evaluation of the run; the
//! per-match summary in `strength.csv` (plotted by `plot::strength`, and the tracker's note of
//! what it has measured) takes its Elo from the same paired statistics as `xqz eval match`.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::Result;
use xqz_arena::MatchConfig;
use xqz_arena::player::{Player, SearchPlayer};
use xqz_arena::records::MatchLog;
use xqz_arena::tournament::MatchReport;
use xqz_net::service::{InferenceService, ServiceConfig};
use xqz_net::{Device, ModelConfig, Network};

/// The columns of `strength.csv`: the match's record, the first player's score, and the Elo of
/// [`Pentanomial::elo`](xqz_arena::stats::Pentanomial::elo) with its 95% interval (infinite for
/// a perfect score).
const HEADER: &str = "version,opponent,wins,draws,losses,score,elo,elo_lower,elo_upper";

/// Settings of the strength matches.
pub struct Tracker {
    /// The coordinator's model folder (`v<N>.json` files).
    pub models: PathBuf,
    /// The CSV file of results; the games go to `eval/` beside it.
    pub out: PathBuf,
    /// Games per match (even).
    pub games: u32,
    /// Playouts per move.
    pub playouts: u32,
    /// Device of both networks.
    pub device: Device,
    /// Config of the random network the first model is measured against.
    pub model: ModelConfig,
}

fn published(models: &Path) -> Vec<u64> {
    let mut versions: Vec<u64> = std::fs::read_dir(models)
        .map(|dir| {
            dir.filter_map(|e| {
                let name = e.ok()?.file_name().to_string_lossy().into_owned();
                name.strip_prefix('v')?.strip_suffix(".json")?.parse().ok()
            })
            .collect()
        })
        .unwrap_or_default();
    versions.sort_unstable();
    versions
}

fn measured(out: &Path) -> BTreeSet<u64> {
    std::fs::read_to_string(out)
        .unwrap_or_default()
        .lines()
        .skip(1)
        .filter_map(|l| l.split(',').next()?.parse().ok())
        .collect()
}

/// One line of `strength.csv` for a match of `version` against `opponent`.
fn summary_line(version: u64, opponent: u64, report: &MatchReport) -> String {
    let elo = report.pairs.elo();
    format!(
        "{version},{opponent},{},{},{},{:.4},{:.1},{:.1},{:.1}",
        report.games.wins,
        report.games.draws,
        report.games.losses,
        report.pairs.score(),
        elo.elo,
        elo.lower,
        elo.upper
    )
}

impl Tracker {
    /// Model `version`'s network and training steps.
    fn load(&self, version: u64) -> Result<(Network, u64)> {
        let path = self.models.join(format!("v{version}.json"));
        let (net, meta) = crate::model::load(&path, self.device)?;
        Ok((net, meta.info.training_steps))
    }

    /// The run folder, whose `eval/` holds the games.
    fn run_dir(&self) -> &Path {
        self.out.parent().unwrap_or(Path::new("."))
    }

    /// Plays `version` against `opponent` (0: a random network), records its games and appends
    /// its summary.
    fn measure(&self, version: u64, opponent: u64) -> Result<()> {
        let (candidate, steps) = self.load(version)?;
        let candidate = InferenceService::spawn(candidate, ServiceConfig::default());
        let (other, other_steps) =
            if opponent == 0 { (Network::new(&self.model, self.device), 0) } else { self.load(opponent)? };
        let other = InferenceService::spawn(other, ServiceConfig::default());
        let config = MatchConfig {
            games: self.games,
            playouts: self.playouts,
            seed: version,
            // The match's own rules and 300-ply cap, not self-play's: a short self-play cap
            // without its material adjudication would make every game a draw.
            ..MatchConfig::default()
        };
        let (a, b) = (format!("v{version}"), format!("v{opponent}"));
        let player = |name: &str, service: &InferenceService| -> Box<dyn Player> {
            Box::new(SearchPlayer::new(name, service.client(), config.playouts, config.search))
        };
        let mut log = MatchLog::open(self.run_dir(), &a, &b, Some(steps), Some(other_steps))?;
        let report = crate::results::play_recorded(
            &config.plan(),
            &|| Ok(player(&a, &candidate)),
            &|| Ok(player(&b, &other)),
            &mut log,
            |_, _| {},
        )?;
        // A game a player forfeited is a failed network, not a lost game: stop as the old runner
        // did rather than record the model as weak.
        anyhow::ensure!(
            log.terminations().all(|(reason, _)| reason != "forfeit"),
            "a strength match of v{version} against v{opponent} had a forfeit (see {})",
            log.dir().display()
        );
        let new_file = !self.out.exists();
        let mut file = std::fs::OpenOptions::new().create(true).append(true).open(&self.out)?;
        if new_file {
            writeln!(file, "{HEADER}")?;
        }
        writeln!(file, "{}", summary_line(version, opponent, &report))?;
        Ok(())
    }

    /// Measures each new model while `running` is set.
    pub fn run(&self, running: &AtomicBool) -> Result<()> {
        while running.load(Ordering::Relaxed) {
            let done = measured(&self.out);
            let versions = published(&self.models);
            let Some(&first) = versions.first() else {
                std::thread::sleep(Duration::from_secs(2));
                continue;
            };
            match versions.iter().zip(std::iter::once(&0).chain(&versions)).find(|(v, _)| !done.contains(v)) {
                Some((&version, &previous)) => {
                    self.measure(version, previous)?;
                    if previous != first && version != first {
                        self.measure(version, first)?;
                    }
                }
                None => std::thread::sleep(Duration::from_secs(2)),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;
    use xqz_arena::records::{GameRow, read_games};
    use xqz_arena::stats::Pentanomial;
    use xqz_net::checkpoint::CheckpointInfo;

    use super::*;

    /// `xqz eval`'s arguments alone.
    #[derive(Parser)]
    struct Eval {
        #[command(subcommand)]
        command: crate::eval::EvalCommand,
    }

    /// The Elo of a match's rows by the arena's paired statistics (rows in pair order).
    fn pair_elo(rows: &[&GameRow]) -> f64 {
        let mut pairs = Pentanomial::default();
        for pair in rows.chunks(2) {
            pairs.add_pair(pair[0].a_score, pair[1].a_score);
        }
        pairs.elo().elo
    }

    #[test]
    fn strength_matches_and_eval_matches_land_in_one_table() {
        let run = tempfile::tempdir().unwrap();
        let models = run.path().join("coordinator/models");
        std::fs::create_dir_all(&models).unwrap();
        let model = ModelConfig::builtin("tiny").unwrap();
        for (version, steps) in [(1, 10), (2, 20)] {
            let net = Network::new(&model, Device::Cpu);
            let info = CheckpointInfo { model_version: version, training_steps: steps, samples_seen: 0 };
            xqz_net::checkpoint::save(&models.join(format!("v{version}.json")), &net, info).unwrap();
        }
        let tracker =
            Tracker { models, out: run.path().join("strength.csv"), games: 2, playouts: 4, device: Device::Cpu, model };
        tracker.measure(1, 0).unwrap();
        tracker.measure(2, 1).unwrap();
        let out = run.path().to_str().unwrap();
        let eval = Eval::try_parse_from([
            "eval",
            "match",
            "--a",
            "material",
            "--b",
            "uniform",
            "--pairs",
            "1",
            "--playouts",
            "8",
            "--max-plies",
            "40",
            "--out",
            out,
        ])
        .unwrap();
        crate::eval::run(eval.command).unwrap();

        let rows = read_games(run.path()).unwrap();
        assert_eq!(rows.len(), 6, "{rows:?}");
        let of = |a: &str, b: &str| rows.iter().filter(|r| r.a == a && r.b == b).collect::<Vec<_>>();
        let (first, second, eval) = (of("v1", "v0"), of("v2", "v1"), of("material@8", "uniform@8"));
        assert_eq!((first.len(), second.len(), eval.len()), (2, 2, 2), "{rows:?}");
        assert!(first.iter().all(|r| (r.a_steps, r.b_steps) == (Some(10), Some(0))));
        assert!(second.iter().all(|r| (r.a_steps, r.b_steps) == (Some(20), Some(10))));
        assert!(eval.iter().all(|r| (r.a_steps, r.b_steps) == (None, None)));

        // strength.csv summarises the recorded games with the arena's paired Elo.
        let csv = std::fs::read_to_string(&tracker.out).unwrap();
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines[0], HEADER);
        for (line, (version, opponent, games)) in lines[1..].iter().zip([(1, 0, &first), (2, 1, &second)]) {
            let fields: Vec<&str> = line.split(',').collect();
            assert_eq!(fields[..2], [version.to_string(), opponent.to_string()], "{csv}");
            let record: Vec<u32> = fields[2..5].iter().map(|f| f.parse().unwrap()).collect();
            let points = f64::from(record[0]) + f64::from(record[1]) / 2.0;
            assert_eq!(points, games.iter().map(|r| r.a_score).sum::<f64>(), "{csv}");
            assert_eq!(fields[6], format!("{:.1}", pair_elo(games)), "{csv}");
        }
        assert_eq!(measured(&tracker.out), BTreeSet::from([1, 2]));

        // The ladder takes each game once (strength.csv's matches are in the table) and rates the
        // tracker's players and eval's together.
        let games = crate::ladder::games(run.path()).unwrap();
        assert_eq!(games.iter().map(|g| g.2 + g.3 + g.4).sum::<u32>(), 6);
        let mut players: Vec<&str> = games.iter().flat_map(|g| [g.0.0.as_str(), g.1.0.as_str()]).collect();
        players.sort_unstable();
        players.dedup();
        assert_eq!(players, ["material@8", "uniform@8", "v0", "v1", "v2"]);
        crate::ladder::run(run.path(), 1.0, None).unwrap();
        assert!(run.path().join("ladder.svg").exists());
    }
}
