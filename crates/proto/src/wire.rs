//! Every conversion between the project's types and the `xqz.v1` messages, in one place: the
//! play settings both ways (with the rules for fields that an older peer leaves out) and games.
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

use xqz_dataset::{GameRecord, SampleRecord};
use xqz_mcts::{OpeningSuite, PlaySettings, PolicyTarget, SettingsError, SuiteError};

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

/// A stored game and its samples as a submission (the worker's side of `SubmitGames`).
pub fn encode_game(game: &GameRecord, samples: &[SampleRecord]) -> v1::GameSubmission {
    v1::GameSubmission {
        game_id: game.game_id.0.to_vec(),
        start_fen: game.start_fen.clone(),
        moves: game.moves.iter().map(|m| u32::from(m.to_u16())).collect(),
        result: game.result.name().to_string(),
        reason: game.reason.clone(),
        model_version: game.model_version,
        seed: game.seed,
        start_time_ms: game.start_time_ms,
        end_time_ms: game.end_time_ms,
        settings_version: game.settings_version,
        plies: samples
            .iter()
            .map(|s| v1::PlySearch {
                policy_moves: s.policy.iter().map(|e| u32::from(e.mv.to_u16())).collect(),
                policy_probs: s.policy.iter().map(|e| e.p).collect(),
                root_wdl: s.root_wdl.to_vec(),
                full_search: s.full_search,
            })
            .collect(),
    }
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
}
