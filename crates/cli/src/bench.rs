//! `xqz bench net`: network throughput alone and through the batching service.

use std::time::Duration;

use anyhow::Result;
use clap::{Args, Subcommand};
use xqz_net::bench::{raw_throughput, sample_positions, service_throughput};
use xqz_net::service::ServiceConfig;
use xqz_net::{ModelConfig, Network, parse_device};

/// Benchmarks.
#[derive(Subcommand)]
pub enum BenchCommand {
    /// Positions per second of the network at batch sizes 1..256, then through the batching
    /// service with concurrent callers.
    Net(NetArgs),
}

/// Options of `xqz bench net`.
#[derive(Args)]
pub struct NetArgs {
    /// Model config: tiny, small, standard, or a .toml file.
    #[arg(long, default_value = "small")]
    model: String,
    /// Device: cpu, cuda, cuda:N or auto.
    #[arg(long, default_value = "auto")]
    device: String,
    /// Batch sizes of the raw measurement.
    #[arg(long, value_delimiter = ',', default_value = "1,8,32,128,256")]
    batches: Vec<usize>,
    /// Concurrent callers of the batching service.
    #[arg(long, default_value_t = 64)]
    callers: usize,
    /// Largest batch the service forms.
    #[arg(long, default_value_t = 256)]
    max_batch: usize,
    /// Longest a position waits for its batch to fill, in milliseconds.
    #[arg(long, default_value_t = 2.0)]
    max_wait_ms: f64,
    /// Seconds per measurement.
    #[arg(long, default_value_t = 3.0)]
    seconds: f64,
}

pub fn run(command: BenchCommand) -> Result<()> {
    match command {
        BenchCommand::Net(args) => bench_net(&args),
    }
}

fn bench_net(args: &NetArgs) -> Result<()> {
    let config = ModelConfig::resolve(&args.model)?;
    let device = parse_device(&args.device)?;
    anyhow::ensure!(args.seconds > 0.0, "--seconds must be positive");
    anyhow::ensure!(args.callers > 0 && args.max_batch > 0, "--callers and --max-batch must be positive");
    let duration = Duration::from_secs_f64(args.seconds);
    let net = Network::new(&config, device);
    println!(
        "model {} ({} blocks x {} channels, {} parameters) on {device:?}, libtorch threads {}",
        config.name,
        config.blocks,
        config.channels,
        net.parameter_count(),
        tch::get_num_threads()
    );
    let positions = sample_positions(1024, 1);
    let mut batch_128 = None;
    for &batch in &args.batches {
        anyhow::ensure!(batch > 0, "batch sizes must be positive");
        let rate = raw_throughput(&net, &positions, batch, duration);
        println!("raw batch {batch:>4}: {rate:>10.0} positions/s");
        if batch == 128 {
            batch_128 = Some(rate);
        }
    }
    let service =
        ServiceConfig { max_batch: args.max_batch, max_wait: Duration::from_secs_f64(args.max_wait_ms / 1000.0) };
    let (measured, _) = service_throughput(net, &positions, args.callers, service, duration);
    print!(
        "service, {} callers: {:>10.0} positions/s (mean batch {:.1})",
        args.callers, measured.positions_per_second, measured.mean_batch
    );
    match batch_128 {
        Some(raw) => println!(", {:.0}% of raw batch 128", 100.0 * measured.positions_per_second / raw),
        None => println!(),
    }
    Ok(())
}
