//! Errors of the coordinator outside a request (startup, storage, shutdown).

use std::path::PathBuf;

/// Why the coordinator cannot start, store or stop.
#[derive(Debug, thiserror::Error)]
pub enum CoordinatorError {
    /// A file or socket operation failed.
    #[error("{path}: {source}")]
    Io {
        /// The file, folder or address concerned.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// The dataset cannot be opened, read or written.
    #[error(transparent)]
    Dataset(#[from] xqz_dataset::DatasetError),
    /// A stored file of the coordinator is not what it wrote.
    #[error("{path}: {message}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// The backup of the coordinator's files cannot be read or written, or holds something
    /// other than what a coordinator wrote there.
    #[error("coordinator backup {location}: {message}")]
    Backup {
        /// The backup location.
        location: String,
        /// What failed.
        message: String,
    },
    /// The gRPC server failed.
    #[error("gRPC server: {0}")]
    Transport(#[from] tonic::transport::Error),
    /// The TLS certificate, key or client CA cannot be used.
    #[error("TLS certificate, key or client CA: {0}")]
    Tls(tonic::transport::Error),
    /// The reflection service cannot be built from the descriptor set.
    #[error("reflection service: {0}")]
    Reflection(#[from] tonic_reflection::server::Error),
    /// The play settings are out of range.
    #[error(transparent)]
    Settings(#[from] xqz_mcts::SettingsError),
    /// The evaluation settings (the matches of each published model) are out of range.
    #[error("evaluation settings: {0}")]
    Evaluation(#[from] xqz_arena::job::JobError),
    /// Games are to start from an opening suite, but none was given.
    #[error("play setting opening_share = {share} needs an opening suite (--openings FILE), and none was given")]
    NoOpenings {
        /// The share asked for.
        share: f64,
    },
    /// The dataset was closed for shutdown; the request's games were not stored.
    #[error("the coordinator is stopping; the games were not stored (send them again)")]
    Stopping,
    /// A background task panicked or was cancelled.
    #[error("background task: {0}")]
    Task(#[from] tokio::task::JoinError),
}

/// Adds the path to an I/O error.
pub(crate) trait IoAt<T> {
    fn at(self, path: impl Into<PathBuf>) -> Result<T, CoordinatorError>;
}

impl<T> IoAt<T> for std::io::Result<T> {
    fn at(self, path: impl Into<PathBuf>) -> Result<T, CoordinatorError> {
        self.map_err(|source| CoordinatorError::Io { path: path.into(), source })
    }
}
