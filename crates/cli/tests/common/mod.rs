//! Fixtures shared by the `xqz` tests.

use std::path::{Path, PathBuf};

use xqz_net::checkpoint::{self, CheckpointInfo};
use xqz_net::{Device, ModelConfig, Network};

/// Saves a random `tiny` network as `dir/tiny.json` (and its weights) and returns that path.
pub fn tiny_checkpoint(dir: &Path) -> PathBuf {
    let path = dir.join("tiny.json");
    let net = Network::new(&ModelConfig::builtin("tiny").unwrap(), Device::Cpu);
    checkpoint::save(&path, &net, CheckpointInfo::default()).unwrap();
    path
}
