//! The network as an inference graph: each convolution's batch normalisation folded into its
//! weights and bias when a network is loaded for play, no autograd, activations in the memory
//! layout the CPU runs fastest (channels-last). The training graph ([`Network::forward_t`]) is
//! unchanged; this one gives its outputs in evaluation mode (to rounding) in fewer passes over
//! memory.
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

/// A convolution with its batch normalisation folded in: `bn(conv(x)) = conv'(x) + b'`.
#[derive(Debug)]
struct FoldedConv {
    weight: Tensor,
    bias: Tensor,
    padding: i64,
}

impl FoldedConv {
    fn new(layer: &ConvBn) -> FoldedConv {
        let _guard = tch::no_grad_guard();
        let bn = &layer.bn;
        let gamma = bn.ws.as_ref().expect("affine batch norm").detach();
        let beta = bn.bs.as_ref().expect("affine batch norm").detach();
        let scale = gamma * (bn.running_var.detach() + BN_EPS).rsqrt();
        let weight = &layer.conv.ws.detach() * scale.view([-1, 1, 1, 1]);
        let bias = beta - bn.running_mean.detach() * &scale;
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
    /// The inference graph of `net`'s current weights and batch-norm statistics, on its device.
    /// Later changes to `net` do not reach it.
    pub fn new(net: &Network) -> InferenceNet {
        InferenceNet {
            device: net.device(),
            stem: FoldedConv::new(&net.stem),
            tower: net
                .tower
                .iter()
                .map(|b| Block {
                    first: FoldedConv::new(&b.first),
                    second: FoldedConv::new(&b.second),
                    se: b.se.as_ref().map(|se| (Linear::new(&se.reduce), Linear::new(&se.expand))),
                })
                .collect(),
            policy_conv: FoldedConv::new(&net.policy_conv),
            policy_fc: Linear::new(&net.policy_fc),
            host_policy: (net.device() == Device::Cpu).then(|| {
                let values = |t: &Tensor| Vec::<f32>::try_from(t.detach().flatten(0, -1)).expect("float weights");
                let bias = net.policy_fc.bs.as_ref().expect("the policy layer has a bias");
                (values(&net.policy_fc.ws), values(bias))
            }),
            value_conv: FoldedConv::new(&net.value_conv),
            value_hidden: Linear::new(&net.value_hidden),
            value_out: Linear::new(&net.value_out),
        }
    }

    /// The policy layer's inputs `[n, features]` and value logits `[n, 3]` for inputs
    /// `[n, PLANES, 10, 9]`.
    fn forward(&self, input: &Tensor) -> (Tensor, Tensor) {
        let input = if is_channels_last(self.device) { channels_last(input) } else { input.shallow_clone() };
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
        let policy = self.policy_conv.forward(&x).relu_().flatten(1, -1);
        let value = self.value_conv.forward(&x).relu_();
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
