//! `xqz bench`: benchmarks that print numbers, as text or (`--json`) one JSON object per
//! measurement.

use anyhow::Result;
use clap::{Args, Subcommand};

/// Benchmarks.
#[derive(Subcommand)]
pub enum BenchCommand {
    /// Positions per second of the network at batch sizes 1..256, then through the batching
    /// service with concurrent callers.
    #[cfg(feature = "torch")]
    Net(crate::bench_net::NetArgs),
    /// Self-play speed with a network, and the share of CPU time spent outside network evaluation
    /// (search, rules, data).
    #[cfg(feature = "torch")]
    Selfplay(crate::bench_net::SelfPlayBenchArgs),
    /// Many simulated workers submitting games to a coordinator: validated games/s and latency.
    Ingest(crate::bench_ingest::IngestArgs),
    /// A benchmark of the full build, met in the build without libtorch.
    #[cfg(not(feature = "torch"))]
    #[command(external_subcommand)]
    Other(Vec<String>),
}

/// How a benchmark prints its measurements (`--json`, shared by every benchmark).
#[derive(Args, Clone, Copy, Debug)]
pub struct Output {
    /// Print one JSON object per measurement (JSON lines) instead of text; every object names its
    /// `bench` and `measurement` and carries what was measured, so that a line stands alone.
    #[arg(long)]
    pub json: bool,
}

impl Output {
    /// Prints a measurement: `text` as a line, or `fields` as one JSON line with `--json`.
    pub fn measurement(self, text: impl FnOnce() -> String, fields: serde_json::Value) {
        if self.json {
            println!("{fields}");
        } else {
            println!("{}", text());
        }
    }

    /// Prints a line that says what is measured; with `--json` the measurements carry it instead.
    pub fn context(self, text: impl FnOnce() -> String) {
        if !self.json {
            println!("{}", text());
        }
    }
}

/// Runs a benchmark.
pub fn run(command: BenchCommand) -> Result<()> {
    match command {
        #[cfg(feature = "torch")]
        BenchCommand::Net(args) => crate::bench_net::bench_net(&args),
        #[cfg(feature = "torch")]
        BenchCommand::Selfplay(args) => crate::bench_net::bench_selfplay(&args),
        BenchCommand::Ingest(args) => crate::bench_ingest::run(&args),
        #[cfg(not(feature = "torch"))]
        BenchCommand::Other(words) => Err(crate::without_torch(&format!("bench {}", words[0]))),
    }
}
