//! The crate's error type.

use std::path::{Path, PathBuf};

use arrow_schema::ArrowError;
use parquet::errors::ParquetError;
use thiserror::Error;

/// Everything that can go wrong reading, writing or sampling a dataset.
#[derive(Debug, Error)]
pub enum DatasetError {
    /// A file system operation failed.
    #[error("I/O error on {}", path.display())]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// Arrow could not build, encode or decode data.
    #[error("Arrow error {context}")]
    Arrow {
        /// What was being done (`writing ...`, `reading ...`).
        context: String,
        /// The cause.
        #[source]
        source: ArrowError,
    },
    /// The Parquet writer failed.
    #[error("Parquet error writing {}", path.display())]
    Parquet {
        /// The file being written.
        path: PathBuf,
        /// The cause.
        #[source]
        source: ParquetError,
    },
    /// The manifest cannot be read or does not describe a dataset of ours.
    #[error("manifest {} is invalid: {message}", path.display())]
    Manifest {
        /// The manifest file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A location holds no dataset: nothing was ever committed there (a mistyped path or prefix?).
    #[error("{} is not a dataset (it has no {})", location, crate::layout::MANIFEST_FILE)]
    NoManifest {
        /// The folder or object store prefix.
        location: String,
    },
    /// A shard's schema is not the one this version reads.
    #[error("shard {} is not readable: {source}", path.display())]
    Schema {
        /// The shard file.
        path: PathBuf,
        /// The first difference.
        #[source]
        source: crate::schema::SchemaMismatch,
    },
    /// A shard's contents do not match what this version reads.
    #[error("shard {} is not readable: {message}", path.display())]
    Shard {
        /// The shard file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A record handed to the writer is inconsistent (wrong game id, bad ply, bad policy, ...).
    #[error("invalid record: {0}")]
    InvalidRecord(String),
    /// Another writer holds the dataset's lock.
    #[error("dataset {} is locked by another writer", path.display())]
    Locked {
        /// The dataset folder.
        path: PathBuf,
    },
    /// An object store request failed.
    #[error("object store request on {url} failed")]
    ObjectStore {
        /// The object (or prefix) it was about.
        url: String,
        /// The cause.
        #[source]
        source: object_store::Error,
    },
    /// The threads that run object store requests and renew a writer's lease could not be
    /// started, or a request's task ended without an answer.
    #[error("object store background work failed: {0}")]
    Background(String),
    /// Another writer replaced the manifest since this writer read it: its conditional PUT
    /// failed, and this writer stops rather than overwrite the other's shards.
    #[error(
        "{url} was replaced by another writer since this writer read it; two writers are using one dataset, \
         and this one stops rather than overwrite the other's shards"
    )]
    ManifestConflict {
        /// The manifest object.
        url: String,
    },
    /// Another writer holds the lease on an object store prefix.
    #[error(
        "dataset {url} is in use: {holder} holds its writer lease for {remaining_s} s more; stop that writer, \
         or if it died, start again once its lease has lapsed"
    )]
    Leased {
        /// The dataset's prefix.
        url: String,
        /// Who holds the lease (writer, process, host).
        holder: String,
        /// Seconds until it lapses unless renewed.
        remaining_s: u64,
    },
    /// This writer's lease lapsed unrenewed or was taken over: another writer may be using the
    /// dataset now, so this one writes no more.
    #[error("the writer lease on dataset {url} lapsed or was taken over; this writer writes no more")]
    LeaseLost {
        /// The dataset's prefix.
        url: String,
    },
    /// A dataset location that cannot be used.
    #[error(transparent)]
    Location(#[from] LocationError),
    /// The replay configuration cannot produce batches.
    #[error("invalid replay configuration: {0}")]
    Config(String),
    /// The background loader thread ended abnormally.
    #[error("replay loader thread failed: {0}")]
    Loader(String),
}

/// Shorthand for results of this crate.
pub type Result<T, E = DatasetError> = std::result::Result<T, E>;

/// Attaches a path to I/O errors.
pub(crate) trait IoContext<T> {
    fn at(self, path: &Path) -> Result<T>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn at(self, path: &Path) -> Result<T> {
        self.map_err(|source| DatasetError::Io { path: path.to_path_buf(), source })
    }
}

/// Attaches a description to Arrow errors.
pub(crate) trait ArrowContext<T> {
    fn arrow(self, context: impl FnOnce() -> String) -> Result<T>;
}

impl<T> ArrowContext<T> for std::result::Result<T, ArrowError> {
    fn arrow(self, context: impl FnOnce() -> String) -> Result<T> {
        self.map_err(|source| DatasetError::Arrow { context: context(), source })
    }
}

/// A dataset location that cannot be used.
#[derive(Debug, Error)]
pub enum LocationError {
    /// The text has a scheme (`...://`) but is not a valid URL.
    #[error("dataset location {text:?} is not a valid URL: {source}")]
    Url {
        /// The location as given.
        text: String,
        /// What the URL parser found wrong.
        #[source]
        source: url::ParseError,
    },
    /// The scheme is not one of ours.
    #[error(
        "dataset location {text:?} has the unsupported scheme {scheme:?}: use a local path, file:///PATH, \
         s3://BUCKET/PREFIX, gs://BUCKET/PREFIX or az://CONTAINER/PREFIX"
    )]
    Scheme {
        /// The location as given.
        text: String,
        /// Its scheme.
        scheme: String,
    },
    /// An object store URL without a bucket (or container).
    #[error("dataset location {text:?} names no bucket: write {scheme}://BUCKET/PREFIX")]
    NoBucket {
        /// The location as given.
        text: String,
        /// Its scheme.
        scheme: String,
    },
    /// An option given for the object store's client that it does not know.
    #[error("dataset location {text:?}: the object store has no option {key:?}")]
    Option {
        /// The location as given.
        text: String,
        /// The unknown option.
        key: String,
    },
    /// A `file://` URL that is not an absolute local path.
    #[error("dataset location {text:?} is not a local path: write file:///ABSOLUTE/PATH")]
    FileUrl {
        /// The location as given.
        text: String,
    },
    /// The object store's client cannot be configured (a bad value in its environment variables,
    /// a prefix that is not a valid object path).
    #[error("cannot configure the object store for {text:?}: {source}")]
    Store {
        /// The location as given.
        text: String,
        /// The object store's complaint.
        #[source]
        source: object_store::Error,
    },
}

impl From<xqz_run_folder::IoError> for DatasetError {
    fn from(e: xqz_run_folder::IoError) -> DatasetError {
        DatasetError::Io { path: e.path, source: e.source }
    }
}
