//! The self-play contract: how games are played, which the coordinator dictates, the worker plays
//! by and the coordinator replays submissions under. One type, [`PlaySettings`], owns the
//! settings, their defaults ([`Default`]), their checks ([`PlaySettings::validate`]), the rules
//! games are adjudicated under ([`PlaySettings::game_config`]) and the search driver's config
//! ([`PlaySettings::self_play_config`], beside the driver); its wire form lives in the proto crate, its file form is
//! its serde form (TOML in a run folder's `settings.toml`), and with the `clap` feature it is also
//! the command-line flag group of every role that sets it.
//!
//! ```
//! use xqz_mcts::PlaySettings;
//!
//! let settings: PlaySettings = toml::from_str("playouts = 64\npolicy_target = \"q-softmax\"")?;
//! assert_eq!((settings.playouts, settings.cheap_playouts), (64, PlaySettings::default().cheap_playouts));
//! settings.validate()?;
//! let zero = PlaySettings { playouts: 0, ..settings };
//! assert_eq!(zero.validate().unwrap_err().field, "playouts");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use xiangqi::Move;
use xiangqi::game::{GameConfig, Ruleset};

use crate::tree::{RootStats, SearchConfig};

/// How self-play games are played and adjudicated; see the module docs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct PlaySettings {
    /// Repetition rules: chinese2011 (the official 2011 rules), chinese1999 (its 1999 edition), wxf or simple.
    #[serde(with = "ruleset_name")]
    #[cfg_attr(feature = "clap", arg(long, default_value_t = PlaySettings::default().ruleset))]
    pub ruleset: Ruleset,
    /// Game length cap in plies (a max_length draw when reached; 0: no cap).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = PlaySettings::default().max_plies))]
    pub max_plies: u32,
    /// Playouts of a full search (its policy is a training target, with root noise).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = PlaySettings::default().playouts))]
    pub playouts: u32,
    /// Playouts of a cheap search (playout cap randomization; not a policy target).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = PlaySettings::default().cheap_playouts))]
    pub cheap_playouts: u32,
    /// Probability that a move gets a full search, 0 to 1 (1 turns playout cap randomization off).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = PlaySettings::default().full_search_probability))]
    pub full_search_probability: f64,
    /// Move temperature for the first --temperature-plies plies.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = PlaySettings::default().temperature))]
    pub temperature: f32,
    /// Plies played at --temperature; --late-temperature applies afterwards.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = PlaySettings::default().temperature_plies))]
    pub temperature_plies: u32,
    /// Move temperature after the opening plies (0: the most visited move). Above 0, as in
    /// KataGo, it keeps a network that rates everything a draw from shuffling into repetitions.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = PlaySettings::default().late_temperature))]
    pub late_temperature: f32,
    /// Softmax temperature of the network's priors at the root of full searches (above 1
    /// flattens them against the policy's collapse with few playouts; 1: unchanged).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = PlaySettings::default().root_policy_temperature))]
    pub root_policy_temperature: f32,
    /// Dirichlet noise concentration at the root of full searches.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = PlaySettings::default().dirichlet_alpha))]
    pub dirichlet_alpha: f32,
    /// Weight of the noise in the root priors of full searches, 0 to 1 (0 turns it off).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = PlaySettings::default().dirichlet_fraction))]
    pub dirichlet_fraction: f32,
    /// What full searches record as the policy target: visits (the visit fractions),
    /// completed-q (Gumbel MuZero's completed-Q policy, the priors shifted by the searched
    /// values) or q-softmax (the softmax of the searched values alone).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = PlaySettings::default().policy_target))]
    pub policy_target: PolicyTarget,
    /// Gumbel root search (Gumbel MuZero's sequential halving) over this many root moves, 2 to
    /// 256, for full and cheap searches; its Gumbel noise replaces the root's Dirichlet noise and
    /// the move temperatures. 0: PUCT at the root.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = PlaySettings::default().gumbel_considered))]
    pub gumbel_considered: u32,
    /// Longest forced mate by checks, in moves, that searches look for at each leaf (one more at
    /// the root), 1 to 4.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = PlaySettings::default().mate_moves))]
    pub mate_moves: u32,
    /// Material lead in pawns that wins a game reaching the natural move limit or --max-plies
    /// (0: such games are draws, as under the rules; evaluation matches keep the rules' draws).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = PlaySettings::default().material_adjudication))]
    pub material_adjudication: u32,
    /// A repetition the rules call a draw is lost by the side that completed it, so that neither
    /// side learns to shuffle (evaluation matches keep the rules' draws).
    #[cfg_attr(feature = "clap", arg(long, action = clap::ArgAction::Set, default_value_t = PlaySettings::default().repeater_loses))]
    pub repeater_loses: bool,
    /// Whether a side may resign (false: every game is played to its end).
    #[cfg_attr(feature = "clap", arg(long, action = clap::ArgAction::Set, default_value_t = PlaySettings::default().resign))]
    pub resign: bool,
    /// A side resigns when its searched value (win - loss, -1 to 1) stays below this...
    #[cfg_attr(feature = "clap", arg(long, allow_negative_numbers = true, default_value_t = PlaySettings::default().resign_threshold))]
    pub resign_threshold: f32,
    /// ...for this many of its own moves in a row.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = PlaySettings::default().resign_consecutive))]
    pub resign_consecutive: u32,
    /// Share of games, 0 to 1, in which nobody resigns (to measure false positives).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = PlaySettings::default().resign_disabled_fraction))]
    pub resign_disabled_fraction: f64,
    /// Share of games, 0 to 1, that start from a position of the coordinator's opening suite
    /// (`--openings`) rather than the standard start (0: none).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = PlaySettings::default().opening_share))]
    pub opening_share: f64,
}

impl Default for PlaySettings {
    fn default() -> PlaySettings {
        // The recipe measured to learn on a 2-core CPU (docs/LEARNING.md): few playouts, short
        // games ended by material adjudication, targets from the searched values.
        PlaySettings {
            ruleset: Ruleset::Chinese2011,
            max_plies: 80,
            playouts: 32,
            cheap_playouts: 8,
            full_search_probability: 0.25,
            temperature: 1.0,
            temperature_plies: 20,
            late_temperature: 0.5,
            root_policy_temperature: 1.0,
            dirichlet_alpha: 0.25,
            dirichlet_fraction: 0.25,
            policy_target: PolicyTarget::QSoftmax,
            gumbel_considered: 0,
            // Self-play searches for mates as far as evaluation searches do.
            mate_moves: SearchConfig::default().mate_moves,
            // A minor piece, or a rook: one or two pawns ahead at the cap is noise, not a win.
            material_adjudication: 3,
            repeater_loses: true,
            resign: true,
            resign_threshold: -0.9,
            resign_consecutive: 3,
            resign_disabled_fraction: 0.1,
            opening_share: 0.0,
        }
    }
}

/// A play setting outside its range.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
#[error("play setting {field} = {value} is invalid: expected {expected}")]
pub struct SettingsError {
    /// The setting's name (as in the settings file; the flag is `--` and the name with dashes).
    pub field: &'static str,
    /// Its value.
    pub value: String,
    /// What it must be.
    pub expected: &'static str,
}

/// Largest playouts per search a setting may ask for (far beyond any real use; a guard against
/// a typo that would make every worker search forever).
const MAX_PLAYOUTS: u32 = 1 << 20;

impl PlaySettings {
    /// Checks every setting's range; the error names the first one out of range.
    pub fn validate(&self) -> Result<(), SettingsError> {
        fn check(
            ok: bool,
            field: &'static str,
            value: impl fmt::Display,
            expected: &'static str,
        ) -> Result<(), SettingsError> {
            if ok { Ok(()) } else { Err(SettingsError { field, value: value.to_string(), expected }) }
        }
        let unit = |v: f64| (0.0..=1.0).contains(&v);
        let temperature = |t: f32| t.is_finite() && t >= 0.0;
        check((1..=MAX_PLAYOUTS).contains(&self.playouts), "playouts", self.playouts, "1 to 1048576")?;
        check(
            (1..=MAX_PLAYOUTS).contains(&self.cheap_playouts),
            "cheap_playouts",
            self.cheap_playouts,
            "1 to 1048576",
        )?;
        check(unit(self.full_search_probability), "full_search_probability", self.full_search_probability, "0 to 1")?;
        check(temperature(self.temperature), "temperature", self.temperature, "a finite number, 0 or more")?;
        check(
            temperature(self.late_temperature),
            "late_temperature",
            self.late_temperature,
            "a finite number, 0 or more",
        )?;
        check(
            self.root_policy_temperature.is_finite() && self.root_policy_temperature > 0.0,
            "root_policy_temperature",
            self.root_policy_temperature,
            "a positive, finite number",
        )?;
        check(
            self.dirichlet_alpha.is_finite() && self.dirichlet_alpha > 0.0,
            "dirichlet_alpha",
            self.dirichlet_alpha,
            "a positive, finite number",
        )?;
        check(unit(f64::from(self.dirichlet_fraction)), "dirichlet_fraction", self.dirichlet_fraction, "0 to 1")?;
        check(
            self.gumbel_considered == 0 || (2..=256).contains(&self.gumbel_considered),
            "gumbel_considered",
            self.gumbel_considered,
            "0 (off) or 2 to 256",
        )?;
        check((1..=4).contains(&self.mate_moves), "mate_moves", self.mate_moves, "1 to 4")?;
        check((-1.0..=1.0).contains(&self.resign_threshold), "resign_threshold", self.resign_threshold, "-1 to 1")?;
        check(self.resign_consecutive >= 1, "resign_consecutive", self.resign_consecutive, "1 or more")?;
        check(
            unit(self.resign_disabled_fraction),
            "resign_disabled_fraction",
            self.resign_disabled_fraction,
            "0 to 1",
        )?;
        check(unit(self.opening_share), "opening_share", self.opening_share, "0 to 1")
    }

    /// The rules self-play games are played and adjudicated under: the ruleset and the
    /// self-play adjudications, the natural move limit of the ruleset, the length cap.
    ///
    /// ```
    /// let settings = xqz_mcts::PlaySettings { max_plies: 200, material_adjudication: 0, ..Default::default() };
    /// let config = settings.game_config();
    /// assert_eq!((config.max_plies, config.material_adjudication), (Some(200), None));
    /// ```
    pub fn game_config(&self) -> GameConfig {
        let limit = |n: u32| (n > 0).then_some(n);
        GameConfig {
            ruleset: self.ruleset,
            natural_limit: None,
            max_plies: limit(self.max_plies),
            material_adjudication: limit(self.material_adjudication),
            repeater_loses: self.repeater_loses,
        }
    }

    /// The resignation rule, if sides may resign.
    pub fn resign_config(&self) -> Option<ResignConfig> {
        self.resign.then_some(ResignConfig {
            threshold: self.resign_threshold,
            consecutive: self.resign_consecutive,
            disabled_fraction: self.resign_disabled_fraction,
        })
    }
}

/// When a side gives up.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct ResignConfig {
    /// A side resigns when its searched value (win - loss, in [-1, 1]) stays below this...
    pub threshold: f32,
    /// ...for this many of its own moves in a row.
    pub consecutive: u32,
    /// Fraction of games in which nobody resigns (to measure false positives).
    pub disabled_fraction: f64,
}

/// What a full search records as its policy target.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum PolicyTarget {
    /// The visit fractions (AlphaZero).
    Visits,
    /// Gumbel MuZero's completed-Q policy ([`RootStats::completed_q_policy`]).
    CompletedQ,
    /// The completed-Q policy without the prior ([`RootStats::q_softmax_policy`]).
    QSoftmax,
}

impl PolicyTarget {
    /// The target of a search whose root is `root`, with the network's `priors` (before noise).
    pub fn of(self, root: &RootStats, priors: &[f32]) -> Vec<(Move, f32)> {
        match self {
            PolicyTarget::Visits => root.policy(),
            PolicyTarget::CompletedQ => root.completed_q_policy(priors),
            PolicyTarget::QSoftmax => root.q_softmax_policy(priors),
        }
    }
}

impl PolicyTarget {
    /// The name in settings files and on the command line.
    pub const fn name(self) -> &'static str {
        match self {
            PolicyTarget::Visits => "visits",
            PolicyTarget::CompletedQ => "completed-q",
            PolicyTarget::QSoftmax => "q-softmax",
        }
    }
}

impl fmt::Display for PolicyTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An unknown policy target name.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown policy target {0:?} (expected visits, completed-q or q-softmax)")]
pub struct ParsePolicyTargetError(String);

impl FromStr for PolicyTarget {
    type Err = ParsePolicyTargetError;
    fn from_str(s: &str) -> Result<PolicyTarget, ParsePolicyTargetError> {
        [PolicyTarget::Visits, PolicyTarget::CompletedQ, PolicyTarget::QSoftmax]
            .into_iter()
            .find(|t| t.name() == s)
            .ok_or_else(|| ParsePolicyTargetError(s.to_string()))
    }
}

impl Serialize for PolicyTarget {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for PolicyTarget {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<PolicyTarget, D::Error> {
        String::deserialize(deserializer)?.parse().map_err(serde::de::Error::custom)
    }
}

/// How the play settings change as a run's models get stronger: the bootstrap aids of
/// [`PlaySettings::default`] (a short game cap with material adjudication, the repeater losing)
/// give way to the rules alone. The coordinator applies it at each published model and keeps
/// every resulting settings version.
///
/// ```
/// use xqz_mcts::{PlaySchedule, PlaySettings};
///
/// let base = PlaySettings { max_plies: 80, ..Default::default() };
/// let schedule = PlaySchedule { cap_growth: 10, cap_limit: 200 };
/// assert_eq!(schedule.settings_for(&base, 0), base);
/// assert_eq!(schedule.settings_for(&base, 3).max_plies, 110);
/// // From model 12 on (80 + 120 plies), games end by the rules alone.
/// let late = schedule.settings_for(&base, 12);
/// assert_eq!((late.max_plies, late.material_adjudication, late.repeater_loses), (0, 0, false));
/// # Ok::<(), xqz_mcts::SettingsError>(())
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct PlaySchedule {
    /// Plies the self-play game cap grows by with each published model (0: it stays).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = PlaySchedule::default().cap_growth))]
    pub cap_growth: u32,
    /// Cap at which self-play turns to the rules alone: no cap, no material adjudication, the
    /// rules' draws for allowed repetitions (0: never).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = PlaySchedule::default().cap_limit))]
    pub cap_limit: u32,
}

impl Default for PlaySchedule {
    fn default() -> PlaySchedule {
        // With a model every 100 steps (about 5 minutes on a 2-core CPU), 80 plies grow to the
        // rules alone in about 4 hours; games past 300 plies are rare between strong players.
        PlaySchedule { cap_growth: 4, cap_limit: 300 }
    }
}

impl PlaySchedule {
    /// The settings in force once model `model_version` is published, from the run's `base`.
    pub fn settings_for(&self, base: &PlaySettings, model_version: u64) -> PlaySettings {
        if base.max_plies == 0 || self.cap_growth == 0 {
            return base.clone();
        }
        let grown = u64::from(base.max_plies) + u64::from(self.cap_growth) * model_version;
        if self.cap_limit > 0 && grown >= u64::from(self.cap_limit) {
            return PlaySettings { max_plies: 0, material_adjudication: 0, repeater_loses: false, ..base.clone() };
        }
        PlaySettings { max_plies: u32::try_from(grown).unwrap_or(u32::MAX), ..base.clone() }
    }
}

/// Serde for [`Ruleset`] by its name (the rules core has no serde dependency).
mod ruleset_name {
    use serde::{Deserialize, Deserializer, Serializer};
    use xiangqi::game::Ruleset;

    pub fn serialize<S: Serializer>(ruleset: &Ruleset, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(ruleset.name())
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Ruleset, D::Error> {
        String::deserialize(deserializer)?.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_round_trip_through_toml() {
        let settings = PlaySettings::default();
        settings.validate().unwrap();
        let text = toml::to_string(&settings).unwrap();
        assert_eq!(toml::from_str::<PlaySettings>(&text).unwrap(), settings);
        let odd = PlaySettings {
            ruleset: Ruleset::Wxf,
            policy_target: PolicyTarget::CompletedQ,
            late_temperature: 0.3,
            gumbel_considered: 16,
            resign: false,
            opening_share: 0.25,
            ..settings
        };
        assert_eq!(toml::from_str::<PlaySettings>(&toml::to_string(&odd).unwrap()).unwrap(), odd);
    }

    #[test]
    fn every_range_is_checked() {
        let bad: [(&str, PlaySettings); 15] = [
            ("playouts", PlaySettings { playouts: 0, ..Default::default() }),
            ("cheap_playouts", PlaySettings { cheap_playouts: 0, ..Default::default() }),
            ("full_search_probability", PlaySettings { full_search_probability: 1.5, ..Default::default() }),
            ("full_search_probability", PlaySettings { full_search_probability: f64::NAN, ..Default::default() }),
            ("temperature", PlaySettings { temperature: -1.0, ..Default::default() }),
            ("late_temperature", PlaySettings { late_temperature: f32::INFINITY, ..Default::default() }),
            ("root_policy_temperature", PlaySettings { root_policy_temperature: 0.0, ..Default::default() }),
            ("dirichlet_alpha", PlaySettings { dirichlet_alpha: 0.0, ..Default::default() }),
            ("gumbel_considered", PlaySettings { gumbel_considered: 1, ..Default::default() }),
            ("gumbel_considered", PlaySettings { gumbel_considered: 257, ..Default::default() }),
            ("mate_moves", PlaySettings { mate_moves: 5, ..Default::default() }),
            ("resign_threshold", PlaySettings { resign_threshold: -2.0, ..Default::default() }),
            ("resign_consecutive", PlaySettings { resign_consecutive: 0, ..Default::default() }),
            ("resign_disabled_fraction", PlaySettings { resign_disabled_fraction: 2.0, ..Default::default() }),
            ("opening_share", PlaySettings { opening_share: -0.1, ..Default::default() }),
        ];
        for (field, settings) in bad {
            let error = settings.validate().unwrap_err();
            assert_eq!(error.field, field, "{error}");
            assert!(error.to_string().contains(field), "{error}");
        }
    }

    #[test]
    fn unknown_and_mistyped_keys_are_refused() {
        assert!(toml::from_str::<PlaySettings>("playout = 3").unwrap_err().to_string().contains("playout"));
        assert!(toml::from_str::<PlaySettings>("ruleset = \"fide\"").unwrap_err().to_string().contains("fide"));
        assert!(toml::from_str::<PlaySettings>("policy_target = \"best\"").unwrap_err().to_string().contains("best"));
    }
}
