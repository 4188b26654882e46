//! `xqz book`: build opening books from datasets or grow them by search, probe and export them.

use std::fmt::Write as _;
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use clap::Subcommand;
use xiangqi::notation::Chinese;
use xiangqi::{Position, START_FEN};
use xqz_book::{Book, BookBuilder, BuildConfig, HtmlConfig, SuiteConfig};
use xqz_dataset::DatasetLocation;
use xqz_mcts::OpeningSuite;

#[derive(Subcommand)]
pub enum BookCommand {
    /// Merge the stored games of dataset folders and PGN files into an SQLite book (positions and
    /// the moves played from them, W/D/L for the side to move, ECCO names). An existing book is
    /// refused unless --force; books are rebuilt from their sources, never merged into. A PGN game
    /// that does not read or replay, or has no result (`*`), is reported with its file and line
    /// and left out; the rest of the file is imported.
    Build {
        /// The book file to write.
        #[arg(long)]
        out: PathBuf,
        /// A dataset: a folder or an object store prefix (`s3://`, `gs://`, `az://`); repeat for
        /// several.
        #[arg(long = "data", required_unless_present = "pgn", value_parser = DatasetLocation::parse)]
        data: Vec<DatasetLocation>,
        /// A PGN file, moves in ICCS, WXF or Chinese notation (repeat for several).
        #[arg(long = "pgn")]
        pgn: Vec<PathBuf>,
        /// Count only each game's first P plies.
        #[arg(long, default_value_t = BuildConfig::default().max_ply)]
        max_ply: u32,
        /// Leave out moves played in fewer than K games.
        #[arg(long, default_value_t = BuildConfig::default().min_games)]
        min_games: u32,
        /// Replace an existing book.
        #[arg(long)]
        force: bool,
    },
    /// Grow a book by search (KataGo genbook style): repeatedly search the position the book is
    /// likeliest to reach whose value is least certain, and add its best moves with their values,
    /// visits and priors. The book file is the state: a later grow resumes where this one
    /// stopped. A missing book is created. Stops after --minutes or --positions, whichever comes
    /// first, or when no position is left within --max-ply.
    #[cfg(feature = "torch")]
    Grow(crate::book_grow::GrowArgs),
    /// The book's moves for a position (found from either mirror side): games, W/D/L for the side
    /// to move, mean game length, the move in coordinate and Chinese notation, the opening.
    Probe {
        /// The book file.
        book: PathBuf,
        /// The position in FEN.
        #[arg(long, conflicts_with = "moves")]
        fen: Option<String>,
        /// Moves in coordinate notation from the start position (`"h2e2 h9g7"`).
        #[arg(long)]
        moves: Option<String>,
        /// One JSON object: the position's FEN and opening, and its moves, each with the opening
        /// it leads to.
        #[arg(long)]
        json: bool,
    },
    /// Write a book in another format: `parquet`, every position and move as one table for
    /// pyarrow and duckdb; `epd`, an opening suite for `xqz eval match --openings` (balanced
    /// positions at one ply, spread over the ECCO families; --ply, --count, --balance and
    /// --min-games choose them); `html`, pages to browse from the start position (--out is a
    /// folder; --max-positions bounds it).
    Export {
        /// The book file.
        book: PathBuf,
        /// The output format.
        #[arg(long, value_enum)]
        format: ExportFormat,
        /// The file to write (the folder, for html).
        #[arg(long)]
        out: PathBuf,
        /// Most pages of an html export, nearest the start position first.
        #[arg(long, default_value_t = HtmlConfig::default().max_positions)]
        max_positions: usize,
        /// The ply of the suite's positions.
        #[arg(long, default_value_t = SuiteConfig::default().ply)]
        ply: u32,
        /// Positions in the suite.
        #[arg(long, default_value_t = SuiteConfig::default().count)]
        count: usize,
        /// Largest distance of a position's score from 50%, as a fraction (0.15: 35% to 65%).
        #[arg(long, default_value_t = SuiteConfig::default().balance)]
        balance: f64,
        /// Fewest games through a position.
        #[arg(long, default_value_t = SuiteConfig::default().min_games)]
        min_games: u64,
    },
    /// Copy a book written by an earlier version of xqz (an earlier schema) into this version's
    /// layout, every position, move count and search result kept. The book read is left as it
    /// was; --out is refused if it exists unless --force.
    Migrate {
        /// The book file to read.
        book: PathBuf,
        /// The book file to write.
        #[arg(long)]
        out: PathBuf,
        /// Replace an existing --out.
        #[arg(long)]
        force: bool,
    },
    /// A book command of the full build, met in the build without libtorch.
    #[cfg(not(feature = "torch"))]
    #[command(external_subcommand)]
    Other(Vec<String>),
}

/// What `xqz book export` writes.
#[derive(Copy, Clone, Debug, clap::ValueEnum)]
pub enum ExportFormat {
    /// One row per position and move: FEN, the move in ICCS and Chinese notation, games, W/D/L,
    /// average length, earliest ply, value, visits, prior, ECCO code and opening.
    Parquet,
    /// An opening suite, one position per line: the FEN, then `;`-separated fields (ECCO code,
    /// opening, games, score), as EPD writes operations.
    Epd,
    /// Static pages, one per position (`index.html` the start position): the board as SVG, the
    /// moves in Chinese notation with W/D/L bars, values, priors and openings, linked.
    Html,
}

/// Largest opening suite file read (an EPD line is about 100 bytes; the suite holds at most
/// [`OpeningSuite::MAX_POSITIONS`]).
const MAX_SUITE_BYTES: u64 = 32 << 20;

/// The opening suite in `path`: an EPD suite (one FEN per line), or a book (SQLite) whose suite
/// is drawn as `xqz book export --format epd` draws it with its default options.
pub fn load_suite(path: &Path) -> Result<OpeningSuite> {
    let read = || format!("reading the opening suite {}", path.display());
    let mut head = Vec::with_capacity(16);
    std::fs::File::open(path).and_then(|f| f.take(16).read_to_end(&mut head)).with_context(read)?;
    let suite = if head == b"SQLite format 3\0" {
        let config = SuiteConfig::default();
        let entries = Book::open(path)?.suite(config)?;
        anyhow::ensure!(
            !entries.is_empty(),
            "{}: no position of the book at ply {} has {} games or more with a score within {} of 50%",
            path.display(),
            config.ply,
            config.min_games,
            config.balance
        );
        OpeningSuite::from_fens(entries.iter().map(|e| e.fen.as_str()))
    } else {
        let size = std::fs::metadata(path).with_context(read)?.len();
        anyhow::ensure!(
            size <= MAX_SUITE_BYTES,
            "{}: {size} bytes, more than an opening suite may have ({MAX_SUITE_BYTES})",
            path.display()
        );
        OpeningSuite::parse(&std::fs::read_to_string(path).with_context(read)?)
    };
    suite.map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))
}

pub fn run(command: BookCommand) -> Result<()> {
    match command {
        BookCommand::Build { out, data, pgn, max_ply, min_games, force } => {
            build(&out, &data, &pgn, BuildConfig { max_ply, min_games }, force)
        }
        #[cfg(feature = "torch")]
        BookCommand::Grow(args) => crate::book_grow::run(&args),
        BookCommand::Probe { book, fen, moves, json } => probe(&book, fen.as_deref(), moves.as_deref(), json),
        BookCommand::Export { book, format: ExportFormat::Epd, out, ply, count, balance, min_games, .. } => {
            anyhow::ensure!((0.0..=0.5).contains(&balance), "--balance {balance} must be 0 to 0.5");
            export_suite(&book, &out, SuiteConfig { ply, count, balance, min_games })
        }
        BookCommand::Export { book, format: ExportFormat::Html, out, max_positions, .. } => {
            anyhow::ensure!(max_positions > 0, "--max-positions must be at least 1");
            let config = HtmlConfig { max_positions };
            let summary = Book::open(&book)?.export_html(&out, config)?;
            println!("{}: {} pages, start at index.html", out.display(), summary.pages);
            if summary.left_out > 0 {
                eprintln!(
                    "{} positions the pages lead to were left out (--max-positions {max_positions})",
                    summary.left_out
                );
            }
            Ok(())
        }
        BookCommand::Export { book, format: ExportFormat::Parquet, out, .. } => {
            let rows = Book::open(&book)?.export_parquet(&out)?;
            println!("{}: {rows} rows (positions and moves)", out.display());
            Ok(())
        }
        BookCommand::Migrate { book, out, force } => {
            let migrated = xqz_book::migrate(&book, &out, force)?;
            println!(
                "{}: {} positions and {} moves of {} (schema version {}) in schema version {}",
                out.display(),
                migrated.positions,
                migrated.moves,
                book.display(),
                migrated.from_version,
                xqz_book::SCHEMA_VERSION
            );
            Ok(())
        }
        #[cfg(not(feature = "torch"))]
        BookCommand::Other(words) => Err(crate::without_torch(&format!("book {}", words[0]))),
    }
}

fn export_suite(path: &std::path::Path, out: &std::path::Path, config: SuiteConfig) -> Result<()> {
    let suite = Book::open(path)?.suite(config)?;
    anyhow::ensure!(
        !suite.is_empty(),
        "no position of {} at ply {} has {} games or more with a score within {} of 50%",
        path.display(),
        config.ply,
        config.min_games,
        config.balance
    );
    let mut text = format!(
        "# {} positions at ply {} from {} (score within {:.0}% of 50%, at least {} games)\n",
        suite.len(),
        config.ply,
        path.display(),
        100.0 * config.balance,
        config.min_games
    );
    for entry in &suite {
        writeln!(
            text,
            "{} ; ecco {} ; opening {} ; games {} ; score {:.3}",
            entry.fen,
            entry.ecco.as_deref().unwrap_or("-"),
            entry.opening.as_deref().unwrap_or("-"),
            entry.games,
            entry.score
        )?;
    }
    xqz_run_folder::write_atomic(out, text.as_bytes())?;
    println!("{}: {} positions", out.display(), suite.len());
    Ok(())
}

/// Skipped PGN games printed per file; the rest are only counted.
const SKIPS_SHOWN: u64 = 20;

fn build(
    out: &std::path::Path,
    data: &[DatasetLocation],
    pgn: &[PathBuf],
    config: BuildConfig,
    force: bool,
) -> Result<()> {
    // Checked before the datasets are read, so that a refusal comes at once.
    if out.exists() && !force {
        bail!("{} already exists (pass --force to replace it)", out.display());
    }
    let start = Instant::now();
    let mut builder = BookBuilder::new(config);
    for location in data {
        let name = location.to_string();
        let games = builder.add_dataset(location.clone()).with_context(|| format!("reading {name}"))?;
        eprintln!("{name}: {games} games");
    }
    for file in pgn {
        let mut shown = 0;
        let import = builder.add_pgn(file, |skipped| {
            shown += 1;
            if shown <= SKIPS_SHOWN {
                eprintln!("skipped {skipped}");
            }
        })?;
        if import.skipped > SKIPS_SHOWN {
            eprintln!("... and {} more skipped games of {}", import.skipped - SKIPS_SHOWN, file.display());
        }
        eprintln!("{}: {} games imported, {} skipped", file.display(), import.imported, import.skipped);
    }
    let summary = builder.write(out, force)?;
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{}: {} games, {} plies, {} positions, {} moves in {secs:.2}s ({:.0} positions/s)",
        out.display(),
        summary.games,
        summary.plies,
        summary.positions,
        summary.moves,
        summary.plies as f64 / secs.max(1e-9)
    );
    Ok(())
}

fn probe(path: &std::path::Path, fen: Option<&str>, moves: Option<&str>, json: bool) -> Result<()> {
    let mut pos = Position::from_fen(fen.unwrap_or(START_FEN)).with_context(|| format!("invalid FEN {fen:?}"))?;
    for text in moves.unwrap_or_default().split_whitespace() {
        let mv = text.parse().with_context(|| format!("bad move {text:?}"))?;
        pos.play(mv).with_context(|| format!("{text} is not legal in {pos}"))?;
    }
    let book = Book::open(path)?;
    let Some(entry) = book.probe(&pos)? else {
        eprintln!("not in the book: {pos}");
        return Ok(());
    };
    let mut out = String::new();
    if json {
        // Each move with the opening it leads to (as the HTML pages give it); the position's
        // own opening once, beside its FEN.
        let mut moves = Vec::with_capacity(entry.moves.len());
        for m in &entry.moves {
            let mut child = pos.clone();
            child.play(m.mv).with_context(|| format!("the book's move {} is not legal in {pos}", m.mv))?;
            let leads_to = book.probe(&child)?;
            moves.push(serde_json::json!({
                "move": m.mv.to_string(),
                "chinese": Chinese::from_move(&pos, m.mv).map(|c| c.to_string()).unwrap_or_default(),
                "games": m.games,
                "wins": m.wins,
                "draws": m.draws,
                "losses": m.losses,
                "score": m.score(),
                "avg_plies": m.avg_plies,
                "min_ply": m.min_ply,
                "value": m.value,
                "visits": m.visits,
                "prior": m.prior,
                "ecco": leads_to.as_ref().and_then(|e| e.ecco.clone()),
                "opening": leads_to.and_then(|e| e.opening),
            }));
        }
        let position = serde_json::json!({
            "fen": pos.to_string(),
            "ecco": entry.ecco,
            "opening": entry.opening,
            "moves": moves,
        });
        writeln!(out, "{position}")?;
        return emit(&out);
    }
    match (&entry.ecco, &entry.opening) {
        (Some(code), Some(name)) => writeln!(out, "opening: {code} {name}")?,
        _ => writeln!(out, "opening: unnamed")?,
    }
    writeln!(
        out,
        "{:<6} {:<10} {:>8} {:>20} {:>7} {:>9} {:>8} {:>7} {:>8}",
        "move", "chinese", "games", "W/D/L", "score", "avg len", "min ply", "value", "visits"
    )?;
    for m in &entry.moves {
        let chinese = Chinese::from_move(&pos, m.mv).map(|c| c.to_string()).unwrap_or_default();
        // A move only a search added has no games to count.
        let dash = || "-".to_string();
        writeln!(
            out,
            "{:<6} {} {:>8} {:>20} {:>7} {:>9} {:>8} {:>7} {:>8}",
            m.mv.to_string(),
            pad(&chinese, 10),
            m.games,
            format!("{}/{}/{}", m.wins, m.draws, m.losses),
            m.score().map_or_else(dash, |s| format!("{:.1}%", 100.0 * s)),
            if m.games > 0 { format!("{:.1}", m.avg_plies) } else { dash() },
            m.min_ply,
            m.value.map_or_else(dash, |v| format!("{v:+.3}")),
            m.visits.map_or_else(dash, |n| n.to_string())
        )?;
    }
    emit(&out)
}

/// `text` padded to `width` terminal columns; Chinese characters take two.
fn pad(text: &str, width: usize) -> String {
    let used: usize = text.chars().map(|c| if c.is_ascii() { 1 } else { 2 }).sum();
    format!("{text}{}", " ".repeat(width.saturating_sub(used)))
}

/// Writes to stdout; a reader that stops early (`xqz book probe ... | head`) is not an error.
fn emit(text: &str) -> Result<()> {
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        result => result.context("writing to stdout"),
    }
}
