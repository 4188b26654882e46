//! The coordinator's ready file: how a program that starts a coordinator on port 0 learns where
//! it listens, written once both ports are bound.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::atomic::{IoError, write_atomic};

/// What the ready file holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ready {
    /// The bound gRPC address.
    pub listen: SocketAddr,
    /// The bound HTTP address (metrics and dashboard), if any.
    pub metrics: Option<SocketAddr>,
}

/// Why the ready file was not read.
#[derive(Debug, thiserror::Error)]
pub enum ReadyError {
    /// The file or the process could not be read or written.
    #[error(transparent)]
    Io(#[from] IoError),
    /// The file holds something else.
    #[error("ready file {}: {source}", path.display())]
    Malformed {
        /// The file.
        path: PathBuf,
        /// Why.
        source: serde_json::Error,
    },
    /// The coordinator stopped first.
    #[error("the coordinator exited ({0}) before it was ready")]
    Exited(ExitStatus),
    /// The coordinator took too long.
    #[error("the coordinator was not ready in {0:?}")]
    NotReady(Duration),
}

impl Ready {
    /// Writes the file at `path` whole (a reader never sees a part of it).
    pub fn write(&self, path: &Path) -> Result<(), ReadyError> {
        let json = serde_json::to_string(self).map_err(|source| ReadyError::Malformed { path: path.into(), source })?;
        Ok(write_atomic(path, json.as_bytes())?)
    }

    /// Waits up to `timeout` for the ready file at `path` of `coordinator`, a process started
    /// to write it (`xqz coordinator ... --ready-file PATH`), while it runs.
    pub fn wait(coordinator: &mut Child, path: &Path, timeout: Duration) -> Result<Ready, ReadyError> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Ok(text) = std::fs::read_to_string(path) {
                return serde_json::from_str(&text)
                    .map_err(|source| ReadyError::Malformed { path: path.into(), source });
            }
            if let Some(status) = coordinator.try_wait().map_err(IoError::at(path))? {
                return Err(ReadyError::Exited(status));
            }
            if Instant::now() >= deadline {
                return Err(ReadyError::NotReady(timeout));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_ready_file_is_read_back_and_a_dead_coordinator_is_noticed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("coordinator.ready");
        let ready = Ready { listen: "127.0.0.1:5000".parse().unwrap(), metrics: None };
        ready.write(&path).unwrap();
        let mut sleeper = std::process::Command::new("sleep").arg("5").spawn().unwrap();
        assert_eq!(Ready::wait(&mut sleeper, &path, Duration::from_secs(1)).unwrap(), ready);
        sleeper.kill().unwrap();
        sleeper.wait().unwrap();
        let mut done = std::process::Command::new("true").spawn().unwrap();
        let error = Ready::wait(&mut done, &dir.path().join("absent"), Duration::from_secs(10)).unwrap_err();
        assert!(matches!(error, ReadyError::Exited(_)), "{error}");
    }
}
