//! `xqz data`: inspect, summarise, export and compact self-play datasets.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Subcommand, ValueEnum};
use xiangqi::notation::MoveNotation;
use xqz_dataset::export::{self, format_unix_ms};
use xqz_dataset::{Compaction, Dataset, DatasetLocation, DatasetStats, DatasetWriter, ShardEntry, WriterConfig};

#[derive(Subcommand)]
pub enum DataCommand {
    /// List a dataset's shards with their row counts, and the files readers ignore (torn or
    /// uncommitted shards).
    Inspect {
        /// The dataset: a folder, or an object store prefix (`s3://`, `gs://`, `az://`).
        #[arg(value_parser = DatasetLocation::parse)]
        dataset: DatasetLocation,
        /// Also read every shard and check its schema and row counts against the manifest.
        #[arg(long)]
        verify: bool,
    },
    /// Results, terminations (reason and article) and a game-length histogram.
    Stats {
        /// The dataset: a folder, or an object store prefix (`s3://`, `gs://`, `az://`).
        #[arg(value_parser = DatasetLocation::parse)]
        dataset: DatasetLocation,
        /// Width of the histogram's buckets in plies.
        #[arg(long, default_value_t = 20)]
        bucket: u32,
        /// One JSON object (`shards`, `games`, `samples`, `results`, `terminations`,
        /// `model_versions`, `mean_length`, `lengths`) instead of the report.
        #[arg(long)]
        json: bool,
    },
    /// Export to Parquet (games.parquet and samples.parquet in a folder) or to PGN, as Xiangqi
    /// tools read it (moves in one --notation).
    Export {
        /// The dataset: a folder, or an object store prefix (`s3://`, `gs://`, `az://`).
        #[arg(value_parser = DatasetLocation::parse)]
        dataset: DatasetLocation,
        /// What to write.
        #[arg(long, value_enum, default_value_t = ExportFormat::Parquet)]
        format: ExportFormat,
        /// The output: a folder for parquet, a file (or `-` for stdout) for pgn.
        #[arg(long)]
        out: PathBuf,
        /// The moves' notation in PGN: iccs (`H2-E2`), wxf (`C2.5`) or chinese (`炮二平五`).
        #[arg(long, default_value_t = MoveNotation::Iccs)]
        notation: MoveNotation,
    },
    /// Merge each run of consecutive small shards into one, anywhere in the dataset (a
    /// coordinator merges only its newest shards as it writes): for datasets written before
    /// compaction or without it. Takes the dataset's lock, so not while a coordinator writes it.
    Compact {
        /// The dataset: a folder, or an object store prefix (`s3://`, `gs://`, `az://`).
        #[arg(value_parser = DatasetLocation::parse)]
        dataset: DatasetLocation,
        /// The most samples a merged shard may hold (the replay window reads a shard whole).
        #[arg(long, default_value_t = Compaction::default().max_samples)]
        max_samples: u64,
    },
}

#[derive(Copy, Clone, ValueEnum)]
pub enum ExportFormat {
    /// games.parquet and samples.parquet (zstd), same columns as the shards.
    Parquet,
    /// PGN, one game after another.
    Pgn,
}

/// A dataset's statistics as one JSON object, for other tools.
fn stats_json(stats: &DatasetStats) -> serde_json::Value {
    let results: serde_json::Map<String, serde_json::Value> =
        stats.results.iter().map(|(result, n)| (result.name().to_string(), (*n).into())).collect();
    let terminations: Vec<serde_json::Value> = stats
        .terminations
        .iter()
        .map(|((reason, article), n)| {
            serde_json::json!({ "reason": reason, "article": article, "red": n.red, "black": n.black, "draw": n.draw })
        })
        .collect();
    let models: serde_json::Map<String, serde_json::Value> =
        stats.model_versions.iter().map(|(v, n)| (v.to_string(), (*n).into())).collect();
    let quantile = |q: f64| stats.lengths.get(((stats.lengths.len().saturating_sub(1)) as f64 * q) as usize).copied();
    serde_json::json!({
        "shards": stats.shards,
        "games": stats.games,
        "samples": stats.samples,
        "results": results,
        "terminations": terminations,
        "model_versions": models,
        "mean_length": crate::ladder::finite(stats.mean_length()),
        "lengths": { "min": stats.lengths.first(), "median": quantile(0.5), "max": stats.lengths.last() },
    })
}

pub fn run(command: DataCommand) -> Result<()> {
    match run_command(command) {
        // `xqz data ... | head` is not an error.
        Err(err) if is_broken_pipe(&err) => Ok(()),
        result => result,
    }
}

fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| e.downcast_ref::<std::io::Error>().is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe))
}

/// Writes to stdout, reporting failures (a closed pipe included) as errors instead of panicking.
fn emit(text: &str) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()).context("writing to stdout")
}

fn run_command(command: DataCommand) -> Result<()> {
    match command {
        DataCommand::Compact { dataset, max_samples } => compact(dataset, max_samples),
        DataCommand::Inspect { dataset, verify } => inspect(dataset, verify),
        DataCommand::Stats { dataset, bucket, json } => {
            let dataset = open(dataset)?;
            report_ignored(&dataset);
            let stats = DatasetStats::compute(&dataset)?;
            if json { emit(&format!("{}\n", stats_json(&stats))) } else { emit(&stats.render(bucket)) }
        }
        DataCommand::Export { dataset, format, out, notation } => {
            let dataset = open(dataset)?;
            report_ignored(&dataset);
            match format {
                ExportFormat::Parquet => {
                    let done = export::export_parquet(&dataset, &out)?;
                    eprintln!(
                        "wrote {} games to {} and {} samples to {}",
                        done.games,
                        done.games_path.display(),
                        done.samples,
                        done.samples_path.display()
                    );
                }
                ExportFormat::Pgn if out.as_os_str() == "-" => {
                    let mut stdout = std::io::stdout().lock();
                    export::export_pgn(&dataset, notation, &mut stdout)?;
                    stdout.flush().context("writing to stdout")?;
                }
                ExportFormat::Pgn => {
                    let file = File::create(&out).with_context(|| format!("cannot create {}", out.display()))?;
                    let mut writer = BufWriter::new(file);
                    let n = export::export_pgn(&dataset, notation, &mut writer)?;
                    writer.flush().with_context(|| format!("writing {}", out.display()))?;
                    eprintln!("wrote {n} games to {}", out.display());
                }
            }
            Ok(())
        }
    }
}

fn open(location: DatasetLocation) -> Result<Dataset> {
    let name = location.to_string();
    Dataset::open_at(location).with_context(|| format!("cannot open dataset {name}"))
}

/// Ignored files go to stderr for the commands whose stdout is data.
fn report_ignored(dataset: &Dataset) {
    if !dataset.report().is_clean() {
        eprint!("warning: {}", dataset.report());
    }
}

fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 5] = ["B", "kB", "MB", "GB", "TB"];
    let mut value = n as f64;
    let mut unit = 0;
    while value >= 1000.0 && unit + 1 < UNITS.len() {
        value /= 1000.0;
        unit += 1;
    }
    if unit == 0 { format!("{n} B") } else { format!("{value:.1} {}", UNITS[unit]) }
}

fn inspect(location: DatasetLocation, verify: bool) -> Result<()> {
    use std::fmt::Write as _;
    let dataset = open(location)?;
    let manifest = dataset.manifest();
    let bytes: u64 = dataset.shards().iter().map(ShardEntry::bytes).sum();
    let mut out = String::new();
    writeln!(out, "dataset {}", dataset.location())?;
    writeln!(
        out,
        "schema version {}, {} shards ({} listed), {} games, {} samples, {}",
        manifest.schema_version,
        dataset.shards().len(),
        manifest.shards.len(),
        dataset.num_games(),
        dataset.num_samples(),
        human_bytes(bytes)
    )?;
    if !dataset.shards().is_empty() {
        writeln!(
            out,
            "{:>8} {:>8} {:>9} {:>10} {:>10} {:>11}  {:<14} created",
            "shard", "games", "samples", "games B", "samples B", "models", "rulesets"
        )?;
    }
    for s in dataset.shards() {
        writeln!(
            out,
            "{:>8} {:>8} {:>9} {:>10} {:>10} {:>11}  {:<14} {}",
            s.id,
            s.games,
            s.samples,
            human_bytes(s.games_bytes),
            human_bytes(s.samples_bytes),
            format!("{}-{}", s.model_version_min, s.model_version_max),
            s.rulesets.join(","),
            format_unix_ms(s.created_unix_ms)
        )?;
    }
    if dataset.report().is_clean() {
        writeln!(out, "ignored files: none")?;
    } else {
        write!(out, "{}", dataset.report())?;
    }
    if verify {
        for shard in dataset.shards() {
            dataset.read_games(shard).with_context(|| format!("shard {} does not verify", shard.id))?;
            dataset.read_samples(shard).with_context(|| format!("shard {} does not verify", shard.id))?;
        }
        writeln!(out, "verified {} shards: schemas and row counts match the manifest", dataset.shards().len())?;
    }
    emit(&out)
}

fn compact(location: DatasetLocation, max_samples: u64) -> Result<()> {
    anyhow::ensure!(max_samples > 0, "--max-samples must be positive");
    // A writer would create a dataset where there is none: a mistyped path is an error here.
    Dataset::open_existing(location.clone()).with_context(|| format!("cannot open dataset {location}"))?;
    let config =
        WriterConfig { flush_interval: None, writer_name: "xqz-data-compact".into(), ..WriterConfig::default() };
    let (mut writer, _) = DatasetWriter::open_at(location.clone(), config)
        .with_context(|| format!("cannot open {location} for writing"))?;
    let before = writer.manifest().shards.len();
    let merged = writer.compact_all(max_samples).with_context(|| format!("merging the shards of {location}"))?;
    let after = writer.manifest().shards.len();
    writer.finish().with_context(|| format!("closing {location}"))?;
    emit(&format!(
        "{location}: {before} shards, {after} after {} merge(s); the replaced files stay for readers of the old \
         manifest and are deleted by a coordinator or `xqz data compact` {} minutes or more from now\n",
        merged.len(),
        xqz_dataset::manifest::RETIRED_GRACE_MS / 60_000
    ))
}
