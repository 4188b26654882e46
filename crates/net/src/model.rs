//! The network: a residual tower with a policy head (2086 logits) and a win/draw/loss value head,
//! and optionally auxiliary heads that only training reads (moves left, soft policy, opponent's
//! policy).
//!
//! ```
//! use xqz_net::{ModelConfig, Network, encoding::{self, History, INPUT_SIZE}, policy::POLICY_SIZE};
//!
//! let net = Network::new(&ModelConfig::builtin("tiny")?, tch::Device::Cpu);
//! let mut input = vec![0.0; INPUT_SIZE];
//! encoding::encode_position(&xiangqi::Position::startpos(), History::default(), &mut input);
//! let out = net.predict(&input)?;
//! assert_eq!(out.policy_logits.len(), POLICY_SIZE);
//! assert!((out.wdl[0..3].iter().sum::<f32>() - 1.0).abs() < 1e-5);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::sync::Mutex;

use tch::nn::{self, ModuleT};
use tch::{Device, Kind, Tensor};

use crate::config::ModelConfig;
use crate::encoding::{HEIGHT, INPUT_SIZE, PLANES, WIDTH};
use crate::policy::POLICY_SIZE;

const SQUARES: i64 = (HEIGHT * WIDTH) as i64;

/// Held while a network draws its initial weights from libtorch's one global generator, so that
/// a seeded initialisation is not interleaved with another thread's.
static INIT: Mutex<()> = Mutex::new(());

/// Epsilon of every batch normalisation (libtorch's default), which the inference graph folds in.
pub(crate) const BN_EPS: f64 = 1e-5;

/// A convolution without bias followed by batch normalisation.
#[derive(Debug)]
pub(crate) struct ConvBn {
    pub(crate) conv: nn::Conv2D,
    pub(crate) bn: nn::BatchNorm,
}

impl ConvBn {
    fn new(p: nn::Path, inputs: i64, outputs: i64, kernel: i64) -> ConvBn {
        let config = nn::ConvConfig { padding: kernel / 2, bias: false, ..Default::default() };
        ConvBn {
            conv: nn::conv2d(&p / "conv", inputs, outputs, kernel, config),
            bn: nn::batch_norm2d(&p / "bn", outputs, nn::BatchNormConfig { eps: BN_EPS, ..Default::default() }),
        }
    }

    fn forward_t(&self, x: &Tensor, train: bool) -> Tensor {
        self.bn.forward_t(&x.apply(&self.conv), train)
    }
}

/// Squeeze-excitation: per-channel gates computed from the channels' board averages.
#[derive(Debug)]
pub(crate) struct SqueezeExcite {
    pub(crate) reduce: nn::Linear,
    pub(crate) expand: nn::Linear,
}

impl SqueezeExcite {
    fn new(p: nn::Path, channels: i64, hidden: i64) -> SqueezeExcite {
        SqueezeExcite {
            reduce: nn::linear(&p / "reduce", channels, hidden, Default::default()),
            expand: nn::linear(&p / "expand", hidden, channels, Default::default()),
        }
    }

    fn forward(&self, x: &Tensor) -> Tensor {
        let (n, c) = (x.size()[0], x.size()[1]);
        let gates =
            x.mean_dim(&[2i64, 3][..], false, Kind::Float).apply(&self.reduce).relu().apply(&self.expand).sigmoid();
        x * gates.view([n, c, 1, 1])
    }
}

#[derive(Debug)]
pub(crate) struct ResidualBlock {
    pub(crate) first: ConvBn,
    pub(crate) second: ConvBn,
    pub(crate) se: Option<SqueezeExcite>,
}

impl ResidualBlock {
    fn forward_t(&self, x: &Tensor, train: bool) -> Tensor {
        let y = self.first.forward_t(x, train).relu();
        let mut y = self.second.forward_t(&y, train);
        if let Some(se) = &self.se {
            y = se.forward(&y);
        }
        (y + x).relu()
    }
}

/// One position's raw network output.
#[derive(Clone, Debug, PartialEq)]
pub struct Prediction {
    /// Policy logits over [`POLICY_SIZE`] moves, in the side to move's frame, unmasked.
    pub policy_logits: Vec<f32>,
    /// Win, draw, loss probabilities for the side to move.
    pub wdl: [f32; 3],
}

/// Outputs for a batch, on the host: `policy_logits` is `[n * POLICY_SIZE]`, `wdl` `[n * 3]`.
#[derive(Clone, Debug, PartialEq)]
pub struct BatchPrediction {
    /// Positions.
    pub n: usize,
    /// Row-major policy logits.
    pub policy_logits: Vec<f32>,
    /// Row-major win/draw/loss probabilities.
    pub wdl: Vec<f32>,
}

/// The network and its weights on one device.
#[derive(Debug)]
pub struct Network {
    vs: nn::VarStore,
    config: ModelConfig,
    pub(crate) stem: ConvBn,
    pub(crate) tower: Vec<ResidualBlock>,
    pub(crate) policy_conv: ConvBn,
    pub(crate) policy_fc: nn::Linear,
    pub(crate) value_conv: ConvBn,
    pub(crate) value_hidden: nn::Linear,
    pub(crate) value_out: nn::Linear,
    /// The moves-left head, if the config has one: from the value head's hidden units.
    pub(crate) moves_left: Option<nn::Linear>,
    /// The soft-policy head, if the config has one: a second linear layer on the policy head's
    /// features.
    pub(crate) soft_policy_fc: Option<nn::Linear>,
    /// The opponent-policy head, if the config has one: another linear layer on the policy
    /// head's features.
    pub(crate) opponent_policy_fc: Option<nn::Linear>,
}

/// Every head's output for a batch, as training reads them.
#[derive(Debug)]
pub struct Heads {
    /// Policy logits `[n, POLICY_SIZE]`.
    pub policy: Tensor,
    /// Win/draw/loss logits `[n, 3]`.
    pub value: Tensor,
    /// With a moves-left head: the plies left `[n]`, in hundreds (non-negative).
    pub moves_left: Option<Tensor>,
    /// With a soft-policy head: its logits `[n, POLICY_SIZE]`, fitted to the policy target made
    /// flatter ([`ModelConfig::soft_policy`]).
    pub soft_policy: Option<Tensor>,
    /// With an opponent-policy head: its logits `[n, POLICY_SIZE]` over the opponent's replies,
    /// in the opponent's frame ([`ModelConfig::opponent_policy`]).
    pub opponent_policy: Option<Tensor>,
}

impl Network {
    /// A freshly initialised network of the given shape.
    ///
    /// # Panics
    /// If the configuration is invalid ([`ModelConfig::validate`]).
    pub fn new(config: &ModelConfig, device: Device) -> Network {
        let _init = INIT.lock().unwrap_or_else(|e| e.into_inner());
        Network::build(config, device)
    }

    /// A freshly initialised network whose weights depend on `seed` alone, whatever other threads
    /// of the process do with libtorch's generator meanwhile.
    ///
    /// ```
    /// use xqz_net::{ModelConfig, Network};
    /// let tiny = ModelConfig::builtin("tiny")?;
    /// let (a, b) = (Network::seeded(&tiny, tch::Device::Cpu, 7), Network::seeded(&tiny, tch::Device::Cpu, 7));
    /// let input = vec![0.0; xqz_net::encoding::INPUT_SIZE];
    /// assert_eq!(a.predict(&input)?.policy_logits, b.predict(&input)?.policy_logits);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Panics
    /// If the configuration is invalid ([`ModelConfig::validate`]).
    pub fn seeded(config: &ModelConfig, device: Device, seed: u64) -> Network {
        let _init = INIT.lock().unwrap_or_else(|e| e.into_inner());
        tch::manual_seed(seed as i64);
        Network::build(config, device)
    }

    fn build(config: &ModelConfig, device: Device) -> Network {
        if let Err(e) = config.validate() {
            panic!("invalid model config {}: {e}", config.name);
        }
        let vs = nn::VarStore::new(device);
        let root = vs.root();
        let c = config.channels as i64;
        let tower = (0..config.blocks)
            .map(|i| {
                let p = &root / format!("block{i}");
                ResidualBlock {
                    first: ConvBn::new(&p / "first", c, c, 3),
                    second: ConvBn::new(&p / "second", c, c, 3),
                    se: (config.se_ratio > 0).then(|| SqueezeExcite::new(&p / "se", c, c / config.se_ratio as i64)),
                }
            })
            .collect();
        let (pc, vc) = (config.policy_channels as i64, config.value_channels as i64);
        let hidden = config.value_hidden as i64;
        // Zero weights make a fresh network's policy uniform over the legal moves. Random ones
        // give it arbitrary preferences, which steer a few playouts away from the moves that
        // matter, and which a policy target built on the priors (completed Q) keeps.
        let zero = nn::LinearConfig { ws_init: nn::Init::Const(0.0), bs_init: Some(nn::Init::Const(0.0)), bias: true };
        Network {
            stem: ConvBn::new(&root / "stem", PLANES as i64, c, 3),
            tower,
            policy_conv: ConvBn::new(&root / "policy", c, pc, 1),
            policy_fc: nn::linear(&root / "policy" / "fc", pc * SQUARES, POLICY_SIZE as i64, zero),
            value_conv: ConvBn::new(&root / "value", c, vc, 1),
            value_hidden: nn::linear(&root / "value" / "hidden", 2 * vc, hidden, Default::default()),
            value_out: nn::linear(&root / "value" / "out", hidden, 3, Default::default()),
            moves_left: config
                .moves_left
                .then(|| nn::linear(&root / "moves_left" / "out", hidden, 1, Default::default())),
            soft_policy_fc: config
                .soft_policy
                .then(|| nn::linear(&root / "soft_policy" / "fc", pc * SQUARES, POLICY_SIZE as i64, zero)),
            opponent_policy_fc: config
                .opponent_policy
                .then(|| nn::linear(&root / "opponent_policy" / "fc", pc * SQUARES, POLICY_SIZE as i64, zero)),
            config: config.clone(),
            vs,
        }
    }

    /// The same network without the heads only training reads (moves-left, soft policy,
    /// opponent policy): what play uses, with its weights, for shipping or committing a model
    /// at half the size or less. Its config has those heads off, under the same name.
    ///
    /// ```
    /// use xqz_net::{ModelConfig, Network};
    /// let trained = ModelConfig { opponent_policy: true, ..ModelConfig::builtin("tiny")? };
    /// let net = Network::seeded(&trained, tch::Device::Cpu, 3);
    /// let play = net.for_play();
    /// assert!(!play.config().opponent_policy && play.parameter_count() < net.parameter_count());
    /// let input = vec![0.5; xqz_net::encoding::INPUT_SIZE];
    /// assert_eq!(play.predict(&input)?.policy_logits, net.predict(&input)?.policy_logits);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn for_play(&self) -> Network {
        let config =
            ModelConfig { moves_left: false, soft_policy: false, opponent_policy: false, ..self.config.clone() };
        let mut play = Network::new(&config, self.device());
        // Every variable of the play network is one of this network's, by name.
        play.vs.copy(&self.vs).expect("a network's play heads are a subset of its heads");
        play
    }

    /// The shape it was built with.
    pub fn config(&self) -> &ModelConfig {
        &self.config
    }

    /// The device its weights live on.
    pub fn device(&self) -> Device {
        self.vs.device()
    }

    /// Its weights and batch-norm statistics.
    pub(crate) fn var_store(&self) -> &nn::VarStore {
        &self.vs
    }

    /// Number of trainable parameters.
    pub fn parameter_count(&self) -> usize {
        self.vs.trainable_variables().iter().map(|t| t.numel()).sum()
    }

    /// Policy logits `[n, POLICY_SIZE]` and value logits `[n, 3]` for inputs `[n, PLANES, 10, 9]`
    /// (the auxiliary heads, which only training reads, are not computed).
    pub fn forward_t(&self, input: &Tensor, train: bool) -> (Tensor, Tensor) {
        let x = self.trunk(input, train);
        let policy_features = self.policy_features(&x, train);
        (policy_features.apply(&self.policy_fc), self.value_hidden(&x, train).apply(&self.value_out))
    }

    /// Every head's output, the auxiliary ones included, for inputs `[n, PLANES, 10, 9]`.
    pub fn forward_heads(&self, input: &Tensor, train: bool) -> Heads {
        let x = self.trunk(input, train);
        let policy_features = self.policy_features(&x, train);
        let hidden = self.value_hidden(&x, train);
        Heads {
            policy: policy_features.apply(&self.policy_fc),
            value: hidden.apply(&self.value_out),
            moves_left: self.moves_left.as_ref().map(|head| hidden.apply(head).softplus().squeeze_dim(1)),
            soft_policy: self.soft_policy_fc.as_ref().map(|head| policy_features.apply(head)),
            opponent_policy: self.opponent_policy_fc.as_ref().map(|head| policy_features.apply(head)),
        }
    }

    fn trunk(&self, input: &Tensor, train: bool) -> Tensor {
        let mut x = self.stem.forward_t(input, train).relu();
        for block in &self.tower {
            x = block.forward_t(&x, train);
        }
        x
    }

    /// The policy head's features before its linear layer(s), `[n, policy_channels * 90]`.
    fn policy_features(&self, trunk: &Tensor, train: bool) -> Tensor {
        self.policy_conv.forward_t(trunk, train).relu().flatten(1, -1)
    }

    /// The value head's hidden units, `[n, value_hidden]`, which the value and the moves-left
    /// outputs read.
    fn value_hidden(&self, trunk: &Tensor, train: bool) -> Tensor {
        // The value head pools over the board (mean and max per channel, as KataGo's does), so a
        // feature such as "a rook of mine" counts the same on every square: material learnt in
        // the end games of self-play carries over to openings it has never seen lose a rook.
        let value = self.value_conv.forward_t(trunk, train).relu();
        let pooled =
            Tensor::cat(&[value.mean_dim(&[2i64, 3][..], false, Kind::Float), value.amax(&[2i64, 3][..], false)], 1);
        pooled.apply(&self.value_hidden).relu()
    }

    /// Evaluates encoded positions (`n * INPUT_SIZE` floats) in inference mode.
    pub fn predict_batch(&self, inputs: &[f32]) -> Result<BatchPrediction, tch::TchError> {
        assert_eq!(inputs.len() % INPUT_SIZE, 0, "inputs are not a whole number of positions");
        let n = inputs.len() / INPUT_SIZE;
        let _guard = tch::no_grad_guard();
        let x = Tensor::f_from_slice(inputs)?.f_view([n as i64, PLANES as i64, HEIGHT as i64, WIDTH as i64])?;
        let x = x.f_to_device(self.device())?;
        let (policy, value) = self.forward_t(&x, false);
        let wdl = value.f_softmax(-1, Kind::Float)?;
        Ok(BatchPrediction {
            n,
            policy_logits: Vec::<f32>::try_from(policy.f_to_device(Device::Cpu)?.f_flatten(0, -1)?)?,
            wdl: Vec::<f32>::try_from(wdl.f_to_device(Device::Cpu)?.f_flatten(0, -1)?)?,
        })
    }

    /// Evaluates one encoded position (`INPUT_SIZE` floats).
    pub fn predict(&self, input: &[f32]) -> Result<Prediction, tch::TchError> {
        let out = self.predict_batch(input)?;
        Ok(Prediction { policy_logits: out.policy_logits, wdl: [out.wdl[0], out.wdl[1], out.wdl[2]] })
    }
}
