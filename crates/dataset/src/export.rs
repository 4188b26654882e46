//! Exports for analysts: Parquet files, and PGN (the rules crate's writer, in one notation).

use std::collections::BTreeSet;
use std::fs::{self, File};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow_array::RecordBatch;
use arrow_schema::Schema;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression as ParquetCompression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use xiangqi::notation::{MoveNotation, pgn};

use crate::dataset::Dataset;
use crate::error::{ArrowContext, DatasetError, IoContext, Result};
use crate::record::GameRecord;
use crate::schema::{self, meta};

/// What [`export_parquet`] wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParquetExport {
    /// `games.parquet`.
    pub games_path: PathBuf,
    /// `samples.parquet`.
    pub samples_path: PathBuf,
    /// Rows in the games file.
    pub games: u64,
    /// Rows in the samples file.
    pub samples: u64,
}

/// The schema of an export: the static schema plus the dataset's rulesets and model versions.
fn export_schema(dataset: &Dataset, base: Schema) -> Arc<Schema> {
    let shards = dataset.shards();
    let rulesets: BTreeSet<&str> = shards.iter().flat_map(|s| s.rulesets.iter().map(String::as_str)).collect();
    let mut m = base.metadata().clone();
    m.insert(meta::RULESET.to_string(), rulesets.into_iter().collect::<Vec<_>>().join(","));
    if !shards.is_empty() {
        let lo = shards.iter().map(|s| s.model_version_min).min().unwrap_or(0);
        let hi = shards.iter().map(|s| s.model_version_max).max().unwrap_or(0);
        m.insert(meta::MODEL_VERSION_MIN.to_string(), lo.to_string());
        m.insert(meta::MODEL_VERSION_MAX.to_string(), hi.to_string());
    }
    m.insert(meta::WRITER.to_string(), format!("xqz-dataset {} (parquet export)", env!("CARGO_PKG_VERSION")));
    Arc::new(base.with_metadata(m))
}

fn write_parquet(
    path: &Path,
    schema: Arc<Schema>,
    batches: impl Iterator<Item = Result<Vec<RecordBatch>>>,
) -> Result<u64> {
    let parquet_err = |source| DatasetError::Parquet { path: path.to_path_buf(), source };
    xqz_run_folder::write_atomic_with(path, |tmp| {
        let file = File::create(tmp).at(tmp)?;
        let props = WriterProperties::builder()
            .set_compression(ParquetCompression::ZSTD(ZstdLevel::default()))
            .set_max_row_group_row_count(Some(65_536))
            .build();
        let mut writer = ArrowWriter::try_new(file, Arc::clone(&schema), Some(props)).map_err(parquet_err)?;
        let mut rows = 0;
        for shard in batches {
            for batch in shard? {
                // Shards carry their own metadata; the export's schema has the dataset's.
                let batch = RecordBatch::try_new(Arc::clone(&schema), batch.columns().to_vec())
                    .arrow(|| format!("exporting {}", path.display()))?;
                rows += batch.num_rows() as u64;
                writer.write(&batch).map_err(parquet_err)?;
            }
        }
        writer.into_inner().map_err(parquet_err)?;
        Ok(rows)
    })
}

/// Writes `games.parquet` and `samples.parquet` (zstd) into `out_dir` (created if needed),
/// with the same columns as the shards.
pub fn export_parquet(dataset: &Dataset, out_dir: &Path) -> Result<ParquetExport> {
    fs::create_dir_all(out_dir).at(out_dir)?;
    let games_path = out_dir.join("games.parquet");
    let samples_path = out_dir.join("samples.parquet");
    let games = write_parquet(
        &games_path,
        export_schema(dataset, schema::games_schema()),
        dataset.shards().iter().map(|s| dataset.games_batches(s).map(|b| b.batches)),
    )?;
    let samples = write_parquet(
        &samples_path,
        export_schema(dataset, schema::samples_schema()),
        dataset.shards().iter().map(|s| dataset.samples_batches(s).map(|b| b.batches)),
    )?;
    Ok(ParquetExport { games_path, samples_path, games, samples })
}

/// `YYYY-MM-DDTHH:MM:SS.sssZ` for Unix milliseconds.
pub fn format_unix_ms(ms: i64) -> String {
    let days = ms.div_euclid(86_400_000);
    let rem = ms.rem_euclid(86_400_000);
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    let (h, m, s, milli) = (rem / 3_600_000, rem / 60_000 % 60, rem / 1000 % 60, rem % 1000);
    format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}.{milli:03}Z")
}

/// Writes one game as PGN with its moves in `notation`: the Xiangqi tags, the dataset's own
/// (game id, termination and its article, ruleset, model, worker, seed, times) and the result.
///
/// ```
/// use xiangqi::game::{Game, GameConfig};
/// use xiangqi::notation::MoveNotation;
/// use xqz_dataset::{GameId, GameRecord, export::write_game_pgn};
/// let mut game = Game::new(GameConfig { max_plies: Some(2), ..Default::default() });
/// game.push_str("h2e2")?;
/// game.push_str("h9g7")?;
/// let record = GameRecord::from_game(&game, GameId::from_u128(1))?;
/// let mut out = Vec::new();
/// write_game_pgn(&record, MoveNotation::Chinese, &mut out)?;
/// let text = String::from_utf8(out)?;
/// assert!(text.contains("[Game \"Chinese Chess\"]") && text.contains("[Format \"Chinese\"]"), "{text}");
/// assert!(text.contains("1. 炮二平五 马8进7"), "{text}");
/// assert!(text.contains("[Result \"1/2-1/2\"]"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn write_game_pgn(game: &GameRecord, notation: MoveNotation, out: &mut dyn Write) -> Result<()> {
    let io = |e: io::Error| DatasetError::Io { path: PathBuf::from("<output>"), source: e };
    let start = game.start_position()?;
    let tags = [
        ("Event", "xqz self-play".to_string()),
        ("Date", format_unix_ms(game.start_time_ms)[..10].replace('-', ".")),
        ("Red", format!("xqz model v{}", game.model_version)),
        ("Black", format!("xqz model v{}", game.model_version)),
        ("Result", game.result.pgn().to_string()),
        ("GameId", game.game_id.to_string()),
        ("Termination", game.reason.clone()),
        ("Article", game.article.clone()),
        ("Ruleset", game.ruleset.name().to_string()),
        ("PlyCount", game.moves.len().to_string()),
        ("Worker", game.worker_id.clone()),
        ("Seed", game.seed.to_string()),
        ("Start", format_unix_ms(game.start_time_ms)),
        ("End", format_unix_ms(game.end_time_ms)),
    ];
    let comment = format!("{}: {} ({})", game.result, game.reason, game.article);
    let text = pgn(&tags, &start, &game.moves, notation, game.result.pgn(), Some(&comment))
        .map_err(|e| DatasetError::InvalidRecord(format!("game {} {e}", game.game_id)))?;
    out.write_all(text.as_bytes()).map_err(io)
}

/// Writes every game of the dataset with [`write_game_pgn`]; returns the number of games.
pub fn export_pgn(dataset: &Dataset, notation: MoveNotation, out: &mut dyn Write) -> Result<u64> {
    let mut n = 0;
    for shard in dataset.shards() {
        for game in dataset.read_games(shard)? {
            write_game_pgn(&game, notation, out)?;
            n += 1;
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_timestamps() {
        assert_eq!(format_unix_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(format_unix_ms(951_782_400_123), "2000-02-29T00:00:00.123Z");
        assert_eq!(format_unix_ms(1_767_225_599_999), "2025-12-31T23:59:59.999Z");
    }
}
