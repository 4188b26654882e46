//! How the trainer trains, as a run folder's `settings.toml` (section `[train]`) and the flags of
//! `xqz train` and `xqz run` hold it: one type with one [`Default`] and one
//! [`TrainSettings::validate`], turned into the loop's [`TrainerConfig`] in one place.
//!
//! ```
//! use xqz_trainer::TrainSettings;
//!
//! let settings = TrainSettings { lr_schedule: "0:0.02,1000:0.002".into(), ..Default::default() };
//! assert_eq!(settings.learning_rates()?, vec![(0, 0.02), (1000, 0.002)]);
//! let bad = TrainSettings { policy_smoothing: 2.0, ..Default::default() };
//! assert!(bad.validate().unwrap_err().to_string().contains("policy_smoothing"));
//! # Ok::<(), xqz_trainer::TrainSettingsError>(())
//! ```

use serde::{Deserialize, Serialize};
use xqz_net::{ConfigError, ModelConfig};

/// How the trainer trains; see the module docs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct TrainSettings {
    /// Model config: tiny, mid, small, standard or a .toml file (a resumed run must match it).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = TrainSettings::default().model))]
    pub model: String,
    /// Rows per training step.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = TrainSettings::default().batch_size))]
    pub batch_size: usize,
    /// Learning-rate schedule `STEP:RATE,...` (from each step on, its rate; the first at step 0).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = TrainSettings::default().lr_schedule))]
    pub lr_schedule: String,
    /// Nesterov momentum, 0 to 1.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = TrainSettings::default().momentum))]
    pub momentum: f64,
    /// L2 weight decay, 0 or more.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = TrainSettings::default().weight_decay))]
    pub weight_decay: f64,
    /// Training samples allowed per self-play sample in the dataset.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = TrainSettings::default().samples_per_sample))]
    pub samples_per_sample: f64,
    /// Share of the search's root estimate in the value target, 0 to 1 (the rest is the game's
    /// result).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = TrainSettings::default().value_q_ratio))]
    pub value_q_ratio: f32,
    /// Share of a uniform spread over the recorded (legal) moves in the policy target, 0 to 1.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = TrainSettings::default().policy_smoothing))]
    pub policy_smoothing: f32,
    /// Share of a material estimate of the position in the value target, 0 to 1 (knowledge put
    /// in, not learnt: it keeps more material better where won games' results saturate).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = TrainSettings::default().material_target))]
    pub material_target: f32,
    /// Training samples over which --material-target fades linearly to 0 (0: it does not fade).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = TrainSettings::default().material_fade))]
    pub material_fade: u64,
    /// Samples the replay window keeps in full before it grows more slowly than the data
    /// (KataGo's c; past it the window grows as c * (1 + 0.4 * ((n / c)^0.75 - 1) / 0.75)).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = TrainSettings::default().window))]
    pub window: u64,
    /// Plies over which the game result's share of the value target fades, the search's root
    /// estimate taking the rest (0: the share does not fade).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = TrainSettings::default().result_horizon))]
    pub result_horizon: f32,
    /// Training samples over which checkpoints' and published models' weights are averaged (an
    /// exponential moving average; 0: the latest weights), so that a model is not one step's
    /// noise.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = TrainSettings::default().average_samples))]
    pub average_samples: u64,
    /// Share of each position's policy weight, 0 to 1, that goes by how much its search's policy
    /// surprised the network (KataGo's policy surprise weighting; 0: all weigh the same).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = TrainSettings::default().policy_surprise))]
    pub policy_surprise: f32,
    /// Weight of the moves-left loss for a network with a moves-left head (a model config with
    /// `moves_left = true`, e.g. `--model models/mid-moves-left.toml`); ignored without one.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = TrainSettings::default().moves_left_weight))]
    pub moves_left_weight: f32,
    /// Weight of the soft-policy loss for a network with a soft-policy head (a model config with
    /// `soft_policy = true`, e.g. `--model models/mid-soft-policy.toml`); ignored without one.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = TrainSettings::default().soft_policy_weight))]
    pub soft_policy_weight: f32,
    /// Weight of the opponent-policy loss for a network with an opponent-policy head (a model
    /// config with `opponent_policy = true`, e.g. `--model models/mid-opponent-policy.toml`);
    /// ignored without one.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = TrainSettings::default().opponent_policy_weight))]
    pub opponent_policy_weight: f32,
    /// Samples in the dataset before the first step.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = TrainSettings::default().min_samples))]
    pub min_samples: usize,
    /// Training samples between checkpoints.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = TrainSettings::default().checkpoint_every_samples))]
    pub checkpoint_every_samples: u64,
    /// Training samples between published models (in samples, not steps, so that the cadence,
    /// and the game cap's growth with each model, mean the same on a CPU and a GPU).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = TrainSettings::default().publish_every_samples))]
    pub publish_every_samples: u64,
    /// Training samples between rows of the trainer's metrics.csv (each row: the mean losses
    /// since the last; a GPU waits for nothing between rows).
    #[cfg_attr(feature = "clap", arg(long, default_value_t = TrainSettings::default().metrics_every_samples))]
    pub metrics_every_samples: u64,
    /// Seed of the initial weights and of the sampling.
    #[cfg_attr(feature = "clap", arg(long, default_value_t = TrainSettings::default().seed))]
    pub seed: u64,
    /// A checkpoint whose weights a new run starts from instead of random ones (its counters and
    /// momentum start at 0, and it is published at once); the run's model must be its config. A
    /// run with checkpoints of its own resumes from them.
    #[cfg_attr(feature = "clap", arg(long))]
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_from: Option<std::path::PathBuf>,
}

impl Default for TrainSettings {
    fn default() -> TrainSettings {
        TrainSettings {
            model: "mid-opponent-policy".into(),
            batch_size: 256,
            lr_schedule: "0:0.02,20000:0.006,60000:0.002".into(),
            momentum: 0.9,
            weight_decay: 1e-4,
            samples_per_sample: 2.0,
            value_q_ratio: 0.0,
            policy_smoothing: 0.1,
            material_target: 0.5,
            material_fade: 2_000_000,
            window: 25_000,
            result_horizon: 0.0,
            average_samples: 0,
            policy_surprise: 0.5,
            moves_left_weight: xqz_net::TrainConfig::default().moves_left_weight,
            soft_policy_weight: xqz_net::TrainConfig::default().soft_policy_weight,
            opponent_policy_weight: xqz_net::TrainConfig::default().opponent_policy_weight,
            min_samples: 4096,
            checkpoint_every_samples: 25_600,
            publish_every_samples: 25_600,
            metrics_every_samples: 2_560,
            seed: 0,
            start_from: None,
        }
    }
}

/// A train setting that is out of range or cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum TrainSettingsError {
    /// A number outside its range.
    #[error("train setting {field} = {value} is invalid: expected {expected}")]
    Invalid {
        /// The setting's name (as in the settings file).
        field: &'static str,
        /// Its value.
        value: String,
        /// What it must be.
        expected: &'static str,
    },
    /// The model config cannot be found or read.
    #[error("train setting model: {0}")]
    Model(#[from] ConfigError),
}

impl TrainSettings {
    /// Checks every setting; the error names the first that is wrong.
    pub fn validate(&self) -> Result<(), TrainSettingsError> {
        self.checked().map(drop)
    }

    /// Checks every setting and returns what two of them resolve to: the learning-rate schedule
    /// and the model config.
    fn checked(&self) -> Result<(Vec<(u64, f64)>, ModelConfig), TrainSettingsError> {
        fn check(
            ok: bool,
            field: &'static str,
            value: impl ToString,
            expected: &'static str,
        ) -> Result<(), TrainSettingsError> {
            if ok { Ok(()) } else { Err(TrainSettingsError::Invalid { field, value: value.to_string(), expected }) }
        }
        let share = |v: f32| (0.0..=1.0).contains(&v);
        check(share(self.policy_surprise), "policy_surprise", self.policy_surprise, "0 to 1")?;
        for (field, weight) in [
            ("moves_left_weight", self.moves_left_weight),
            ("soft_policy_weight", self.soft_policy_weight),
            ("opponent_policy_weight", self.opponent_policy_weight),
        ] {
            check((0.0..=100.0).contains(&weight), field, weight, "0 to 100")?;
        }
        check(self.batch_size >= 1, "batch_size", self.batch_size, "1 or more")?;
        let schedule = self.learning_rates()?;
        check((0.0..1.0).contains(&self.momentum), "momentum", self.momentum, "0 to 1 (below 1)")?;
        check(
            self.weight_decay >= 0.0 && self.weight_decay.is_finite(),
            "weight_decay",
            self.weight_decay,
            "0 or more",
        )?;
        check(
            self.samples_per_sample > 0.0 && self.samples_per_sample.is_finite(),
            "samples_per_sample",
            self.samples_per_sample,
            "a positive number",
        )?;
        check(share(self.value_q_ratio), "value_q_ratio", self.value_q_ratio, "0 to 1")?;
        check(share(self.policy_smoothing), "policy_smoothing", self.policy_smoothing, "0 to 1")?;
        check(share(self.material_target), "material_target", self.material_target, "0 to 1")?;
        check(
            self.result_horizon >= 0.0 && self.result_horizon.is_finite(),
            "result_horizon",
            self.result_horizon,
            "a number of plies, 0 or more",
        )?;
        check(self.window >= 1, "window", self.window, "1 or more")?;
        for (field, samples) in [
            ("checkpoint_every_samples", self.checkpoint_every_samples),
            ("publish_every_samples", self.publish_every_samples),
            ("metrics_every_samples", self.metrics_every_samples),
        ] {
            check(samples >= 1, field, samples, "1 or more")?;
        }
        Ok((schedule, ModelConfig::resolve(&self.model)?))
    }

    /// The learning-rate schedule, sorted by step.
    pub fn learning_rates(&self) -> Result<Vec<(u64, f64)>, TrainSettingsError> {
        let invalid = || TrainSettingsError::Invalid {
            field: "lr_schedule",
            value: format!("{:?}", self.lr_schedule),
            expected: "STEP:RATE,... from step 0, with positive rates",
        };
        let mut schedule = self
            .lr_schedule
            .split(',')
            .map(|part| {
                let (step, rate) = part.split_once(':')?;
                Some((step.trim().parse::<u64>().ok()?, rate.trim().parse::<f64>().ok()?))
            })
            .collect::<Option<Vec<_>>>()
            .ok_or_else(invalid)?;
        schedule.sort_by_key(|e| e.0);
        if schedule.first().is_none_or(|e| e.0 != 0) || schedule.iter().any(|e| !(e.1 > 0.0 && e.1.is_finite())) {
            return Err(invalid());
        }
        Ok(schedule)
    }

    /// The training loop's config: these settings, reading the dataset at `data` and keeping the
    /// run in `run`, on `device`, stopping after `max_steps` if given.
    #[cfg(feature = "torch")]
    pub fn trainer_config(
        &self,
        data: xqz_dataset::DatasetLocation,
        run: std::path::PathBuf,
        device: xqz_net::Device,
        max_steps: Option<u64>,
    ) -> Result<crate::TrainerConfig, TrainSettingsError> {
        use std::time::Duration;

        use xqz_dataset::{GrowingWindow, WindowSize};
        use xqz_net::TrainConfig;

        use crate::{Targets, TrainerConfig};

        let (lr_schedule, model) = self.checked()?;
        let opponent_reply = model.opponent_policy;
        Ok(TrainerConfig {
            data,
            run,
            backup: None,
            model,
            device,
            optimizer: TrainConfig {
                learning_rate: lr_schedule[0].1,
                momentum: self.momentum,
                weight_decay: self.weight_decay,
                average_samples: self.average_samples,
                policy_surprise: self.policy_surprise,
                moves_left_weight: self.moves_left_weight,
                soft_policy_weight: self.soft_policy_weight,
                opponent_policy_weight: self.opponent_policy_weight,
            },
            lr_schedule,
            batch_size: self.batch_size,
            window: WindowSize::Growing(GrowingWindow { c: self.window as f64, ..GrowingWindow::default() }),
            samples_per_new_sample: self.samples_per_sample,
            targets: Targets {
                value_q_ratio: self.value_q_ratio,
                policy_smoothing: self.policy_smoothing,
                result_horizon: self.result_horizon,
                material_share: self.material_target,
                material_fade: self.material_fade,
                opponent_reply,
            },
            min_samples: self.min_samples,
            checkpoint_every_samples: self.checkpoint_every_samples,
            publish_every_samples: self.publish_every_samples,
            metrics_every_samples: self.metrics_every_samples,
            max_steps,
            poll: Duration::from_secs(2),
            seed: self.seed,
            start_from: self.start_from.clone(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_every_range_is_checked() {
        TrainSettings::default().validate().unwrap();
        let bad = [
            ("batch_size", TrainSettings { batch_size: 0, ..Default::default() }),
            ("lr_schedule", TrainSettings { lr_schedule: "5:0.1".into(), ..Default::default() }),
            ("lr_schedule", TrainSettings { lr_schedule: "0:-1".into(), ..Default::default() }),
            ("lr_schedule", TrainSettings { lr_schedule: "x".into(), ..Default::default() }),
            ("momentum", TrainSettings { momentum: 1.0, ..Default::default() }),
            ("samples_per_sample", TrainSettings { samples_per_sample: 0.0, ..Default::default() }),
            ("value_q_ratio", TrainSettings { value_q_ratio: -0.1, ..Default::default() }),
            ("material_target", TrainSettings { material_target: 1.5, ..Default::default() }),
            ("policy_surprise", TrainSettings { policy_surprise: f32::NAN, ..Default::default() }),
            ("moves_left_weight", TrainSettings { moves_left_weight: -1.0, ..Default::default() }),
            ("soft_policy_weight", TrainSettings { soft_policy_weight: f32::INFINITY, ..Default::default() }),
            ("opponent_policy_weight", TrainSettings { opponent_policy_weight: -0.5, ..Default::default() }),
            ("result_horizon", TrainSettings { result_horizon: f32::NAN, ..Default::default() }),
            ("publish_every_samples", TrainSettings { publish_every_samples: 0, ..Default::default() }),
            ("metrics_every_samples", TrainSettings { metrics_every_samples: 0, ..Default::default() }),
            ("window", TrainSettings { window: 0, ..Default::default() }),
            ("model", TrainSettings { model: "huge".into(), ..Default::default() }),
        ];
        for (field, settings) in bad {
            let error = settings.validate().unwrap_err().to_string();
            assert!(error.contains(field), "{field}: {error}");
        }
    }
}
