//! `xqz bench ingest`: a load generator that plays the part of many workers submitting games to a
//! coordinator over loopback, and reports validated games/s and request latency.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Args;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::json;
use xqz_dataset::GameId;
use xqz_dataset::synthetic::{SyntheticConfig, random_game};
use xqz_proto::v1::coordinator_client::CoordinatorClient;
use xqz_proto::v1::{GameSubmission, RegisterRequest, SubmitGamesRequest};

/// Options of `xqz bench ingest`.
#[derive(Args)]
pub struct IngestArgs {
    /// Simulated workers, each on its own connection.
    #[arg(long, default_value_t = 16)]
    workers: usize,
    /// Games each worker submits.
    #[arg(long, default_value_t = 200)]
    games: usize,
    /// Games per SubmitGames request.
    #[arg(long, default_value_t = 16)]
    batch: usize,
    /// A running coordinator (`http://HOST:PORT`); by default one is started on 127.0.0.1 with a
    /// temporary data folder.
    #[arg(long)]
    coordinator: Option<String>,
    /// Length cap of the generated games (the started coordinator adjudicates with the same).
    #[arg(long, default_value_t = 160)]
    max_plies: u32,
    #[command(flatten)]
    output: crate::bench::Output,
}

/// A coordinator started for the benchmark, stopped when dropped.
struct Started {
    child: Child,
    _data: tempfile::TempDir,
}

impl Drop for Started {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_coordinator(max_plies: u32) -> Result<(String, Started)> {
    use std::io::BufRead;
    let data = tempfile::tempdir()?;
    let mut child = Command::new(std::env::current_exe()?)
        .args(["coordinator", "--listen", "127.0.0.1:0", "--max-plies", &max_plies.to_string(), "--data"])
        .arg(data.path())
        .stdout(Stdio::piped())
        .spawn()
        .context("start the coordinator")?;
    let stdout = child.stdout.take().context("coordinator stdout")?;
    let mut lines = std::io::BufReader::new(stdout).lines();
    let started = Started { child, _data: data };
    for line in lines.by_ref() {
        if let Some(addr) = line?.strip_prefix("listening on ") {
            let addr = addr.trim().to_string();
            // Keep draining its output so that it never blocks on a full pipe.
            std::thread::spawn(move || lines.for_each(drop));
            return Ok((format!("http://{addr}"), started));
        }
    }
    bail!("the coordinator exited without saying where it listens")
}

fn percentile(sorted: &[Duration], q: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

pub fn run(args: &IngestArgs) -> Result<()> {
    anyhow::ensure!(args.workers > 0 && args.games > 0 && args.batch > 0, "counts must be positive");
    let config = SyntheticConfig { max_plies: args.max_plies, model_version: 0, ..SyntheticConfig::default() };
    let t = Instant::now();
    let mut rng = ChaCha8Rng::seed_from_u64(rand::random());
    let games: Vec<Vec<GameSubmission>> = (0..args.workers)
        .map(|w| {
            (0..args.games)
                .map(|g| {
                    // The synthetic game's id sets its times, which the coordinator wants in the
                    // past; the stored id is random, so that a --coordinator keeps every run's games.
                    let (mut game, samples) = random_game(&mut rng, (w * args.games + g) as u128, &config);
                    game.game_id = GameId::from_u128(rand::random());
                    xqz_proto::wire::encode_game(&game, &samples)
                })
                .collect()
        })
        .collect();
    let positions: usize = games.iter().flatten().map(|g| g.moves.len()).sum();
    let total = args.workers * args.games;
    args.output.context(|| {
        format!(
            "{} workers x {} games ({total} games, {positions} positions, {:.0} per game; generated in {:.1}s, not \
             timed), {} per request",
            args.workers,
            args.games,
            positions as f64 / total as f64,
            t.elapsed().as_secs_f64(),
            args.batch
        )
    });
    let (url, _started) = match &args.coordinator {
        Some(url) => (url.clone(), None),
        None => {
            let (url, started) = start_coordinator(args.max_plies)?;
            (url, Some(started))
        }
    };
    let runtime = tokio::runtime::Runtime::new()?;
    let (elapsed, mut latencies, accepted) = runtime.block_on(async {
        let start = Instant::now();
        let mut tasks = Vec::new();
        for (w, worker_games) in games.into_iter().enumerate() {
            let url = url.clone();
            let batch = args.batch;
            tasks.push(tokio::spawn(async move {
                let mut client = CoordinatorClient::connect(url).await?.max_encoding_message_size(64 << 20);
                let register = RegisterRequest { name: format!("bench-{w}"), ..RegisterRequest::default() };
                let worker_id = client.register(register).await?.into_inner().worker_id;
                let mut latencies = Vec::new();
                let mut accepted = 0u64;
                for (b, chunk) in worker_games.chunks(batch).enumerate() {
                    let request = SubmitGamesRequest {
                        idempotency_key: format!("bench-{w}-{b}-{}", rand::random::<u64>()),
                        worker_id: worker_id.clone(),
                        games: chunk.to_vec(),
                    };
                    let sent = Instant::now();
                    let reply = client.submit_games(request).await?.into_inner();
                    latencies.push(sent.elapsed());
                    accepted += u64::from(reply.accepted);
                }
                Ok::<_, anyhow::Error>((latencies, accepted))
            }));
        }
        let mut latencies = Vec::new();
        let mut accepted = 0;
        for task in tasks {
            let (l, a) = task.await??;
            latencies.extend(l);
            accepted += a;
        }
        Ok::<_, anyhow::Error>((start.elapsed(), latencies, accepted))
    })?;
    latencies.sort();
    let secs = elapsed.as_secs_f64();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let (p50, p99) = (ms(percentile(&latencies, 0.5)), ms(percentile(&latencies, 0.99)));
    let max = latencies.last().copied().map_or(0.0, ms);
    args.output.measurement(
        || {
            format!(
                "accepted {accepted}/{total} games in {secs:.2}s: {:.0} games/s, {:.0} positions/s\n\
                 SubmitGames latency: p50 {p50:.1} ms, p99 {p99:.1} ms, max {max:.1} ms ({} requests)",
                accepted as f64 / secs,
                positions as f64 / secs,
                latencies.len()
            )
        },
        json!({
            "bench": "ingest",
            "measurement": "ingest",
            "workers": args.workers,
            "games_per_worker": args.games,
            "batch": args.batch,
            "games": total,
            "positions": positions,
            "accepted": accepted,
            "seconds": secs,
            "games_per_s": accepted as f64 / secs,
            "positions_per_s": positions as f64 / secs,
            "requests": latencies.len(),
            "latency_p50_ms": p50,
            "latency_p99_ms": p99,
            "latency_max_ms": max,
        }),
    );
    Ok(())
}
