//! The worker's upload spool: a damaged `batches.log` -> `Spool::open`, then push and remove.
//!
//! The first byte picks the form of the rest. Raw: the rest is the log. Structured: the rest
//! describes a log as pieces: whole records, written by a spool's own `push` and `remove`, and
//! broken ones (garbage, a record cut short, a record with a byte changed).
//!
//! Checks: opening never panics and, on a log this program could have written, never fails; a
//! second opening finds the log compacted (the same batches, nothing torn or quarantined); push
//! and remove keep working and their effect survives a reopen; quarantined stretches are bytes
//! of the log. For a structured log, what the module docs promise: every whole record counts,
//! whatever damage lies before or after it, so the pending batches are exactly those without a
//! later acknowledgement, in order; damage before a whole record is quarantined byte for byte;
//! damage at the end is a torn tail.

use std::fs;
use std::path::{Path, PathBuf};

use arbitrary::{Result, Unstructured};
use xqz_proto::v1::{GameSubmission, SubmitGamesRequest};
use xqz_worker::spool::Spool;

/// The log's file name in the spool folder (module docs).
const LOG: &str = "batches.log";

/// A fresh, empty folder; on tmpfs where there is one, as the spool fsyncs every record.
fn scratch() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() { tempfile::tempdir_in(shm) } else { tempfile::tempdir() }.unwrap()
}

/// A batch under one of a few keys, so that acknowledgements meet batches.
fn batch(u: &mut Unstructured) -> Result<SubmitGamesRequest> {
    let games = (0..u.int_in_range(0..=2)?)
        .map(|_| Ok(GameSubmission { moves: u.arbitrary()?, seed: u.arbitrary()?, ..Default::default() }))
        .collect::<Result<_>>()?;
    Ok(SubmitGamesRequest { idempotency_key: key(u)?, worker_id: "w".into(), games })
}

/// One of six keys.
fn key(u: &mut Unstructured) -> Result<String> {
    Ok(format!("k{}", u.int_in_range(0..=5)?))
}

/// A piece of a log: a whole record or damage.
enum Piece {
    Batch(SubmitGamesRequest),
    Ack(String),
    Broken,
}

/// The pieces of a log with the bytes of each. Whole records are written by a spool's `push`
/// and `remove`, with a first batch that is never acknowledged so that every `remove` appends a
/// record (one that empties the spool truncates the log instead).
fn pieces(u: &mut Unstructured) -> Result<Vec<(Piece, Vec<u8>)>> {
    let dir = scratch();
    let log = dir.path().join(LOG);
    let mut writer = Spool::open(dir.path()).unwrap();
    writer.push(&SubmitGamesRequest { idempotency_key: "keeps the log going".into(), ..Default::default() }).unwrap();
    let mut end = fs::metadata(&log).unwrap().len() as usize;
    let mut written = Vec::new();
    for _ in 0..u.int_in_range(0..=8)? {
        let piece = match u.int_in_range(0..=3)? {
            0 | 1 => {
                let batch = batch(u)?;
                writer.push(&batch).unwrap();
                Piece::Batch(batch)
            }
            2 => {
                let key = key(u)?;
                writer.remove(&key).unwrap();
                Piece::Ack(key)
            }
            _ => Piece::Broken,
        };
        let now = fs::metadata(&log).unwrap().len() as usize;
        written.push((piece, end..now));
        end = now;
    }
    drop(writer);
    let written_log = fs::read(&log).unwrap();
    let mut out = Vec::with_capacity(written.len());
    let mut last: &[u8] = &[];
    for (piece, range) in written {
        let (piece, bytes) = match piece {
            // Damage: garbage, or the last whole record cut short or with a byte changed.
            Piece::Broken => {
                let broken = match u.int_in_range(0..=2)? {
                    // The garbage is XOR-ed with a fixed stream, so that libFuzzer cannot paste a
                    // checksum it saw compared into it and make a whole record of it.
                    0 => u
                        .arbitrary::<Vec<u8>>()?
                        .iter()
                        .enumerate()
                        .map(|(i, b)| b ^ (i as u8).wrapping_mul(167) ^ 0x5a)
                        .collect(),
                    1 if !last.is_empty() => last[..u.choose_index(last.len())?].to_vec(),
                    2 if !last.is_empty() => {
                        let mut changed = last.to_vec();
                        let at = u.choose_index(changed.len())?;
                        changed[at] ^= u.int_in_range(1..=255)?;
                        changed
                    }
                    _ => Vec::new(),
                };
                (Piece::Broken, broken)
            }
            piece => {
                last = &written_log[range];
                (piece, last.to_vec())
            }
        };
        out.push((piece, bytes));
    }
    Ok(out)
}

/// The quarantined stretches and their contents, in the order the spool lists them.
fn quarantined(spool: &Spool) -> Vec<Vec<u8>> {
    spool.quarantined().iter().map(|path: &PathBuf| fs::read(path).unwrap()).collect()
}

/// Opens the spool in `dir`, which holds a log that this program could have written, so opening
/// must not fail.
fn open(dir: &Path) -> Spool {
    Spool::open(dir).unwrap_or_else(|e| panic!("a log of whole records and damage does not open: {e}"))
}

/// Pending batches as the spool's interface shows them: for each key, in the order of its first
/// batch, that batch and how many are pending under the key (`remove` forgets them all).
type Shown = Vec<(SubmitGamesRequest, usize)>;

/// What `batches`, pending in this order, show.
fn shown(batches: &[SubmitGamesRequest]) -> Shown {
    let mut shown = Shown::new();
    for batch in batches {
        push(&mut shown, batch);
    }
    shown
}

/// `shown` after a push of `batch`.
fn push(shown: &mut Shown, batch: &SubmitGamesRequest) {
    match shown.iter_mut().find(|(b, _)| b.idempotency_key == batch.idempotency_key) {
        Some((_, count)) => *count += 1,
        None => shown.push((batch.clone(), 1)),
    }
}

/// What the spool in `dir` shows, read by removing each front batch from a copy of the folder.
fn read_back(dir: &Path) -> Shown {
    let copy = scratch();
    fs::copy(dir.join(LOG), copy.path().join(LOG)).unwrap();
    let mut spool = open(copy.path());
    let mut shown = Shown::new();
    while let Some(front) = spool.front().cloned() {
        let before = spool.len();
        spool.remove(&front.idempotency_key).unwrap();
        shown.push((front, before - spool.len()));
    }
    shown
}

/// After any opening of `dir`, whose spool shows `expected`: a reopen finds the log compacted
/// and shows the same; a push and a remove change what it shows as they should, also after a
/// reopen.
fn check_reopen_push_remove(dir: &Path, spool: Spool, mut expected: Shown) {
    let count = |shown: &Shown| shown.iter().map(|(_, n)| n).sum::<usize>();
    assert_eq!((spool.len(), spool.front()), (count(&expected), expected.first().map(|(b, _)| b)));
    assert_eq!(read_back(dir), expected, "pending batches");
    drop(spool);
    let mut spool = open(dir);
    assert!(!spool.had_torn_tail() && spool.quarantined().is_empty(), "the log was not compacted on opening");
    let new = SubmitGamesRequest { idempotency_key: "new".into(), worker_id: "w".into(), games: Vec::new() };
    spool.push(&new).unwrap();
    push(&mut expected, &new);
    let front = spool.front().cloned().unwrap();
    spool.remove(&front.idempotency_key).unwrap();
    expected.retain(|(b, _)| b.idempotency_key != front.idempotency_key);
    assert_eq!(spool.len(), count(&expected));
    drop(spool);
    assert_eq!(read_back(dir), expected, "push and remove after opening");
}

fn raw(log: &[u8]) {
    let dir = scratch();
    fs::write(dir.path().join(LOG), log).unwrap();
    // Whatever the log holds, even a record whose checksum libFuzzer forged from the comparison
    // it sees but whose batch does not decode (quarantined), it opens.
    let spool = Spool::open(dir.path()).unwrap_or_else(|e| panic!("a damaged log must still open: {e}"));
    let stretches = quarantined(&spool);
    assert!(stretches.iter().map(Vec::len).sum::<usize>() <= log.len());
    for stretch in stretches {
        assert!(
            !stretch.is_empty() && log.windows(stretch.len()).any(|w| w == stretch),
            "quarantined bytes not in the log"
        );
    }
    // Nothing to compare with but itself: what the first opening shows is what every later one must.
    let shown = read_back(dir.path());
    check_reopen_push_remove(dir.path(), spool, shown);
}

fn structured(u: &mut Unstructured) -> Result<()> {
    let pieces = pieces(u)?;
    let dir = scratch();
    let log: Vec<u8> = pieces.iter().flat_map(|(_, bytes)| bytes.iter().copied()).collect();
    fs::write(dir.path().join(LOG), &log).unwrap();
    // The promise, stated over the pieces: whole records in order, acknowledgements forgetting
    // earlier batches of their key; each run of damage before a whole record quarantined.
    let mut expected: Vec<SubmitGamesRequest> = Vec::new();
    let mut runs: Vec<Vec<u8>> = Vec::new();
    let mut damage: Vec<u8> = Vec::new();
    for (piece, bytes) in &pieces {
        match piece {
            Piece::Broken => {
                damage.extend_from_slice(bytes);
                continue;
            }
            Piece::Batch(batch) => expected.push(batch.clone()),
            Piece::Ack(key) => expected.retain(|b| &b.idempotency_key != key),
        }
        if !damage.is_empty() {
            runs.push(std::mem::take(&mut damage));
        }
    }
    let spool = open(dir.path());
    assert_eq!(spool.had_torn_tail(), !damage.is_empty(), "torn tail");
    assert_eq!(quarantined(&spool), runs, "quarantined stretches");
    check_reopen_push_remove(dir.path(), spool, shown(&expected));
    Ok(())
}

/// The target's check of one input: panics where a property fails.
pub fn check(data: &[u8]) {
    let Some((&form, rest)) = data.split_first() else { return };
    if form & 1 == 0 {
        raw(rest);
    } else {
        let _ = structured(&mut Unstructured::new(rest));
    }
}
