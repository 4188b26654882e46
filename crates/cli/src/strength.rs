//! Strength over time for `xqz run`: every newly published model plays a short match (paired
//! colours, fixed playouts, the rules' draws, 300 plies at most) against the previous one and the
//! first one; results go to `strength.csv` in the run folder.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anyhow::{Context, Result};
use xqz_arena::{MatchConfig, play_match};
use xqz_net::service::{InferenceService, ServiceConfig};
use xqz_net::{Device, ModelConfig, Network, checkpoint};

const HEADER: &str = "version,opponent,wins,draws,losses,score,elo,elo_error95";

/// Settings of the strength matches.
pub struct Tracker {
    /// The coordinator's model folder (`v<N>.json` files).
    pub models: PathBuf,
    /// The CSV file of results.
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

impl Tracker {
    fn load(&self, version: u64) -> Result<Network> {
        let path = self.models.join(format!("v{version}.json"));
        Ok(checkpoint::load(&path, self.device, None).with_context(|| format!("load model v{version}"))?.0)
    }

    /// Plays `version` against `opponent` (0: a random network) and appends the result.
    fn measure(&self, version: u64, opponent: u64) -> Result<()> {
        let candidate = InferenceService::spawn(self.load(version)?, ServiceConfig::default());
        let other = if opponent == 0 { Network::new(&self.model, self.device) } else { self.load(opponent)? };
        let other = InferenceService::spawn(other, ServiceConfig::default());
        let config = MatchConfig {
            games: self.games,
            playouts: self.playouts,
            seed: version,
            // The match's own rules and 300-ply cap, not self-play's: a short self-play cap
            // without its material adjudication would make every game a draw.
            ..MatchConfig::default()
        };
        let result = play_match(&mut candidate.client(), &mut other.client(), &config)?;
        let new_file = !self.out.exists();
        let mut file = std::fs::OpenOptions::new().create(true).append(true).open(&self.out)?;
        if new_file {
            writeln!(file, "{HEADER}")?;
        }
        writeln!(
            file,
            "{version},{opponent},{},{},{},{:.4},{:.1},{:.1}",
            result.wins,
            result.draws,
            result.losses,
            result.score(),
            result.elo(),
            result.elo_error95()
        )?;
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
