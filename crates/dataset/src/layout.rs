//! The names of a dataset's own files, beside its shards; every module that reads or writes the
//! folder (or prefix) goes by them.

/// The manifest's file name.
pub const MANIFEST_FILE: &str = "manifest.json";
/// The writer's lock file name.
pub const LOCK_FILE: &str = "writer.lock";
/// Suffix of files being written.
pub const TMP_SUFFIX: &str = ".tmp";
/// The temporary name a file is written under before its rename.
pub fn tmp_name(name: &str) -> String {
    format!("{name}{TMP_SUFFIX}")
}
