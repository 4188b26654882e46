//! The network as an inference graph: each convolution's batch normalisation folded into its
//! weights and bias when a network is loaded for play, no autograd, activations in the memory
//! layout the CPU runs fastest (channels-last). The training graph ([`Network::forward_t`]) is
//! unchanged; this one gives its outputs in evaluation mode (to rounding) in fewer passes over
//! memory. With [`Precision::Bf16`] the convolutions run in bfloat16 (the heads' dense layers
//! and outputs stay in single precision), which CPUs with AVX-512 BF16 or AMX run several times
//! as fast; how far its answers are from single precision is measured by `xqz bench precision`.
//!
//! ```
//! use xqz_net::{InferenceNet, ModelConfig, Network, encoding::INPUT_SIZE};
//!
//! let net = Network::seeded(&ModelConfig::builtin("tiny")?, tch::Device::Cpu, 3);
//! let fast = InferenceNet::new(&net);
//! let input = vec![0.5; 2 * INPUT_SIZE];
//! let (a, b) = (net.predict_batch(&input)?, fast.predict_batch(&input)?);
//! assert!(a.policy_logits.iter().zip(&b.policy_logits).all(|(x, y)| (x - y).abs() < 1e-4));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use tch::{Device, Kind, Tensor, nn};

use crate::config::ModelConfig;
use crate::encoding::{HEIGHT, INPUT_SIZE, PLANES, WIDTH};
use crate::model::{BN_EPS, BatchPrediction, ConvBn, Network};
use crate::policy::POLICY_SIZE;

/// The number format an [`InferenceNet`] runs its convolutions in.
///
/// ```
/// use xqz_net::{Device, Precision};
///
/// assert_eq!("bf16".parse::<Precision>()?, Precision::Bf16);
/// assert_eq!(Precision::F32.to_string(), "f32");
/// assert!("fp8".parse::<Precision>().unwrap_err().to_string().contains("expected f32, bf16 or auto"));
/// // `auto` is a choice made on the device, never a format of its own.
/// assert_ne!(Precision::Auto.on(Device::Cpu), Precision::Auto);
/// # Ok::<(), xqz_net::PrecisionError>(())
/// ```
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Precision {
    /// Single precision, as the network trains.
    #[default]
    F32,
    /// bfloat16 weights and activations in the convolutions (8 bits of mantissa), single
    /// precision in the dense layers of the heads.
    Bf16,
    /// bf16 on a CPU whose instructions compute in it (x86-64 with AVX-512 BF16, which CPUs
    /// with AMX have too), where its convolutions ran 1.5 to 3.6 times as fast as f32's; f32
    /// elsewhere (a CPU without them has no bf16 arithmetic to gain from; CUDA keeps f32).
    Auto,
}

impl Precision {
    /// The format `self` stands for on `device`: [`Precision::Auto`] resolved, the others as
    /// they are.
    pub fn on(self, device: Device) -> Precision {
        match self {
            Precision::Auto if device == Device::Cpu && cpu_computes_bf16() => Precision::Bf16,
            Precision::Auto => Precision::F32,
            format => format,
        }
    }

    /// The tensor kind of the convolutions, of a precision resolved by [`Precision::on`].
    fn kind(self) -> Kind {
        match self {
            Precision::Bf16 => Kind::BFloat16,
            Precision::F32 | Precision::Auto => Kind::Float,
        }
    }
}

/// Whether this CPU has instructions that compute in bfloat16 (AVX-512 BF16).
fn cpu_computes_bf16() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512bf16")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

impl std::fmt::Display for Precision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Precision::F32 => "f32",
            Precision::Bf16 => "bf16",
            Precision::Auto => "auto",
        })
    }
}

/// A precision name that is none of `f32`, `bf16` and `auto`.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unknown precision {0:?}: expected f32, bf16 or auto")]
pub struct PrecisionError(String);

impl std::str::FromStr for Precision {
    type Err = PrecisionError;

    fn from_str(s: &str) -> Result<Precision, PrecisionError> {
        match s {
            "f32" => Ok(Precision::F32),
            "bf16" => Ok(Precision::Bf16),
            "auto" => Ok(Precision::Auto),
            other => Err(PrecisionError(other.to_string())),
        }
    }
}

/// A convolution with its batch normalisation folded in: `bn(conv(x)) = conv'(x) + b'`.
#[derive(Debug)]
struct FoldedConv {
    weight: Tensor,
    bias: Tensor,
    padding: i64,
}

impl FoldedConv {
    /// The folded layer, its weights and bias in `kind` (folded in single precision first).
    fn new(layer: &ConvBn, kind: Kind) -> FoldedConv {
        let _guard = tch::no_grad_guard();
        let bn = &layer.bn;
        let gamma = bn.ws.as_ref().expect("affine batch norm").detach();
        let beta = bn.bs.as_ref().expect("affine batch norm").detach();
        let scale = gamma * (bn.running_var.detach() + BN_EPS).rsqrt();
        let weight = &layer.conv.ws.detach() * scale.view([-1, 1, 1, 1]);
        let bias = (beta - bn.running_mean.detach() * &scale).to_kind(kind);
        let weight = weight.to_kind(kind);
        let kernel = weight.size()[2];
        let weight = if is_channels_last(weight.device()) { channels_last(&weight) } else { weight.contiguous() };
        FoldedConv { weight, bias, padding: kernel / 2 }
    }

    fn forward(&self, x: &Tensor) -> Tensor {
        x.conv2d(&self.weight, Some(&self.bias), [1, 1], [self.padding, self.padding], [1, 1], 1)
    }
}

/// `x` (`[n, c, h, w]`) with the channels innermost in memory (libtorch's channels-last format,
/// which its convolutions keep from input to output). The shape and the values are the same.
fn channels_last(x: &Tensor) -> Tensor {
    x.permute([0, 2, 3, 1]).contiguous().permute([0, 3, 1, 2])
}

/// Whether activations are kept channels-last on `device`: on the CPU, oneDNN's convolutions run
/// faster so (`xqz bench net`: 7,456 positions/s against 6,703 with `mid` at batch 64 on a
/// 2-core AVX-512 CPU, and faster at every batch size from 8 to 256). Not measured on CUDA,
/// which keeps the default layout.
fn is_channels_last(device: Device) -> bool {
    device == Device::Cpu
}

#[derive(Debug)]
struct Linear {
    weight: Tensor,
    bias: Option<Tensor>,
}

impl Linear {
    fn new(layer: &nn::Linear) -> Linear {
        Linear { weight: layer.ws.detach(), bias: layer.bs.as_ref().map(Tensor::detach) }
    }

    fn forward(&self, x: &Tensor) -> Tensor {
        x.linear(&self.weight, self.bias.as_ref())
    }
}

#[derive(Debug)]
struct Block {
    first: FoldedConv,
    second: FoldedConv,
    se: Option<(Linear, Linear)>,
}

/// A network's weights arranged for evaluation only; see the module docs.
#[derive(Debug)]
pub struct InferenceNet {
    device: Device,
    precision: Precision,
    stem: FoldedConv,
    tower: Vec<Block>,
    policy_conv: FoldedConv,
    policy_fc: Linear,
    /// The policy layer's weights (`POLICY_SIZE` rows) and bias on the host, where the network
    /// runs on the CPU: [`InferenceNet::predict_legal`] computes the legal moves' logits alone.
    host_policy: Option<(Vec<f32>, Vec<f32>)>,
    value_conv: FoldedConv,
    value_hidden: Linear,
    value_out: Linear,
}

/// A batch's outputs at the legal moves alone ([`InferenceNet::predict_legal`]).
#[derive(Clone, Debug, PartialEq)]
pub struct LegalPrediction {
    /// For each position, the policy logits of the moves asked for, in their order.
    pub logits: Vec<Vec<f32>>,
    /// For each position, its win, draw and loss probabilities.
    pub wdl: Vec<[f32; 3]>,
}

impl InferenceNet {
    /// The inference graph of `net`'s current weights and batch-norm statistics, on its device,
    /// in single precision. Later changes to `net` do not reach it.
    pub fn new(net: &Network) -> InferenceNet {
        InferenceNet::with_precision(net, Precision::F32)
    }

    /// The same with its convolutions in `precision` ([`Precision::Auto`] resolved on the
    /// network's device).
    pub fn with_precision(net: &Network, precision: Precision) -> InferenceNet {
        let precision = precision.on(net.device());
        let kind = precision.kind();
        InferenceNet {
            device: net.device(),
            precision,
            stem: FoldedConv::new(&net.stem, kind),
            tower: net
                .tower
                .iter()
                .map(|b| Block {
                    first: FoldedConv::new(&b.first, kind),
                    second: FoldedConv::new(&b.second, kind),
                    se: b.se.as_ref().map(|se| (Linear::new(&se.reduce), Linear::new(&se.expand))),
                })
                .collect(),
            policy_conv: FoldedConv::new(&net.policy_conv, kind),
            policy_fc: Linear::new(&net.policy_fc),
            host_policy: (net.device() == Device::Cpu).then(|| {
                let values = |t: &Tensor| Vec::<f32>::try_from(t.detach().flatten(0, -1)).expect("float weights");
                let bias = net.policy_fc.bs.as_ref().expect("the policy layer has a bias");
                (values(&net.policy_fc.ws), values(bias))
            }),
            value_conv: FoldedConv::new(&net.value_conv, kind),
            value_hidden: Linear::new(&net.value_hidden),
            value_out: Linear::new(&net.value_out),
        }
    }

    /// The policy layer's inputs `[n, features]` and value logits `[n, 3]` for inputs
    /// `[n, PLANES, 10, 9]`.
    fn forward(&self, input: &Tensor) -> (Tensor, Tensor) {
        let input = if is_channels_last(self.device) { channels_last(input) } else { input.shallow_clone() };
        let input = input.to_kind(self.precision.kind());
        let mut x = self.stem.forward(&input).relu_();
        for block in &self.tower {
            let y = block.first.forward(&x).relu_();
            let mut y = block.second.forward(&y);
            if let Some((reduce, expand)) = &block.se {
                let (n, c) = (y.size()[0], y.size()[1]);
                let mut gates =
                    expand.forward(&reduce.forward(&y.mean_dim(&[2i64, 3][..], false, Kind::Float)).relu_());
                y *= gates.sigmoid_().view([n, c, 1, 1]);
            }
            x = (y + &x).relu_();
        }
        // The dense layers of the heads take single precision.
        let policy = self.policy_conv.forward(&x).relu_().to_kind(Kind::Float).flatten(1, -1);
        let value = self.value_conv.forward(&x).relu_().to_kind(Kind::Float);
        let pooled =
            Tensor::cat(&[value.mean_dim(&[2i64, 3][..], false, Kind::Float), value.amax(&[2i64, 3][..], false)], 1);
        let value = self.value_out.forward(&self.value_hidden.forward(&pooled).relu_());
        (policy, value)
    }

    /// Evaluates encoded positions (`n * INPUT_SIZE` floats): the same outputs as
    /// [`Network::predict_batch`], to rounding.
    pub fn predict_batch(&self, inputs: &[f32]) -> Result<BatchPrediction, tch::TchError> {
        let _guard = tch::no_grad_guard();
        let (n, features, wdl) = self.features_and_wdl(inputs)?;
        let policy = self.policy_fc.forward(&features);
        // Copied straight into the answer (from the device, if it is not the CPU).
        let mut out = BatchPrediction { n, policy_logits: vec![0.0; n * POLICY_SIZE], wdl: vec![0.0; n * 3] };
        policy.f_copy_data(&mut out.policy_logits, n * POLICY_SIZE)?;
        wdl.f_copy_data(&mut out.wdl, n * 3)?;
        Ok(out)
    }

    /// Evaluates encoded positions (`n * INPUT_SIZE` floats) for the policy indices `legal[i]`
    /// of position `i` alone: the logits [`InferenceNet::predict_batch`] gives at those
    /// indices, to rounding. On the CPU only those logits are computed, a few dozen of the
    /// 2086 rows of the policy layer, whose 12 MB of weights a whole product reads each batch.
    ///
    /// # Panics
    /// If `legal` does not have one entry per position, or an index is not below `POLICY_SIZE`.
    pub fn predict_legal(&self, inputs: &[f32], legal: &[&[u16]]) -> Result<LegalPrediction, tch::TchError> {
        let _guard = tch::no_grad_guard();
        let (n, features, wdl) = self.features_and_wdl(inputs)?;
        assert_eq!(legal.len(), n, "one list of moves per position");
        let mut probabilities = vec![0.0; n * 3];
        wdl.f_copy_data(&mut probabilities, n * 3)?;
        let wdl = probabilities.chunks_exact(3).map(|p| [p[0], p[1], p[2]]).collect();
        let logits = match &self.host_policy {
            Some((weight, bias)) => {
                let width = weight.len() / POLICY_SIZE;
                let mut host = vec![0.0; n * width];
                features.f_copy_data(&mut host, n * width)?;
                host.chunks_exact(width)
                    .zip(legal)
                    .map(|(x, moves)| {
                        let row = |i: usize| &weight[i * width..(i + 1) * width];
                        moves.iter().map(|&i| bias[i as usize] + dot(x, row(i as usize))).collect()
                    })
                    .collect()
            }
            None => {
                let mut all = vec![0.0; n * POLICY_SIZE];
                self.policy_fc.forward(&features).f_copy_data(&mut all, n * POLICY_SIZE)?;
                all.chunks_exact(POLICY_SIZE)
                    .zip(legal)
                    .map(|(row, moves)| moves.iter().map(|&i| row[i as usize]).collect())
                    .collect()
            }
        };
        Ok(LegalPrediction { logits, wdl })
    }

    /// The policy layer's inputs and the win/draw/loss probabilities of encoded positions.
    fn features_and_wdl(&self, inputs: &[f32]) -> Result<(usize, Tensor, Tensor), tch::TchError> {
        assert_eq!(inputs.len() % INPUT_SIZE, 0, "inputs are not a whole number of positions");
        let n = inputs.len() / INPUT_SIZE;
        let x = Tensor::f_from_slice(inputs)?.f_view([n as i64, PLANES as i64, HEIGHT as i64, WIDTH as i64])?;
        let (features, value) = self.forward(&x.f_to_device(self.device)?);
        Ok((n, features, value.f_softmax(-1, Kind::Float)?))
    }
}

/// The dot product of two equally long rows, in 16 lanes the compiler keeps in vector registers.
fn dot(a: &[f32], b: &[f32]) -> f32 {
    const LANES: usize = 16;
    let mut sums = [0.0f32; LANES];
    let (chunks_a, chunks_b) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let tail: f32 = chunks_a.remainder().iter().zip(chunks_b.remainder()).map(|(x, y)| x * y).sum();
    for (x, y) in chunks_a.zip(chunks_b) {
        for lane in 0..LANES {
            sums[lane] += x[lane] * y[lane];
        }
    }
    sums.iter().sum::<f32>() + tail
}

/// Multiply-adds (counted as 2 operations each) of one position's forward pass, for GFLOP/s.
///
/// ```
/// let mid = xqz_net::ModelConfig::builtin("mid")?;
/// assert_eq!(xqz_net::inference::flops_per_position(&mid) / 100_000, 386);
/// # Ok::<(), xqz_net::ConfigError>(())
/// ```
pub fn flops_per_position(config: &ModelConfig) -> u64 {
    let squares = (HEIGHT * WIDTH) as u64;
    let c = u64::from(config.channels);
    let conv = |inputs: u64, outputs: u64, kernel: u64| 2 * inputs * outputs * kernel * kernel * squares;
    let se = if config.se_ratio > 0 { 2 * 2 * c * (c / u64::from(config.se_ratio)) } else { 0 };
    let (pc, vc, hidden) =
        (u64::from(config.policy_channels), u64::from(config.value_channels), u64::from(config.value_hidden));
    conv(PLANES as u64, c, 3)
        + u64::from(config.blocks) * (2 * conv(c, c, 3) + se)
        + conv(c, pc, 1)
        + 2 * pc * squares * POLICY_SIZE as u64
        + conv(c, vc, 1)
        + 2 * 2 * vc * hidden
        + 2 * hidden * 3
}
