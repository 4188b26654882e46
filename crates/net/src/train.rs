//! The training step: policy cross-entropy plus value (win/draw/loss) cross-entropy (plus the
//! auxiliary heads' losses, for a network that has them), minimised by SGD with Nesterov momentum
//! and L2 weight decay on convolution and linear weights. The momentum buffers are saved with the
//! checkpoint so that training resumes where it stopped.
//!
//! With [`TrainConfig::average_samples`] above 0 the trainer also keeps an exponential moving
//! average of every weight (KataGo's averaged weights for published models, as an EMA): a step on
//! `n` samples keeps `exp(-n / average_samples)` of the average, and never more than the share a
//! plain mean of all steps so far would (so the random start fades at once). The checkpoint's
//! weights are then the average, which is what every reader of a checkpoint plays; the latest
//! weights, which training goes on from, are saved with the optimizer state.
//!
//! ```
//! use xqz_net::{ModelConfig, Network, TrainBatch, TrainConfig, Trainer};
//! use xqz_net::encoding::{self, History, INPUT_SIZE};
//! use xqz_net::policy::{self, POLICY_SIZE};
//!
//! let net = Network::new(&ModelConfig::builtin("tiny")?, tch::Device::Cpu);
//! let mut trainer = Trainer::new(net, TrainConfig::default());
//! let mut inputs = vec![0.0; INPUT_SIZE];
//! encoding::encode_position(&xiangqi::Position::startpos(), History::default(), &mut inputs);
//! let mut target = vec![0.0; POLICY_SIZE];
//! target[policy::index("h2e2".parse()?).unwrap()] = 1.0;
//! let mut legal = vec![0.0; POLICY_SIZE];
//! for &mv in &xiangqi::Position::startpos().legal_moves() {
//!     legal[policy::index(mv).unwrap()] = 1.0;
//! }
//! let batch =
//!     TrainBatch { inputs: &inputs, policy: &target, legal: &legal, wdl: &[0.5, 0.5, 0.0], plies_left: &[], reply: &[] };
//! let first = trainer.step(&batch)?;
//! for _ in 0..20 {
//!     trainer.step(&batch)?;
//! }
//! assert!(trainer.step(&batch)?.total < first.total);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::BTreeMap;
use std::path::Path;

use tch::{Device, Kind, Tensor};

use crate::checkpoint::{self, CheckpointError, CheckpointInfo, CheckpointMeta};
use crate::config::{ModelConfig, TrainConfig};
use crate::encoding::{HEIGHT, INPUT_SIZE, PLANES, WIDTH};
use crate::model::Network;
use crate::policy::POLICY_SIZE;

/// One batch of training data, row-major, in the network's frame.
#[derive(Copy, Clone, Debug)]
pub struct TrainBatch<'a> {
    /// Encoded positions, `n * INPUT_SIZE`.
    pub inputs: &'a [f32],
    /// Policy targets, `n * POLICY_SIZE`, each row summing to 1 (or all 0: no policy target).
    pub policy: &'a [f32],
    /// 1 where a move is legal in the row's position, else 0, `n * POLICY_SIZE`. The policy's
    /// softmax is taken over the legal moves only, as at inference: over all 2086 moves, most of
    /// a small run's training goes into which moves tend to be legal, and the policy learns to
    /// like moves for being often legal (a piece at home) rather than for what they do here (a
    /// capture), which steers few playouts away from the moves that matter.
    pub legal: &'a [f32],
    /// Value targets (win, draw, loss for the side to move), `n * 3`, each row summing to 1.
    pub wdl: &'a [f32],
    /// Plies from each row's position to its game's end, `n` (the moves-left head's target), or
    /// empty: no moves-left target.
    pub plies_left: &'a [f32],
    /// The opponent's reply to each row's move, `n * POLICY_SIZE` in the opponent's frame, each
    /// row summing to 1 (or all 0: no reply target), the opponent-policy head's target; or
    /// empty: no reply targets.
    pub reply: &'a [f32],
}

/// Mean losses of one step.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Losses {
    /// Policy cross-entropy, averaged over the rows that have a policy target.
    pub policy: f64,
    /// Value cross-entropy.
    pub value: f64,
    /// Their sum, which the step minimises (with weight decay).
    pub total: f64,
}

/// Why a training step failed; the weights are unchanged.
#[derive(Debug, thiserror::Error)]
pub enum TrainError {
    /// The batch's arrays do not describe the same rows.
    #[error("bad training batch: {0}")]
    BadBatch(String),
    /// The loss is NaN or infinite.
    #[error("training loss is not finite (policy {policy}, value {value}); step skipped")]
    NonFinite {
        /// Policy loss.
        policy: f64,
        /// Value loss.
        value: f64,
    },
    /// libtorch failed.
    #[error("training step: {0}")]
    Torch(#[from] tch::TchError),
}

struct Parameter {
    weight: Tensor,
    velocity: Tensor,
    decay: bool,
}

/// A network with its optimizer state and training counters.
pub struct Trainer {
    net: Network,
    config: TrainConfig,
    parameters: BTreeMap<String, Parameter>,
    /// The variables that are not trained but move in a training pass (batch-norm statistics).
    statistics: Vec<Tensor>,
    info: CheckpointInfo,
    /// With averaging on: each variable of the network by name, with its moving average.
    average: Option<BTreeMap<String, Averaged>>,
}

struct Averaged {
    live: Tensor,
    average: Tensor,
}

/// The optimizer state file's name for the latest value of a variable whose average is saved as
/// the checkpoint's weights.
fn latest_name(variable: &str) -> String {
    format!("latest/{variable}")
}

impl std::fmt::Debug for Trainer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Trainer")
            .field("model", &self.net.config().name)
            .field("config", &self.config)
            .field("info", &self.info)
            .finish()
    }
}

impl Trainer {
    /// Starts training `net` with zero momentum.
    pub fn new(net: Network, config: TrainConfig) -> Trainer {
        let parameters = net
            .var_store()
            .variables()
            .into_iter()
            .filter(|(_, t)| t.requires_grad())
            .map(|(name, weight)| {
                let decay = weight.dim() > 1;
                let velocity = weight.zeros_like().detach();
                (name, Parameter { weight, velocity, decay })
            })
            .collect();
        let statistics =
            net.var_store().variables().into_values().filter(|t| !t.requires_grad() && t.is_floating_point()).collect();
        let mut trainer =
            Trainer { net, config, parameters, statistics, info: CheckpointInfo::default(), average: None };
        trainer.set_average_samples(config.average_samples);
        trainer
    }

    /// Turns weight averaging on over `samples` training samples (0: off). Turned on, the average
    /// starts from the current weights.
    pub fn set_average_samples(&mut self, samples: u64) {
        self.config.average_samples = samples;
        if samples == 0 {
            self.average = None;
        } else if self.average.is_none() {
            let _guard = tch::no_grad_guard();
            let variables = self.net.var_store().variables().into_iter();
            self.average =
                Some(variables.map(|(name, live)| (name, Averaged { average: live.detach().copy(), live })).collect());
        }
    }

    /// Resumes from a checkpoint: weights, momentum, settings and counters. With `expected`, a
    /// checkpoint of another model config is refused.
    pub fn resume(path: &Path, device: Device, expected: Option<&ModelConfig>) -> Result<Trainer, CheckpointError> {
        let (net, meta) = checkpoint::load(path, device, expected)?;
        let config = meta.optimizer.as_ref().map_or_else(TrainConfig::default, |o| o.config);
        // The network now holds the checkpoint's weights, which are the average when it averaged:
        // the average starts from them, and the latest weights are read into the network.
        let mut trainer = Trainer::new(net, config);
        trainer.info = meta.info;
        checkpoint::load_optimizer(path, &meta, &trainer.optimizer_state().into_iter().collect())?;
        Ok(trainer)
    }

    /// The optimizer state by name: momentum buffers, and the latest weights when the checkpoint's
    /// weights are their average.
    fn optimizer_state(&self) -> BTreeMap<String, Tensor> {
        let velocities = self.parameters.iter().map(|(name, p)| (name.clone(), p.velocity.shallow_clone()));
        let latest = self.average.iter().flatten().map(|(name, a)| (latest_name(name), a.live.shallow_clone()));
        velocities.chain(latest).collect()
    }

    /// Saves weights (their average, when averaging), momentum, settings and counters (with
    /// `model_version`) to `path`.
    pub fn save(&self, path: &Path, model_version: u64) -> Result<CheckpointMeta, CheckpointError> {
        let weights: BTreeMap<String, Tensor> = match &self.average {
            Some(average) => average.iter().map(|(name, a)| (name.clone(), a.average.shallow_clone())).collect(),
            None => self.net.var_store().variables().into_iter().collect(),
        };
        let info = CheckpointInfo { model_version, ..self.info };
        checkpoint::save_with_optimizer(path, &self.net, &weights, info, Some((&self.optimizer_state(), self.config)))
    }

    /// The network being trained.
    pub fn network(&self) -> &Network {
        &self.net
    }

    /// Ends training and returns the network.
    pub fn into_network(self) -> Network {
        self.net
    }

    /// Optimizer settings.
    pub fn config(&self) -> TrainConfig {
        self.config
    }

    /// Changes the learning rate (schedules).
    pub fn set_learning_rate(&mut self, learning_rate: f64) {
        self.config.learning_rate = learning_rate;
    }

    /// Steps taken and samples seen.
    pub fn info(&self) -> CheckpointInfo {
        self.info
    }

    /// Notes the run's progress that the trainer does not count itself, saved with the next
    /// checkpoint: the dataset's samples, the guard's credit for earlier datasets and the seconds
    /// trained in all.
    pub fn set_progress(&mut self, dataset_samples: u64, guard_credit: u64, train_seconds: u64) {
        self.info.dataset_samples = dataset_samples;
        self.info.guard_credit = guard_credit;
        self.info.train_seconds = train_seconds;
    }

    /// One optimizer step on a batch; returns the batch's losses before the step. A batch whose
    /// loss is not finite changes nothing and is not counted.
    pub fn step(&mut self, batch: &TrainBatch<'_>) -> Result<Losses, TrainError> {
        let losses = self.step_on(&DeviceBatch::new(batch, self.net.device())?)?.read();
        if losses.is_err() {
            self.info.training_steps -= 1;
            self.info.samples_seen -= (batch.inputs.len() / INPUT_SIZE) as u64;
        }
        losses
    }

    /// One optimizer step on a batch already on the device, without waiting for it there: the
    /// losses stay on the device until read. A batch whose loss is not finite leaves the
    /// weights, their momentum and their average as they were (its error comes when its losses
    /// are read), but is counted.
    pub fn step_on(&mut self, batch: &DeviceBatch) -> Result<StepLosses, TrainError> {
        let statistics_before: Vec<Tensor> = self.statistics.iter().map(Tensor::copy).collect();
        let heads = self.net.forward_heads(&batch.inputs, true);
        // Finite, so that an illegal move's zero target times its log-probability stays zero.
        let policy_logits = heads.policy.f_masked_fill(&batch.illegal, -1e9)?;
        let row_cross_entropy = |logits: &Tensor, target: &Tensor| -> Result<Tensor, tch::TchError> {
            (target * logits.f_log_softmax(-1, Kind::Float)?).f_sum_dim_intlist(1, false, Kind::Float)?.f_neg()
        };
        // 1 for each row whose target is not all zero, and how many they are (at least 1).
        let with_target = |target: &Tensor| -> Result<(Tensor, Tensor), tch::TchError> {
            let rows = target.f_sum_dim_intlist(1, false, Kind::Float)?.f_gt(0.0)?.f_to_kind(Kind::Float)?;
            let count = rows.f_sum(Kind::Float)?.f_clamp_min(1.0)?;
            Ok((rows, count))
        };
        // Averaged over the rows that have a policy target only: with playout cap randomization
        // most rows have none, and a mean over all rows would train the policy at a fraction of
        // its rate and report a fraction of its loss.
        let (targeted, targets) = with_target(&batch.policy)?;
        let policy_cross_entropy = row_cross_entropy(&policy_logits, &batch.policy)?;
        // The loss reported is the plain mean, so that runs with and without surprise weighting
        // read alike; the one minimised weighs each row.
        let policy_loss = (&policy_cross_entropy * &targeted).f_sum(Kind::Float)?.f_div(&targets)?;
        let weighted_policy_loss =
            match self.surprise_weights(&policy_cross_entropy, &batch.policy, &targeted, &targets)? {
                Some(weights) => (&policy_cross_entropy * weights).f_sum(Kind::Float)?.f_div(&targets)?,
                None => policy_loss.shallow_clone(),
            };
        let value_loss = row_cross_entropy(&heads.value, &batch.wdl)?.f_mean(Kind::Float)?;
        for p in self.parameters.values_mut() {
            p.weight.zero_grad();
        }
        let total = &weighted_policy_loss + &value_loss;
        let total = match (&heads.moves_left, &batch.plies_left) {
            (Some(predicted), Some(target)) => {
                let loss = predicted.f_smooth_l1_loss(&(target / 100.0), tch::Reduction::Mean, 1.0)?;
                total + loss * f64::from(self.config.moves_left_weight)
            }
            _ => total,
        };
        let total = match &heads.soft_policy {
            Some(logits) => {
                let logits = logits.f_masked_fill(&batch.illegal, -1e9)?;
                let cross_entropy = row_cross_entropy(&logits, &soft_target(&batch.policy)?)?;
                let loss = (cross_entropy * &targeted).f_sum(Kind::Float)?.f_div(&targets)?;
                total + loss * f64::from(self.config.soft_policy_weight)
            }
            None => total,
        };
        let total = match (&heads.opponent_policy, &batch.reply) {
            (Some(logits), Some(reply)) => {
                // Over every move: the reply's legal moves are the next position's, not this one's.
                let (replied, rows) = with_target(reply)?;
                let loss = (row_cross_entropy(logits, reply)? * replied).f_sum(Kind::Float)?.f_div(&rows)?;
                total + loss * f64::from(self.config.opponent_policy_weight)
            }
            _ => total,
        };
        total.f_backward()?;

        let TrainConfig { learning_rate, momentum, weight_decay, average_samples, .. } = self.config;
        let _guard = tch::no_grad_guard();
        // Decided on the device, so that the step needs no answer from it.
        let finite = total.f_isfinite()?;
        let keep_if_finite = |target: &mut Tensor, new: Tensor| target.f_copy_(&new.f_where_self(&finite, target)?);
        for (statistic, before) in self.statistics.iter_mut().zip(statistics_before) {
            statistic.f_copy_(&statistic.f_where_self(&finite, &before)?)?;
        }
        for p in self.parameters.values_mut() {
            let gradient = p.weight.grad();
            if !gradient.defined() {
                continue;
            }
            let gradient = if p.decay && weight_decay > 0.0 { gradient + &p.weight * weight_decay } else { gradient };
            let velocity = &p.velocity * momentum + &gradient;
            let update = gradient + &velocity * momentum;
            keep_if_finite(&mut p.velocity, velocity)?;
            let weight = &p.weight - update * learning_rate;
            keep_if_finite(&mut p.weight, weight)?;
        }
        if let Some(average) = &mut self.average {
            let (seen, rows) = (self.info.samples_seen as f64, batch.rows as f64);
            let kept = (-rows / average_samples as f64).exp().min(seen / (seen + rows));
            for a in average.values_mut() {
                let new =
                    if a.average.is_floating_point() { a.average.f_lerp(&a.live, 1.0 - kept)? } else { a.live.copy() };
                keep_if_finite(&mut a.average, new)?;
            }
        }
        self.info.training_steps += 1;
        self.info.samples_seen += batch.rows as u64;
        Ok(StepLosses { policy: policy_loss.detach(), value: value_loss.detach() })
    }
}

/// The soft-policy head's target: each row of the policy target raised to the power 1/4 and
/// renormalised (a row without a target stays all zero).
fn soft_target(policy: &Tensor) -> Result<Tensor, tch::TchError> {
    let flatter = policy.f_clamp_min(0.0)?.f_pow_tensor_scalar(0.25)?;
    let sums = flatter.f_sum_dim_intlist(1, true, Kind::Float)?.f_clamp_min(1e-12)?;
    flatter.f_div(&sums)
}

impl Trainer {
    /// With [`TrainConfig::policy_surprise`] `s` above 0, each row's weight in the policy loss:
    /// `(1 - s) + s * kl / mean(kl)` for a row with a policy target (`targeted` 1), 0 for one
    /// without, the surprise `kl` being the target's KL divergence from the network's policy (its
    /// cross-entropy less the target's entropy), held fixed for the step. `None` with `s` at 0:
    /// every row weighs the same, and the plain mean is the loss.
    fn surprise_weights(
        &self,
        cross_entropy: &Tensor,
        target: &Tensor,
        targeted: &Tensor,
        targets: &Tensor,
    ) -> Result<Option<Tensor>, tch::TchError> {
        let surprise = f64::from(self.config.policy_surprise);
        if surprise <= 0.0 {
            return Ok(None);
        }
        let entropy =
            (target * target.f_clamp_min(1e-12)?.f_log()?).f_sum_dim_intlist(1, false, Kind::Float)?.f_neg()?;
        let kl = (cross_entropy.detach() - entropy).f_clamp_min(0.0)? * targeted;
        let mean = kl.f_sum(Kind::Float)?.f_div(targets)?.f_clamp_min(1e-6)?;
        Ok(Some((kl.f_div(&mean)? * surprise + (1.0 - surprise)) * targeted))
    }

    /// Takes every setting of `config` but the learning rate (which a schedule sets), for a run
    /// resumed with other settings than its checkpoint's: averaging turned on starts from the
    /// current weights.
    pub fn reconfigure(&mut self, config: TrainConfig) {
        self.set_average_samples(config.average_samples);
        self.config = TrainConfig { learning_rate: self.config.learning_rate, ..config };
    }
}

/// A training batch on the trainer's device, ready for [`Trainer::step_on`]. Built apart from the
/// step (on a thread of its own, say), it keeps the host's work on the batch and the copy to the
/// device out of the step's way.
#[derive(Debug)]
pub struct DeviceBatch {
    inputs: Tensor,
    policy: Tensor,
    /// True where a move is illegal.
    illegal: Tensor,
    wdl: Tensor,
    /// Plies to each row's game's end, if the batch has them.
    plies_left: Option<Tensor>,
    /// The opponent's replies, if the batch has them.
    reply: Option<Tensor>,
    rows: usize,
}

impl DeviceBatch {
    /// Checks that the batch's arrays describe the same rows and copies them to `device` (on
    /// CUDA through pinned memory, without waiting for the copy).
    pub fn new(batch: &TrainBatch<'_>, device: Device) -> Result<DeviceBatch, TrainError> {
        let n = batch.inputs.len() / INPUT_SIZE;
        if n == 0 || batch.inputs.len() != n * INPUT_SIZE {
            return Err(TrainError::BadBatch(format!(
                "{} input floats is not a positive multiple of {INPUT_SIZE}",
                batch.inputs.len()
            )));
        }
        if batch.policy.len() != n * POLICY_SIZE || batch.legal.len() != n * POLICY_SIZE || batch.wdl.len() != n * 3 {
            return Err(TrainError::BadBatch(format!(
                "{n} rows of inputs, but {} policy floats and {} legal-move flags (expected {} each) and {} value \
                 floats (expected {})",
                batch.policy.len(),
                batch.legal.len(),
                n * POLICY_SIZE,
                batch.wdl.len(),
                n * 3
            )));
        }
        if !batch.reply.is_empty() && batch.reply.len() != n * POLICY_SIZE {
            return Err(TrainError::BadBatch(format!(
                "{n} rows of inputs, but {} reply floats (expected {})",
                batch.reply.len(),
                n * POLICY_SIZE
            )));
        }
        if !batch.plies_left.is_empty() && batch.plies_left.len() != n {
            return Err(TrainError::BadBatch(format!(
                "{n} rows of inputs, but {} plies-left targets",
                batch.plies_left.len()
            )));
        }
        let rows = n as i64;
        let upload = |data: &[f32], shape: &[i64]| -> Result<Tensor, tch::TchError> {
            let host = Tensor::f_from_slice(data)?.f_view(shape)?;
            if device.is_cuda() {
                host.f_pin_memory(device)?.f_to_device_(device, Kind::Float, true, false)
            } else {
                Ok(host)
            }
        };
        Ok(DeviceBatch {
            inputs: upload(batch.inputs, &[rows, PLANES as i64, HEIGHT as i64, WIDTH as i64])?,
            policy: upload(batch.policy, &[rows, POLICY_SIZE as i64])?,
            illegal: upload(batch.legal, &[rows, POLICY_SIZE as i64])?.f_eq(0.0)?,
            wdl: upload(batch.wdl, &[rows, 3])?,
            plies_left: (!batch.plies_left.is_empty()).then(|| upload(batch.plies_left, &[rows])).transpose()?,
            reply: (!batch.reply.is_empty()).then(|| upload(batch.reply, &[rows, POLICY_SIZE as i64])).transpose()?,
            rows: n,
        })
    }
}

/// A step's mean losses, still on the device: reading them waits for the step there, so a
/// training loop reads them only when it reports them.
#[derive(Debug)]
pub struct StepLosses {
    policy: Tensor,
    value: Tensor,
}

impl StepLosses {
    /// The losses; an error if they are not finite (the step changed nothing).
    pub fn read(&self) -> Result<Losses, TrainError> {
        StepLosses::mean(std::slice::from_ref(self))
    }

    /// The mean of several steps' losses, read at once; an error if any step's are not finite
    /// (those steps changed nothing).
    pub fn mean(steps: &[StepLosses]) -> Result<Losses, TrainError> {
        if steps.is_empty() {
            return Err(TrainError::BadBatch("no steps to average".into()));
        }
        let stacked = |part: fn(&StepLosses) -> &Tensor| -> Result<Tensor, tch::TchError> {
            Tensor::f_stack(&steps.iter().map(part).collect::<Vec<_>>(), 0)
        };
        let (policy, value) = (stacked(|s| &s.policy)?, stacked(|s| &s.value)?);
        // One read for both: a copy from the device waits for every step before it.
        let both = Tensor::f_stack(&[policy.f_mean(Kind::Double)?, value.f_mean(Kind::Double)?], 0)?
            .f_to_device(Device::Cpu)?;
        let (policy, value) = (both.f_double_value(&[0])?, both.f_double_value(&[1])?);
        if !(policy + value).is_finite() {
            return Err(TrainError::NonFinite { policy, value });
        }
        Ok(Losses { policy, value, total: policy + value })
    }
}
