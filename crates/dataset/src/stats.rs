//! Dataset statistics: results, terminations and game lengths.

use std::collections::BTreeMap;
use std::fmt::Write;

use crate::dataset::Dataset;
use crate::error::Result;
use crate::record::{GameRecord, GameResult};

/// Counts of one termination (reason and article), split by result.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TerminationCount {
    /// Games won by Red.
    pub red: u64,
    /// Games won by Black.
    pub black: u64,
    /// Drawn games.
    pub draw: u64,
}

impl TerminationCount {
    /// All games.
    pub fn total(&self) -> u64 {
        self.red + self.black + self.draw
    }
}

/// Statistics over the games of a dataset.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DatasetStats {
    /// Readable shards.
    pub shards: usize,
    /// Games.
    pub games: u64,
    /// Samples.
    pub samples: u64,
    /// Games per result.
    pub results: BTreeMap<GameResult, u64>,
    /// Games per (reason, article).
    pub terminations: BTreeMap<(String, String), TerminationCount>,
    /// Games per model version.
    pub model_versions: BTreeMap<u64, u64>,
    /// Game lengths in plies, sorted.
    pub lengths: Vec<u32>,
}

impl DatasetStats {
    /// Reads every game of `dataset`.
    pub fn compute(dataset: &Dataset) -> Result<DatasetStats> {
        let mut stats =
            DatasetStats { shards: dataset.shards().len(), samples: dataset.num_samples(), ..DatasetStats::default() };
        for shard in dataset.shards() {
            for game in dataset.read_games(shard)? {
                stats.add(&game);
            }
        }
        stats.lengths.sort_unstable();
        Ok(stats)
    }

    fn add(&mut self, game: &GameRecord) {
        self.games += 1;
        *self.results.entry(game.result).or_default() += 1;
        let t = self.terminations.entry((game.reason.clone(), game.article.clone())).or_default();
        match game.result {
            GameResult::RedWin => t.red += 1,
            GameResult::BlackWin => t.black += 1,
            GameResult::Draw => t.draw += 1,
        }
        *self.model_versions.entry(game.model_version).or_default() += 1;
        self.lengths.push(game.moves.len() as u32);
    }

    /// Mean game length in plies.
    pub fn mean_length(&self) -> f64 {
        if self.lengths.is_empty() {
            return 0.0;
        }
        self.lengths.iter().map(|&l| f64::from(l)).sum::<f64>() / self.lengths.len() as f64
    }

    /// The `q`-quantile of the game length (nearest rank), 0 when there are no games.
    pub fn length_quantile(&self, q: f64) -> u32 {
        if self.lengths.is_empty() {
            return 0;
        }
        let rank = (q.clamp(0.0, 1.0) * (self.lengths.len() - 1) as f64).round() as usize;
        self.lengths[rank]
    }

    /// Game-length histogram with buckets of `width` plies: (first ply of the bucket, games),
    /// from the bucket of the shortest game to that of the longest, empty buckets included.
    pub fn length_histogram(&self, width: u32) -> Vec<(u32, u64)> {
        let width = width.max(1);
        let (Some(&lo), Some(&hi)) = (self.lengths.first(), self.lengths.last()) else {
            return Vec::new();
        };
        let (first, last) = (lo / width, hi / width);
        let mut counts = vec![0u64; (last - first + 1) as usize];
        for &l in &self.lengths {
            counts[(l / width - first) as usize] += 1;
        }
        counts.into_iter().enumerate().map(|(i, n)| ((first + i as u32) * width, n)).collect()
    }

    /// A plain-text report with a histogram of `width`-ply buckets.
    pub fn render(&self, width: u32) -> String {
        let mut s = String::new();
        let pct = |n: u64| if self.games == 0 { 0.0 } else { 100.0 * n as f64 / self.games as f64 };
        let _ = writeln!(s, "shards {}  games {}  samples {}", self.shards, self.games, self.samples);
        let _ = writeln!(s, "\nresults");
        for r in GameResult::ALL {
            let n = self.results.get(&r).copied().unwrap_or(0);
            let _ = writeln!(s, "  {:<6} {n:>9} {:>6.1}%", r.name(), pct(n));
        }
        let _ = writeln!(s, "\nterminations");
        let mut rows: Vec<_> = self.terminations.iter().collect();
        rows.sort_by(|a, b| b.1.total().cmp(&a.1.total()).then(a.0.cmp(b.0)));
        let rw = rows.iter().map(|((r, _), _)| r.chars().count()).max().unwrap_or(0).max("reason".len());
        let aw = rows.iter().map(|((_, a), _)| a.chars().count()).max().unwrap_or(0).max("article".len());
        let _ = writeln!(
            s,
            "  {:<rw$}  {:<aw$} {:>9} {:>7} {:>9} {:>9} {:>9}",
            "reason", "article", "games", "%", "red", "black", "draw"
        );
        for ((reason, article), c) in rows {
            let _ = writeln!(
                s,
                "  {reason:<rw$}  {article:<aw$} {:>9} {:>6.1}% {:>9} {:>9} {:>9}",
                c.total(),
                pct(c.total()),
                c.red,
                c.black,
                c.draw
            );
        }
        let _ = writeln!(s, "\nmodel versions");
        for (v, n) in &self.model_versions {
            let _ = writeln!(s, "  {v:<8} {n:>9} games");
        }
        let _ = writeln!(
            s,
            "\ngame length (plies): min {} median {} mean {:.1} p90 {} max {}",
            self.length_quantile(0.0),
            self.length_quantile(0.5),
            self.mean_length(),
            self.length_quantile(0.9),
            self.length_quantile(1.0)
        );
        let histogram = self.length_histogram(width);
        let peak = histogram.iter().map(|&(_, n)| n).max().unwrap_or(0).max(1);
        for (start, n) in histogram {
            let bar = "#".repeat(((n * 50).div_ceil(peak)) as usize);
            let _ = writeln!(s, "  {:>5}-{:<5} {n:>9} {bar}", start, start + width.max(1) - 1);
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn histogram_and_quantiles() {
        let stats = DatasetStats { lengths: vec![3, 5, 12, 40], games: 4, ..DatasetStats::default() };
        assert_eq!(stats.length_histogram(10), vec![(0, 2), (10, 1), (20, 0), (30, 0), (40, 1)]);
        assert_eq!(stats.length_quantile(0.0), 3);
        assert_eq!(stats.length_quantile(1.0), 40);
        assert_eq!(stats.mean_length(), 15.0);
        assert!(stats.render(10).contains("40-49"));
        assert!(DatasetStats::default().length_histogram(10).is_empty());
    }
}
