//! A match as a job that many machines play: what it is ([`MatchSpec`], its players
//! [`Contestant`]), how one pair of it is played ([`play_pair`]) and how a pair handed in by
//! somebody else is checked ([`replay_pair`]) before it counts. A coordinator hands out pair
//! numbers; the opening of pair `i` follows from the spec alone, so the one who checks needs
//! nothing from the one who played but the moves.
//!
//! ```
//! use xqz_arena::job::{Contestant, MatchSpec, play_pair, replay_pair};
//! use xqz_arena::player::{Player, SearchPlayer};
//! use xqz_mcts::{MaterialEvaluator, SearchConfig, UniformEvaluator};
//!
//! let spec = MatchSpec {
//!     max_plies: 40,
//!     ..MatchSpec::new(Contestant::Material { playouts: 8 }, Contestant::Uniform { playouts: 8 }, 4)
//! };
//! spec.validate()?;
//! let search = SearchConfig::default();
//! let mut a = SearchPlayer::new(&spec.a.name(), MaterialEvaluator, 8, search);
//! let mut b = SearchPlayer::new(&spec.b.name(), UniformEvaluator, 8, search);
//! let played = play_pair(&spec, 2, &mut a, &mut b).expect("built-in players do not forfeit");
//! // What a coordinator does with the moves it is sent: replays them from the pair's opening.
//! let moves = played.each_ref().map(|g| g.moves.clone());
//! let checked = replay_pair(&spec, 2, moves)?;
//! assert_eq!(checked[0].outcome, played[0].outcome);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;
use std::str::FromStr;
use std::sync::LazyLock;

use serde::{Deserialize, Serialize};
use xiangqi::Move;
use xiangqi::game::{GameConfig, Ruleset};

use crate::ladder::{BALANCED_SUITE, Rung};
use crate::player::{Forfeit, Player};
use crate::stats::Sprt;
use crate::tournament::{MatchGame, MatchPlan, Openings, play_pair_game};

/// Most pairs of one match.
pub const MAX_PAIRS: u32 = 100_000;
/// Most playouts of a searching player per move.
pub const MAX_PLAYOUTS: u32 = 1 << 20;
/// Longest game a match may allow, in plies.
pub const MAX_PLIES: u32 = 2_000;

/// The capability a worker must have to play a rung: Fairy-Stockfish installed.
pub const FAIRY_STOCKFISH: &str = "fairy-stockfish";

/// The balanced suite built in, parsed once.
static BALANCED: LazyLock<Openings> =
    LazyLock::new(|| Openings::parse_suite(BALANCED_SUITE).expect("the built-in suite is checked by a test"));

/// A player of a match that any worker can set up from its name alone.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Contestant {
    /// A model of the coordinator's registry, searching `playouts` per move.
    Model {
        /// Its version.
        version: u64,
        /// Playouts per move.
        playouts: u32,
    },
    /// The search over material counting.
    Material {
        /// Playouts per move.
        playouts: u32,
    },
    /// The search over the bare rules.
    Uniform {
        /// Playouts per move.
        playouts: u32,
    },
    /// A rung of the ladder ([`Rung`]: Fairy-Stockfish at its own settings), by name.
    Rung {
        /// The rung's name, `R3`.
        name: String,
    },
}

impl Contestant {
    /// Its name in the records: `v3@64`, `material@64`, `uniform@8`, `R3`. A player at two
    /// budgets is two players to a ladder, so the budget is part of the name.
    pub fn name(&self) -> String {
        match self {
            Contestant::Model { version, playouts } => format!("v{version}@{playouts}"),
            Contestant::Material { playouts } => format!("material@{playouts}"),
            Contestant::Uniform { playouts } => format!("uniform@{playouts}"),
            Contestant::Rung { name } => name.clone(),
        }
    }

    /// What a worker needs besides this program to play it ([`FAIRY_STOCKFISH`] for a rung).
    pub fn needs(&self) -> Option<&'static str> {
        matches!(self, Contestant::Rung { .. }).then_some(FAIRY_STOCKFISH)
    }

    /// Whether two workers playing it from the same position give the same move, so that an
    /// audit can play a pair again and compare the moves: the searches over material and over the
    /// bare rules always do (a fresh tree each move, no randomness); a model does on the same
    /// software, and on hardware that computes its network alike (different instruction sets or
    /// precisions may round differently and change a close choice); a rung does not (Fairy-Stockfish
    /// draws its Skill Level's weakened picks from a clock-seeded generator, and the nodes of
    /// a full-strength rung depend on the engine's build, which the coordinator does not pin).
    pub fn reproducible(&self) -> bool {
        !matches!(self, Contestant::Rung { .. })
    }

    /// The model version it plays, if a model.
    pub fn model(&self) -> Option<u64> {
        match self {
            Contestant::Model { version, .. } => Some(*version),
            _ => None,
        }
    }

    /// Checks the budget and the rung's name.
    ///
    /// # Errors
    /// Playouts of 0 or above [`MAX_PLAYOUTS`], model version 0, or a rung the ladder lacks.
    pub fn validate(&self) -> Result<(), JobError> {
        match self {
            Contestant::Model { version: 0, .. } => Err(JobError::Player("model versions start at 1".into())),
            Contestant::Model { playouts, .. }
            | Contestant::Material { playouts }
            | Contestant::Uniform { playouts }
                if *playouts == 0 || *playouts > MAX_PLAYOUTS =>
            {
                Err(JobError::Player(format!("{}: playouts must be 1 to {MAX_PLAYOUTS}", self.name())))
            }
            Contestant::Rung { name } if Rung::find(name).is_none() => {
                Err(JobError::Player(format!("no rung {name:?} on the ladder")))
            }
            _ => Ok(()),
        }
    }
}

impl fmt::Display for Contestant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

impl FromStr for Contestant {
    type Err = JobError;

    /// `v3@64` (model 3 at 64 playouts), `material@64`, `uniform@8`, `rung:R3` (or `R3`).
    fn from_str(text: &str) -> Result<Contestant, JobError> {
        let bad = |why: &str| JobError::Player(format!("{text:?}: {why}"));
        if let Some(name) = text.strip_prefix("rung:").or_else(|| Rung::find(text).map(|r| r.name)) {
            let player = Contestant::Rung { name: name.to_string() };
            player.validate()?;
            return Ok(player);
        }
        let (body, playouts) = text
            .split_once('@')
            .ok_or_else(|| bad("a searching player needs its playouts: v3@64, material@64, uniform@64"))?;
        let playouts: u32 = playouts.parse().map_err(|_| bad("playouts are a whole number"))?;
        let player = match body {
            "material" => Contestant::Material { playouts },
            "uniform" => Contestant::Uniform { playouts },
            _ => match body.strip_prefix('v').and_then(|v| v.parse().ok()) {
                Some(version) => Contestant::Model { version, playouts },
                None => return Err(bad("players are vN@PLAYOUTS, material@N, uniform@N or rung:NAME")),
            },
        };
        player.validate()?;
        Ok(player)
    }
}

/// Where the pairs of a match start.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum OpeningChoice {
    /// The balanced suite built in ([`BALANCED_SUITE`]), pair `i` taking entry `i` modulo its length.
    Balanced,
    /// `plies` random legal moves drawn from `seed` ([`Openings::Random`]).
    Random {
        /// Random plies, at most 20.
        plies: u32,
        /// Seed of the draws.
        seed: u64,
    },
}

/// A match between two players, as a coordinator keeps it and workers play it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct MatchSpec {
    /// The first player: scores are its.
    pub a: Contestant,
    /// The second player.
    pub b: Contestant,
    /// Pairs at most (each opening with both colours).
    pub pairs: u32,
    /// The openings.
    pub openings: OpeningChoice,
    /// Repetition rules.
    #[serde(with = "ruleset_name")]
    pub ruleset: Ruleset,
    /// Length cap in plies, a draw when reached.
    pub max_plies: u32,
    /// A game that reaches the cap or the natural limit with one side this many pawns ahead is
    /// won by it ([`GameConfig::material_adjudication`]); `None`: drawn.
    pub material_adjudication: Option<u32>,
    /// The test that ends the match early.
    pub sprt: Option<Sprt>,
}

mod ruleset_name {
    use serde::{Deserialize, Deserializer, Serializer};
    use xiangqi::game::Ruleset;

    pub fn serialize<S: Serializer>(ruleset: &Ruleset, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(ruleset.name())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Ruleset, D::Error> {
        String::deserialize(d)?.parse().map_err(serde::de::Error::custom)
    }
}

impl MatchSpec {
    /// `pairs` pairs between `a` and `b` with the defaults of `xqz eval match`: the balanced
    /// suite and WXF rules where a rung plays (Fairy-Stockfish searches by them), else random
    /// 4-ply openings and the 2011 Chinese rules; a 300-ply cap; no test.
    pub fn new(a: Contestant, b: Contestant, pairs: u32) -> MatchSpec {
        let rung = a.needs().is_some() || b.needs().is_some();
        MatchSpec {
            openings: if rung { OpeningChoice::Balanced } else { OpeningChoice::Random { plies: 4, seed: 0 } },
            ruleset: if rung { Ruleset::Wxf } else { Ruleset::Chinese2011 },
            a,
            b,
            pairs,
            max_plies: 300,
            material_adjudication: None,
            sprt: None,
        }
    }

    /// Checks every field against its range.
    ///
    /// # Errors
    /// The first field out of range, named.
    pub fn validate(&self) -> Result<(), JobError> {
        self.a.validate()?;
        self.b.validate()?;
        let bad = |why: String| Err(JobError::Spec(why));
        if self.a == self.b {
            return bad(format!("both players are {}", self.a));
        }
        if self.pairs == 0 || self.pairs > MAX_PAIRS {
            return bad(format!("pairs must be 1 to {MAX_PAIRS}, not {}", self.pairs));
        }
        if let OpeningChoice::Random { plies, .. } = self.openings
            && plies > 20
        {
            return bad(format!("random openings of {plies} plies: at most 20"));
        }
        let opening_plies = match self.openings {
            OpeningChoice::Random { plies, .. } => plies,
            OpeningChoice::Balanced => 0,
        };
        if self.max_plies <= opening_plies || self.max_plies > MAX_PLIES {
            return bad(format!("max_plies must be above the opening's plies and at most {MAX_PLIES}"));
        }
        if let Some(sprt) = &self.sprt {
            let (finite, ordered) = (sprt.elo0.is_finite() && sprt.elo1.is_finite(), sprt.elo0 < sprt.elo1);
            let unit = |p: f64| p > 0.0 && p < 1.0;
            if !finite || !ordered || !unit(sprt.alpha) || !unit(sprt.beta) {
                return bad("the SPRT needs finite ELO0 < ELO1 and 0 < ALPHA, BETA < 1".into());
            }
        }
        Ok(())
    }

    /// Whether a pair played twice gives the same games ([`Contestant::reproducible`]): what an
    /// audit needs.
    pub fn reproducible(&self) -> bool {
        self.a.reproducible() && self.b.reproducible()
    }

    /// What a worker must be able to play besides the built-in players.
    pub fn needs(&self) -> impl Iterator<Item = &'static str> {
        [self.a.needs(), self.b.needs()].into_iter().flatten()
    }

    /// How each game is adjudicated.
    pub fn game_config(&self) -> GameConfig {
        GameConfig {
            ruleset: self.ruleset,
            max_plies: Some(self.max_plies),
            material_adjudication: self.material_adjudication,
            ..GameConfig::default()
        }
    }

    /// The openings.
    pub fn openings(&self) -> Openings {
        match self.openings {
            OpeningChoice::Balanced => BALANCED.clone(),
            OpeningChoice::Random { plies, seed } => Openings::Random { plies, seed },
        }
    }

    /// The plan of the whole match played in one process ([`run_match`](crate::tournament::run_match)):
    /// the same openings, rules and test, so a match played there and handed out pair by pair
    /// plays the same games up to the players' own randomness.
    pub fn plan(&self, concurrency: usize) -> MatchPlan {
        MatchPlan {
            pairs: self.pairs,
            played: Default::default(),
            concurrency,
            openings: self.openings(),
            game: self.game_config(),
            sprt: self.sprt,
        }
    }
}

/// Why a match, a player or a handed-in pair is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JobError {
    /// A player is out of range or unknown.
    #[error("player {0}")]
    Player(String),
    /// A field of the match is out of range.
    #[error("match: {0}")]
    Spec(String),
    /// The pair number is not one of the match's.
    #[error("pair {pair} is not one of the match's {pairs} pairs")]
    NoSuchPair {
        /// The number sent.
        pair: u32,
        /// The match's pairs.
        pairs: u32,
    },
    /// A game does not start with the opening of its pair.
    #[error("game {game} of pair {pair} does not start with the pair's opening")]
    Opening {
        /// The pair.
        pair: u32,
        /// 0 (the first player as Red) or 1.
        game: usize,
    },
    /// A move is illegal, or comes after the game ended.
    #[error("game {game} of pair {pair}, ply {ply}: {why}")]
    Move {
        /// The pair.
        pair: u32,
        /// 0 or 1.
        game: usize,
        /// The ply (from the pair's start position), counting from 1.
        ply: usize,
        /// What is wrong with it.
        why: String,
    },
    /// A game's moves stop before the rules end it.
    #[error("game {game} of pair {pair} is not over after its {plies} plies")]
    Unfinished {
        /// The pair.
        pair: u32,
        /// 0 or 1.
        game: usize,
        /// Its plies.
        plies: usize,
    },
}

/// Plays pair `pair` of `spec`: its opening with `a` as Red, then as Black. A player that fails
/// (an engine that crashed) loses its game by forfeit, which nobody else can check: the pair is
/// returned as the forfeit instead, for the caller to give back.
///
/// # Errors
/// The first forfeit.
pub fn play_pair(
    spec: &MatchSpec,
    pair: u32,
    a: &mut dyn Player,
    b: &mut dyn Player,
) -> Result<[MatchGame; 2], Forfeit> {
    let plan = MatchPlan { pairs: pair + 1, ..spec.plan(1) };
    let games = [xiangqi::Color::Red, xiangqi::Color::Black].map(|first| play_pair_game(&plan, pair, first, a, b));
    match games.iter().find_map(|g| g.forfeit.clone()) {
        Some(forfeit) => Err(forfeit),
        None => Ok(games),
    }
}

/// Checks a pair that somebody says they played: each game (`a` as Red first) must start with
/// the pair's opening, every move must be legal, and the rules must end the game with its last
/// move. Returns the games as the rules adjudicate them, the players named by `spec`.
///
/// # Errors
/// The first thing wrong, with the game and ply.
pub fn replay_pair(spec: &MatchSpec, pair: u32, moves: [Vec<Move>; 2]) -> Result<[MatchGame; 2], JobError> {
    if pair >= spec.pairs {
        return Err(JobError::NoSuchPair { pair, pairs: spec.pairs });
    }
    let opening = spec.openings().game(pair, spec.game_config());
    let opening_moves: Vec<Move> = opening.moves().collect();
    let (a, b) = (spec.a.name(), spec.b.name());
    let mut checked = Vec::with_capacity(2);
    for (index, (moves, first)) in moves.into_iter().zip([xiangqi::Color::Red, xiangqi::Color::Black]).enumerate() {
        if !moves.starts_with(&opening_moves) {
            return Err(JobError::Opening { pair, game: index });
        }
        let mut game = opening.clone();
        for (ply, &mv) in moves.iter().enumerate().skip(opening_moves.len()) {
            let why = if game.outcome().is_over() {
                "the game was over before it".to_string()
            } else {
                match game.push(mv) {
                    Ok(_) => continue,
                    Err(e) => e.to_string(),
                }
            };
            return Err(JobError::Move { pair, game: index, ply: ply + 1, why });
        }
        if !game.outcome().is_over() {
            return Err(JobError::Unfinished { pair, game: index, plies: moves.len() });
        }
        let (red, black) = if first == xiangqi::Color::Red { (&a, &b) } else { (&b, &a) };
        checked.push(MatchGame {
            pair,
            first,
            red: red.clone(),
            black: black.clone(),
            start: opening.start().clone(),
            opening_plies: opening_moves.len(),
            moves,
            outcome: game.outcome(),
            forfeit: None,
        });
    }
    Ok(checked.try_into().expect("two games"))
}

#[cfg(test)]
mod tests {
    use xqz_mcts::{MaterialEvaluator, SearchConfig, UniformEvaluator};

    use super::*;
    use crate::player::SearchPlayer;

    fn spec() -> MatchSpec {
        MatchSpec {
            max_plies: 30,
            ..MatchSpec::new(Contestant::Material { playouts: 4 }, "uniform@4".parse().unwrap(), 3)
        }
    }

    fn played(spec: &MatchSpec, pair: u32) -> [Vec<Move>; 2] {
        let search = SearchConfig::default();
        let mut a = SearchPlayer::new(&spec.a.name(), MaterialEvaluator, 4, search);
        let mut b = SearchPlayer::new(&spec.b.name(), UniformEvaluator, 4, search);
        play_pair(spec, pair, &mut a, &mut b).unwrap().map(|g| g.moves)
    }

    #[test]
    fn players_parse_from_their_names_and_back() {
        for text in ["v3@64", "material@16", "uniform@1", "R3", "N10k"] {
            assert_eq!(text.parse::<Contestant>().unwrap().name(), text);
        }
        assert_eq!("rung:R-5".parse::<Contestant>().unwrap(), Contestant::Rung { name: "R-5".into() });
        for bad in ["v3", "v0@8", "material@0", "material@x", "R99", "rung:R99", "stockfish@3", "vx@3"] {
            assert!(bad.parse::<Contestant>().is_err(), "{bad}");
        }
        assert_eq!("R1".parse::<Contestant>().unwrap().needs(), Some(FAIRY_STOCKFISH));
        assert_eq!("v2@8".parse::<Contestant>().unwrap().needs(), None);
    }

    #[test]
    fn a_match_out_of_range_is_refused_by_field() {
        assert!(spec().validate().is_ok());
        let cases = [
            MatchSpec { pairs: 0, ..spec() },
            MatchSpec { pairs: MAX_PAIRS + 1, ..spec() },
            MatchSpec { b: spec().a, ..spec() },
            MatchSpec { max_plies: 4, ..spec() },
            MatchSpec { openings: OpeningChoice::Random { plies: 21, seed: 0 }, ..spec() },
            MatchSpec {
                sprt: Some(Sprt { elo0: 5.0, elo1: 0.0, alpha: 0.05, beta: 0.05, model: Default::default() }),
                ..spec()
            },
        ];
        for case in cases {
            assert!(matches!(case.validate(), Err(JobError::Spec(_))), "{case:?}");
        }
        let rung = MatchSpec::new("R1".parse().unwrap(), "v1@8".parse().unwrap(), 10);
        assert_eq!((rung.ruleset, &rung.openings), (Ruleset::Wxf, &OpeningChoice::Balanced));
        let json = serde_json::to_string(&rung).unwrap();
        assert_eq!(serde_json::from_str::<MatchSpec>(&json).unwrap(), rung);
    }

    #[test]
    fn a_pair_played_twice_by_the_built_in_players_gives_the_same_moves() {
        let spec = MatchSpec { openings: OpeningChoice::Random { plies: 4, seed: 9 }, ..spec() };
        assert!(spec.reproducible());
        for pair in 0..3 {
            assert_eq!(played(&spec, pair), played(&spec, pair), "pair {pair}");
        }
        assert_ne!(played(&spec, 0), played(&spec, 1), "each pair has its own opening");
        let rung = MatchSpec::new("R1".parse().unwrap(), "material@4".parse().unwrap(), 1);
        assert!(!rung.reproducible(), "Fairy-Stockfish's weakened picks are random");
        assert!(Contestant::Model { version: 1, playouts: 8 }.reproducible());
    }

    #[test]
    fn a_pair_handed_in_counts_only_as_the_rules_end_it_from_its_opening() {
        let spec = spec();
        let moves = played(&spec, 1);
        let games = replay_pair(&spec, 1, moves.clone()).unwrap();
        assert_eq!((games[0].red.as_str(), games[1].red.as_str()), ("material@4", "uniform@4"));
        assert!(games.iter().all(|g| g.outcome.is_over()));

        let err = |moves: [Vec<Move>; 2], pair: u32| replay_pair(&spec, pair, moves).unwrap_err();
        assert_eq!(err(moves.clone(), 3), JobError::NoSuchPair { pair: 3, pairs: 3 });
        // Another pair's opening.
        assert!(matches!(err(moves.clone(), 0), JobError::Opening { pair: 0, game: 0 }));
        let mut short = moves.clone();
        short[1].pop();
        assert!(matches!(err(short, 1), JobError::Unfinished { game: 1, .. }));
        let mut long = moves.clone();
        let extra = long[0][long[0].len() - 2];
        long[0].push(extra);
        assert!(matches!(err(long, 1), JobError::Move { game: 0, .. }));
        let mut wrong = moves;
        let at = wrong[1].len() - 1;
        wrong[1][at] = wrong[1][0];
        assert!(matches!(err(wrong, 1), JobError::Move { game: 1, .. } | JobError::Unfinished { game: 1, .. }));
    }
}
