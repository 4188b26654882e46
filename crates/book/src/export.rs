//! A book as one Parquet table for pyarrow and duckdb: one row per position and move.

use std::path::Path;
use std::sync::Arc;

use arrow_array::builder::{Float64Builder, StringBuilder, UInt64Builder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;
use xiangqi::Position;
use xiangqi::notation::Chinese;

use crate::book::Book;
use crate::error::{BookError, Result};

const ROWS: &str = "SELECT p.fen, p.ecco, p.opening, m.move, m.games, m.wins, m.draws, m.losses, m.avg_plies, \
m.min_ply, m.value, m.visits, m.prior FROM positions p JOIN moves m ON m.position_id = p.id ORDER BY p.id, m.move";

/// The columns: the position (its FEN, in the book's frame), the move in coordinate (ICCS) and
/// Chinese notation, the counts from the side to move's view, the searched value, visits and
/// prior where a search filled them, and the opening's ECCO code and name.
fn schema() -> Schema {
    let field = |name: &str, data_type: DataType, nullable: bool| Field::new(name, data_type, nullable);
    Schema::new(vec![
        field("fen", DataType::Utf8, false),
        field("move", DataType::Utf8, false),
        field("chinese", DataType::Utf8, false),
        field("games", DataType::UInt64, false),
        field("wins", DataType::UInt64, false),
        field("draws", DataType::UInt64, false),
        field("losses", DataType::UInt64, false),
        field("avg_plies", DataType::Float64, false),
        field("min_ply", DataType::UInt64, false),
        field("value", DataType::Float64, true),
        field("visits", DataType::UInt64, true),
        field("prior", DataType::Float64, true),
        field("ecco", DataType::Utf8, true),
        field("opening", DataType::Utf8, true),
    ])
}

impl Book {
    /// Writes every position and move of the book to `out` as Parquet (through a temporary
    /// file renamed into place); returns the rows written.
    pub fn export_parquet(&self, out: &Path) -> Result<u64> {
        let invalid = |message: String| BookError::NotABook { path: self.path().to_path_buf(), message };
        let mut columns = Columns::default();
        let mut statement = self.connection().prepare(ROWS).map_err(|e| self.sqlite(e))?;
        let mut rows = statement.query([]).map_err(|e| self.sqlite(e))?;
        let mut current: Option<(String, Position)> = None;
        while let Some(row) = rows.next().map_err(|e| self.sqlite(e))? {
            let get = |i| row.get::<_, rusqlite::types::Value>(i);
            let fen: String = row.get(0).map_err(|e| self.sqlite(e))?;
            if current.as_ref().is_none_or(|(f, _)| *f != fen) {
                let pos = Position::from_fen(&fen).map_err(|e| invalid(format!("position {fen:?}: {e}")))?;
                current = Some((fen.clone(), pos));
            }
            let pos = &current.as_ref().expect("set above").1;
            let text: String = row.get(3).map_err(|e| self.sqlite(e))?;
            let mv = text.parse().map_err(|_| invalid(format!("bad move {text:?}")))?;
            let chinese = Chinese::from_move(pos, mv).map_err(|e| invalid(format!("move {text} in {fen}: {e}")))?;
            columns.push(&fen, &text, &chinese.to_string(), get).map_err(|e| self.sqlite(e))?;
        }
        columns.write(out, self.path())
    }
}

/// The table's columns as they are filled.
#[derive(Default)]
struct Columns {
    fen: StringBuilder,
    mv: StringBuilder,
    chinese: StringBuilder,
    counts: [UInt64Builder; 4],
    avg_plies: Float64Builder,
    min_ply: UInt64Builder,
    value: Float64Builder,
    visits: UInt64Builder,
    prior: Float64Builder,
    ecco: StringBuilder,
    opening: StringBuilder,
    rows: u64,
}

impl Columns {
    /// One row; `get(i)` is the query's column `i`.
    fn push(
        &mut self,
        fen: &str,
        mv: &str,
        chinese: &str,
        get: impl Fn(usize) -> rusqlite::Result<rusqlite::types::Value>,
    ) -> rusqlite::Result<()> {
        use rusqlite::types::Value;
        let integer = |v: Value| match v {
            Value::Integer(n) => Some(n as u64),
            _ => None,
        };
        let real = |v: Value| match v {
            Value::Real(x) => Some(x),
            Value::Integer(n) => Some(n as f64),
            _ => None,
        };
        let text = |v: Value| match v {
            Value::Text(s) => Some(s),
            _ => None,
        };
        self.fen.append_value(fen);
        self.mv.append_value(mv);
        self.chinese.append_value(chinese);
        for (i, column) in self.counts.iter_mut().enumerate() {
            column.append_value(integer(get(4 + i)?).unwrap_or(0));
        }
        self.avg_plies.append_value(real(get(8)?).unwrap_or(0.0));
        self.min_ply.append_value(integer(get(9)?).unwrap_or(0));
        self.value.append_option(real(get(10)?));
        self.visits.append_option(integer(get(11)?));
        self.prior.append_option(real(get(12)?));
        self.ecco.append_option(text(get(1)?));
        self.opening.append_option(text(get(2)?));
        self.rows += 1;
        Ok(())
    }

    fn write(mut self, out: &Path, book: &Path) -> Result<u64> {
        let io = |source| BookError::Io { path: out.to_path_buf(), source };
        let parquet =
            |e: parquet::errors::ParquetError| BookError::Export { path: out.to_path_buf(), message: e.to_string() };
        let [games, wins, draws, losses] = &mut self.counts;
        let columns: Vec<ArrayRef> = vec![
            Arc::new(self.fen.finish()),
            Arc::new(self.mv.finish()),
            Arc::new(self.chinese.finish()),
            Arc::new(games.finish()),
            Arc::new(wins.finish()),
            Arc::new(draws.finish()),
            Arc::new(losses.finish()),
            Arc::new(self.avg_plies.finish()),
            Arc::new(self.min_ply.finish()),
            Arc::new(self.value.finish()),
            Arc::new(self.visits.finish()),
            Arc::new(self.prior.finish()),
            Arc::new(self.ecco.finish()),
            Arc::new(self.opening.finish()),
        ];
        let metadata: std::collections::HashMap<String, String> =
            [("xqz.book".to_string(), book.display().to_string())].into_iter().collect();
        let schema = Arc::new(schema().with_metadata(metadata));
        let batch = RecordBatch::try_new(Arc::clone(&schema), columns)
            .map_err(|e| BookError::Export { path: out.to_path_buf(), message: e.to_string() })?;
        xqz_run_folder::write_atomic_with(out, |tmp| {
            let file = std::fs::File::create(tmp).map_err(io)?;
            let mut writer = ArrowWriter::try_new(file, schema, None).map_err(parquet)?;
            writer.write(&batch).map_err(parquet)?;
            writer.into_inner().map_err(parquet)?;
            Ok::<(), BookError>(())
        })?;
        Ok(self.rows)
    }
}
