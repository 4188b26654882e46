//! The benchmarks that run a network: `xqz bench net` (throughput alone and through the batching
//! service) and `xqz bench selfplay`.

use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;
use serde_json::json;
use xqz_net::bench::{raw_throughput, sample_positions, service_throughput};
use xqz_net::service::ServiceConfig;
use xqz_net::{ModelConfig, Network, Precision};

use crate::model::SELF_PLAY_PRECISION;

/// Options of `xqz bench selfplay`.
#[derive(Args)]
pub struct SelfPlayBenchArgs {
    /// Model config of a randomly initialised network: tiny, mid, small, standard or a .toml file.
    #[arg(long, default_value = "small")]
    model: String,
    #[command(flatten)]
    device: crate::model::DeviceArg,
    /// Games to play.
    #[arg(long, default_value_t = 32)]
    games: u64,
    /// Search threads.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Games per thread played at once.
    #[arg(long, default_value_t = 32)]
    games_per_thread: usize,
    /// The self-play settings (--mate-moves 1 against the default weighs the mate search's cost).
    #[command(flatten)]
    play: xqz_mcts::PlaySettings,
    #[command(flatten)]
    output: crate::bench_output::Output,
}

/// Options of `xqz bench net`.
#[derive(Args)]
pub struct NetArgs {
    /// Model config: tiny, mid, small, standard, or a .toml file.
    #[arg(long, default_value = "small")]
    model: String,
    #[command(flatten)]
    device: crate::model::DeviceArg,
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
    #[command(flatten)]
    output: crate::bench_output::Output,
}

pub fn bench_net(args: &NetArgs) -> Result<()> {
    let config = ModelConfig::resolve(&args.model)?;
    let device = args.device.resolve()?;
    let precision = args.device.precision_or(Precision::F32).on(device);
    anyhow::ensure!(args.seconds > 0.0, "--seconds must be positive");
    anyhow::ensure!(args.callers > 0 && args.max_batch > 0, "--callers and --max-batch must be positive");
    anyhow::ensure!(args.batches.iter().all(|&b| b > 0), "batch sizes must be positive");
    let duration = Duration::from_secs_f64(args.seconds);
    let net = Network::new(&config, device);
    let out = args.output;
    let threads = tch::get_num_threads();
    let setup = json!({
        "model": config.name,
        "blocks": config.blocks,
        "channels": config.channels,
        "parameters": net.parameter_count(),
        "device": format!("{device:?}"),
        "threads": threads,
        "precision": precision.to_string(),
        "seconds": args.seconds,
    });
    out.context(|| {
        format!(
            "model {} ({} blocks x {} channels, {} parameters) on {device:?}, libtorch threads {threads}, \
             inference in {}",
            config.name,
            config.blocks,
            config.channels,
            net.parameter_count(),
            precision,
        )
    });
    let with_setup = |mut fields: serde_json::Value| {
        fields.as_object_mut().expect("an object").extend(setup.as_object().expect("an object").clone());
        fields
    };
    let positions = sample_positions(1024, 1);
    let fast = xqz_net::InferenceNet::with_precision(&net, precision);
    let flops = xqz_net::inference::flops_per_position(&config) as f64;
    // The reference in the same run: libtorch's own matrix product at a size that reaches the
    // CPU's (or device's) practical peak.
    let peak = sgemm_gflops(device, duration);
    out.measurement(
        || format!("reference: sgemm {SGEMM_SIZE}x{SGEMM_SIZE} through libtorch: {peak:.1} GFLOP/s"),
        with_setup(json!({"bench": "net", "measurement": "sgemm", "size": SGEMM_SIZE, "gflops": peak})),
    );
    let mut batch_128 = None;
    for &batch in &args.batches {
        for (graph, rate) in [
            ("inference", raw_throughput(|x| fast.predict_batch(x), &positions, batch, duration)),
            ("training", raw_throughput(|x| net.predict_batch(x), &positions, batch, duration)),
        ] {
            let gflops = rate * flops / 1e9;
            out.measurement(
                || {
                    format!(
                        "raw batch {batch:>4}, {graph:>9} graph: {rate:>8.0} positions/s, {gflops:>6.1} GFLOP/s, \
                         {:>3.0}% of sgemm",
                        100.0 * gflops / peak
                    )
                },
                with_setup(json!({
                    "bench": "net", "measurement": "raw", "graph": graph, "batch": batch,
                    "positions_per_s": rate, "gflops": gflops, "share_of_sgemm": gflops / peak,
                })),
            );
            if batch == 128 && graph == "inference" {
                batch_128 = Some(rate);
            }
        }
    }
    let service = ServiceConfig {
        max_batch: args.max_batch,
        max_wait: Duration::from_secs_f64(args.max_wait_ms / 1000.0),
        cache_entries: 0,
        precision,
        ..ServiceConfig::default()
    };
    let (measured, _) = service_throughput(net, &positions, args.callers, service, duration);
    let share = batch_128.map(|raw| measured.positions_per_second / raw);
    out.measurement(
        || {
            let share = share.map_or_else(String::new, |s| format!(", {:.0}% of raw batch 128", 100.0 * s));
            format!(
                "service, {} callers: {:>10.0} positions/s (mean batch {:.1}){share}",
                args.callers, measured.positions_per_second, measured.mean_batch
            )
        },
        with_setup(json!({
            "bench": "net",
            "measurement": "service",
            "callers": args.callers,
            "max_batch": args.max_batch,
            "max_wait_ms": args.max_wait_ms,
            "positions_per_s": measured.positions_per_second,
            "mean_batch": measured.mean_batch,
            "share_of_raw_128": share,
        })),
    );
    Ok(())
}

/// Rows and columns of the reference matrix product.
const SGEMM_SIZE: i64 = 1024;

/// GFLOP/s of libtorch's float32 matrix product of two `SGEMM_SIZE` square matrices on `device`,
/// over about `duration`.
fn sgemm_gflops(device: xqz_net::Device, duration: Duration) -> f64 {
    let _guard = tch::no_grad_guard();
    let options = (tch::Kind::Float, device);
    let (a, b) =
        (tch::Tensor::randn([SGEMM_SIZE, SGEMM_SIZE], options), tch::Tensor::randn([SGEMM_SIZE, SGEMM_SIZE], options));
    let _ = a.matmul(&b).sum(tch::Kind::Float).double_value(&[]);
    let start = std::time::Instant::now();
    let mut products = 0u32;
    while start.elapsed() < duration || products == 0 {
        // Reading one value back waits for the device.
        let _ = a.matmul(&b).get(0).get(0).double_value(&[]);
        products += 1;
    }
    2.0 * (SGEMM_SIZE as f64).powi(3) * f64::from(products) / start.elapsed().as_secs_f64() / 1e9
}

/// CPU seconds (user + system) of a `/proc/.../stat` file.
fn cpu_seconds(stat: &str) -> Option<f64> {
    // The command name may hold spaces; the fields after it are space-separated.
    let fields: Vec<&str> = stat.get(stat.rfind(')')? + 2..)?.split(' ').collect();
    let ticks: f64 = fields.get(11)?.parse::<f64>().ok()? + fields.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

/// CPU seconds of the whole process and of its threads named `xqz-inference` (the inference
/// thread and the libtorch worker threads it started, which inherit its name), and their count.
fn cpu_split() -> Result<(f64, f64, usize)> {
    let process = cpu_seconds(&std::fs::read_to_string("/proc/self/stat")?).context("parse /proc/self/stat")?;
    let (mut inference, mut threads) = (0.0, 0);
    for task in std::fs::read_dir("/proc/self/task")? {
        let task = task?.path();
        let name = std::fs::read_to_string(task.join("comm")).unwrap_or_default();
        if name.trim_end() == "xqz-inference" {
            inference +=
                std::fs::read_to_string(task.join("stat")).ok().as_deref().and_then(cpu_seconds).unwrap_or(0.0);
            threads += 1;
        }
    }
    Ok((process, inference, threads))
}

pub fn bench_selfplay(args: &SelfPlayBenchArgs) -> Result<()> {
    use xqz_net::service::InferenceService;
    use xqz_worker::{LocalSelfPlay, play_into};

    let config = ModelConfig::resolve(&args.model)?;
    let device = args.device.resolve()?;
    let service = args.device.service(SELF_PLAY_PRECISION);
    let precision = service.precision.on(device);
    args.play.validate()?;
    let play = args.play.self_play_config(args.threads, args.games_per_thread, 0);
    args.output.context(|| {
        format!(
            "model {} on {device:?} in {precision}; {} games, {} threads x {} games, playouts {} full / {} cheap ({:.0}% full), \
             {} leaves per game per batch, mates by checks of up to {} moves at the leaves",
            config.name,
            args.games,
            play.threads,
            play.games_per_thread,
            play.playouts,
            play.cheap_playouts,
            100.0 * play.full_search_probability,
            play.search.leaves_per_batch,
            play.search.mate_moves
        )
    });
    let service = InferenceService::spawn(Network::new(&config, device), service);
    let dir = tempfile::tempdir()?;
    let run = LocalSelfPlay { games: args.games, model_version: 0, worker_id: "bench".into() };
    let (process_before, inference_before, _) = cpu_split()?;
    let report = play_into(dir.path(), &play, service.client(), &run, |_| {})?;
    let (process_after, inference_after, threads) = cpu_split()?;
    let stats = &report.stats;
    let thread_time = stats.elapsed.as_secs_f64() * play.threads as f64;
    let outside_calls = 1.0 - stats.evaluator_time.as_secs_f64() / thread_time.max(1e-9);
    let (process, inference) = (process_after - process_before, inference_after - inference_before);
    let outside_cpu = (process - inference) / process.max(1e-9);
    let secs = stats.elapsed.as_secs_f64().max(1e-9);
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    // The share of every core's time this process kept busy, not only the search threads'.
    let busy = process / (secs * cores as f64);
    args.output.measurement(
        || {
            format!(
                "{stats}\npositions (moves) per second: {:.1}\nsearch threads: {:.1}% of their wall time outside \
                 evaluator calls (searching, encoding, writing)\nCPU: {process:.1}s in all, {inference:.1}s network \
                 evaluation ({threads} inference threads), {:.1}% outside it (search, rules, encoding, data); \
                 {:.1}% busy of {cores} cores",
                stats.moves as f64 / secs,
                100.0 * outside_calls,
                100.0 * outside_cpu,
                100.0 * busy
            )
        },
        json!({
            "bench": "selfplay",
            "measurement": "selfplay",
            "model": config.name,
            "device": format!("{device:?}"),
            "precision": precision.to_string(),
            "threads": play.threads,
            "games_per_thread": play.games_per_thread,
            "playouts": play.playouts,
            "cheap_playouts": play.cheap_playouts,
            "mate_moves": play.search.mate_moves,
            "games": stats.games,
            "moves": stats.moves,
            "seconds": stats.elapsed.as_secs_f64(),
            "moves_per_s": stats.moves as f64 / secs,
            "evaluations_per_s": stats.evaluations as f64 / secs,
            "mean_batch": stats.evaluations as f64 / stats.batches.max(1) as f64,
            "wall_share_outside_evaluator": outside_calls,
            "cpu_s": process,
            "inference_cpu_s": inference,
            "inference_threads": threads,
            "cpu_share_outside_inference": outside_cpu,
            "cores": cores,
            "busy_share_of_cores": busy,
        }),
    );
    Ok(())
}
