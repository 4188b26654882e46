//! Strength over time for `xqz run`, on a scale that means something outside the run: each newly
//! published model plays a match (paired colours, fixed playouts, the rules' draws, 300 plies at
//! most) against a fixed anchor, the built-in `material` searcher at the same playouts (uniform
//! priors, material count as value), which is rated 0. The matches are played and recorded as
//! `xqz eval match` plays and records its own (one runner, one table: the run folder's
//! `eval/games.arrow`, models named `vN`, the anchor `material@P`), so `xqz eval ladder --run
//! --anchor material@P` rates them with every other evaluation of the run; `strength.csv` (plotted
//! by `plot::strength` against the hours since the run began, and the tracker's note of what it
//! has measured) holds each match's paired Elo with its 95% interval, a
//! [`StrengthRow`](xqz_run_folder::StrengthRow) each.
//!
//! Paced so that it does not starve self-play: it plays on one thread, rests after each match so
//! that matches take at most a set share of the wall time, and when models come out faster than
//! that it measures the newest and skips those in between.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, UNIX_EPOCH};

use anyhow::Result;
use xqz_arena::MatchConfig;
use xqz_arena::player::{Player, SearchPlayer};
use xqz_arena::records::{MatchLog, finished_pairs, read_games};
use xqz_arena::tournament::MatchReport;
use xqz_mcts::MaterialEvaluator;
use xqz_net::Device;
use xqz_net::service::{InferenceService, ServiceConfig};
use xqz_run_folder::{RowReader, RowWriter, RunFolder, StrengthRow};

/// Settings of the strength matches.
pub struct Tracker {
    /// The run whose published models are measured, into its `strength.csv` and its games
    /// into its `eval/`.
    pub run: RunFolder,
    /// Games per match (even).
    pub games: u32,
    /// Playouts per move, of the models and of the anchor.
    pub playouts: u32,
    /// Device of the networks.
    pub device: Device,
    /// Largest share of the wall time the matches may take, 0 to 1: after a match it rests long
    /// enough to stay under it.
    pub share: f64,
}

/// The published models whose weights are kept, oldest first.
fn published(models: &Path) -> Vec<u64> {
    let mut versions: Vec<u64> = std::fs::read_dir(models)
        .map(|dir| {
            dir.filter_map(|e| {
                let name = e.ok()?.file_name().to_string_lossy().into_owned();
                let version: u64 = name.strip_prefix('v')?.strip_suffix(".json")?.parse().ok()?;
                // A run resumed from a light state keeps the latest model's weights alone.
                models.join(format!("v{version}.safetensors")).exists().then_some(version)
            })
            .collect()
        })
        .unwrap_or_default();
    versions.sort_unstable();
    versions
}

fn measured(out: &Path) -> Result<BTreeSet<u64>> {
    Ok(RowReader::<StrengthRow>::new(out).read_all()?.into_iter().map(|r| r.version).collect())
}

impl Tracker {
    /// The anchor's name in the match table (as `xqz eval` names the built-in player).
    pub fn anchor(&self) -> String {
        format!("material@{}", self.playouts)
    }

    /// Plays model `version` against the anchor until the match ends or `stop` is set (then
    /// between games), recording its games, and appends the match's summary once it has all its
    /// pairs. A match cut short goes on where it stopped the next time the model is measured:
    /// the pairs that the table holds are not played again, and the summary counts them.
    fn measure(&self, version: u64, stop: &AtomicBool) -> Result<()> {
        let path = self.run.models_dir().join(format!("v{version}.json"));
        let published_unix = std::fs::metadata(&path)?.modified()?.duration_since(UNIX_EPOCH)?.as_secs();
        let (candidate, meta) = crate::model::serve(&path, self.device, ServiceConfig::default())?;
        let steps = meta.info.training_steps;
        let config = MatchConfig {
            games: self.games,
            playouts: self.playouts,
            seed: version,
            // The match's own rules and 300-ply cap, not self-play's: a short self-play cap
            // without its material adjudication would make every game a draw.
            ..MatchConfig::default()
        };
        let (a, b) = (format!("v{version}"), self.anchor());
        let model = |service: &InferenceService| -> Box<dyn Player> {
            Box::new(SearchPlayer::new(&a, service.client(), config.playouts, config.search))
        };
        let mut plan = config.plan();
        plan.played = finished_pairs(&read_games(self.run.root())?, &a, &b, &plan);
        let to_play = plan.to_play().len() as u64;
        let mut log = MatchLog::open(self.run.root(), &a, &b, Some(steps), None)?;
        let report = crate::results::play_recorded(
            &plan,
            &|| Ok(model(&candidate)),
            &|| {
                Ok(Box::new(SearchPlayer::new(&b, MaterialEvaluator, config.playouts, config.search))
                    as Box<dyn Player>)
            },
            stop,
            &mut log,
            |_, _| {},
        )?;
        // A game a player forfeited is a failed network, not a lost game: stop rather than
        // record the model as weak.
        anyhow::ensure!(
            log.terminations().all(|(reason, _)| reason != "forfeit"),
            "a strength match of v{version} against {b} had a forfeit (see {})",
            log.dir().display()
        );
        if report.pairs.pairs() < to_play {
            tracing::info!(version, pairs = report.pairs.pairs(), "strength match cut short by the stop");
            return Ok(());
        }
        // The whole match: the pairs played now and those of a part cut short before.
        let whole = crate::results::pairing(self.run.root(), &a, &b)?.map_or(report, |p| p.report());
        let row = summary(version, steps, published_unix, &b, &whole);
        RowWriter::open(&self.run.strength_csv())?.append(&row)?;
        Ok(())
    }

    /// Measures the newest model not yet measured, within its share of the time, until `stop` is
    /// set (a match in play ends between two games).
    pub fn run(&self, stop: &AtomicBool) -> Result<()> {
        let mut rest_until = Instant::now();
        while !stop.load(Ordering::Relaxed) {
            let next = next_to_measure(&published(&self.run.models_dir()), &measured(&self.run.strength_csv())?);
            match next.filter(|_| Instant::now() >= rest_until) {
                Some(version) => {
                    let started = Instant::now();
                    self.measure(version, stop)?;
                    rest_until = Instant::now() + started.elapsed().mul_f64(rest_factor(self.share));
                }
                None => std::thread::sleep(Duration::from_secs(2)),
            }
        }
        Ok(())
    }
}

/// How long to rest after a match, in multiples of its duration, to use `share` of the time.
fn rest_factor(share: f64) -> f64 {
    if share > 0.0 && share < 1.0 { 1.0 / share - 1.0 } else { 0.0 }
}

/// The newest published model not yet measured: a tracker that falls behind skips ahead.
fn next_to_measure(published: &[u64], measured: &BTreeSet<u64>) -> Option<u64> {
    published.iter().rev().find(|v| !measured.contains(v)).copied()
}

/// The row of `strength.csv` of a match.
fn summary(version: u64, steps: u64, published_unix: u64, opponent: &str, report: &MatchReport) -> StrengthRow {
    let elo = report.pairs.elo();
    StrengthRow {
        version,
        steps,
        published_unix,
        opponent: opponent.to_string(),
        wins: report.games.wins,
        draws: report.games.draws,
        losses: report.games.losses,
        score: report.pairs.score(),
        elo: elo.elo,
        elo_lower: elo.lower,
        elo_upper: elo.upper,
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;
    use xqz_arena::records::GameRow;
    use xqz_arena::stats::Pentanomial;
    use xqz_net::checkpoint::CheckpointInfo;
    use xqz_net::{ModelConfig, Network};

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
    fn matches_rest_to_keep_their_share_of_the_time() {
        assert!((rest_factor(0.2) - 4.0).abs() < 1e-9);
        assert!((rest_factor(0.5) - 1.0).abs() < 1e-9);
        assert_eq!((rest_factor(1.0), rest_factor(0.0)), (0.0, 0.0));
    }

    #[test]
    fn the_newest_model_is_measured_first_and_none_twice() {
        assert_eq!(next_to_measure(&[1, 2, 3], &BTreeSet::new()), Some(3));
        assert_eq!(next_to_measure(&[1, 2, 3], &BTreeSet::from([3])), Some(2));
        assert_eq!(next_to_measure(&[1, 2, 3, 4], &BTreeSet::from([3])), Some(4));
        assert_eq!(next_to_measure(&[1, 2], &BTreeSet::from([1, 2])), None);
        assert_eq!(next_to_measure(&[], &BTreeSet::new()), None);
    }

    #[test]
    fn a_model_whose_weights_were_not_kept_is_not_measured() {
        let dir = tempfile::tempdir().unwrap();
        // v1 as a light state leaves it: its metadata without its weights.
        for name in ["v1.json", "v2.json", "v2.safetensors", "registry.json"] {
            std::fs::write(dir.path().join(name), "").unwrap();
        }
        assert_eq!(published(dir.path()), [2]);
    }

    #[test]
    fn strength_matches_against_the_anchor_and_eval_matches_land_in_one_table() {
        let run = tempfile::tempdir().unwrap();
        let folder = RunFolder::new(run.path());
        let models = folder.models_dir();
        std::fs::create_dir_all(&models).unwrap();
        let model = ModelConfig::builtin("tiny").unwrap();
        for (version, steps) in [(1, 10), (2, 20)] {
            let net = Network::new(&model, Device::Cpu);
            let info = CheckpointInfo { model_version: version, training_steps: steps, ..Default::default() };
            xqz_net::checkpoint::save(&models.join(format!("v{version}.json")), &net, info).unwrap();
        }
        let tracker = Tracker { run: folder.clone(), games: 2, playouts: 4, device: Device::Cpu, share: 0.2 };
        assert_eq!(tracker.anchor(), "material@4");
        let go_on = AtomicBool::new(false);
        tracker.measure(1, &go_on).unwrap();
        tracker.measure(2, &go_on).unwrap();
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
        let (first, second, eval) = (of("v1", "material@4"), of("v2", "material@4"), of("material@8", "uniform@8"));
        assert_eq!((first.len(), second.len(), eval.len()), (2, 2, 2), "{rows:?}");
        assert!(first.iter().all(|r| (r.a_steps, r.b_steps) == (Some(10), None)));
        assert!(second.iter().all(|r| (r.a_steps, r.b_steps) == (Some(20), None)));
        assert!(eval.iter().all(|r| (r.a_steps, r.b_steps) == (None, None)));

        // strength.csv summarises the recorded games with the arena's paired Elo.
        let summaries = RowReader::<StrengthRow>::new(folder.strength_csv()).read_all().unwrap();
        assert_eq!(summaries.len(), 2, "{summaries:?}");
        for (row, (version, steps, games)) in summaries.iter().zip([(1, 10, &first), (2, 20, &second)]) {
            assert_eq!((row.version, row.steps, row.opponent.as_str()), (version, steps, "material@4"), "{row:?}");
            let points = f64::from(row.wins) + f64::from(row.draws) / 2.0;
            assert_eq!(points, games.iter().map(|r| r.a_score).sum::<f64>(), "{row:?}");
            assert_eq!(format!("{:.1}", row.elo), format!("{:.1}", pair_elo(games)), "{row:?}");
        }
        assert_eq!(measured(&folder.strength_csv()).unwrap(), BTreeSet::from([1, 2]));

        // The ladder takes each game once (strength.csv's matches are in the table) and rates the
        // tracker's players and eval's together, the anchor at 0.
        let pairings = xqz_arena::records::pairings(&read_games(run.path()).unwrap());
        assert_eq!(pairings.iter().map(|p| p.games.games()).sum::<u32>(), 6);
        let mut players: Vec<&str> = pairings.iter().flat_map(|p| [p.a.as_str(), p.b.as_str()]).collect();
        players.sort_unstable();
        players.dedup();
        assert_eq!(players, ["material@4", "material@8", "uniform@8", "v1", "v2"]);
        crate::ladder::run(run.path(), 1.0, Some("material@4"), false).unwrap();
        assert!(run.path().join("ladder.svg").exists());
    }

    #[test]
    fn a_strength_match_cut_short_writes_no_summary_and_goes_on_later_with_the_pairs_it_lacks() {
        let run = tempfile::tempdir().unwrap();
        let folder = RunFolder::new(run.path());
        std::fs::create_dir_all(folder.models_dir()).unwrap();
        let net = Network::new(&ModelConfig::builtin("tiny").unwrap(), Device::Cpu);
        let info = CheckpointInfo { model_version: 1, training_steps: 10, ..Default::default() };
        xqz_net::checkpoint::save(&folder.models_dir().join("v1.json"), &net, info).unwrap();
        let tracker = |games| Tracker { run: folder.clone(), games, playouts: 4, device: Device::Cpu, share: 0.2 };
        let (stop, go_on) = (AtomicBool::new(true), AtomicBool::new(false));
        let rows = || RowReader::<StrengthRow>::new(folder.strength_csv()).read_all().unwrap();
        let games_of_v1 = || read_games(run.path()).unwrap().into_iter().filter(|g| g.a == "v1").count();

        // Stopped before its first game: nothing played, nothing summed up.
        tracker(6).measure(1, &stop).unwrap();
        assert_eq!((games_of_v1(), rows().len()), (0, 0));
        // A sitting that stopped after the first pair of the three (its openings are the
        // model's): the match's first pair is in the table, with no summary.
        tracker(2).measure(1, &go_on).unwrap();
        std::fs::remove_file(folder.strength_csv()).unwrap();
        assert_eq!(games_of_v1(), 2);

        tracker(6).measure(1, &go_on).unwrap();
        assert_eq!(games_of_v1(), 6, "the first pair was not played again");
        let rows = rows();
        assert_eq!(rows.len(), 1, "{rows:?}");
        assert_eq!(rows[0].wins + rows[0].draws + rows[0].losses, 6, "the summary counts the whole match: {rows:?}");
    }
}
