//! The upload spool: finished game batches on disk until the coordinator acknowledges them.
//!
//! One append-only log, `batches.log`, holds two kinds of record: a batch (an encoded
//! `SubmitGamesRequest`) and an acknowledgement naming a batch's idempotency key. A record is
//! `[u32 length][8 bytes of sha256][kind][body]` and is fsynced before [`Spool::push`] or
//! [`Spool::remove`] returns, so a batch counts as spooled only once it survives a crash. A torn
//! or corrupt tail (the crash came mid-write) is dropped on opening. Damage in the middle of the
//! log (a bad disk block, say) loses only what it hit: the bytes up to the next whole record are
//! moved to `quarantine/` with a note of where they were, and every later record still counts.
//! The pending batches are the ones without an acknowledgement, in the order written.
//!
//! The log is emptied when nothing is pending and rewritten with only the pending batches on
//! opening, so it does not grow without bound.
//!
//! ```
//! use xqz_proto::v1::SubmitGamesRequest;
//! use xqz_worker::spool::Spool;
//!
//! let dir = tempfile::tempdir()?;
//! let mut spool = Spool::open(dir.path())?;
//! spool.push(&SubmitGamesRequest { idempotency_key: "a".into(), ..Default::default() })?;
//! drop(spool); // a crash
//! let mut spool = Spool::open(dir.path())?;
//! assert_eq!(spool.front().map(|b| b.idempotency_key.as_str()), Some("a"));
//! spool.remove("a")?;
//! assert!(Spool::open(dir.path())?.is_empty());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::VecDeque;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use prost::Message;
use sha2::{Digest, Sha256};
use xqz_proto::v1::SubmitGamesRequest;

const LOG: &str = "batches.log";
const HEADER: usize = 4 + 8 + 1;
const BATCH: u8 = 1;
const ACK: u8 = 2;

/// Why the spool cannot be read or written.
#[derive(Debug, thiserror::Error)]
#[error("spool {path}: {source}")]
pub struct SpoolError {
    /// The file.
    pub path: PathBuf,
    /// Why.
    pub source: io::Error,
}

/// Batches waiting for upload, backed by a log in one folder.
#[derive(Debug)]
pub struct Spool {
    path: PathBuf,
    file: File,
    pending: VecDeque<SubmitGamesRequest>,
    /// Set when a record was cut off or corrupt on opening.
    torn_tail: bool,
    /// Damaged stretches found in the middle of the log on opening, as quarantined.
    quarantined: Vec<PathBuf>,
}

fn checksum(kind: u8, body: &[u8]) -> [u8; 8] {
    let digest = Sha256::new().chain_update([kind]).chain_update(body).finalize();
    digest[..8].try_into().expect("8 bytes")
}

fn encode_record(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut record = Vec::with_capacity(HEADER + body.len());
    record.extend_from_slice(&u32::try_from(body.len()).expect("a batch under 4 GiB").to_le_bytes());
    record.extend_from_slice(&checksum(kind, body));
    record.push(kind);
    record.extend_from_slice(body);
    record
}

/// A whole record: a batch, or the acknowledgement of a key.
enum Record<'a> {
    Batch(SubmitGamesRequest),
    Ack(&'a [u8]),
}

/// The whole record at the start of `bytes`, and its length, if there is one. A batch record
/// whose body does not decode is no record (damage), however its checksum came to match, so that
/// it cannot swallow the records after it.
fn record_at(bytes: &[u8]) -> Option<(Record<'_>, usize)> {
    let header = bytes.get(..HEADER)?;
    let len = u32::from_le_bytes(header[..4].try_into().expect("4 bytes")) as usize;
    let kind = header[12];
    let body = bytes.get(HEADER..HEADER.checked_add(len)?)?;
    if !matches!(kind, BATCH | ACK) || header[4..12] != checksum(kind, body) {
        return None;
    }
    let record = match kind {
        BATCH => Record::Batch(SubmitGamesRequest::decode(body).ok()?),
        _ => Record::Ack(body),
    };
    Some((record, HEADER + len))
}

/// What a log's bytes hold.
struct Decoded<'a> {
    /// The whole records, in order.
    records: Vec<Record<'a>>,
    /// Damaged stretches before a whole record, as byte ranges.
    damaged: Vec<std::ops::Range<usize>>,
    /// Where a damaged or cut-off tail begins (no whole record after it), if there is one.
    tail: Option<usize>,
}

/// Every whole record of `bytes`: after a damaged one it looks for the next offset where a
/// whole record starts (the checksum makes a false start all but impossible).
fn decode_records(bytes: &[u8]) -> Decoded<'_> {
    let mut decoded = Decoded { records: Vec::new(), damaged: Vec::new(), tail: None };
    let mut at = 0;
    while at < bytes.len() {
        if let Some((record, len)) = record_at(&bytes[at..]) {
            decoded.records.push(record);
            at += len;
            continue;
        }
        match (at + 1..bytes.len()).find(|&next| record_at(&bytes[next..]).is_some()) {
            Some(next) => {
                decoded.damaged.push(at..next);
                at = next;
            }
            None => {
                decoded.tail = Some(at);
                break;
            }
        }
    }
    decoded
}

impl Spool {
    /// Opens (or creates) the spool in `dir`, dropping a torn last record and compacting the log
    /// to the pending batches.
    pub fn open(dir: &Path) -> Result<Spool, SpoolError> {
        let path = dir.join(LOG);
        let err = |source| SpoolError { path: path.clone(), source };
        fs::create_dir_all(dir).map_err(err)?;
        let bytes = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::NotFound => Vec::new(),
            Err(e) => return Err(err(e)),
        };
        let decoded = decode_records(&bytes);
        let mut quarantined = Vec::new();
        for range in &decoded.damaged {
            quarantined.push(quarantine(dir, &bytes[range.clone()], range).map_err(err)?);
        }
        let mut pending = VecDeque::new();
        for record in decoded.records {
            match record {
                Record::Batch(batch) => pending.push_back(batch),
                Record::Ack(key) => {
                    let key = String::from_utf8_lossy(key);
                    pending.retain(|b: &SubmitGamesRequest| b.idempotency_key != key);
                }
            }
        }
        // Written to a new file and renamed over the log, so a crash leaves one or the other whole.
        let tmp = dir.join(format!("{LOG}.tmp"));
        let mut compacted = File::create(&tmp).map_err(err)?;
        for batch in &pending {
            compacted.write_all(&encode_record(BATCH, &batch.encode_to_vec())).map_err(err)?;
        }
        compacted.sync_all().map_err(err)?;
        fs::rename(&tmp, &path).map_err(err)?;
        sync_dir(dir).map_err(err)?;
        let file = OpenOptions::new().append(true).open(&path).map_err(err)?;
        Ok(Spool { path, file, pending, torn_tail: decoded.tail.is_some(), quarantined })
    }

    /// Whether opening found (and dropped) a torn or corrupt last record.
    pub fn had_torn_tail(&self) -> bool {
        self.torn_tail
    }

    /// The files that opening moved damaged stretches of the log to (in `quarantine/`).
    pub fn quarantined(&self) -> &[PathBuf] {
        &self.quarantined
    }

    /// Batches waiting.
    pub fn len(&self) -> usize {
        self.pending.len()
    }

    /// Whether no batch is waiting.
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// The oldest batch waiting.
    pub fn front(&self) -> Option<&SubmitGamesRequest> {
        self.pending.front()
    }

    /// Appends a batch; it is on disk when this returns.
    pub fn push(&mut self, batch: &SubmitGamesRequest) -> Result<(), SpoolError> {
        self.append(BATCH, &batch.encode_to_vec())?;
        self.pending.push_back(batch.clone());
        Ok(())
    }

    /// Forgets the batch with this idempotency key (acknowledged or set aside).
    pub fn remove(&mut self, key: &str) -> Result<(), SpoolError> {
        self.pending.retain(|b| b.idempotency_key != key);
        if self.pending.is_empty() {
            // Nothing pending: the whole log is history. Truncation leaves either the old log
            // (all acknowledged but the last, re-sent harmlessly under its key) or an empty one.
            self.file.set_len(0).and_then(|()| self.file.sync_all()).map_err(|source| self.error(source))
        } else {
            self.append(ACK, key.as_bytes())
        }
    }

    fn append(&mut self, kind: u8, body: &[u8]) -> Result<(), SpoolError> {
        let record = encode_record(kind, body);
        self.file.write_all(&record).and_then(|()| self.file.sync_data()).map_err(|source| self.error(source))
    }

    fn error(&self, source: io::Error) -> SpoolError {
        SpoolError { path: self.path.clone(), source }
    }
}

/// Keeps a damaged stretch of the log, found at `range`, in `dir/quarantine/` with a note of why;
/// returns its file.
fn quarantine(dir: &Path, bytes: &[u8], range: &std::ops::Range<usize>) -> io::Result<PathBuf> {
    let folder = dir.join("quarantine");
    fs::create_dir_all(&folder)?;
    let stamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let path = folder.join(format!("batches-{stamp}-{}-{}.bin", range.start, range.end));
    fs::write(&path, bytes)?;
    fs::write(
        path.with_extension("txt"),
        format!(
            "{} bytes at offset {} of {LOG} are not whole records (a failed checksum, or a batch that does not \
             decode); the records after them were kept.\n",
            bytes.len(),
            range.start
        ),
    )?;
    sync_dir(&folder)?;
    Ok(path)
}

#[cfg(unix)]
fn sync_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

#[cfg(not(unix))]
fn sync_dir(_dir: &Path) -> io::Result<()> {
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use xqz_proto::v1::GameSubmission;

    fn batch(key: &str, games: usize) -> SubmitGamesRequest {
        SubmitGamesRequest {
            idempotency_key: key.into(),
            worker_id: "w".into(),
            games: vec![GameSubmission { moves: vec![1, 2, 3], ..Default::default() }; games],
        }
    }

    fn keys(spool: &Spool) -> Vec<String> {
        spool.pending.iter().map(|b| b.idempotency_key.clone()).collect()
    }

    #[test]
    fn batches_survive_a_reopen_in_order_until_removed() {
        let dir = tempfile::tempdir().unwrap();
        let mut spool = Spool::open(dir.path()).unwrap();
        for key in ["a", "b", "c"] {
            spool.push(&batch(key, 2)).unwrap();
        }
        drop(spool);
        let mut spool = Spool::open(dir.path()).unwrap();
        assert_eq!(keys(&spool), ["a", "b", "c"]);
        assert_eq!(spool.front(), Some(&batch("a", 2)));
        spool.remove("a").unwrap();
        spool.push(&batch("d", 1)).unwrap();
        drop(spool);
        let mut spool = Spool::open(dir.path()).unwrap();
        assert_eq!(keys(&spool), ["b", "c", "d"]);
        assert!(!spool.had_torn_tail());
        for key in ["c", "b", "d"] {
            spool.remove(key).unwrap();
        }
        assert!(spool.is_empty());
        assert_eq!(fs::metadata(dir.path().join(LOG)).unwrap().len(), 0);
        assert!(Spool::open(dir.path()).unwrap().is_empty());
    }

    #[test]
    fn a_torn_last_record_is_dropped_and_appending_continues() {
        let dir = tempfile::tempdir().unwrap();
        let mut spool = Spool::open(dir.path()).unwrap();
        spool.push(&batch("a", 1)).unwrap();
        spool.push(&batch("b", 3)).unwrap();
        drop(spool);
        let path = dir.path().join(LOG);
        let len = fs::metadata(&path).unwrap().len();
        // A crash in the middle of writing "b".
        OpenOptions::new().write(true).open(&path).unwrap().set_len(len - 5).unwrap();
        let mut spool = Spool::open(dir.path()).unwrap();
        assert!(spool.had_torn_tail());
        assert_eq!(keys(&spool), ["a"]);
        spool.push(&batch("c", 1)).unwrap();
        drop(spool);
        let spool = Spool::open(dir.path()).unwrap();
        assert!(!spool.had_torn_tail());
        assert_eq!(keys(&spool), ["a", "c"]);
    }

    #[test]
    fn damage_in_the_middle_is_quarantined_and_later_batches_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let mut spool = Spool::open(dir.path()).unwrap();
        for key in ["a", "b", "c"] {
            spool.push(&batch(key, 2)).unwrap();
        }
        drop(spool);
        let path = dir.path().join(LOG);
        let mut bytes = fs::read(&path).unwrap();
        let second = HEADER + batch("a", 2).encode_to_vec().len();
        // A flipped bit in "b"'s body, and a length field of "b" ruined too.
        bytes[second + HEADER + 3] ^= 0x10;
        bytes[second] = 0xff;
        fs::write(&path, &bytes).unwrap();
        let spool = Spool::open(dir.path()).unwrap();
        assert_eq!(keys(&spool), ["a", "c"]);
        assert!(!spool.had_torn_tail());
        let [kept] = spool.quarantined() else { panic!("{:?}", spool.quarantined()) };
        assert_eq!(fs::read(kept).unwrap().len(), HEADER + batch("b", 2).encode_to_vec().len());
        assert!(fs::read_to_string(kept.with_extension("txt")).unwrap().contains(&format!("offset {second}")));
    }

    #[test]
    fn a_whole_record_that_is_not_a_batch_is_quarantined_and_the_others_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let mut spool = Spool::open(dir.path()).unwrap();
        spool.push(&batch("a", 1)).unwrap();
        drop(spool);
        let path = dir.path().join(LOG);
        let mut bytes = fs::read(&path).unwrap();
        let at = bytes.len();
        // Field 1 (the key) claims 5 bytes and has none: the checksum matches, the batch does not decode.
        let odd = encode_record(BATCH, &[0x0a, 0x05]);
        bytes.extend_from_slice(&odd);
        bytes.extend_from_slice(&encode_record(BATCH, &batch("b", 1).encode_to_vec()));
        fs::write(&path, &bytes).unwrap();
        let spool = Spool::open(dir.path()).unwrap();
        assert_eq!(keys(&spool), ["a", "b"]);
        let [kept] = spool.quarantined() else { panic!("{:?}", spool.quarantined()) };
        assert_eq!(fs::read(kept).unwrap(), odd);
        let note = fs::read_to_string(kept.with_extension("txt")).unwrap();
        assert!(note.contains(&format!("offset {at}")) && note.contains("does not decode"), "{note}");
        drop(spool);

        // A forged record whose claimed body runs into the next one does not swallow it.
        fs::write(&path, &bytes[..at]).unwrap();
        let next = encode_record(BATCH, &batch("c", 1).encode_to_vec());
        let mut forged = Vec::new();
        let body: Vec<u8> = [&[0x0a, 0x05][..], &next[..5]].concat();
        forged.extend_from_slice(&u32::try_from(body.len()).unwrap().to_le_bytes());
        forged.extend_from_slice(&checksum(BATCH, &body));
        forged.push(BATCH);
        forged.extend_from_slice(&[0x0a, 0x05]);
        let mut log = bytes[..at].to_vec();
        log.extend_from_slice(&forged);
        log.extend_from_slice(&next);
        fs::write(&path, &log).unwrap();
        let spool = Spool::open(dir.path()).unwrap();
        assert_eq!(keys(&spool), ["a", "c"]);
        assert!(!spool.had_torn_tail());
        drop(spool);
        assert_eq!(keys(&Spool::open(dir.path()).unwrap()), ["a", "c"], "compacted without it");
    }

    #[test]
    fn a_corrupt_last_record_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let mut spool = Spool::open(dir.path()).unwrap();
        spool.push(&batch("a", 1)).unwrap();
        spool.push(&batch("b", 1)).unwrap();
        drop(spool);
        let path = dir.path().join(LOG);
        let mut bytes = fs::read(&path).unwrap();
        let last = bytes.len() - 1;
        bytes[last] ^= 0xff;
        fs::write(&path, bytes).unwrap();
        let spool = Spool::open(dir.path()).unwrap();
        assert!(spool.had_torn_tail());
        assert_eq!(keys(&spool), ["a"]);
    }
}
