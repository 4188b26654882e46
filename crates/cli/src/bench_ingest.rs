//! `xqz bench ingest`: a load generator that plays the part of many workers submitting games to a
//! coordinator over loopback, and reports validated games/s and request latency; of a coordinator
//! it started, also its peak memory and how many requests shared each commit, optionally with its
//! dashboard polled as a browser polls it.

use std::ffi::OsString;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use clap::Args;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde_json::json;
use xqz_dataset::synthetic::{SyntheticConfig, random_game};
use xqz_dataset::{Dataset, DatasetLocation, GameId};
use xqz_mcts::PlaySettings;
use xqz_proto::v1::coordinator_client::CoordinatorClient;
use xqz_proto::v1::{GameSubmission, RegisterRequest, SubmitGamesRequest};
use xqz_run_folder::CoordinatorFolder;

use crate::roles::{Group, Role, RoleOutput, spawn_coordinator};

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
    /// Share of the generated plies with a full search, whose policy covers up to 40 legal
    /// moves; the others' covers at most as many moves as a cheap search has playouts, as a
    /// worker's does (default: self-play's default share).
    #[arg(long, default_value_t = PlaySettings::default().full_search_probability)]
    full_search_probability: f64,
    /// The started coordinator's dataset: an object store prefix (`s3://BUCKET/PREFIX`, with the
    /// store's usual environment variables) or a folder; by default its temporary data folder.
    #[arg(long, value_parser = DatasetLocation::parse)]
    dataset: Option<DatasetLocation>,
    /// Poll the started coordinator's dashboard (its overview and games JSON, and `/metrics`) every
    /// this many seconds while the load runs, to measure what watching a run costs.
    #[arg(long)]
    poll_dashboard: Option<f64>,
    #[command(flatten)]
    output: crate::bench_output::Output,
}

/// A coordinator started for the benchmark, stopped when dropped.
struct Started {
    coordinator: Role,
    /// Its HTTP address (metrics and dashboard).
    http: String,
    /// Its data folder, kept for the coordinator that [`Started::restart`] starts.
    data: Option<tempfile::TempDir>,
}

/// What a second coordinator over the stored games took to start.
struct Restart {
    ready: Duration,
    rss: Option<u64>,
}

impl Started {
    /// The coordinator's peak resident memory so far, in bytes (Linux).
    fn peak_rss(&self) -> Option<u64> {
        self.status_kib("VmHWM:").map(|kib| kib * 1024)
    }

    /// A field of `/proc/PID/status` given in KiB.
    fn status_kib(&self, field: &str) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.coordinator.id())).ok()?;
        let line = status.lines().find(|l| l.starts_with(field))?;
        line.split_whitespace().nth(1)?.parse().ok()
    }

    /// Stops the coordinator (SIGTERM, as an operator's rolling restart does) and starts another
    /// over the same data: how long until it serves, and its resident memory then. Its start-up
    /// reads what is stored, so this shows what that costs for the number of games stored.
    fn restart(mut self, max_plies: u32, dataset: Option<&DatasetLocation>) -> Result<Restart> {
        self.coordinator.stop(Duration::from_secs(120));
        let data = self.data.take().context("the data folder")?;
        drop(self);
        let t = Instant::now();
        let (_, started) = start_coordinator(max_plies, dataset, data)?;
        let ready = t.elapsed();
        Ok(Restart { ready, rss: started.status_kib("VmRSS:").map(|kib| kib * 1024) })
    }

    /// The coordinator's CPU time so far (user and system), in seconds (Linux).
    fn cpu_seconds(&self) -> Option<f64> {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.coordinator.id())).ok()?;
        // After the command name, which may hold spaces, in parentheses: utime and stime are
        // the 12th and 13th fields.
        let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
        let ticks: u64 = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
        let per_second = nix::unistd::sysconf(nix::unistd::SysconfVar::CLK_TCK).ok()??;
        Some(ticks as f64 / per_second as f64)
    }

    /// The coordinator's CPU time per poll of the dashboard (as [`Poller`] polls it), in seconds,
    /// over `polls` polls back to back.
    fn poll_cost(&self, polls: u32) -> Result<Option<f64>> {
        let Some(before) = self.cpu_seconds() else { return Ok(None) };
        for _ in 0..polls {
            poll_once(&self.http).context("polling the dashboard")?;
        }
        Ok(self.cpu_seconds().map(|after| (after - before) / f64::from(polls)))
    }

    /// The value of a series of the coordinator's `/metrics`.
    fn metric(&self, name: &str) -> Option<f64> {
        let text = http_get(&self.http, "/metrics").ok()?;
        let line = text.lines().find(|l| l.split(' ').next() == Some(name))?;
        line[name.len()..].trim().parse().ok()
    }
}

/// The body of `GET path` from `addr`, over one plain HTTP/1.1 connection.
fn http_get(addr: &str, path: &str) -> std::io::Result<String> {
    use std::io::{Read, Write};
    let mut conn = std::net::TcpStream::connect(addr)?;
    conn.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(conn, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n")?;
    let mut text = String::new();
    conn.read_to_string(&mut text)?;
    if !text.starts_with("HTTP/1.1 200") {
        return Err(std::io::Error::other(format!("GET {path}: {}", text.lines().next().unwrap_or(""))));
    }
    Ok(text.split_once("\r\n\r\n").map_or(String::new(), |(_, body)| body.to_string()))
}

fn start_coordinator(
    max_plies: u32,
    dataset: Option<&DatasetLocation>,
    data: tempfile::TempDir,
) -> Result<(String, Started)> {
    let ready_dir = tempfile::tempdir()?;
    // The synthetic games are played by the rules alone (and the length cap): no material
    // adjudication, and a repetition the rules call a draw is a draw.
    let mut args: Vec<OsString> = ["--max-plies", &max_plies.to_string(), "--material-adjudication", "0"]
        .into_iter()
        .chain(["--repeater-loses", "false", "--data"])
        .map(OsString::from)
        .collect();
    args.push(data.path().into());
    args.extend(dataset.map(|d| format!("--dataset={d}").into()));
    let ready_file = ready_dir.path().join("coordinator.ready");
    let loopback = "127.0.0.1:0".parse()?;
    // In our process group: a Ctrl-C that ends the benchmark ends its coordinator too.
    let (coordinator, ready) =
        spawn_coordinator(args, loopback, &ready_file, RoleOutput::Quiet, Group::Shared, Duration::from_secs(120))?;
    let http = ready.metrics.context("the coordinator's ready file names no HTTP address")?.to_string();
    Ok((format!("http://{}", ready.listen), Started { coordinator, http, data: Some(data) }))
}

fn percentile(sorted: &[Duration], q: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

/// The simulated workers' games, a list per worker, ready to send; and their positions.
fn generate(args: &IngestArgs) -> Result<(Vec<Vec<GameSubmission>>, usize)> {
    // The simulated workers' searches are shaped as these settings make a worker's.
    let play = PlaySettings { full_search_probability: args.full_search_probability, ..PlaySettings::default() };
    play.validate().context("--full-search-probability")?;
    let config = SyntheticConfig {
        max_plies: args.max_plies,
        model_version: 0,
        full_search_fraction: play.full_search_probability,
        cheap_policy_moves: play.cheap_playouts as usize,
        ..SyntheticConfig::default()
    };
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
            "{} workers x {} games ({total} games, {positions} positions, {:.0} per game, {:.0}% with a full search's \
             policy; generated in {:.1}s, not timed), {} per request",
            args.workers,
            args.games,
            positions as f64 / total as f64,
            args.full_search_probability * 100.0,
            t.elapsed().as_secs_f64(),
            args.batch
        )
    });
    Ok((games, positions))
}

/// The coordinator to load: `--coordinator`, or one started here (with its dashboard poller).
fn coordinator(args: &IngestArgs) -> Result<(String, Option<Started>, Option<Poller>)> {
    let (url, started) = match &args.coordinator {
        Some(_) if args.dataset.is_some() => {
            bail!("--dataset is for the coordinator the benchmark starts, not --coordinator")
        }
        Some(url) => (url.clone(), None),
        None => {
            let (url, started) = start_coordinator(args.max_plies, args.dataset.as_ref(), tempfile::tempdir()?)?;
            (url, Some(started))
        }
    };
    let poll = match (args.poll_dashboard, &started) {
        (None, _) => None,
        (Some(secs), Some(started)) if secs > 0.0 && secs.is_finite() => {
            Some(Poller::start(started.http.clone(), Duration::from_secs_f64(secs)))
        }
        (Some(_), Some(_)) => bail!("--poll-dashboard takes a positive number of seconds"),
        (Some(_), None) => bail!("--poll-dashboard polls the coordinator the benchmark starts, not --coordinator"),
    };
    Ok((url, started, poll))
}

/// Submits each worker's games on a connection of its own, `batch` per request, all workers at
/// once: the time it took, each request's latency and the games accepted.
fn submit(url: &str, games: Vec<Vec<GameSubmission>>, batch: usize) -> Result<(Duration, Vec<Duration>, u64)> {
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async {
        let start = Instant::now();
        let mut tasks = Vec::new();
        for (w, worker_games) in games.into_iter().enumerate() {
            let url = url.to_string();
            tasks.push(tokio::spawn(async move {
                let mut client = CoordinatorClient::connect(url).await?.max_encoding_message_size(64 << 20);
                let register = RegisterRequest { name: format!("bench-{w}"), ..RegisterRequest::default() };
                let worker_id = client.register(register).await?.into_inner().worker_id;
                let mut latencies = Vec::new();
                let mut accepted = 0u64;
                // The games move into their requests: the load generator copies nothing.
                let mut games = worker_games.into_iter().peekable();
                let mut b = 0;
                while games.peek().is_some() {
                    b += 1;
                    let request = SubmitGamesRequest {
                        idempotency_key: format!("bench-{w}-{b}-{}", rand::random::<u64>()),
                        worker_id: worker_id.clone(),
                        games: games.by_ref().take(batch).collect(),
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
    })
}

/// What a load measured.
struct Measured {
    games: usize,
    positions: usize,
    accepted: u64,
    secs: f64,
    /// Request latencies, sorted.
    latencies: Vec<Duration>,
    commits: Option<f64>,
    peak_rss: Option<u64>,
    shards: Option<usize>,
    restart: Option<Restart>,
    polls: Option<u64>,
    /// The coordinator's CPU seconds during the load.
    load_cpu: Option<f64>,
    /// The coordinator's CPU seconds per dashboard poll.
    poll_cpu: Option<f64>,
    /// The share of the load's CPU that polling at --poll-dashboard takes.
    watch_share: Option<f64>,
}

pub fn run(args: &IngestArgs) -> Result<()> {
    anyhow::ensure!(args.workers > 0 && args.games > 0 && args.batch > 0, "counts must be positive");
    let (games, positions) = generate(args)?;
    let (url, started, poll) = coordinator(args)?;
    let cpu_before = started.as_ref().and_then(Started::cpu_seconds);
    let (elapsed, mut latencies, accepted) = submit(&url, games, args.batch)?;
    let polls = poll.map(Poller::stop).transpose()?;
    let secs = elapsed.as_secs_f64();
    // The coordinator's CPU during the load, then the CPU one poll costs, measured alone after it
    // (200 polls: the clock ticks in hundredths of a second). At one poll every `every` seconds,
    // watching takes `poll_cpu / every` of a core: as a share of what the load took, an upper
    // bound on the ingest rate it can cost where the coordinator's CPU is the limit.
    let load_cpu = started.as_ref().and_then(|s| Some(s.cpu_seconds()? - cpu_before?));
    let poll_cpu = match (args.poll_dashboard, &started) {
        (Some(_), Some(started)) => started.poll_cost(200)?,
        _ => None,
    };
    let watch_share = match (poll_cpu, load_cpu, args.poll_dashboard) {
        (Some(poll), Some(load), Some(every)) if load > 0.0 => Some(poll / every / (load / secs)),
        _ => None,
    };
    latencies.sort();
    // The stored dataset as a reader finds it: the coordinator merges the shards of its commits.
    let location = match (&args.dataset, &started) {
        (Some(location), _) => Some(location.clone()),
        (None, Some(s)) => {
            s.data.as_ref().map(|d| DatasetLocation::Local(CoordinatorFolder::new(d.path()).dataset_dir()))
        }
        (None, None) => None,
    };
    let measured = Measured {
        games: args.workers * args.games,
        positions,
        accepted,
        secs,
        latencies,
        commits: started.as_ref().and_then(|s| s.metric("xqz_commits_total")),
        peak_rss: started.as_ref().and_then(Started::peak_rss),
        shards: location.map(Dataset::open_at).transpose()?.map(|d| d.shards().len()),
        restart: started.map(|s| s.restart(args.max_plies, args.dataset.as_ref())).transpose()?,
        polls,
        load_cpu,
        poll_cpu,
        watch_share,
    };
    args.output.measurement(|| text(args, &measured), json(args, &measured));
    Ok(())
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / f64::from(1 << 20)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The measurement as text.
fn text(args: &IngestArgs, m: &Measured) -> String {
    let (p50, p99) = (ms(percentile(&m.latencies, 0.5)), ms(percentile(&m.latencies, 0.99)));
    let max = m.latencies.last().copied().map_or(0.0, ms);
    let (accepted, total, secs) = (m.accepted, m.games, m.secs);
    format!(
        "accepted {accepted}/{total} games in {secs:.2}s: {:.0} games/s, {:.0} positions/s\n\
         SubmitGames latency: p50 {p50:.1} ms, p99 {p99:.1} ms, max {max:.1} ms ({} requests){}{}{}{}{}{}{}",
        accepted as f64 / secs,
        m.positions as f64 / secs,
        m.latencies.len(),
        m.commits.map_or(String::new(), |c| format!(
            "\ncommits: {c:.0}, {:.1} requests each",
            m.latencies.len() as f64 / c.max(1.0)
        )),
        m.peak_rss.map_or(String::new(), |b| format!("\ncoordinator peak RSS: {:.0} MiB", mib(b))),
        m.shards.map_or(String::new(), |n| format!("\nshards in the dataset: {n}")),
        m.restart.as_ref().map_or(String::new(), |r| format!(
            "\nrestart (SIGTERM, then a new coordinator over the stored games): serving after {:.0} ms, \
             resident memory then {}",
            r.ready.as_secs_f64() * 1e3,
            r.rss.map_or("unknown".into(), |b| format!("{:.0} MiB", mib(b)))
        )),
        m.polls.map_or(String::new(), |n| format!("\ndashboard polled {n} times while it ran")),
        m.load_cpu.map_or(String::new(), |load| format!(
            "\ncoordinator CPU: {load:.2}s during the load ({:.0}% of a core), {:.3} ms per accepted game",
            100.0 * load / secs,
            1e3 * load / accepted.max(1) as f64
        )),
        match (m.poll_cpu, m.watch_share) {
            (Some(poll), Some(share)) => format!(
                "\none dashboard poll {:.2} ms of the coordinator's CPU, so polling every {}s takes {:.2}% of \
                 the load's CPU",
                poll * 1e3,
                args.poll_dashboard.unwrap_or_default(),
                100.0 * share
            ),
            _ => String::new(),
        },
    )
}

/// The measurement as one JSON object.
fn json(args: &IngestArgs, m: &Measured) -> serde_json::Value {
    json!({
        "bench": "ingest",
        "measurement": "ingest",
        "workers": args.workers,
        "games_per_worker": args.games,
        "batch": args.batch,
        "full_search_probability": args.full_search_probability,
        "dataset": args.dataset.as_ref().map(ToString::to_string),
        "games": m.games,
        "positions": m.positions,
        "accepted": m.accepted,
        "seconds": m.secs,
        "games_per_s": m.accepted as f64 / m.secs,
        "positions_per_s": m.positions as f64 / m.secs,
        "requests": m.latencies.len(),
        "latency_p50_ms": ms(percentile(&m.latencies, 0.5)),
        "latency_p99_ms": ms(percentile(&m.latencies, 0.99)),
        "latency_max_ms": m.latencies.last().copied().map_or(0.0, ms),
        "commits": m.commits,
        "coordinator_peak_rss_bytes": m.peak_rss,
        "shards": m.shards,
        "restart_ready_ms": m.restart.as_ref().map(|r| r.ready.as_secs_f64() * 1e3),
        "restart_rss_bytes": m.restart.as_ref().and_then(|r| r.rss),
        "dashboard_polls": m.polls,
        "coordinator_cpu_seconds": m.load_cpu,
        "dashboard_poll_cpu_ms": m.poll_cpu.map(|c| c * 1e3),
        "dashboard_cpu_share": m.watch_share,
    })
}

/// One poll of a dashboard as its page makes it: the overview, the latest games and `/metrics`.
fn poll_once(http: &str) -> std::io::Result<()> {
    for path in ["/api/overview", "/api/games", "/metrics"] {
        http_get(http, path)?;
    }
    Ok(())
}

/// Polls a dashboard as its page does (the overview, the latest games) and `/metrics`, on a thread
/// of its own.
struct Poller {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<std::io::Result<u64>>,
}

impl Poller {
    fn start(http: String, every: Duration) -> Poller {
        use std::sync::atomic::{AtomicBool, Ordering};
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut polls = 0;
            while !stopped.load(Ordering::Relaxed) {
                poll_once(&http)?;
                polls += 1;
                std::thread::sleep(every);
            }
            Ok(polls)
        });
        Poller { stop, thread }
    }

    /// Stops polling; the number of polls, or the first failed request.
    fn stop(self) -> Result<u64> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let polls = self.thread.join().map_err(|_| anyhow::anyhow!("the dashboard poller panicked"))?;
        polls.context("polling the dashboard")
    }
}
