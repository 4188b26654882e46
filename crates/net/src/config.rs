//! Model sizes: the `models/*.toml` files, compiled in, or any TOML file of the same shape.
//!
//! ```
//! use xqz_net::ModelConfig;
//! let tiny = ModelConfig::builtin("tiny")?;
//! assert_eq!((tiny.blocks, tiny.channels), (2, 16));
//! assert!(ModelConfig::builtin("huge").is_err());
//! # Ok::<(), xqz_net::ConfigError>(())
//! ```

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The built-in configurations, by name.
const BUILTIN: [(&str, &str); 5] = [
    ("tiny", include_str!("../../../models/tiny.toml")),
    ("mid", include_str!("../../../models/mid.toml")),
    ("mid-opponent-policy", include_str!("../../../models/mid-opponent-policy.toml")),
    ("small", include_str!("../../../models/small.toml")),
    ("standard", include_str!("../../../models/standard.toml")),
];

/// A network's shape: a residual tower and its two heads.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelConfig {
    /// A name for logs and checkpoints.
    pub name: String,
    /// Residual blocks.
    pub blocks: u32,
    /// Filters of each 3x3 convolution in the tower.
    pub channels: u32,
    /// Squeeze-excitation reduction ratio (channels / ratio hidden units); 0 turns it off.
    pub se_ratio: u32,
    /// 1x1 filters of the policy head before its linear layer.
    pub policy_channels: u32,
    /// 1x1 filters of the value head.
    pub value_channels: u32,
    /// Hidden units of the value head.
    pub value_hidden: u32,
    /// A moves-left head (lc0's): the plies until the game ends, predicted from the value head's
    /// hidden units and trained beside it ([`TrainConfig::moves_left_weight`]). Off in the
    /// built-in configurations; absent from a file written before it: off.
    #[serde(default)]
    pub moves_left: bool,
    /// A soft-policy head (KataGo's auxiliary soft policy target): a second policy output fitted
    /// to the policy target raised to the power 1/4 and renormalised, so that training also
    /// tells apart the moves the search rated low, which the sharp target leaves near zero.
    /// Training reads it, play does not ([`TrainConfig::soft_policy_weight`]). Off in the
    /// built-in configurations; absent from a file written before it: off.
    #[serde(default)]
    pub soft_policy: bool,
    /// An opponent-policy head (KataGo's auxiliary target): the opponent's reply, the search
    /// policy of the position after this one's move, predicted from this one, which makes the
    /// network learn what the opponent threatens. Training reads it, play does not
    /// ([`TrainConfig::opponent_policy_weight`]). Off in the built-in configurations; absent
    /// from a file written before it: off.
    #[serde(default)]
    pub opponent_policy: bool,
}

/// A model configuration that cannot be read or makes no network.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// Not a built-in name, and no such file.
    #[error("unknown model {0:?} (built in: tiny, mid, small, standard; or a path to a .toml file)")]
    Unknown(String),
    /// The file cannot be read.
    #[error("cannot read model config {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The text is not a model config.
    #[error("bad model config {origin}: {message}")]
    Parse {
        /// The name or file it came from.
        origin: String,
        /// What is wrong.
        message: String,
    },
}

impl ModelConfig {
    /// A built-in configuration: `tiny`, `small` or `standard`.
    pub fn builtin(name: &str) -> Result<ModelConfig, ConfigError> {
        let (_, text) =
            BUILTIN.iter().find(|(n, _)| *n == name).ok_or_else(|| ConfigError::Unknown(name.to_string()))?;
        ModelConfig::from_toml(text, name)
    }

    /// A built-in name or the path of a TOML file.
    pub fn resolve(name_or_path: &str) -> Result<ModelConfig, ConfigError> {
        let path = Path::new(name_or_path);
        if BUILTIN.iter().any(|(n, _)| *n == name_or_path) || !path.exists() {
            return ModelConfig::builtin(name_or_path);
        }
        let text =
            std::fs::read_to_string(path).map_err(|source| ConfigError::Io { path: path.to_path_buf(), source })?;
        ModelConfig::from_toml(&text, &path.display().to_string())
    }

    /// Parses and checks a TOML text; `origin` names it in errors.
    pub fn from_toml(text: &str, origin: &str) -> Result<ModelConfig, ConfigError> {
        let parse = |message: String| ConfigError::Parse { origin: origin.to_string(), message };
        let config: ModelConfig = toml::from_str(text).map_err(|e| parse(e.to_string()))?;
        config.validate().map_err(parse)?;
        Ok(config)
    }

    /// The reason this configuration makes no network, if any.
    pub fn validate(&self) -> Result<(), String> {
        let positive = [
            ("blocks", self.blocks),
            ("channels", self.channels),
            ("policy_channels", self.policy_channels),
            ("value_channels", self.value_channels),
            ("value_hidden", self.value_hidden),
        ];
        if let Some((field, _)) = positive.iter().find(|(_, v)| *v == 0) {
            return Err(format!("{field} must be at least 1"));
        }
        if let Some((field, _)) = positive.iter().find(|(_, v)| *v > 4096) {
            return Err(format!("{field} over 4096"));
        }
        if self.se_ratio > 0 && self.channels / self.se_ratio == 0 {
            return Err(format!("se_ratio {} leaves no hidden unit for {} channels", self.se_ratio, self.channels));
        }
        Ok(())
    }
}

/// Optimizer settings.
#[derive(Copy, Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrainConfig {
    /// Step size.
    pub learning_rate: f64,
    /// Nesterov momentum.
    pub momentum: f64,
    /// L2 coefficient on convolution and linear weights (not biases or batch-norm parameters).
    pub weight_decay: f64,
    /// Training samples over which the saved weights are averaged (0: the latest weights are
    /// saved); see [`Trainer`](crate::Trainer).
    #[serde(default)]
    pub average_samples: u64,
    /// Share of each row's policy weight, 0 to 1, that goes by how much its target surprised the
    /// network (the target's KL divergence from the network's policy, over its batch's mean; the
    /// rest is even): KataGo's policy surprise weighting, with the network being trained standing
    /// in for the one that searched. 0: every row weighs the same.
    #[serde(default)]
    pub policy_surprise: f32,
    /// Weight of the moves-left loss (Huber, on plies / 100) beside the policy and value losses,
    /// for a network with a moves-left head ([`ModelConfig::moves_left`]); ignored without one.
    #[serde(default = "default_moves_left_weight")]
    pub moves_left_weight: f32,
    /// Weight of the soft-policy loss (its cross-entropy, averaged as the policy's over the rows
    /// with a policy target) beside the policy and value losses, for a network with a
    /// soft-policy head ([`ModelConfig::soft_policy`]); ignored without one.
    #[serde(default = "default_soft_policy_weight")]
    pub soft_policy_weight: f32,
    /// Weight of the opponent-policy loss (its cross-entropy over the rows with a reply target)
    /// beside the others, for a network with an opponent-policy head
    /// ([`ModelConfig::opponent_policy`]); ignored without one.
    #[serde(default = "default_opponent_policy_weight")]
    pub opponent_policy_weight: f32,
}

fn default_moves_left_weight() -> f32 {
    TrainConfig::default().moves_left_weight
}

fn default_soft_policy_weight() -> f32 {
    TrainConfig::default().soft_policy_weight
}

fn default_opponent_policy_weight() -> f32 {
    TrainConfig::default().opponent_policy_weight
}

impl Default for TrainConfig {
    fn default() -> TrainConfig {
        TrainConfig {
            learning_rate: 0.02,
            momentum: 0.9,
            weight_decay: 1e-4,
            average_samples: 0,
            policy_surprise: 0.0,
            moves_left_weight: 0.5,
            soft_policy_weight: 1.0,
            opponent_policy_weight: 0.15,
        }
    }
}
