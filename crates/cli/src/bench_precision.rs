//! `xqz bench precision`: how far a checkpoint's answers in bfloat16 are from its answers in
//! single precision on positions of real games, and how much faster they come.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Args;
use serde_json::json;
use xqz_dataset::{ReplayConfig, ReplayWindow, WindowSize};
use xqz_net::encoding::INPUT_SIZE;
use xqz_net::policy::POLICY_SIZE;
use xqz_net::{InferenceNet, LegalPrediction, Precision};
use xqz_trainer::{Targets, TrainingData};

/// Options of `xqz bench precision`.
#[derive(Args)]
pub struct PrecisionArgs {
    /// The checkpoint (its .json file, or `shipped`).
    #[arg(long)]
    model: PathBuf,
    /// A dataset folder of self-play games (a run's `coordinator/dataset`): its positions with a
    /// full search (whose legal moves the samples record) are the ones compared.
    #[arg(long)]
    data: PathBuf,
    /// Positions to compare.
    #[arg(long, default_value_t = 10_000)]
    positions: usize,
    /// Positions per forward pass.
    #[arg(long, default_value_t = 64)]
    batch: usize,
    #[command(flatten)]
    device: crate::model::DeviceArg,
    #[command(flatten)]
    output: crate::bench_output::Output,
}

/// Encoded positions and the policy indices of their legal moves.
struct Positions {
    inputs: Vec<f32>,
    legal: Vec<Vec<u16>>,
}

/// Up to `wanted` positions with a full search from the dataset at `dir`, in the replay
/// window's order of its first epoch (a fixed seed, no mirroring).
fn read_positions(dir: &std::path::Path, wanted: usize) -> Result<Positions> {
    let config = ReplayConfig {
        window: WindowSize::Fixed(usize::MAX),
        mirror_probability: 0.0,
        drop_last: false,
        prefetch: 1,
        epochs: Some(1),
        refresh_each_epoch: false,
        ..ReplayConfig::default()
    };
    let window = ReplayWindow::open(dir, config).with_context(|| format!("open the dataset {}", dir.display()))?;
    let mut positions = Positions { inputs: Vec::new(), legal: Vec::new() };
    for batch in window.epoch(0) {
        let data = TrainingData::from_replay(&batch, Targets::default())
            .with_context(|| format!("a batch of {}", dir.display()))?;
        for row in 0..data.rows() {
            let legal: Vec<u16> = data.legal[row * POLICY_SIZE..(row + 1) * POLICY_SIZE]
                .iter()
                .enumerate()
                .filter(|(_, l)| **l > 0.0)
                .map(|(i, _)| i as u16)
                .collect();
            if legal.is_empty() {
                continue;
            }
            positions.inputs.extend_from_slice(&data.inputs[row * INPUT_SIZE..(row + 1) * INPUT_SIZE]);
            positions.legal.push(legal);
            if positions.legal.len() == wanted {
                return Ok(positions);
            }
        }
    }
    Ok(positions)
}

/// The index of the largest of `logits`.
fn top(logits: &[f32]) -> usize {
    logits.iter().enumerate().max_by(|a, b| a.1.total_cmp(b.1)).map_or(0, |(i, _)| i)
}

/// Runs `xqz bench precision`.
pub fn run(args: &PrecisionArgs) -> Result<()> {
    anyhow::ensure!(args.positions > 0 && args.batch > 0, "--positions and --batch must be positive");
    anyhow::ensure!(
        args.device.precision.is_none(),
        "xqz bench precision compares f32 with bf16: --precision does not apply"
    );
    let device = args.device.resolve()?;
    let (net, meta) = crate::model::load(&args.model, device)?;
    let positions = read_positions(&args.data, args.positions)?;
    let n = positions.legal.len();
    anyhow::ensure!(n > 0, "the dataset {} holds no position with a full search", args.data.display());
    let graphs = [Precision::F32, Precision::Bf16].map(|p| InferenceNet::with_precision(&net, p));
    let mut answers: [Vec<LegalPrediction>; 2] = [Vec::new(), Vec::new()];
    let mut times = [Duration::ZERO; 2];
    // Each batch in both precisions in turn, so that both see the same machine.
    for (inputs, legal) in positions.inputs.chunks(args.batch * INPUT_SIZE).zip(positions.legal.chunks(args.batch)) {
        let legal: Vec<&[u16]> = legal.iter().map(Vec::as_slice).collect();
        for (i, graph) in graphs.iter().enumerate() {
            let start = Instant::now();
            answers[i].push(graph.predict_legal(inputs, &legal)?);
            times[i] += start.elapsed();
        }
    }
    let (mut agree, mut value_diff, mut value_max) = (0usize, 0.0f64, 0.0f64);
    for (full, half) in answers[0].iter().zip(&answers[1]) {
        for ((fl, hl), (fw, hw)) in full.logits.iter().zip(&half.logits).zip(full.wdl.iter().zip(&half.wdl)) {
            agree += usize::from(top(fl) == top(hl));
            let diff = f64::from(((fw[0] - fw[2]) - (hw[0] - hw[2])).abs());
            value_diff += diff;
            value_max = value_max.max(diff);
        }
    }
    let agreement = agree as f64 / n as f64;
    let value_mean = value_diff / n as f64;
    let rates = times.map(|t| n as f64 / t.as_secs_f64().max(1e-9));
    let passes = agreement >= 0.99 && value_mean < 0.02;
    args.output.measurement(
        || {
            format!(
                "{n} positions of {} with {} (step {}), batch {}: bf16's top move agrees with f32's in {:.2}%, \
                 its value (win - loss) differs by {value_mean:.4} on average (at most {value_max:.4}); \
                 f32 {:.0} positions/s, bf16 {:.0} ({:.2}x); the gate (>= 99%, < 0.02) {}",
                args.data.display(),
                args.model.display(),
                meta.info.training_steps,
                args.batch,
                100.0 * agreement,
                rates[0],
                rates[1],
                rates[1] / rates[0],
                if passes { "is met" } else { "is NOT met" },
            )
        },
        json!({
            "bench": "precision", "measurement": "bf16 against f32", "model": args.model, "steps": meta.info.training_steps, "positions": n,
            "batch": args.batch, "top_move_agreement": agreement, "value_diff_mean": value_mean,
            "value_diff_max": value_max, "f32_positions_per_s": rates[0], "bf16_positions_per_s": rates[1],
            "gate_met": passes,
        }),
    );
    Ok(())
}
