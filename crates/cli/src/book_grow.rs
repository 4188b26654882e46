//! `xqz book grow`: a book grown by search with a network (the full build's; see `book.rs` for
//! the rest of `xqz book`).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Result;
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use xiangqi::notation::Chinese;
use xiangqi::{Move, Position};
use xqz_book::{GrowConfig, Grower};
use xqz_mcts::SearchConfig;
use xqz_net::Precision;
use xqz_net::service::ServiceConfig;

/// Options of `xqz book grow`.
#[derive(Args)]
pub struct GrowArgs {
    /// The book file (grown in place).
    book: PathBuf,
    /// The checkpoint (its .json file), or `shipped` for the model built in.
    #[arg(long, default_value = crate::model::SHIPPED)]
    model: PathBuf,
    #[command(flatten)]
    device: crate::model::DeviceArg,
    /// Stop after this many minutes (the search under way finishes first).
    #[arg(long)]
    minutes: Option<f64>,
    /// Stop after searching this many positions.
    #[arg(long)]
    positions: Option<u64>,
    /// Playouts of each position's search.
    #[arg(long, default_value_t = GrowConfig::default().playouts, value_parser = clap::value_parser!(u32).range(1..))]
    playouts: u32,
    /// Most moves added per position.
    #[arg(long, default_value_t = GrowConfig::default().max_moves)]
    max_moves: usize,
    /// Moves added per position whatever their share of the visits (the most visited, if
    /// visited at all; at most --max-moves).
    #[arg(long, default_value_t = GrowConfig::default().min_moves)]
    min_moves: usize,
    /// Fewest visits, as a share of the search's, for a move beyond --min-moves to be added.
    #[arg(long, default_value_t = GrowConfig::default().min_share)]
    min_share: f64,
    /// Deepest ply searched.
    #[arg(long, default_value_t = GrowConfig::default().max_ply)]
    max_ply: u32,
    /// Leaves the search hands the network at once.
    #[arg(long, default_value_t = 8, value_parser = clap::value_parser!(u32).range(1..))]
    batch_size: u32,
}

/// Grows the book as `args` say.
pub fn run(args: &GrowArgs) -> Result<()> {
    let search = SearchConfig { leaves_per_batch: args.batch_size as usize, ..SearchConfig::default() };
    let config = GrowConfig {
        playouts: args.playouts,
        max_moves: args.max_moves,
        min_moves: args.min_moves,
        min_share: args.min_share,
        max_ply: args.max_ply,
        search,
    };
    grow(
        &args.book,
        &args.model,
        &args.device,
        Budget::new(args.minutes, args.positions)?,
        config,
        args.batch_size as usize,
    )
}

/// When `xqz book grow` stops.
struct Budget {
    deadline: Option<(Instant, Duration)>,
    positions: Option<u64>,
}

impl Budget {
    fn new(minutes: Option<f64>, positions: Option<u64>) -> Result<Budget> {
        anyhow::ensure!(minutes.is_some() || positions.is_some(), "give --minutes or --positions (or both)");
        let duration = minutes
            .map(|m| {
                anyhow::ensure!(m.is_finite() && m > 0.0, "--minutes {m} must be a positive number");
                Ok(Duration::from_secs_f64(m * 60.0))
            })
            .transpose()?;
        anyhow::ensure!(positions != Some(0), "--positions must be at least 1");
        Ok(Budget { deadline: duration.map(|d| (Instant::now() + d, d)), positions })
    }

    fn spent(&self, searched: u64) -> bool {
        self.positions.is_some_and(|n| searched >= n) || self.deadline.is_some_and(|(d, _)| Instant::now() >= d)
    }

    /// A progress bar over the positions, or else over the seconds.
    fn bar(&self) -> ProgressBar {
        let (len, unit) = match self.positions {
            Some(n) => (n, "positions"),
            None => (self.deadline.map_or(0, |(_, d)| d.as_secs()), "s"),
        };
        let bar = ProgressBar::new(len);
        let template = format!("{{elapsed_precise}} [{{bar:30}}] {{pos}}/{{len}} {unit}, ETA {{eta}} {{msg}}");
        bar.set_style(ProgressStyle::with_template(&template).expect("valid template").progress_chars("=> "));
        bar
    }
}

/// Plain progress lines this often when stderr is not a terminal.
const PLAIN_STATUS_EVERY: Duration = Duration::from_secs(10);

fn grow(
    path: &Path,
    model: &Path,
    device: &crate::model::DeviceArg,
    budget: Budget,
    config: GrowConfig,
    max_batch: usize,
) -> Result<()> {
    let mut grower = Grower::open(path, config)?;
    let before = grower.searched()?;
    let (service, _) =
        crate::model::serve(model, device.resolve()?, ServiceConfig { max_batch, ..device.service(Precision::F32) })?;
    let mut evaluator = service.client();
    let bar = budget.bar();
    let start = Instant::now();
    let mut last_line = start;
    let (mut searched, mut moves) = (0u64, 0usize);
    let finished = loop {
        if budget.spent(searched) {
            break false;
        }
        let Some(grown) = grower.step(&mut evaluator)? else { break true };
        searched += 1;
        moves += grown.moves;
        let rate = searched as f64 / start.elapsed().as_secs_f64().max(1e-9) * 60.0;
        let line = format!(
            "{rate:.1} positions/min; last: {} (ply {}), value {:+.2}, priority {:.4}",
            chinese_line(&grown.line),
            grown.line.len(),
            grown.value,
            grown.priority
        );
        match budget.positions {
            Some(_) => bar.set_position(searched),
            None => bar.set_position(start.elapsed().as_secs()),
        }
        if bar.is_hidden() && last_line.elapsed() >= PLAIN_STATUS_EVERY {
            last_line = Instant::now();
            eprintln!("{:.0}s {searched} positions searched, {line}", start.elapsed().as_secs_f64());
        }
        bar.set_message(line);
    };
    bar.finish_and_clear();
    let secs = start.elapsed().as_secs_f64();
    println!(
        "{}: {searched} positions searched in {secs:.1}s ({:.1}/min), {moves} moves written; {} searched positions in all{}",
        path.display(),
        searched as f64 / secs.max(1e-9) * 60.0,
        before + searched,
        if finished { " (none left to search within --max-ply)" } else { "" }
    );
    Ok(())
}

/// A line from the start position in Chinese notation (`start` for the empty line).
fn chinese_line(line: &[Move]) -> String {
    let mut pos = Position::startpos();
    let mut text = Vec::with_capacity(line.len());
    for &mv in line {
        text.push(Chinese::from_move(&pos, mv).map_or_else(|_| mv.to_string(), |c| c.to_string()));
        pos.play_unchecked(mv);
    }
    if text.is_empty() { "start".into() } else { text.join(" ") }
}
