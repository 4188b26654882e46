//! `xqz bench`: benchmarks that print numbers, as text or (`--json`) one JSON object per
//! measurement.

use anyhow::Result;
use clap::Subcommand;

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
    /// A checkpoint's answers in bfloat16 against single precision on positions of real games:
    /// top-move agreement, value difference and speed of each.
    #[cfg(feature = "torch")]
    Precision(crate::bench_precision::PrecisionArgs),
    /// Many simulated workers submitting games to a coordinator: validated games/s and latency.
    Ingest(crate::bench_ingest::IngestArgs),
    /// A benchmark of the full build, met in the build without libtorch.
    #[cfg(not(feature = "torch"))]
    #[command(external_subcommand)]
    Other(Vec<String>),
}

/// Runs a benchmark.
pub fn run(command: BenchCommand) -> Result<()> {
    match command {
        #[cfg(feature = "torch")]
        BenchCommand::Net(args) => crate::bench_net::bench_net(&args),
        #[cfg(feature = "torch")]
        BenchCommand::Selfplay(args) => crate::bench_net::bench_selfplay(&args),
        #[cfg(feature = "torch")]
        BenchCommand::Precision(args) => crate::bench_precision::run(&args),
        BenchCommand::Ingest(args) => crate::bench_ingest::run(&args),
        #[cfg(not(feature = "torch"))]
        BenchCommand::Other(words) => Err(crate::without_torch(&format!("bench {}", words[0]))),
    }
}
