//! The run folder's CSV files, each a header and a row per line, only ever appended to: one
//! writer ([`RowWriter`]) and one reader ([`RowReader`]) for every row type.
//!
//! A crash in the middle of an append leaves a last line without its newline. The reader leaves
//! it out (it reads complete lines only, so a file being written reads the same), and the next
//! writer cuts it off before it appends, so that a resumed run never glues a row to a torn one.

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize, Serializer};

use crate::atomic::IoError;

/// A row type of one of the run folder's CSV files: its fields are the file's columns.
pub trait Row: Serialize + DeserializeOwned {
    /// The columns, in the order the fields are declared (and so written).
    const COLUMNS: &'static [&'static str];
}

/// Why a CSV file could not be read or appended to.
#[derive(Debug, thiserror::Error)]
pub enum RowError {
    /// The file could not be read or written.
    #[error(transparent)]
    Io(#[from] IoError),
    /// A line is not a row of the file's type.
    #[error("{}: {source}", path.display())]
    Csv {
        /// The file.
        path: PathBuf,
        /// Why (with the line).
        source: csv::Error,
    },
    /// The file's header is not this type's: another file, or another version's.
    #[error("{}: its header is {found:?}, not {expected:?}", path.display())]
    Header {
        /// The file.
        path: PathBuf,
        /// The header found.
        found: String,
        /// The header of the rows asked for.
        expected: String,
    },
}

fn csv_error(path: &Path) -> impl FnOnce(csv::Error) -> RowError + '_ {
    move |source| RowError::Csv { path: path.to_path_buf(), source }
}

/// Appends rows of type `R` to a CSV file, writing the header if the file is new.
pub struct RowWriter<R> {
    file: File,
    path: PathBuf,
    _row: PhantomData<fn(&R)>,
}

impl<R: Row> RowWriter<R> {
    /// Opens `path` for appending (creating it). A torn last line is cut off; a file with
    /// another header is refused.
    pub fn open(path: &Path) -> Result<RowWriter<R>, RowError> {
        let at = IoError::at(path);
        let mut file = OpenOptions::new().create(true).read(true).append(true).open(path).map_err(at)?;
        let mut text = Vec::new();
        file.read_to_end(&mut text).map_err(IoError::at(path))?;
        let complete = text.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        if complete < text.len() {
            file.set_len(complete as u64).map_err(IoError::at(path))?;
        }
        let mut writer = RowWriter { file, path: path.to_path_buf(), _row: PhantomData };
        match text[..complete].split(|&b| b == b'\n').next().filter(|h| !h.is_empty()) {
            None => writer.write(&R::COLUMNS.join(","))?,
            Some(header) => check_header::<R>(path, &String::from_utf8_lossy(header))?,
        }
        Ok(writer)
    }

    /// Appends `row`, in one write.
    pub fn append(&mut self, row: &R) -> Result<(), RowError> {
        let mut line = csv::WriterBuilder::new().has_headers(false).from_writer(Vec::new());
        line.serialize(row).map_err(csv_error(&self.path))?;
        let line = line.into_inner().map_err(|e| IoError::at(&self.path)(e.into_error()))?;
        self.file.write_all(&line).map_err(IoError::at(&self.path))?;
        Ok(())
    }

    fn write(&mut self, line: &str) -> Result<(), RowError> {
        Ok(writeln!(self.file, "{line}").map_err(IoError::at(&self.path))?)
    }
}

fn check_header<R: Row>(path: &Path, found: &str) -> Result<(), RowError> {
    let expected = R::COLUMNS.join(",");
    if found.trim_end_matches('\r') == expected {
        return Ok(());
    }
    Err(RowError::Header { path: path.to_path_buf(), found: found.to_string(), expected })
}

/// Reads the rows of type `R` of a CSV file as it grows: each call reads what was appended
/// since the last, complete lines only.
pub struct RowReader<R> {
    path: PathBuf,
    /// Bytes read: up to the end of the last complete line.
    offset: u64,
    header: Option<csv::StringRecord>,
    _row: PhantomData<fn() -> R>,
}

/// What [`RowReader::read_appended`] found.
#[derive(Debug, PartialEq)]
pub struct Appended<R> {
    /// The rows appended since the last read.
    pub rows: Vec<R>,
    /// Whether the file shrank or went away since the last read, so that these rows are a new
    /// file's (another run's): what was read before is not in it.
    pub restarted: bool,
}

impl<R: Row> RowReader<R> {
    /// A reader of `path` from its start.
    pub fn new(path: impl Into<PathBuf>) -> RowReader<R> {
        RowReader { path: path.into(), offset: 0, header: None, _row: PhantomData }
    }

    /// Every row of the file; none if there is no file yet.
    pub fn read_all(mut self) -> Result<Vec<R>, RowError> {
        Ok(self.read_appended(u64::MAX)?.rows)
    }

    /// The rows appended since the last call, reading at most `max_bytes` (the rest waits for
    /// the next call); a missing file has none. A bad line is an error each time it is read.
    pub fn read_appended(&mut self, max_bytes: u64) -> Result<Appended<R>, RowError> {
        let mut file = match File::open(&self.path) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let restarted = self.offset > 0;
                self.start_over();
                return Ok(Appended { rows: Vec::new(), restarted });
            }
            Err(e) => return Err(IoError::at(&self.path)(e).into()),
        };
        let len = file.metadata().map_err(IoError::at(&self.path))?.len();
        let restarted = len < self.offset;
        if restarted {
            self.start_over();
        }
        let mut chunk = Vec::new();
        file.seek(SeekFrom::Start(self.offset))
            .and_then(|_| file.take(max_bytes).read_to_end(&mut chunk))
            .map_err(IoError::at(&self.path))?;
        chunk.truncate(chunk.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1));
        let mut header = self.header.clone();
        let mut rows = Vec::new();
        let lines = csv::ReaderBuilder::new().has_headers(false).from_reader(chunk.as_slice());
        for record in lines.into_records() {
            let record = record.map_err(csv_error(&self.path))?;
            match &header {
                None => {
                    check_header::<R>(&self.path, &record.iter().collect::<Vec<_>>().join(","))?;
                    header = Some(record);
                }
                Some(names) => rows.push(record.deserialize(Some(names)).map_err(csv_error(&self.path))?),
            }
        }
        // Committed only once the whole chunk parsed, so that a bad line is reported each time.
        self.offset += chunk.len() as u64;
        self.header = header;
        Ok(Appended { rows, restarted })
    }

    fn start_over(&mut self) {
        (self.offset, self.header) = (0, None);
    }
}

/// Writes `x` rounded to `digits` decimals: the precision the numbers mean, in short lines.
fn rounded<S: Serializer>(x: f64, digits: i32, serializer: S) -> Result<S::Ok, S::Error> {
    let scale = 10f64.powi(digits);
    serializer.serialize_f64(if x.is_finite() { (x * scale).round() / scale } else { x })
}

fn round1<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
    rounded(*x, 1, s)
}

fn round4<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
    rounded(*x, 4, s)
}

fn round6<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
    rounded(*x, 6, s)
}

/// A row of the trainer's `metrics.csv`: where training is, and the mean losses since the
/// previous row.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct MetricsRow {
    /// Steps taken in all.
    pub step: u64,
    /// Samples trained on in all.
    pub samples_seen: u64,
    /// Samples in the dataset.
    pub dataset_samples: u64,
    /// Samples in the replay window.
    pub window: u64,
    /// Mean policy loss of the steps since the previous row.
    #[serde(serialize_with = "round6")]
    pub policy_loss: f64,
    /// Mean value loss of the steps since the previous row.
    #[serde(serialize_with = "round6")]
    pub value_loss: f64,
    /// Learning rate used.
    pub learning_rate: f64,
    /// Training samples per second since the previous row.
    #[serde(serialize_with = "round1")]
    pub samples_per_second: f64,
    /// Latest published model version.
    pub model_version: u64,
}

impl Row for MetricsRow {
    const COLUMNS: &'static [&'static str] = &[
        "step",
        "samples_seen",
        "dataset_samples",
        "window",
        "policy_loss",
        "value_loss",
        "learning_rate",
        "samples_per_second",
        "model_version",
    ];
}

/// A row of `strength.csv`: one strength match of a model against the anchor, with the Elo of
/// the arena's paired statistics and its 95% interval, the model's rating with the anchor at
/// 0. A perfect or a zero score makes them unbounded, written `inf` or `-inf`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StrengthRow {
    /// The model version.
    pub version: u64,
    /// Its training steps.
    pub steps: u64,
    /// When it was published, Unix seconds.
    pub published_unix: u64,
    /// The anchor it played (`material@32`).
    pub opponent: String,
    /// Games won.
    pub wins: u32,
    /// Games drawn.
    pub draws: u32,
    /// Games lost.
    pub losses: u32,
    /// The model's score, 0 to 1.
    #[serde(serialize_with = "round4")]
    pub score: f64,
    /// Elo difference to the anchor.
    #[serde(serialize_with = "round1")]
    pub elo: f64,
    /// Lower end of its 95% interval.
    #[serde(serialize_with = "round1")]
    pub elo_lower: f64,
    /// Upper end.
    #[serde(serialize_with = "round1")]
    pub elo_upper: f64,
}

impl Row for StrengthRow {
    const COLUMNS: &'static [&'static str] = &[
        "version",
        "steps",
        "published_unix",
        "opponent",
        "wins",
        "draws",
        "losses",
        "score",
        "elo",
        "elo_lower",
        "elo_upper",
    ];
}

/// A row of `logs/roles.csv`: what `xqz run` did with one of its roles, or saw it do, and when.
/// The file is the record of how a run's roles started and stopped, appended to by each sitting
/// of the run.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoleRow {
    /// When, Unix milliseconds.
    pub unix_ms: u64,
    /// The role: `coordinator`, `worker-N` or `trainer`.
    pub role: String,
    /// Its process id, which is also its process group's.
    pub pid: u32,
    /// What happened.
    pub event: RoleEvent,
    /// For [`RoleEvent::Exited`], its exit code, if it exited by itself.
    pub code: Option<i32>,
    /// For [`RoleEvent::Exited`], the signal that ended it, if one did.
    pub signal: Option<i32>,
}

/// What happened to a role ([`RoleRow::event`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RoleEvent {
    /// It was started.
    Started,
    /// It was asked to stop (SIGTERM).
    AskedToStop,
    /// It had not stopped when its time to stop was up, and was killed (its process group).
    KilledLate,
    /// It was killed (its process group) with every other role at once: a second signal to
    /// `xqz run`.
    Killed,
    /// It is gone (reaped), with [`RoleRow::code`] or [`RoleRow::signal`] saying how.
    Exited,
}

impl Row for RoleRow {
    const COLUMNS: &'static [&'static str] = &["unix_ms", "role", "pid", "event", "code", "signal"];
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metrics(step: u64) -> MetricsRow {
        MetricsRow {
            step,
            samples_seen: 64 * step,
            dataset_samples: 1000,
            window: 900,
            policy_loss: 3.123_456_789,
            value_loss: 0.9,
            learning_rate: 2e-5,
            samples_per_second: 310.55,
            model_version: 1,
        }
    }

    fn strength(version: u64, elo: f64) -> StrengthRow {
        StrengthRow {
            version,
            steps: 10 * version,
            published_unix: 1_700_000_000,
            opponent: "material@32".into(),
            wins: 3,
            draws: 2,
            losses: 0,
            score: 0.8,
            elo,
            elo_lower: -20.25,
            elo_upper: f64::INFINITY,
        }
    }

    #[test]
    fn rows_round_trip_with_one_header_and_rounded_numbers() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("metrics.csv");
        RowWriter::open(&path).unwrap().append(&metrics(1)).unwrap();
        // A resumed writer adds no second header.
        RowWriter::open(&path).unwrap().append(&metrics(2)).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], MetricsRow::COLUMNS.join(","));
        assert_eq!(lines[1], "1,64,1000,900,3.123457,0.9,0.00002,310.6,1", "{text}");
        let read = RowReader::<MetricsRow>::new(&path).read_all().unwrap();
        let expected = MetricsRow { policy_loss: 3.123457, samples_per_second: 310.6, ..metrics(2) };
        assert_eq!(read, [MetricsRow { step: 1, samples_seen: 64, ..expected.clone() }, expected]);

        let path = dir.path().join("strength.csv");
        let mut writer = RowWriter::open(&path).unwrap();
        for row in [strength(1, 12.34), strength(2, f64::NEG_INFINITY)] {
            writer.append(&row).unwrap();
        }
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.ends_with("\n2,20,1700000000,material@32,3,2,0,0.8,-inf,-20.3,inf\n"), "{text}");
        let read = RowReader::<StrengthRow>::new(&path).read_all().unwrap();
        assert_eq!(read[0], StrengthRow { elo: 12.3, elo_lower: -20.3, ..strength(1, 0.0) });
        assert_eq!(read[1].elo, f64::NEG_INFINITY);
    }

    #[test]
    fn the_files_of_earlier_versions_still_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("strength.csv");
        let old = "version,steps,published_unix,opponent,wins,draws,losses,score,elo,elo_lower,elo_upper\n\
                   4,400,1000,material@32,4,7,9,0.3750,-88.7,-268.2,51.8\n\
                   8,800,2000,material@32,10,0,0,1.0000,inf,120.0,inf\n";
        std::fs::write(&path, old).unwrap();
        let rows = RowReader::<StrengthRow>::new(&path).read_all().unwrap();
        assert_eq!((rows[0].score, rows[0].elo_lower, rows[1].elo), (0.375, -268.2, f64::INFINITY));
        let path = dir.path().join("metrics.csv");
        std::fs::write(
            &path,
            format!("{}\n1,64,256,256,5.100000,1.100000,0.02,300.0,0\n", MetricsRow::COLUMNS.join(",")),
        )
        .unwrap();
        let rows = RowReader::<MetricsRow>::new(&path).read_all().unwrap();
        assert_eq!((rows[0].policy_loss, rows[0].learning_rate), (5.1, 0.02));
    }

    #[test]
    fn a_torn_last_line_is_not_read_and_is_cut_off_before_the_next_append() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("metrics.csv");
        RowWriter::open(&path).unwrap().append(&metrics(1)).unwrap();
        let mut file = OpenOptions::new().append(true).open(&path).unwrap();
        file.write_all(b"2,128,10").unwrap();
        let mut reader = RowReader::<MetricsRow>::new(&path);
        assert_eq!(reader.read_appended(u64::MAX).unwrap().rows.len(), 1, "the good row reads");
        RowWriter::open(&path).unwrap().append(&metrics(3)).unwrap();
        let appended = reader.read_appended(u64::MAX).unwrap();
        assert_eq!(appended.rows.iter().map(|r| r.step).collect::<Vec<_>>(), [3]);
        assert!(!appended.restarted);
        assert_eq!(RowReader::<MetricsRow>::new(&path).read_all().unwrap().len(), 2);
    }

    #[test]
    fn a_growing_file_is_read_in_pieces_and_a_shorter_one_starts_over() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("strength.csv");
        let mut reader = RowReader::<StrengthRow>::new(&path);
        assert_eq!(reader.read_appended(u64::MAX).unwrap(), Appended { rows: vec![], restarted: false });
        let mut writer = RowWriter::open(&path).unwrap();
        for version in 1..=3 {
            writer.append(&strength(version, 0.0)).unwrap();
        }
        // A read that ends inside a line leaves the line for the next.
        let first = reader.read_appended(200).unwrap().rows;
        let rest = reader.read_appended(u64::MAX).unwrap().rows;
        assert!(!first.is_empty() && first.len() < 3, "{first:?}");
        assert_eq!(first.len() + rest.len(), 3);
        drop(writer);
        std::fs::remove_file(&path).unwrap();
        RowWriter::open(&path).unwrap().append(&strength(7, 0.0)).unwrap();
        let appended = reader.read_appended(u64::MAX).unwrap();
        assert!(appended.restarted);
        assert_eq!(appended.rows.iter().map(|r| r.version).collect::<Vec<_>>(), [7]);
    }

    #[test]
    fn a_bad_header_or_line_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("strength.csv");
        std::fs::write(&path, "version,elo\n7,120\n").unwrap();
        let error = RowReader::<StrengthRow>::new(&path).read_all().unwrap_err().to_string();
        assert!(error.contains("strength.csv") && error.contains("header"), "{error}");
        let error = RowWriter::<StrengthRow>::open(&path).err().unwrap().to_string();
        assert!(error.contains("strength.csv"), "{error}");
        std::fs::write(&path, format!("{}\n{}", StrengthRow::COLUMNS.join(","), "x,y,1,a,1,1,1,1,1,1,1\n")).unwrap();
        let mut reader = RowReader::<StrengthRow>::new(&path);
        let error = reader.read_appended(u64::MAX).unwrap_err().to_string();
        assert!(error.contains("strength.csv"), "{error}");
        assert!(reader.read_appended(u64::MAX).is_err(), "a bad line stays reported");
    }

    #[test]
    fn role_rows_round_trip_with_their_events_by_name_and_no_status_left_empty() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("roles.csv");
        let row = |event, code, signal| RoleRow {
            unix_ms: 1_700_000_000_123,
            role: "worker-0".into(),
            pid: 42,
            event,
            code,
            signal,
        };
        let rows = [
            row(RoleEvent::Started, None, None),
            row(RoleEvent::AskedToStop, None, None),
            row(RoleEvent::Exited, Some(0), None),
            row(RoleEvent::Killed, None, None),
            row(RoleEvent::Exited, None, Some(9)),
        ];
        let mut writer = RowWriter::open(&path).unwrap();
        for r in &rows {
            writer.append(r).unwrap();
        }
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("\n1700000000123,worker-0,42,asked_to_stop,,\n"), "{text}");
        assert!(text.ends_with(",exited,,9\n"), "{text}");
        assert_eq!(RowReader::<RoleRow>::new(&path).read_all().unwrap(), rows);
    }

    #[test]
    fn the_columns_are_the_fields() {
        let mut writer = csv::Writer::from_writer(Vec::new());
        writer.serialize(MetricsRow::default()).unwrap();
        let text = String::from_utf8(writer.into_inner().unwrap()).unwrap();
        assert!(text.starts_with(&format!("{}\n", MetricsRow::COLUMNS.join(","))), "{text}");
        let mut writer = csv::Writer::from_writer(Vec::new());
        writer.serialize(StrengthRow::default()).unwrap();
        let text = String::from_utf8(writer.into_inner().unwrap()).unwrap();
        assert!(text.starts_with(&format!("{}\n", StrengthRow::COLUMNS.join(","))), "{text}");
        let mut writer = csv::Writer::from_writer(Vec::new());
        let row =
            RoleRow { unix_ms: 0, role: String::new(), pid: 0, event: RoleEvent::Started, code: None, signal: None };
        writer.serialize(row).unwrap();
        let text = String::from_utf8(writer.into_inner().unwrap()).unwrap();
        assert!(text.starts_with(&format!("{}\n", RoleRow::COLUMNS.join(","))), "{text}");
    }
}
