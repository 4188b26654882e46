//! Device selection: `cpu`, `cuda`, `cuda:N` or `auto` (the first GPU if there is one).
//!
//! ```
//! use xqz_net::device::parse_device;
//! assert_eq!(parse_device("cpu")?, tch::Device::Cpu);
//! assert!(parse_device("tpu").is_err());
//! # Ok::<(), xqz_net::DeviceError>(())
//! ```

use tch::{Cuda, Device};

/// A device that cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DeviceError {
    /// Not one of the accepted forms.
    #[error("bad device {0:?} (expected cpu, cuda, cuda:N or auto)")]
    Syntax(String),
    /// A GPU was asked for and this machine or this libtorch has none.
    #[error("device {0:?} asked for, but CUDA is not available here")]
    NoCuda(String),
    /// The GPU number is out of range.
    #[error("device {asked:?} asked for, but there are only {count} CUDA devices")]
    NoSuchGpu {
        /// The text.
        asked: String,
        /// GPUs present.
        count: usize,
    },
}

/// Parses a device name and checks that the device exists.
pub fn parse_device(text: &str) -> Result<Device, DeviceError> {
    let gpu = |n: usize| {
        if !Cuda::is_available() {
            return Err(DeviceError::NoCuda(text.to_string()));
        }
        let count = Cuda::device_count() as usize;
        if n >= count {
            return Err(DeviceError::NoSuchGpu { asked: text.to_string(), count });
        }
        Ok(Device::Cuda(n))
    };
    match text {
        "cpu" => Ok(Device::Cpu),
        "auto" => Ok(Device::cuda_if_available()),
        "cuda" => gpu(0),
        _ => match text.strip_prefix("cuda:").map(str::parse::<usize>) {
            Some(Ok(n)) => gpu(n),
            _ => Err(DeviceError::Syntax(text.to_string())),
        },
    }
}
