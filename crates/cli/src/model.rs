//! What every command that runs a network shares: the `--device` flag, and loading a checkpoint
//! to serve searches in batches.

use std::path::Path;

use anyhow::{Context, Result};
use clap::Args;
use xqz_net::service::{InferenceService, ServiceConfig};
use xqz_net::{CheckpointMeta, Device, Network, checkpoint, parse_device};

/// The `--device` flag.
#[derive(Args, Clone, Debug)]
pub struct DeviceArg {
    /// Device of the network: cpu, cuda, cuda:N or auto (CUDA where there is a GPU).
    #[arg(long, default_value = "auto")]
    pub device: String,
}

impl DeviceArg {
    /// The device, checked (CUDA must be there if asked for).
    pub fn resolve(&self) -> Result<Device> {
        Ok(parse_device(&self.device)?)
    }
}

/// The checkpoint whose metadata file is `path`, on `device`.
pub fn load(path: &Path, device: Device) -> Result<(Network, CheckpointMeta)> {
    checkpoint::load(path, device, None).with_context(|| format!("load {}", path.display()))
}

/// The checkpoint at `path` on `device`, served in batches by an inference service.
pub fn serve(path: &Path, device: Device, config: ServiceConfig) -> Result<(InferenceService, CheckpointMeta)> {
    let (net, meta) = load(path, device)?;
    Ok((InferenceService::spawn(net, config), meta))
}
