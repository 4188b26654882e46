//! The Python that runs the reference clients in tests (pyarrow, grpcio).

use std::path::PathBuf;

/// `$XQZ_PYTHON` (set by `scripts/test`), else the repository's `.venv/bin/python`; `purpose`
/// names the test in the message when neither exists.
pub fn python(purpose: &str) -> PathBuf {
    if let Some(p) = std::env::var_os("XQZ_PYTHON") {
        return PathBuf::from(p);
    }
    let venv = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.venv/bin/python");
    assert!(
        venv.exists(),
        "no Python for the {purpose} test: set XQZ_PYTHON or run scripts/python-env to create {} \
         (scripts/test does both)",
        venv.display()
    );
    venv
}
