//! Records of `xqz eval` matches: every game appended to `eval/games.pgn` (a PGN-like listing
//! with Chinese notation) and to the Arrow table `eval/games.arrow` (one row per game, rewritten
//! whole through a temporary file so a crash never leaves half a table).

use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{BufWriter, Cursor, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use arrow_array::{Array, ArrayRef, Float64Array, Int64Array, RecordBatch, StringArray, UInt32Array, UInt64Array};
use arrow_ipc::reader::FileReader;
use arrow_ipc::writer::FileWriter;
use arrow_schema::{DataType, Field, Schema, SchemaRef};
use xiangqi::Color;
use xiangqi::notation::movetext;
use xqz_arena::tournament::MatchGame;
use xqz_dataset::GameResult;

/// The columns of `games.arrow`.
pub fn schema() -> SchemaRef {
    let text = |name: &str| Field::new(name, DataType::Utf8, false);
    Arc::new(Schema::new(vec![
        text("match_id"),
        Field::new("end_time_ms", DataType::Int64, false),
        text("a"),
        text("b"),
        Field::new("a_steps", DataType::UInt64, true),
        Field::new("b_steps", DataType::UInt64, true),
        Field::new("pair", DataType::UInt32, false),
        text("a_color"),
        text("red"),
        text("black"),
        text("start_fen"),
        Field::new("opening_plies", DataType::UInt32, false),
        text("moves"),
        Field::new("plies", DataType::UInt32, false),
        text("result"),
        text("reason"),
        text("article"),
        Field::new("forfeit", DataType::Utf8, true),
        Field::new("a_score", DataType::Float64, false),
    ]))
}

/// One row of the table, as read back.
#[derive(Clone, Debug, PartialEq)]
pub struct GameRow {
    /// First player's name.
    pub a: String,
    /// Second player's name.
    pub b: String,
    /// Training steps of `a`, if a checkpoint.
    pub a_steps: Option<u64>,
    /// Training steps of `b`, if a checkpoint.
    pub b_steps: Option<u64>,
    /// `a`'s score.
    pub a_score: f64,
}

/// The records of one match.
pub struct MatchLog {
    dir: PathBuf,
    match_id: String,
    a: String,
    b: String,
    steps: (Option<u64>, Option<u64>),
    pgn: BufWriter<File>,
    rows: Vec<MatchGame>,
    times: Vec<i64>,
    terminations: BTreeMap<String, u32>,
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as i64)
}

impl MatchLog {
    /// Opens `out/eval/` for a match between `a` and `b`.
    pub fn open(out: &Path, a: &str, b: &str, a_steps: Option<u64>, b_steps: Option<u64>) -> Result<MatchLog> {
        let dir = out.join("eval");
        fs::create_dir_all(&dir).with_context(|| format!("create {}", dir.display()))?;
        let pgn_path = dir.join("games.pgn");
        let pgn = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&pgn_path)
            .with_context(|| format!("open {}", pgn_path.display()))?;
        Ok(MatchLog {
            dir,
            match_id: format!("{}-{}", xqz_dataset::export::format_unix_ms(now_ms()), std::process::id()),
            a: a.to_string(),
            b: b.to_string(),
            steps: (a_steps, b_steps),
            pgn: BufWriter::new(pgn),
            rows: Vec::new(),
            times: Vec::new(),
            terminations: BTreeMap::new(),
        })
    }

    /// The records folder.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Writes one game to the listing and keeps it for the table.
    pub fn append(&mut self, game: &MatchGame) -> Result<()> {
        let result = GameResult::from_outcome(game.outcome).context("a finished game")?;
        let verdict = game.outcome.verdict().context("a finished game")?;
        let termination = match &game.forfeit {
            Some(f) => format!("forfeit: {}", f.reason),
            None => format!("{} ({})", verdict.reason, verdict.article),
        };
        *self
            .terminations
            .entry(match &game.forfeit {
                Some(_) => "forfeit".to_string(),
                None => format!("{} {}", result.name(), verdict.reason),
            })
            .or_default() += 1;
        let mut text = String::new();
        for (name, value) in [
            ("Event", format!("xqz eval {}", self.match_id)),
            ("Round", format!("{}.{}", game.pair + 1, if game.first == Color::Red { 1 } else { 2 })),
            ("Red", game.red.clone()),
            ("Black", game.black.clone()),
            ("Result", result.pgn().to_string()),
            ("Termination", termination),
            ("Ruleset", verdict.ruleset.name().to_string()),
            ("Plies", game.moves.len().to_string()),
            ("OpeningPlies", game.opening_plies.to_string()),
            ("FEN", game.start.to_string()),
        ] {
            text.push_str(&format!("[{name} \"{}\"]\n", value.replace('\\', "\\\\").replace('"', "\\\"")));
        }
        text.push('\n');
        text.push_str(&movetext(&game.start, &game.moves)?);
        text.push_str(&format!("{}\n\n", result.pgn()));
        self.pgn.write_all(text.as_bytes())?;
        self.pgn.flush()?;
        self.rows.push(game.clone());
        self.times.push(now_ms());
        // The table too, so that an interrupted match keeps what it played.
        self.write_table()
    }

    /// How the games ended, counted by result and reason.
    pub fn terminations(&self) -> impl Iterator<Item = (&str, u32)> {
        self.terminations.iter().map(|(k, v)| (k.as_str(), *v))
    }

    fn batch(&self) -> Result<RecordBatch> {
        let n = self.rows.len();
        let text = |f: &dyn Fn(&MatchGame) -> String| -> ArrayRef {
            Arc::new(StringArray::from(self.rows.iter().map(f).collect::<Vec<_>>()))
        };
        let verdict = |g: &MatchGame| g.outcome.verdict().expect("finished");
        let columns: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from(vec![self.match_id.clone(); n])),
            Arc::new(Int64Array::from(self.times.clone())),
            Arc::new(StringArray::from(vec![self.a.clone(); n])),
            Arc::new(StringArray::from(vec![self.b.clone(); n])),
            Arc::new(UInt64Array::from(vec![self.steps.0; n])),
            Arc::new(UInt64Array::from(vec![self.steps.1; n])),
            Arc::new(UInt32Array::from(self.rows.iter().map(|g| g.pair).collect::<Vec<_>>())),
            text(&|g| g.first.to_string()),
            text(&|g| g.red.clone()),
            text(&|g| g.black.clone()),
            text(&|g| g.start.to_string()),
            Arc::new(UInt32Array::from(self.rows.iter().map(|g| g.opening_plies as u32).collect::<Vec<_>>())),
            text(&|g| g.moves.iter().map(ToString::to_string).collect::<Vec<_>>().join(" ")),
            Arc::new(UInt32Array::from(self.rows.iter().map(|g| g.moves.len() as u32).collect::<Vec<_>>())),
            text(&|g| GameResult::from_outcome(g.outcome).map_or("*", |r| r.pgn()).to_string()),
            text(&|g| verdict(g).reason.to_string()),
            text(&|g| verdict(g).article.to_string()),
            Arc::new(StringArray::from(
                self.rows.iter().map(|g| g.forfeit.as_ref().map(|f| f.reason.clone())).collect::<Vec<_>>(),
            )),
            Arc::new(Float64Array::from(self.rows.iter().map(MatchGame::first_score).collect::<Vec<_>>())),
        ];
        Ok(RecordBatch::try_new(schema(), columns)?)
    }

    /// Rewrites `games.arrow` as the earlier matches' rows plus this one's.
    fn write_table(&self) -> Result<()> {
        let path = self.dir.join("games.arrow");
        let mut batches = read_batches(&path)?
            .into_iter()
            .filter(|b| {
                let ids = b.column(0).as_any().downcast_ref::<StringArray>();
                !ids.is_some_and(|ids| ids.len() > 0 && ids.value(0) == self.match_id)
            })
            .collect::<Vec<_>>();
        batches.push(self.batch()?);
        let tmp = self.dir.join("games.arrow.tmp");
        {
            let file = File::create(&tmp).with_context(|| format!("create {}", tmp.display()))?;
            let mut writer = FileWriter::try_new(BufWriter::new(file), &schema())?;
            for batch in &batches {
                writer.write(batch)?;
            }
            writer.finish()?;
            writer.into_inner()?.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        }
        fs::rename(&tmp, &path).with_context(|| format!("replace {}", path.display()))?;
        Ok(())
    }
}

/// The batches of a table file (none if it does not exist); one batch per match.
fn read_batches(path: &Path) -> Result<Vec<RecordBatch>> {
    let bytes = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("read {}", path.display())),
    };
    let reader = FileReader::try_new(Cursor::new(bytes), None).with_context(|| format!("read {}", path.display()))?;
    anyhow::ensure!(reader.schema() == schema(), "{} has another schema", path.display());
    reader.map(|b| b.with_context(|| format!("read {}", path.display()))).collect()
}

/// Every game row of a folder's `eval/games.arrow`.
pub fn read_games(out: &Path) -> Result<Vec<GameRow>> {
    let mut rows = Vec::new();
    for batch in read_batches(&out.join("eval/games.arrow"))? {
        let text =
            |name: &str| batch.column_by_name(name).and_then(|c| c.as_any().downcast_ref::<StringArray>().cloned());
        let steps =
            |name: &str| batch.column_by_name(name).and_then(|c| c.as_any().downcast_ref::<UInt64Array>().cloned());
        let (Some(a), Some(b), Some(a_steps), Some(b_steps)) =
            (text("a"), text("b"), steps("a_steps"), steps("b_steps"))
        else {
            anyhow::bail!("games.arrow lacks its columns");
        };
        let score = batch
            .column_by_name("a_score")
            .and_then(|c| c.as_any().downcast_ref::<Float64Array>().cloned())
            .context("games.arrow lacks a_score")?;
        for i in 0..batch.num_rows() {
            let opt = |s: &UInt64Array| s.is_valid(i).then(|| s.value(i));
            rows.push(GameRow {
                a: a.value(i).to_string(),
                b: b.value(i).to_string(),
                a_steps: opt(&a_steps),
                b_steps: opt(&b_steps),
                a_score: score.value(i),
            });
        }
    }
    Ok(rows)
}
