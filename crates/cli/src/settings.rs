//! Settings files: a run folder's `settings.toml` holds the play settings (`[play]`, what the
//! coordinator dictates), how they change as the run's models are published (`[schedule]`, the
//! coordinator's too) and the trainer's (`[train]`); each role is handed the file and reads its
//! own sections. Flags override the file; for `xqz run`, whose file records an experiment, a
//! flag that contradicts it is refused unless the user says `--override`.

use std::path::Path;

use anyhow::{Context, Result};
use clap::ArgMatches;
use clap::parser::ValueSource;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use xqz_mcts::{PlaySchedule, PlaySettings};
use xqz_trainer::TrainSettings;

/// The contents of a settings file.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SettingsFile {
    /// How self-play games are played.
    pub play: PlaySettings,
    /// How the play settings change with each published model.
    pub schedule: PlaySchedule,
    /// How the trainer trains.
    pub train: TrainSettings,
    /// The matches the coordinator queues for each published model, and its gate.
    pub evaluation: xqz_coordinator::Evaluation,
}

impl SettingsFile {
    /// Reads and checks `path`.
    pub fn load(path: &Path) -> Result<SettingsFile> {
        let text = std::fs::read_to_string(path).with_context(|| format!("read settings {}", path.display()))?;
        let file: SettingsFile = toml::from_str(&text).with_context(|| format!("settings {}", path.display()))?;
        file.play.validate().with_context(|| format!("settings {}", path.display()))?;
        file.train.validate().with_context(|| format!("settings {}", path.display()))?;
        Ok(file)
    }

    /// Writes the file atomically.
    #[cfg(feature = "torch")]
    pub fn save(&self, path: &Path) -> Result<()> {
        let text = format!(
            "# The settings of this run: [play] is what the coordinator dictates to workers at first,\n\
             # [schedule] how that changes with each published model, [train] the trainer's, [evaluation]\n\
             # the coordinator's matches of each new model (for workers with --eval-share). `xqz run`\n\
             # resumes with them; a flag that contradicts them needs --override.\n{}",
            toml::to_string(self).context("settings as TOML")?
        );
        Ok(xqz_run_folder::write_atomic(path, text.as_bytes())?)
    }

    /// One role's settings: `section` of the file at `path` (the defaults without one), with the
    /// flags given on the command line (`given`) over them. The role checks them.
    pub fn role<T: Default + Serialize + DeserializeOwned>(
        path: Option<&Path>,
        section: impl FnOnce(SettingsFile) -> T,
        flags: &T,
        given: &ArgMatches,
    ) -> Result<T> {
        let base = match path {
            Some(path) => section(SettingsFile::load(path)?),
            None => T::default(),
        };
        Ok(override_with(&base, flags, given)?.0)
    }
}

/// A setting given on the command line with another value than the one it overrides.
#[derive(Clone, Debug, PartialEq)]
pub struct Change {
    /// The setting's name (the flag is `--` and the name with dashes).
    pub name: String,
    /// The value it had.
    pub before: toml::Value,
    /// The flag's value.
    pub after: toml::Value,
}

impl std::fmt::Display for Change {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "--{} {} (was {} = {})", self.name.replace('_', "-"), self.after, self.name, self.before)
    }
}

/// `base` with every field whose flag was given on the command line (`matches`) taken from
/// `flags`, which clap filled; and the fields that changed. The field names are clap's ids, so
/// this holds for every setting without naming any.
pub fn override_with<T: Serialize + DeserializeOwned>(
    base: &T,
    flags: &T,
    matches: &ArgMatches,
) -> Result<(T, Vec<Change>)> {
    let toml::Value::Table(mut merged) = toml::Value::try_from(base).context("settings as TOML")? else {
        anyhow::bail!("settings are not a table");
    };
    let toml::Value::Table(given) = toml::Value::try_from(flags).context("flags as TOML")? else {
        anyhow::bail!("flags are not a table");
    };
    let mut changes = Vec::new();
    for (name, value) in given {
        let on_command_line =
            matches.try_get_raw(&name).is_ok() && matches.value_source(&name) == Some(ValueSource::CommandLine);
        if on_command_line && merged.get(&name) != Some(&value) {
            let before = merged.insert(name.clone(), value.clone()).unwrap_or(toml::Value::String(String::new()));
            changes.push(Change { name, before, after: value });
        }
    }
    Ok((toml::Value::Table(merged).try_into().context("settings from TOML")?, changes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{Args, FromArgMatches, Parser};

    #[derive(Parser)]
    struct Flags {
        #[command(flatten)]
        play: PlaySettings,
        #[command(flatten)]
        train: TrainSettings,
    }

    fn parse(args: &[&str]) -> (Flags, ArgMatches) {
        let command = Flags::augment_args(clap::Command::new("t"));
        let matches = command.try_get_matches_from(std::iter::once("t").chain(args.iter().copied())).unwrap();
        (Flags::from_arg_matches(&matches).unwrap(), matches)
    }

    #[test]
    fn only_flags_given_override_and_changes_are_named() {
        let stored = SettingsFile {
            play: PlaySettings { playouts: 48, late_temperature: 0.7, ..Default::default() },
            train: TrainSettings { policy_smoothing: 0.3, ..Default::default() },
            ..Default::default()
        };
        // Defaults of flags not given (late temperature 0.5) leave the stored values alone.
        let (flags, matches) = parse(&["--playouts", "64", "--policy-smoothing", "0.3", "--repeater-loses", "false"]);
        let (play, changes) = override_with(&stored.play, &flags.play, &matches).unwrap();
        assert_eq!((play.playouts, play.late_temperature, play.repeater_loses), (64, 0.7, false));
        let names: Vec<_> = changes.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["playouts", "repeater_loses"]);
        assert_eq!(changes[0].to_string(), "--playouts 64 (was playouts = 48)");
        let (train, changes) = override_with(&stored.train, &flags.train, &matches).unwrap();
        assert_eq!((train, changes), (stored.train.clone(), vec![]));
    }

    #[test]
    fn the_opening_share_is_a_flag_and_a_key_of_the_play_section() {
        let (flags, matches) = parse(&["--opening-share", "0.25"]);
        let (play, changes) = override_with(&PlaySettings::default(), &flags.play, &matches).unwrap();
        assert_eq!(play.opening_share, 0.25);
        assert!(changes[0].to_string().starts_with("--opening-share 0.25 (was opening_share = 0"), "{}", changes[0]);
        let file: SettingsFile = toml::from_str("[play]\nopening_share = 0.5\n").unwrap();
        assert_eq!(file.play, PlaySettings { opening_share: 0.5, ..Default::default() });
    }

    #[test]
    fn the_cluster_deployment_settings_are_a_valid_settings_file() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/k8s/base/settings.toml");
        let file = SettingsFile::load(&path).unwrap();
        assert_eq!(file, SettingsFile::default(), "the cluster's settings are the defaults, as its comment says");
    }

    #[test]
    fn the_file_round_trips_and_refuses_unknown_keys() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.toml");
        let file = SettingsFile {
            play: PlaySettings { root_policy_temperature: 1.3, ..Default::default() },
            schedule: PlaySchedule { cap_growth: 7, cap_limit: 0 },
            train: TrainSettings { material_target: 0.25, ..Default::default() },
            evaluation: xqz_coordinator::Evaluation {
                previous_pairs: 40,
                anchor: Some("rung:R1".parse().unwrap()),
                gate: Some("0,10".parse().unwrap()),
                ..Default::default()
            },
        };
        file.save(&path).unwrap();
        assert_eq!(SettingsFile::load(&path).unwrap(), file);
        std::fs::write(&path, "[play]\nplayout = 3\n").unwrap();
        assert!(format!("{:#}", SettingsFile::load(&path).unwrap_err()).contains("playout"));
        std::fs::write(&path, "[play]\nplayouts = 0\n").unwrap();
        assert!(format!("{:#}", SettingsFile::load(&path).unwrap_err()).contains("playouts = 0"));
    }
}
