//! The strength ladder: fixed anchors that mean the same outside any run, Fairy-Stockfish at
//! settings that differ in strength, placed on one Elo scale by an engine-only round robin
//! (`scripts/ladder-calibrate`; the table is `models/ladder.json`).
//!
//! ```
//! use xqz_arena::ladder::Rung;
//! let r3 = Rung::find("R3").unwrap();
//! assert_eq!((r3.skill, r3.limit().depth), (Some(3), Some(4)));
//! let top = Rung::find("N100k").unwrap();
//! assert_eq!((top.skill, top.limit().nodes), (None, Some(100_000)));
//! let config = r3.engine("/usr/games/fairy-stockfish");
//! assert_eq!(config.options, [("Skill Level".to_string(), "3".to_string())]);
//! ```
//!
//! Why these settings: Fairy-Stockfish plays a weakened pick from a search of depth `1 + Skill
//! Level`, so a depth limit above that changes nothing, and Skill Level L at any depth beyond L + 1
//! is the same player as at L + 1. The rungs that differ are Skill Level L at depth L + 1 (`RL`;
//! below 0 the search is depth 1 and only the pick gets weaker), then full strength at a fixed
//! number of nodes (`N1k`, `N10k`, `N100k`), which, unlike a time limit, does not depend on
//! the machine or on how many games share its cores.

use std::path::PathBuf;

use crate::uci::{EngineConfig, Limit};

/// The balanced opening suite (`tests/data/openings/balanced.epd`, built by `xqz eval suite`):
/// the default openings of anchor matches.
pub const BALANCED_SUITE: &str = include_str!("../../../tests/data/openings/balanced.epd");

/// One rung: Fairy-Stockfish at a Skill Level and a depth, or at full strength and a node count.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Rung {
    /// Its name in records and tables (`R3`, `N10k`).
    pub name: &'static str,
    /// The `Skill Level` option (-20 to 19), or `None` for full strength.
    pub skill: Option<i32>,
    /// Nodes per move at full strength.
    pub nodes: Option<u64>,
}

const fn skill(name: &'static str, level: i32) -> Rung {
    Rung { name, skill: Some(level), nodes: None }
}

const fn nodes(name: &'static str, nodes: u64) -> Rung {
    Rung { name, skill: None, nodes: Some(nodes) }
}

/// The rungs, weakest first.
pub const RUNGS: &[Rung] = &[
    skill("R-10", -10),
    skill("R-5", -5),
    skill("R-4", -4),
    skill("R-3", -3),
    skill("R-2", -2),
    skill("R0", 0),
    skill("R1", 1),
    skill("R2", 2),
    skill("R3", 3),
    skill("R4", 4),
    skill("R5", 5),
    skill("R6", 6),
    skill("R7", 7),
    skill("R8", 8),
    nodes("N1k", 1_000),
    nodes("N10k", 10_000),
    nodes("N100k", 100_000),
];

impl Rung {
    /// The rung called `name`.
    pub fn find(name: &str) -> Option<&'static Rung> {
        RUNGS.iter().find(|rung| rung.name == name)
    }

    /// The limit of each move: depth `1 + Skill Level` (at least 1), or the nodes.
    pub fn limit(&self) -> Limit {
        match (self.skill, self.nodes) {
            (_, Some(nodes)) => Limit::nodes(nodes),
            (Some(level), None) => Limit::depth(u32::try_from(level + 1).unwrap_or(1).max(1)),
            (None, None) => unreachable!("a rung has a Skill Level or a node count"),
        }
    }

    /// The engine at `program` set up as this rung (its Skill Level; the engine's defaults
    /// otherwise: one thread, whose node-limited search does not depend on timing).
    pub fn engine(&self, program: impl Into<String>) -> EngineConfig {
        let mut config = EngineConfig::fairy_stockfish(program);
        if let Some(level) = self.skill {
            config.options.push(("Skill Level".to_string(), level.to_string()));
        }
        config
    }
}

/// A player's games against one opponent of known rating.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Against {
    /// The opponent's Elo.
    pub elo: f64,
    /// The standard error of the opponent's Elo.
    pub stderr: f64,
    /// The player's wins, draws and losses against it.
    pub wins: u32,
    /// Draws.
    pub draws: u32,
    /// Losses.
    pub losses: u32,
}

/// A rating on the ladder's scale.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Rating {
    /// The Elo.
    pub elo: f64,
    /// Its standard error: the games' share and the opponents' ratings' share combined.
    pub stderr: f64,
}

/// Where a player with `games` against rated opponents stands: the maximum-likelihood Elo of the
/// logistic model with the opponents' ratings held fixed (draws as half a win, and one virtual
/// draw against each opponent, as `xqz eval ladder` adds, so that a clean sweep stays finite).
/// The standard error adds, to the games' own (from the likelihood's curvature), each
/// opponent's error weighted by its share of that curvature, which treats the opponents'
/// errors as independent; they come from one fit, so this is an approximation. `None` without
/// games.
///
/// ```
/// use xqz_arena::ladder::{Against, rate};
/// let even = |elo| Against { elo, stderr: 0.0, wins: 10, draws: 0, losses: 10 };
/// let rating = rate(&[even(100.0), even(300.0)]).unwrap();
/// assert!((rating.elo - 200.0).abs() < 25.0);
/// ```
pub fn rate(games: &[Against]) -> Option<Rating> {
    const PRIOR_DRAWS: f64 = 1.0;
    let c = std::f64::consts::LN_10 / 400.0;
    let played: Vec<&Against> = games.iter().filter(|g| g.wins + g.draws + g.losses > 0).collect();
    if played.is_empty() {
        return None;
    }
    let n = |g: &Against| f64::from(g.wins + g.draws + g.losses) + PRIOR_DRAWS;
    let points = |g: &Against| f64::from(g.wins) + (f64::from(g.draws) + PRIOR_DRAWS) / 2.0;
    let expected = |x: f64, g: &Against| 1.0 / (1.0 + 10f64.powf((g.elo - x) / 400.0));
    let total: f64 = played.iter().map(|g| n(g)).sum();
    let mut x = played.iter().map(|g| n(g) * g.elo).sum::<f64>() / total;
    let curvature = |x: f64| played.iter().map(move |g| c * c * n(g) * expected(x, g) * (1.0 - expected(x, g)));
    for _ in 0..100 {
        let slope: f64 = played.iter().map(|g| c * (points(g) - n(g) * expected(x, g))).sum();
        // Newton's step, bounded so that a far start cannot overshoot into the flat tails.
        let step = (slope / curvature(x).sum::<f64>()).clamp(-200.0, 200.0);
        x += step;
        if step.abs() < 1e-9 {
            break;
        }
    }
    let shares: Vec<f64> = curvature(x).collect();
    let info: f64 = shares.iter().sum();
    let from_opponents: f64 = played.iter().zip(&shares).map(|(g, share)| (share / info * g.stderr).powi(2)).sum();
    Some(Rating { elo: x, stderr: (1.0 / info + from_opponents).sqrt() })
}

/// Where Fairy-Stockfish is: `$XQZ_FAIRY_STOCKFISH`, else as [`debian_engine`] finds
/// `fairy-stockfish`. The ladder's and the tests' (`xqz-test-support`).
pub fn fairy_stockfish() -> Option<PathBuf> {
    debian_engine("XQZ_FAIRY_STOCKFISH", "fairy-stockfish")
}

/// Where a xiangqi engine that Debian packages as `program` (`fairy-stockfish`, `sjaakii`) is:
/// the variable `env` (unless empty), else `program` on the `PATH`, else `/usr/games/program`
/// (Debian installs games outside root's `PATH`). The one locator of external engines.
pub fn debian_engine(env: &str, program: &str) -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(env).filter(|path| !path.is_empty()) {
        return Some(PathBuf::from(path));
    }
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .map(|dir| dir.join(program));
    on_path.chain([PathBuf::from("/usr/games").join(program)]).find(|path| path.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_balanced_suite_holds_over_a_hundred_positions_from_every_family() {
        let suite = xqz_mcts::OpeningSuite::parse(BALANCED_SUITE).unwrap();
        assert!(suite.positions().len() >= 100);
        // Every ECCO family, none with more than a third of the suite.
        for family in ["ecco A", "ecco B", "ecco C", "ecco D", "ecco E"] {
            let lines = BALANCED_SUITE.lines().filter(|line| line.contains(family)).count();
            assert!((5..=40).contains(&lines), "{lines} lines of {family}");
        }
        // Each judged even (within 50 centipawns) by the search that built it.
        for line in BALANCED_SUITE.lines().filter(|line| !line.starts_with('#')) {
            let score: i32 = line.rsplit("; score ").next().unwrap().trim().parse().unwrap();
            assert!(score.abs() <= 50, "{line}");
        }
    }

    #[test]
    fn a_rating_sits_where_the_scores_put_it_and_its_error_grows_with_the_opponents() {
        let against = |elo, stderr, wins, losses| Against { elo, stderr, wins, draws: 0, losses };
        // 76% against an opponent at 0 is about +200; one virtual draw pulls it in a little.
        let one = rate(&[against(0.0, 0.0, 76, 24)]).unwrap();
        assert!((one.elo - 200.0).abs() < 10.0, "{one:?}");
        // Fewer games, the same score: the same place, a wider error.
        let few = rate(&[against(0.0, 0.0, 19, 6)]).unwrap();
        assert!(few.stderr > 1.9 * one.stderr && (few.elo - one.elo).abs() < 20.0, "{few:?} {one:?}");
        // The opponent's own uncertainty adds in.
        let shaky = rate(&[against(0.0, 50.0, 76, 24)]).unwrap();
        assert!((shaky.stderr.powi(2) - one.stderr.powi(2) - 2500.0).abs() < 1.0, "{shaky:?}");
        // A clean sweep stays finite, above the opponent.
        let sweep = rate(&[against(100.0, 0.0, 20, 0)]).unwrap();
        assert!(sweep.elo > 400.0 && sweep.elo.is_finite(), "{sweep:?}");
        assert_eq!(rate(&[against(0.0, 0.0, 0, 0)]), None);
    }

    #[test]
    fn rungs_are_named_as_their_settings() {
        for rung in RUNGS {
            let name = match (rung.skill, rung.nodes) {
                (Some(level), None) => format!("R{level}"),
                (None, Some(nodes)) => format!("N{}k", nodes / 1000),
                _ => panic!("{rung:?} has both or neither setting"),
            };
            assert_eq!(rung.name, name);
            assert_eq!(Rung::find(&name), Some(rung));
        }
        assert_eq!(Rung::find("R9"), None);
    }

    #[test]
    fn skill_rungs_search_to_the_depth_their_pick_is_made_at() {
        let depth = |name| Rung::find(name).unwrap().limit().depth;
        assert_eq!(depth("R0"), Some(1));
        assert_eq!(depth("R1"), Some(2));
        assert_eq!(depth("R8"), Some(9));
        // Below 0 the pick comes after the depth-1 search.
        assert_eq!(depth("R-5"), Some(1));
        assert_eq!(Rung::find("N1k").unwrap().engine("fsf").options, []);
    }
}
