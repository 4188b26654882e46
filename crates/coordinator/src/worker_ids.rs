//! Worker ids that the coordinator alone can make: Register issues `NAME-NONCE.TAG`, where TAG
//! is an HMAC-SHA256 of `NAME-NONCE` under a key kept in the data folder, and every later call
//! must carry such an id. A client cannot choose or forge the id stored with its games, and a
//! restarted coordinator still accepts the ids it issued before (a worker's spooled batches carry
//! them), since the key is kept with the data.
//!
//! ```
//! let dir = tempfile::tempdir()?;
//! let ids = xqz_coordinator::WorkerIds::open(dir.path())?;
//! let id = ids.issue("box1");
//! assert!(id.starts_with("box1-") && ids.check(&id));
//! assert!(!ids.check("box1-000000000000.0000000000000000"));
//! // The same key after a restart.
//! assert!(xqz_coordinator::WorkerIds::open(dir.path())?.check(&id));
//! # Ok::<(), std::io::Error>(())
//! ```

use std::io::Write as _;
use std::path::Path;

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The key file, in the coordinator's data folder.
const KEY_FILE: &str = xqz_run_folder::CoordinatorFolder::WORKER_ID_KEY;

/// Bytes of the key.
const KEY_BYTES: usize = 32;

/// Hex digits of the tag: 64 bits, beyond guessing over the network.
const TAG_HEX: usize = 16;

/// Longest name kept from a Register request.
const MAX_NAME: usize = 48;

/// Issues and checks worker ids; see the module docs.
pub struct WorkerIds {
    key: [u8; KEY_BYTES],
}

impl WorkerIds {
    /// The ids of the data folder `dir`: its key, made (readable by the owner alone) if absent.
    pub fn open(dir: &Path) -> std::io::Result<WorkerIds> {
        let path = dir.join(KEY_FILE);
        let key = match std::fs::read(&path) {
            Ok(bytes) => bytes.try_into().map_err(|bytes: Vec<u8>| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("{} holds {} bytes, not a {KEY_BYTES}-byte key", path.display(), bytes.len()),
                )
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let key: [u8; KEY_BYTES] = rand::random();
                write_key(dir, &key)?;
                key
            }
            Err(e) => return Err(e),
        };
        Ok(WorkerIds { key })
    }

    /// A new id for a worker that calls itself `name` (kept to letters, digits, `-`, `_` and
    /// `.`, at most 48 of them; `w` when nothing is left).
    pub fn issue(&self, name: &str) -> String {
        let name: String =
            name.chars().filter(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')).take(MAX_NAME).collect();
        let name = if name.is_empty() { "w".to_string() } else { name };
        let nonce: u64 = rand::random::<u64>() >> 16;
        let body = format!("{name}-{nonce:012x}");
        let tag = self.tag(&body);
        format!("{body}.{tag}")
    }

    /// The name part of an id that [`WorkerIds::issue`] made (`box1` of `box1-NONCE.TAG`).
    pub fn name_of(id: &str) -> &str {
        let body = id.rsplit_once('.').map_or(id, |(body, _)| body);
        body.rsplit_once('-').map_or(body, |(name, _)| name)
    }

    /// Whether `id` is one this coordinator issued (under this key).
    pub fn check(&self, id: &str) -> bool {
        let Some((body, tag)) = id.rsplit_once('.') else { return false };
        let Ok(tag) = decode_hex(tag) else { return false };
        self.mac(body).verify_truncated_left(&tag).is_ok()
    }

    fn mac(&self, body: &str) -> Hmac<Sha256> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.key).expect("HMAC takes a key of any length");
        mac.update(body.as_bytes());
        mac
    }

    fn tag(&self, body: &str) -> String {
        let bytes = self.mac(body).finalize().into_bytes();
        bytes[..TAG_HEX / 2].iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// The bytes of a tag's hex digits (exactly [`TAG_HEX`] of them).
fn decode_hex(text: &str) -> Result<Vec<u8>, ()> {
    if text.len() != TAG_HEX || !text.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)) {
        return Err(());
    }
    (0..text.len()).step_by(2).map(|i| u8::from_str_radix(&text[i..i + 2], 16).map_err(drop)).collect()
}

/// Writes `key` as the key file of the data folder `dir` (readable by the owner alone), as a
/// restore from a backup does; [`WorkerIds::open`] checks it.
pub(crate) fn write_key(dir: &Path, key: &[u8]) -> std::io::Result<()> {
    let path = dir.join(KEY_FILE);
    let tmp = path.with_extension("tmp");
    let mut file = open_private(&tmp)?;
    file.write_all(key)?;
    file.sync_all()?;
    std::fs::rename(&tmp, &path)
}

#[cfg(unix)]
fn open_private(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt as _;
    std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(path)
}

#[cfg(not(unix))]
fn open_private(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::File::create(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_bound_to_the_key_and_to_every_character() {
        let dir = tempfile::tempdir().unwrap();
        let ids = WorkerIds::open(dir.path()).unwrap();
        let id = ids.issue("host 7/ä");
        assert!(id.starts_with("host7-"), "{id}");
        assert!(ids.check(&id));
        assert!(id.len() <= MAX_NAME + 1 + 12 + 1 + TAG_HEX);
        // Any changed character, a truncated or missing tag, another key: refused.
        for i in 0..id.len() {
            let mut bytes = id.clone().into_bytes();
            bytes[i] = if bytes[i] == b'a' { b'b' } else { b'a' };
            assert!(!ids.check(&String::from_utf8(bytes).unwrap()), "changed at {i}");
        }
        assert!(!ids.check(&id[..id.len() - 1]));
        assert!(!ids.check(id.split('.').next().unwrap()));
        assert!(!ids.check(""));
        let other = tempfile::tempdir().unwrap();
        assert!(!WorkerIds::open(other.path()).unwrap().check(&id));
        assert_ne!(ids.issue("host7"), ids.issue("host7"), "each Register gets its own id");
        assert!(ids.issue("").starts_with("w-"));
        assert_eq!(WorkerIds::name_of(&ids.issue("rack-3.b")), "rack-3.b");
    }

    #[test]
    fn a_damaged_key_file_is_an_error_that_names_it() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(KEY_FILE), b"short").unwrap();
        let error = WorkerIds::open(dir.path()).err().unwrap().to_string();
        assert!(error.contains(KEY_FILE) && error.contains("5 bytes"), "{error}");
    }
}
