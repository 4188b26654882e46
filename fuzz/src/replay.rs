//! Replays a fuzz target's seed corpus (`fuzz/seeds/<target>/`) through its check, as an ordinary
//! test of the main workspace.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path;

/// Runs `check` on every file of `seeds`, each on its own so that one failure does not hide
/// another, and panics naming every seed whose check panicked (each check's own message is
/// printed above, by the panic hook). Panics too when the folder has no files, so that a moved
/// or emptied corpus cannot pass unseen.
pub fn replay(seeds: &Path, check: fn(&[u8])) {
    let seeds = std::fs::canonicalize(seeds).unwrap_or_else(|e| panic!("seed folder {}: {e}", seeds.display()));
    let mut files: Vec<_> = std::fs::read_dir(&seeds)
        .unwrap_or_else(|e| panic!("seed folder {}: {e}", seeds.display()))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_file())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no seeds in {}", seeds.display());
    let failed: Vec<String> = files
        .iter()
        .filter(|path| {
            let data = std::fs::read(path).unwrap_or_else(|e| panic!("seed {}: {e}", path.display()));
            let failed = catch_unwind(AssertUnwindSafe(|| check(&data))).is_err();
            if failed {
                eprintln!("seed {} failed the check (its message is above)", path.display());
            }
            failed
        })
        .map(|path| path.display().to_string())
        .collect();
    assert!(failed.is_empty(), "{} of {} seeds failed: {}", failed.len(), files.len(), failed.join(", "));
}
