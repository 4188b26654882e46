//! Every conversion between the project's types and the `xqz.v1` messages, in one place: the
//! play settings both ways (with the rules for fields that an older peer leaves out), opening
//! suites both ways, and games: a worker's self-play game to a submission ([`encode_self_play`]),
//! a stored game to one ([`encode_game`]), and a submission to typed, well-formed data
//! ([`decode_game`]) that the coordinator then replays under the rules.
//!
//! ```
//! use xqz_mcts::PlaySettings;
//! use xqz_proto::wire;
//!
//! let settings = PlaySettings { playouts: 64, ..Default::default() };
//! let message = wire::settings_to_wire(&settings, 3);
//! assert_eq!(wire::settings_from_wire(&message)?, (settings, 3));
//! # Ok::<(), xqz_proto::wire::WireError>(())
//! ```

use xiangqi::{Move, ParseFenError, Position};
use xqz_dataset::{GameId, GameRecord, GameResult, PlySearch, PolicyEntry, SampleRecord};
use xqz_mcts::{OpeningSuite, PlaySettings, PolicyTarget, SelfPlayGame, SettingsError, SuiteError};

use crate::v1;

/// A message that cannot be turned into the project's types.
#[derive(Debug, thiserror::Error)]
pub enum WireError {
    /// A field holds a value the receiver does not know.
    #[error("field {field}: unknown value {value}")]
    Unknown {
        /// The field.
        field: &'static str,
        /// Its value, as text.
        value: String,
    },
    /// The settings decode but are out of range.
    #[error(transparent)]
    Settings(#[from] SettingsError),
    /// An opening suite entry is not a start position, or there are none or too many.
    #[error("opening suite: {0}")]
    Suite(#[from] SuiteError),
    /// The suite's positions do not hash to the id that came with them.
    #[error("opening suite: announced as {announced:016x} but its positions hash to {computed:016x}")]
    SuiteId {
        /// The id in the message.
        announced: u64,
        /// The id of the positions received.
        computed: u64,
    },
}

fn policy_target_to_wire(target: PolicyTarget) -> v1::PolicyTarget {
    match target {
        PolicyTarget::Visits => v1::PolicyTarget::Visits,
        PolicyTarget::CompletedQ => v1::PolicyTarget::CompletedQ,
        PolicyTarget::QSoftmax => v1::PolicyTarget::QSoftmax,
    }
}

fn policy_target_from_wire(code: i32) -> Result<PolicyTarget, WireError> {
    match v1::PolicyTarget::try_from(code) {
        Ok(v1::PolicyTarget::Visits) => Ok(PolicyTarget::Visits),
        Ok(v1::PolicyTarget::CompletedQ) => Ok(PolicyTarget::CompletedQ),
        Ok(v1::PolicyTarget::QSoftmax) => Ok(PolicyTarget::QSoftmax),
        Err(_) => Err(WireError::Unknown { field: "policy_target", value: code.to_string() }),
    }
}

/// `settings` as the coordinator announces them, as version `version`.
pub fn settings_to_wire(settings: &PlaySettings, version: u64) -> v1::SelfPlaySettings {
    v1::SelfPlaySettings {
        ruleset: settings.ruleset.name().to_string(),
        max_plies: settings.max_plies,
        playouts: settings.playouts,
        cheap_playouts: settings.cheap_playouts,
        full_search_probability: settings.full_search_probability,
        late_temperature: settings.late_temperature,
        root_policy_temperature: settings.root_policy_temperature,
        material_adjudication: settings.material_adjudication,
        repeater_loses: settings.repeater_loses,
        mate_moves: settings.mate_moves,
        policy_target: policy_target_to_wire(settings.policy_target) as i32,
        version,
        temperature: Some(settings.temperature),
        temperature_plies: Some(settings.temperature_plies),
        dirichlet_alpha: Some(settings.dirichlet_alpha),
        dirichlet_fraction: Some(settings.dirichlet_fraction),
        resign: Some(settings.resign),
        resign_threshold: Some(settings.resign_threshold),
        resign_consecutive: Some(settings.resign_consecutive),
        resign_disabled_fraction: Some(settings.resign_disabled_fraction),
        gumbel_considered: Some(settings.gumbel_considered),
        opening_share: Some(settings.opening_share),
    }
}

/// The settings a coordinator announced and their version, checked. A field that an older
/// coordinator leaves out takes [`PlaySettings::default`]'s value: the `optional` fields when
/// absent, `root_policy_temperature` and `mate_moves` at 0 (which no valid settings hold).
pub fn settings_from_wire(wire: &v1::SelfPlaySettings) -> Result<(PlaySettings, u64), WireError> {
    let default = PlaySettings::default();
    let ruleset = wire
        .ruleset
        .parse()
        .map_err(|_| WireError::Unknown { field: "ruleset", value: format!("{:?}", wire.ruleset) })?;
    let settings = PlaySettings {
        ruleset,
        max_plies: wire.max_plies,
        playouts: wire.playouts,
        cheap_playouts: wire.cheap_playouts,
        full_search_probability: wire.full_search_probability,
        late_temperature: wire.late_temperature,
        root_policy_temperature: if wire.root_policy_temperature == 0.0 {
            default.root_policy_temperature
        } else {
            wire.root_policy_temperature
        },
        material_adjudication: wire.material_adjudication,
        repeater_loses: wire.repeater_loses,
        mate_moves: if wire.mate_moves == 0 { default.mate_moves } else { wire.mate_moves },
        policy_target: policy_target_from_wire(wire.policy_target)?,
        temperature: wire.temperature.unwrap_or(default.temperature),
        temperature_plies: wire.temperature_plies.unwrap_or(default.temperature_plies),
        dirichlet_alpha: wire.dirichlet_alpha.unwrap_or(default.dirichlet_alpha),
        dirichlet_fraction: wire.dirichlet_fraction.unwrap_or(default.dirichlet_fraction),
        resign: wire.resign.unwrap_or(default.resign),
        resign_threshold: wire.resign_threshold.unwrap_or(default.resign_threshold),
        resign_consecutive: wire.resign_consecutive.unwrap_or(default.resign_consecutive),
        resign_disabled_fraction: wire.resign_disabled_fraction.unwrap_or(default.resign_disabled_fraction),
        gumbel_considered: wire.gumbel_considered.unwrap_or(default.gumbel_considered),
        opening_share: wire.opening_share.unwrap_or(default.opening_share),
    };
    settings.validate()?;
    Ok((settings, wire.version))
}

/// `suite` as the coordinator hands it to workers.
pub fn suite_to_wire(suite: &OpeningSuite) -> v1::OpeningSuite {
    v1::OpeningSuite { id: suite.id(), fens: suite.positions().iter().map(ToString::to_string).collect() }
}

/// The suite a coordinator handed over, checked: every entry a start position, its id theirs.
pub fn suite_from_wire(wire: &v1::OpeningSuite) -> Result<OpeningSuite, WireError> {
    let suite = OpeningSuite::from_fens(wire.fens.iter().map(String::as_str))?;
    if suite.id() != wire.id {
        return Err(WireError::SuiteId { announced: wire.id, computed: suite.id() });
    }
    Ok(suite)
}

pub(crate) fn move_code(mv: Move) -> u32 {
    u32::from(mv.to_u16())
}

fn ply_to_wire(policy: &[(Move, f32)], root_wdl: [f32; 3], full_search: bool) -> v1::PlySearch {
    v1::PlySearch {
        policy_moves: policy.iter().map(|&(mv, _)| move_code(mv)).collect(),
        policy_probs: policy.iter().map(|&(_, p)| p).collect(),
        root_wdl: root_wdl.to_vec(),
        full_search,
    }
}

/// What a self-play game does not know about itself: the id it is submitted under, the model
/// that played it and when (Unix ms).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct GameStamp {
    /// The game's id.
    pub game_id: GameId,
    /// The model version it is credited to.
    pub model_version: u64,
    /// When its first search began.
    pub start_time_ms: i64,
    /// When it ended.
    pub end_time_ms: i64,
}

/// A self-play game that has not ended cannot be submitted (self-play hands over only ended
/// games, so this is a bug in the caller).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("game {0} has not ended")]
pub struct UnfinishedGame(pub GameId);

/// A game as the worker played it, as its submission: the moves, the search made before each,
/// the result and reason the rules give, the seed and settings version, and `stamp`.
pub fn encode_self_play(game: &SelfPlayGame, stamp: &GameStamp) -> Result<v1::GameSubmission, UnfinishedGame> {
    let outcome = game.game.outcome();
    let (Some(result), Some(verdict)) = (GameResult::from_outcome(outcome), outcome.verdict()) else {
        return Err(UnfinishedGame(stamp.game_id));
    };
    Ok(v1::GameSubmission {
        game_id: stamp.game_id.0.to_vec(),
        start_fen: game.game.start().to_string(),
        moves: game.game.moves().map(move_code).collect(),
        result: result.name().to_string(),
        reason: verdict.reason.name().to_string(),
        model_version: stamp.model_version,
        seed: game.seed,
        start_time_ms: stamp.start_time_ms,
        end_time_ms: stamp.end_time_ms,
        settings_version: game.settings_version,
        plies: game.plies.iter().map(|ply| ply_to_wire(&ply.policy, ply.root_wdl, ply.full_search)).collect(),
    })
}

/// A stored game and its samples as a submission: what a worker would have sent for it.
pub fn encode_game(game: &GameRecord, samples: &[SampleRecord]) -> v1::GameSubmission {
    v1::GameSubmission {
        game_id: game.game_id.0.to_vec(),
        start_fen: game.start_fen.clone(),
        moves: game.moves.iter().copied().map(move_code).collect(),
        result: game.result.name().to_string(),
        reason: game.reason.clone(),
        model_version: game.model_version,
        seed: game.seed,
        start_time_ms: game.start_time_ms,
        end_time_ms: game.end_time_ms,
        settings_version: game.settings_version,
        plies: samples
            .iter()
            .map(|s| {
                let policy: Vec<(Move, f32)> = s.policy.iter().map(|e| (e.mv, e.p)).collect();
                ply_to_wire(&policy, s.root_wdl, s.full_search)
            })
            .collect(),
    }
}

/// A submission decoded: each field of its type, each search well-formed (a policy of distinct
/// move codes with probabilities that sum to 1, a win/draw/loss triple). Whether the moves and
/// the policies' moves are legal, and the result the one the rules give, only a replay can say:
/// the coordinator's.
#[derive(Clone, Debug, PartialEq)]
pub struct SubmittedGame {
    /// The game's id.
    pub game_id: GameId,
    /// Where it started.
    pub start: Position,
    /// Its moves.
    pub moves: Vec<Move>,
    /// The search before each move, credited to `model_version`.
    pub searches: Vec<PlySearch>,
    /// The result claimed.
    pub result: GameResult,
    /// The reason claimed, as named by the rules (`xiangqi::game::Reason::name`).
    pub reason: String,
    /// The model version that played it.
    pub model_version: u64,
    /// Its seed.
    pub seed: u64,
    /// When it started (Unix ms; 0 with `end_time_ms` 0: not said).
    pub start_time_ms: i64,
    /// When it ended.
    pub end_time_ms: i64,
    /// The settings version it was played under (0: an older worker's, the version in force).
    pub settings_version: u64,
}

/// How far a policy's probabilities, or a root WDL, may sum from 1 (they are f32 fractions).
const SUM_TOLERANCE: f64 = 1e-3;

/// Client text quoted in an error is cut to this many characters, so that a huge field cannot
/// make an error larger than a client accepts.
const QUOTE_CHARS: usize = 40;

/// Client text for an error message: debug-quoted, at most [`QUOTE_CHARS`] characters of it.
pub fn quote(text: &str) -> String {
    let mut chars = text.chars();
    let head: String = chars.by_ref().take(QUOTE_CHARS).collect();
    if chars.next().is_some() { format!("{head:?}... ({} bytes)", text.len()) } else { format!("{head:?}") }
}

/// Why a submission does not decode; client text in it is [`quote`]d.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum GameError {
    /// The game id is not 16 bytes.
    #[error("game id has {0} bytes, expected 16")]
    GameId(usize),
    /// Not one search per move.
    #[error("{searches} plies of search for {moves} moves")]
    PlyCount {
        /// Searches sent.
        searches: usize,
        /// Moves sent.
        moves: usize,
    },
    /// The result is not `red`, `black` or `draw`.
    #[error("unknown result {0}")]
    Result(String),
    /// The start position does not parse.
    #[error("bad FEN {fen}: {source}")]
    Fen {
        /// The FEN, quoted.
        fen: String,
        /// Why.
        source: ParseFenError,
    },
    /// A move code is no move.
    #[error("ply {ply}: bad move code {code}")]
    Move {
        /// The ply.
        ply: usize,
        /// The code.
        code: u32,
    },
    /// A policy's moves and probabilities differ in number.
    #[error("ply {ply}: {moves} policy moves but {probabilities} probabilities")]
    PolicyLength {
        /// The ply.
        ply: usize,
        /// Moves sent.
        moves: usize,
        /// Probabilities sent.
        probabilities: usize,
    },
    /// A policy's move code is no move.
    #[error("ply {ply}: bad policy move code {code}")]
    PolicyMove {
        /// The ply.
        ply: usize,
        /// The code.
        code: u32,
    },
    /// A policy names a move twice.
    #[error("ply {ply}: policy lists {mv} twice")]
    PolicyTwice {
        /// The ply.
        ply: usize,
        /// The move.
        mv: Move,
    },
    /// A probability is negative, infinite or NaN.
    #[error("ply {ply}: policy probability {p} of {mv} is negative or not finite")]
    Probability {
        /// The ply.
        ply: usize,
        /// Its move.
        mv: Move,
        /// The probability.
        p: f32,
    },
    /// A policy's probabilities do not sum to 1.
    #[error("ply {ply}: policy probabilities sum to {sum}, not 1")]
    PolicySum {
        /// The ply.
        ply: usize,
        /// Their sum.
        sum: f64,
    },
    /// A root WDL has not 3 values.
    #[error("ply {ply}: root_wdl has {len} values, expected 3")]
    WdlLength {
        /// The ply.
        ply: usize,
        /// Values sent.
        len: usize,
    },
    /// A root WDL is not a win/draw/loss triple.
    #[error("ply {ply}: root_wdl {wdl:?} is not a win/draw/loss triple (each in [0, 1], sum 1)")]
    Wdl {
        /// The ply.
        ply: usize,
        /// The values.
        wdl: [f32; 3],
    },
}

/// A submission's game id.
pub fn decode_game_id(bytes: &[u8]) -> Result<GameId, GameError> {
    bytes.try_into().map(GameId).map_err(|_| GameError::GameId(bytes.len()))
}

pub(crate) fn decode_move(code: u32) -> Option<Move> {
    u16::try_from(code).ok().and_then(Move::from_u16)
}

/// One search of a submission, at `ply`, credited to `model_version`.
fn decode_search(search: &v1::PlySearch, ply: usize, model_version: u64) -> Result<PlySearch, GameError> {
    if search.policy_moves.len() != search.policy_probs.len() {
        return Err(GameError::PolicyLength {
            ply,
            moves: search.policy_moves.len(),
            probabilities: search.policy_probs.len(),
        });
    }
    let mut policy: Vec<PolicyEntry> = Vec::with_capacity(search.policy_moves.len());
    // One bit per destination for each origin: a policy may name every legal move, and searching
    // the list for each would be quadratic.
    let mut named = [0u128; 90];
    let mut sum = 0.0f64;
    for (&code, &p) in search.policy_moves.iter().zip(&search.policy_probs) {
        let mv = decode_move(code).ok_or(GameError::PolicyMove { ply, code })?;
        let (word, bit) = (&mut named[mv.from().index()], 1u128 << mv.to().index());
        if *word & bit != 0 {
            return Err(GameError::PolicyTwice { ply, mv });
        }
        *word |= bit;
        if !p.is_finite() || p < 0.0 {
            return Err(GameError::Probability { ply, mv, p });
        }
        sum += f64::from(p);
        policy.push(PolicyEntry { mv, p });
    }
    if (sum - 1.0).abs() > SUM_TOLERANCE {
        return Err(GameError::PolicySum { ply, sum });
    }
    let root_wdl: [f32; 3] =
        search.root_wdl.as_slice().try_into().map_err(|_| GameError::WdlLength { ply, len: search.root_wdl.len() })?;
    let sum: f64 = root_wdl.iter().map(|&v| f64::from(v)).sum();
    if root_wdl.iter().any(|v| !(0.0..=1.0).contains(v)) || (sum - 1.0).abs() > SUM_TOLERANCE {
        return Err(GameError::Wdl { ply, wdl: root_wdl });
    }
    Ok(PlySearch { policy, root_wdl, model_version, full_search: search.full_search })
}

/// A submission as typed data, checked for form (see [`SubmittedGame`]), not yet against the rules.
pub fn decode_game(sub: &v1::GameSubmission) -> Result<SubmittedGame, GameError> {
    let game_id = decode_game_id(&sub.game_id)?;
    if sub.plies.len() != sub.moves.len() {
        return Err(GameError::PlyCount { searches: sub.plies.len(), moves: sub.moves.len() });
    }
    let result = GameResult::from_name(&sub.result).ok_or_else(|| GameError::Result(quote(&sub.result)))?;
    let start =
        Position::from_fen(&sub.start_fen).map_err(|source| GameError::Fen { fen: quote(&sub.start_fen), source })?;
    let moves = sub
        .moves
        .iter()
        .enumerate()
        .map(|(ply, &code)| decode_move(code).ok_or(GameError::Move { ply, code }))
        .collect::<Result<_, _>>()?;
    let searches = sub
        .plies
        .iter()
        .enumerate()
        .map(|(ply, search)| decode_search(search, ply, sub.model_version))
        .collect::<Result<_, _>>()?;
    Ok(SubmittedGame {
        game_id,
        start,
        moves,
        searches,
        result,
        reason: sub.reason.clone(),
        model_version: sub.model_version,
        seed: sub.seed,
        start_time_ms: sub.start_time_ms,
        end_time_ms: sub.end_time_ms,
        settings_version: sub.settings_version,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use xiangqi::game::Ruleset;

    #[test]
    fn settings_round_trip_in_every_variant() {
        for policy_target in [PolicyTarget::Visits, PolicyTarget::CompletedQ, PolicyTarget::QSoftmax] {
            let settings = PlaySettings {
                ruleset: Ruleset::Wxf,
                policy_target,
                resign: false,
                temperature_plies: 7,
                gumbel_considered: 16,
                opening_share: 0.5,
                ..Default::default()
            };
            assert_eq!(settings_from_wire(&settings_to_wire(&settings, 9)).unwrap(), (settings, 9));
        }
    }

    #[test]
    fn an_older_coordinator_s_absent_fields_take_the_defaults() {
        // The fields of the first release only: the later `optional` ones absent, and the two
        // whose 0 means "the default" at 0.
        let first = settings_to_wire(&PlaySettings::default(), 0);
        let old = v1::SelfPlaySettings {
            ruleset: first.ruleset,
            max_plies: first.max_plies,
            playouts: first.playouts,
            cheap_playouts: first.cheap_playouts,
            full_search_probability: first.full_search_probability,
            late_temperature: first.late_temperature,
            material_adjudication: first.material_adjudication,
            repeater_loses: first.repeater_loses,
            policy_target: first.policy_target,
            ..Default::default()
        };
        let (settings, version) = settings_from_wire(&old).unwrap();
        assert_eq!((settings, version), (PlaySettings::default(), 0));
    }

    #[test]
    fn a_suite_round_trips_and_a_tampered_one_is_refused() {
        let suite = OpeningSuite::parse(
            "rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C2C4/9/RNBAKABNR b - - 1 1\n\
             rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKAB1R w - - 0 1",
        )
        .unwrap();
        assert_eq!(suite_from_wire(&suite_to_wire(&suite)).unwrap(), suite);
        let mut wire = suite_to_wire(&suite);
        wire.fens.swap(0, 1);
        assert!(matches!(suite_from_wire(&wire), Err(WireError::SuiteId { .. })));
        wire.fens[1] = "nonsense".into();
        assert!(suite_from_wire(&wire).unwrap_err().to_string().starts_with("opening suite: line 2:"));
    }

    #[test]
    fn invalid_settings_are_named() {
        let mut wire = settings_to_wire(&PlaySettings::default(), 1);
        wire.policy_target = 7;
        assert!(settings_from_wire(&wire).unwrap_err().to_string().contains("policy_target"));
        let mut wire = settings_to_wire(&PlaySettings::default(), 1);
        wire.ruleset = "fide".into();
        assert!(settings_from_wire(&wire).unwrap_err().to_string().contains("ruleset"));
        let mut wire = settings_to_wire(&PlaySettings::default(), 1);
        wire.playouts = 0;
        assert!(settings_from_wire(&wire).unwrap_err().to_string().contains("playouts"));
    }

    /// A two-move game, each search with all of its policy on the move played.
    fn submission() -> v1::GameSubmission {
        let code = |text: &str| move_code(text.parse().unwrap());
        let moves = vec![code("h2e2"), code("h9g7")];
        v1::GameSubmission {
            game_id: vec![7; 16],
            start_fen: xiangqi::START_FEN.into(),
            plies: moves
                .iter()
                .map(|&m| v1::PlySearch {
                    policy_moves: vec![m, code("a0a1")],
                    policy_probs: vec![0.75, 0.25],
                    root_wdl: vec![0.2, 0.6, 0.2],
                    full_search: true,
                })
                .collect(),
            moves,
            result: "draw".into(),
            reason: "max_length".into(),
            model_version: 2,
            settings_version: 4,
            ..Default::default()
        }
    }

    #[test]
    fn a_stored_game_decodes_to_what_it_holds() {
        use rand::SeedableRng;
        use xqz_dataset::synthetic::{SyntheticConfig, random_game};
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        for id in 0..10 {
            let (game, samples) = random_game(&mut rng, id, &SyntheticConfig::default());
            let decoded = decode_game(&encode_game(&game, &samples)).unwrap();
            assert_eq!((decoded.game_id, &decoded.moves, decoded.result), (game.game_id, &game.moves, game.result));
            assert_eq!((decoded.start.to_string(), &decoded.reason), (game.start_fen.clone(), &game.reason));
            assert_eq!(
                (decoded.seed, decoded.start_time_ms, decoded.end_time_ms),
                (game.seed, game.start_time_ms, game.end_time_ms)
            );
            for (search, sample) in decoded.searches.iter().zip(&samples) {
                assert_eq!(
                    (&search.policy, search.root_wdl, search.full_search),
                    (&sample.policy, sample.root_wdl, sample.full_search)
                );
                assert_eq!(search.model_version, game.model_version);
            }
        }
    }

    #[test]
    fn a_malformed_submission_is_refused_naming_the_field_and_ply() {
        let refused = |change: fn(&mut v1::GameSubmission)| {
            let mut sub = submission();
            change(&mut sub);
            decode_game(&sub).unwrap_err()
        };
        assert_eq!(decode_game(&submission()).unwrap().searches[1].model_version, 2);
        assert_eq!(refused(|s| s.game_id.truncate(15)), GameError::GameId(15));
        assert_eq!(refused(|s| drop(s.plies.pop())), GameError::PlyCount { searches: 1, moves: 2 });
        let long = refused(|s| s.result = "x".repeat(5000)).to_string();
        assert!(long.starts_with("unknown result \"xxx") && long.len() < 80, "{long}");
        assert!(matches!(refused(|s| s.start_fen = "nonsense".into()), GameError::Fen { .. }));
        assert_eq!(refused(|s| s.moves[1] = 90), GameError::Move { ply: 1, code: 90 });
        assert!(matches!(refused(|s| s.plies[0].policy_probs.truncate(1)), GameError::PolicyLength { ply: 0, .. }));
        assert_eq!(refused(|s| s.plies[1].policy_moves[1] = 1 << 14), GameError::PolicyMove { ply: 1, code: 1 << 14 });
        assert!(matches!(
            refused(|s| s.plies[1].policy_moves[1] = s.plies[1].policy_moves[0]),
            GameError::PolicyTwice { ply: 1, .. }
        ));
        assert!(matches!(
            refused(|s| s.plies[0].policy_probs = vec![1.5, -0.5]),
            GameError::Probability { ply: 0, .. }
        ));
        assert!(matches!(refused(|s| s.plies[0].policy_probs[0] = f32::NAN), GameError::Probability { ply: 0, .. }));
        assert!(matches!(refused(|s| s.plies[1].policy_probs[1] = 0.5), GameError::PolicySum { ply: 1, .. }));
        assert_eq!(refused(|s| s.plies[1].root_wdl.truncate(2)), GameError::WdlLength { ply: 1, len: 2 });
        assert!(matches!(refused(|s| s.plies[0].root_wdl = vec![1.5, -0.5, 0.0]), GameError::Wdl { ply: 0, .. }));
    }

    #[test]
    fn client_text_is_quoted_short() {
        assert_eq!(quote("draw"), "\"draw\"");
        let long = quote(&"y".repeat(5000));
        assert!(long.ends_with("... (5000 bytes)") && long.len() < 70, "{long}");
    }
}
