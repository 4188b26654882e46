//! The conversions of match jobs ([`xqz_arena::job`]) to and from their messages: what a
//! submitter sends, what a worker is handed and what it hands back.
//!
//! ```
//! use xqz_arena::job::{Contestant, MatchSpec};
//! use xqz_proto::matches::{spec_from_wire, spec_to_wire};
//!
//! let spec = MatchSpec::new("v2@64".parse()?, Contestant::Material { playouts: 64 }, 50);
//! assert_eq!(spec_from_wire(&spec_to_wire(&spec))?, spec);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use xiangqi::Move;
use xiangqi::game::Ruleset;
use xqz_arena::job::{Contestant, JobError, MatchSpec, OpeningChoice};
use xqz_arena::stats::{EloModel, Sprt};
use xqz_arena::tournament::MatchGame;
use xqz_dataset::GameResult;

use crate::v1;
use crate::v1::match_player::Kind;
use crate::wire::{decode_move, move_code, quote};

/// The longest reason a worker may give (`TakePairRequest.failure`) for a pair it could not play.
pub const MAX_FAILURE_BYTES: usize = 1024;

/// A match message that cannot be turned into a match, a player or a pair.
#[derive(Debug, thiserror::Error)]
pub enum MatchWireError {
    /// A required field is absent.
    #[error("{0} is missing")]
    Missing(&'static str),
    /// A field holds a value the receiver does not know.
    #[error("{field}: unknown value {value}")]
    Unknown {
        /// The field.
        field: &'static str,
        /// Its value, quoted and clipped.
        value: String,
    },
    /// The values are known but out of range.
    #[error(transparent)]
    Job(#[from] JobError),
    /// A pair does not hold two games.
    #[error("a pair holds two games, not {0}")]
    Games(usize),
    /// A move code is not a move.
    #[error("game {game}, ply {ply}: {code} is not a move code")]
    Move {
        /// 0 or 1.
        game: usize,
        /// Counting from 1.
        ply: usize,
        /// The code.
        code: u32,
    },
}

/// A player as sent.
pub fn player_to_wire(player: &Contestant) -> v1::MatchPlayer {
    let (kind, playouts) = match player {
        Contestant::Model { version, playouts } => (Kind::ModelVersion(*version), *playouts),
        Contestant::Material { playouts } => (Kind::Builtin("material".into()), *playouts),
        Contestant::Uniform { playouts } => (Kind::Builtin("uniform".into()), *playouts),
        Contestant::Rung { name } => (Kind::Rung(name.clone()), 0),
    };
    v1::MatchPlayer { kind: Some(kind), playouts }
}

/// A player as received, checked ([`Contestant::validate`]).
///
/// # Errors
/// No kind, an unknown built-in, or a value out of range.
pub fn player_from_wire(wire: &v1::MatchPlayer) -> Result<Contestant, MatchWireError> {
    let playouts = wire.playouts;
    let player = match wire.kind.as_ref().ok_or(MatchWireError::Missing("player kind"))? {
        Kind::ModelVersion(version) => Contestant::Model { version: *version, playouts },
        Kind::Builtin(name) if name == "material" => Contestant::Material { playouts },
        Kind::Builtin(name) if name == "uniform" => Contestant::Uniform { playouts },
        Kind::Builtin(name) => return Err(MatchWireError::Unknown { field: "builtin", value: quote(name) }),
        Kind::Rung(name) => Contestant::Rung { name: name.clone() },
    };
    player.validate()?;
    Ok(player)
}

/// A match as sent.
pub fn spec_to_wire(spec: &MatchSpec) -> v1::MatchSpec {
    let (random_plies, seed) = match spec.openings {
        OpeningChoice::Balanced => (None, 0),
        OpeningChoice::Random { plies, seed } => (Some(plies), seed),
    };
    v1::MatchSpec {
        a: Some(player_to_wire(&spec.a)),
        b: Some(player_to_wire(&spec.b)),
        pairs: spec.pairs,
        random_plies,
        seed,
        ruleset: spec.ruleset.name().into(),
        max_plies: spec.max_plies,
        material_adjudication: spec.material_adjudication.unwrap_or(0),
        sprt: spec.sprt.map(|s| v1::SprtBounds {
            elo0: s.elo0,
            elo1: s.elo1,
            alpha: s.alpha,
            beta: s.beta,
            normalized: s.model == EloModel::Normalized,
        }),
    }
}

/// A match as received, checked ([`MatchSpec::validate`]).
///
/// # Errors
/// A missing player, an unknown ruleset, or a value out of range.
pub fn spec_from_wire(wire: &v1::MatchSpec) -> Result<MatchSpec, MatchWireError> {
    let a = player_from_wire(wire.a.as_ref().ok_or(MatchWireError::Missing("player a"))?)?;
    let b = player_from_wire(wire.b.as_ref().ok_or(MatchWireError::Missing("player b"))?)?;
    // Absent fields take the defaults of a match between these players.
    let defaults = MatchSpec::new(a, b, wire.pairs);
    let ruleset: Ruleset = match wire.ruleset.as_str() {
        "" => defaults.ruleset,
        name => name.parse().map_err(|_| MatchWireError::Unknown { field: "ruleset", value: quote(name) })?,
    };
    let or_default = |p: f64| if p == 0.0 { 0.05 } else { p };
    let spec = MatchSpec {
        openings: match wire.random_plies {
            None => OpeningChoice::Balanced,
            Some(plies) => OpeningChoice::Random { plies, seed: wire.seed },
        },
        ruleset,
        max_plies: if wire.max_plies == 0 { defaults.max_plies } else { wire.max_plies },
        material_adjudication: (wire.material_adjudication > 0).then_some(wire.material_adjudication),
        sprt: wire.sprt.map(|s| Sprt {
            elo0: s.elo0,
            elo1: s.elo1,
            alpha: or_default(s.alpha),
            beta: or_default(s.beta),
            model: if s.normalized { EloModel::Normalized } else { EloModel::Logistic },
        }),
        ..defaults
    };
    spec.validate()?;
    Ok(spec)
}

/// A job's state by name, as `xqz eval jobs` and the dashboard show it: `running`, `H1`, `H0`,
/// `finished`, `failed` (`unknown` for a value this build does not know).
pub fn state_name(state: i32) -> &'static str {
    match v1::MatchState::try_from(state) {
        Ok(v1::MatchState::Running) => "running",
        Ok(v1::MatchState::H1) => "H1",
        Ok(v1::MatchState::H0) => "H0",
        Ok(v1::MatchState::Finished) => "finished",
        Ok(v1::MatchState::Failed) => "failed",
        Ok(v1::MatchState::Unspecified) | Err(_) => "unknown",
    }
}

/// A pair's games as a worker hands them in: every move and the result its rules gave.
pub fn pair_to_wire(games: &[MatchGame; 2]) -> Vec<v1::PlayedGame> {
    games
        .iter()
        .map(|g| v1::PlayedGame {
            moves: g.moves.iter().map(|&mv| move_code(mv)).collect(),
            result: GameResult::from_outcome(g.outcome).map_or("", GameResult::name).into(),
        })
        .collect()
}

/// A pair's games as received: the moves of each and the result the worker claims for it.
///
/// # Errors
/// Not two games, a code that is not a move, or an unknown result.
pub fn pair_from_wire(games: &[v1::PlayedGame]) -> Result<[(Vec<Move>, GameResult); 2], MatchWireError> {
    let [first, second] = games else {
        return Err(MatchWireError::Games(games.len()));
    };
    let decode = |game: usize, wire: &v1::PlayedGame| {
        let moves = wire
            .moves
            .iter()
            .enumerate()
            .map(|(i, &code)| decode_move(code).ok_or(MatchWireError::Move { game, ply: i + 1, code }))
            .collect::<Result<Vec<_>, _>>()?;
        let result = GameResult::from_name(&wire.result)
            .ok_or_else(|| MatchWireError::Unknown { field: "result", value: quote(&wire.result) })?;
        Ok::<_, MatchWireError>((moves, result))
    };
    Ok([decode(0, first)?, decode(1, second)?])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_of_match_survives_the_wire() {
        let sprt = Sprt { elo0: 0.0, elo1: 10.0, alpha: 0.05, beta: 0.1, model: EloModel::Normalized };
        let specs = [
            MatchSpec::new("R3".parse().unwrap(), "v7@800".parse().unwrap(), 100),
            MatchSpec {
                material_adjudication: Some(3),
                sprt: Some(sprt),
                ..MatchSpec::new("uniform@8".parse().unwrap(), "material@16".parse().unwrap(), 2)
            },
        ];
        for spec in specs {
            assert_eq!(spec_from_wire(&spec_to_wire(&spec)).unwrap(), spec);
        }
    }

    #[test]
    fn a_bad_match_message_names_what_is_wrong() {
        let good = spec_to_wire(&MatchSpec::new("v1@8".parse().unwrap(), "v2@8".parse().unwrap(), 4));
        let cases = [
            (v1::MatchSpec { a: None, ..good.clone() }, "player a is missing"),
            (v1::MatchSpec { ruleset: "house".into(), ..good.clone() }, "ruleset"),
            (v1::MatchSpec { pairs: 0, ..good.clone() }, "pairs"),
            (
                v1::MatchSpec {
                    b: Some(v1::MatchPlayer { kind: Some(Kind::Builtin("random".into())), playouts: 8 }),
                    ..good.clone()
                },
                "builtin",
            ),
            (
                v1::MatchSpec {
                    b: Some(v1::MatchPlayer { kind: Some(Kind::Rung("R77".into())), playouts: 0 }),
                    ..good
                },
                "R77",
            ),
        ];
        for (wire, expected) in cases {
            let message = spec_from_wire(&wire).unwrap_err().to_string();
            assert!(message.contains(expected), "{message}");
        }
        let one = [v1::PlayedGame { moves: vec![], result: "draw".into() }];
        assert!(matches!(pair_from_wire(&one), Err(MatchWireError::Games(1))));
        let bad = [v1::PlayedGame { moves: vec![u32::MAX], result: "draw".into() }, one[0].clone()];
        assert!(matches!(pair_from_wire(&bad), Err(MatchWireError::Move { game: 0, ply: 1, .. })));
    }
}
