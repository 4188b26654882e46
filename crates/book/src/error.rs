//! The crate's error type.

use std::path::PathBuf;

use thiserror::Error;

/// Everything that can go wrong building or reading a book.
#[derive(Debug, Error)]
pub enum BookError {
    /// Reading a dataset failed.
    #[error(transparent)]
    Dataset(#[from] xqz_dataset::DatasetError),
    /// A stored game does not replay.
    #[error("game {game}: {message}")]
    BadGame {
        /// The game's id.
        game: String,
        /// What is wrong (an illegal move at a ply, ...).
        message: String,
    },
    /// The output exists and replacing it was not asked for.
    #[error("{} already exists (pass --force to replace it)", path.display())]
    Exists {
        /// The book file.
        path: PathBuf,
    },
    /// The file is not a book this version reads.
    #[error("{} is not an xqz book: {message}", path.display())]
    NotABook {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// SQLite failed on a book file.
    #[error("SQLite error on {}", path.display())]
    Sqlite {
        /// The book file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: rusqlite::Error,
    },
    /// Writing an export failed.
    #[error("exporting to {}: {message}", path.display())]
    Export {
        /// The output file.
        path: PathBuf,
        /// What failed.
        message: String,
    },
    /// Growing settings that cannot work.
    #[error("invalid grow settings: {message}")]
    InvalidConfig {
        /// What is wrong.
        message: String,
    },
    /// The search of a position failed (its evaluator did).
    #[error("searching {fen}")]
    Search {
        /// The position.
        fen: String,
        /// The cause.
        #[source]
        source: xqz_mcts::EvalError,
    },
    /// A file system operation failed.
    #[error("I/O error on {}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
}

/// The crate's result type.
pub type Result<T, E = BookError> = std::result::Result<T, E>;

impl From<xqz_run_folder::IoError> for BookError {
    fn from(e: xqz_run_folder::IoError) -> BookError {
        BookError::Io { path: e.path, source: e.source }
    }
}
