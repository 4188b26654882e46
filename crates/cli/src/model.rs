//! What every command that runs a network shares: the `--device` flag, and loading a checkpoint
//! to serve searches in batches.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Args;
use xqz_net::service::{InferenceService, ServiceConfig};
use xqz_net::{CheckpointMeta, Device, Network, Precision, checkpoint, parse_device};

/// The `--device` flag.
#[derive(Args, Clone, Debug)]
pub struct DeviceArg {
    /// Device of the network: cpu, cuda, cuda:N or auto (CUDA where there is a GPU).
    #[arg(long, default_value = "auto")]
    pub device: String,
    /// Threads libtorch may use in this process (0: one per core). Roles that share a machine
    /// each take their share, or they slow each other down.
    #[arg(long, default_value_t = 0)]
    pub torch_threads: usize,
    /// Number format of the network's convolutions in play: f32; bf16 (bfloat16, 1.5 to 3.6
    /// times as fast on CPUs with AVX-512 BF16 or AMX; `xqz bench precision` measures how far
    /// its answers are from f32's); or auto (bf16 where the CPU has AVX-512 BF16, else f32).
    /// Default: auto where the network plays itself (`worker`, `run`, `selfplay`, `bench
    /// selfplay`), f32 where it is evaluated or measured.
    #[arg(long)]
    pub precision: Option<Precision>,
}

/// The precision of self-play where `--precision` is not given: bf16 where the CPU computes in
/// it. Its answers and its play were checked against f32's (docs/BENCHMARKS.md, "Precision").
pub const SELF_PLAY_PRECISION: Precision = Precision::Auto;

impl DeviceArg {
    /// The device, checked (CUDA must be there if asked for); applies --torch-threads.
    pub fn resolve(&self) -> Result<Device> {
        if self.torch_threads > 0 {
            tch::set_num_threads(i32::try_from(self.torch_threads).context("--torch-threads")?);
        }
        Ok(parse_device(&self.device)?)
    }

    /// `--precision`, or `default` where it is not given.
    pub fn precision_or(&self, default: Precision) -> Precision {
        self.precision.unwrap_or(default)
    }

    /// A batching service's defaults with `--precision` (`default` where it is not given).
    pub fn service(&self, default: Precision) -> ServiceConfig {
        ServiceConfig { precision: self.precision_or(default), ..ServiceConfig::default() }
    }
}

/// The name that stands for the model built into this binary wherever a checkpoint path goes
/// (`xqz uci`'s default, `xqz eval match --a shipped`).
pub const SHIPPED: &str = "shipped";

/// The shipped model: the network `models/shipped.json` describes (see `models/README.md` for
/// the run that made it and its rating), compiled in so that it works wherever the binary is.
fn shipped(device: Device) -> Result<(Network, CheckpointMeta)> {
    let meta = include_str!("../../../models/shipped.json");
    let weights = include_bytes!("../../../models/shipped.safetensors");
    Ok(checkpoint::load_bytes(Path::new("models/shipped.json (built in)"), meta, weights, device)?)
}

/// The checkpoint whose metadata file is `path` (or the shipped model, [`SHIPPED`]), on `device`.
pub fn load(path: &Path, device: Device) -> Result<(Network, CheckpointMeta)> {
    if path == Path::new(SHIPPED) {
        return shipped(device);
    }
    checkpoint::load(path, device, None).with_context(|| format!("load {}", path.display()))
}

/// The checkpoint at `path` on `device`, served in batches by an inference service.
pub fn serve(path: &Path, device: Device, config: ServiceConfig) -> Result<(InferenceService, CheckpointMeta)> {
    let (net, meta) = load(path, device)?;
    Ok((InferenceService::spawn(net, config), meta))
}

/// Options of `xqz export`.
#[derive(Args)]
pub struct ExportArgs {
    /// The checkpoint (its .json file).
    #[arg(long)]
    checkpoint: PathBuf,
    /// The copy's metadata file (`NAME.json`; its weights go to `NAME.safetensors` beside it).
    #[arg(long)]
    out: PathBuf,
    /// Leave out the heads only training reads (moves-left, soft policy, opponent policy): the
    /// copy plays the same and is smaller, but cannot be trained on as the same model.
    #[arg(long)]
    play_only: bool,
}

/// Writes the checkpoint's network in half precision, its counters kept, its optimizer left out.
pub fn export(args: &ExportArgs) -> Result<()> {
    anyhow::ensure!(
        args.out.extension().is_some_and(|e| e == "json"),
        "--out {} must name a .json metadata file",
        args.out.display()
    );
    let (mut net, meta) = load(&args.checkpoint, Device::Cpu)?;
    if args.play_only {
        net = net.for_play();
    }
    let written =
        checkpoint::save_half(&args.out, &net, meta.info).with_context(|| format!("write {}", args.out.display()))?;
    println!(
        "{}: model {}, {} training steps, weights {} bytes (sha256 {})",
        args.out.display(),
        written.model.name,
        written.info.training_steps,
        written.weights.bytes,
        written.weights.sha256
    );
    Ok(())
}
