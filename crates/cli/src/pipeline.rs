//! `xqz run`: the whole pipeline on this machine — a coordinator, workers and a trainer as child
//! processes talking real gRPC on 127.0.0.1, data in `runs/<name>/` — with a live status line,
//! a clean stop on Ctrl-C or when the time is up, resumption under the same name, and a plot of
//! the losses.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use xqz_proto::v1::GetStatsRequest;
use xqz_proto::v1::coordinator_client::CoordinatorClient;

/// Options of `xqz run`.
#[derive(Args)]
pub struct RunArgs {
    /// The run's name: its folder is `runs/<name>/`; an existing run is resumed.
    #[arg(long, default_value = "default")]
    name: String,
    /// Folder that holds the runs.
    #[arg(long, default_value = "runs")]
    runs: PathBuf,
    /// Stop after this many minutes (default: until Ctrl-C).
    #[arg(long)]
    minutes: Option<f64>,
    /// Self-play worker processes.
    #[arg(long, default_value_t = 1)]
    workers: usize,
    /// Model config: tiny or small (or standard on a GPU, or a .toml file).
    #[arg(long, default_value = "small")]
    model: String,
    /// Device of the workers and the trainer: cpu, cuda, cuda:N or auto.
    #[arg(long, default_value = "auto")]
    device: String,
    /// Playouts of a full search.
    #[arg(long, default_value_t = 200)]
    playouts: u32,
    /// Playouts of a cheap search.
    #[arg(long, default_value_t = 40)]
    cheap_playouts: u32,
    /// Move temperature of self-play after the opening plies (0: the most visited move).
    #[arg(long, default_value_t = xqz_mcts::SelfPlayConfig::default().late_temperature)]
    late_temperature: f32,
    /// Softmax temperature of the network's priors at the root of full self-play searches (above
    /// 1 flattens them against the policy's collapse with few playouts).
    #[arg(long, default_value_t = xqz_mcts::SelfPlayConfig::default().root_policy_temperature, value_parser = crate::selfplay::parse_temperature)]
    root_policy_temperature: f32,
    /// Game length cap in plies (0: no cap).
    #[arg(long, default_value_t = 300)]
    max_plies: u32,
    #[command(flatten)]
    rules: crate::selfplay::SelfPlayRules,
    /// Rows per training step.
    #[arg(long, default_value_t = 256)]
    batch_size: usize,
    /// Samples in the dataset before training starts.
    #[arg(long, default_value_t = 4096)]
    min_samples: usize,
    /// Learning-rate schedule `STEP:RATE,...` (from each step on, its rate).
    #[arg(long, default_value = crate::train::LR_SCHEDULE)]
    lr_schedule: String,
    /// Training samples per self-play sample.
    #[arg(long, default_value_t = 4.0)]
    samples_per_sample: f64,
    /// Share of the search's root estimate in the value target, 0 to 1 (the rest is the game's
    /// result).
    #[arg(long, default_value_t = 0.0, value_parser = crate::train::parse_ratio)]
    value_q_ratio: f32,
    /// Share of a uniform spread over the recorded (legal) moves in the policy target, 0 to 1
    /// (the rest is the search's visits).
    #[arg(long, default_value_t = 0.0, value_parser = crate::train::parse_ratio)]
    policy_smoothing: f32,
    /// Share of a material estimate of the position in the value target, 0 to 1 (knowledge put
    /// in, not learnt: it keeps more material better where won games' results saturate).
    #[arg(long, default_value_t = 0.0, value_parser = crate::train::parse_ratio)]
    material_target: f32,
    /// Plies over which the game result's share of the value target fades, the search's root
    /// estimate taking the rest (TD(lambda)-like; 0: the share does not fade).
    #[arg(long, default_value_t = 0.0, value_parser = crate::train::parse_horizon)]
    result_horizon: f32,
    /// Steps between published models.
    #[arg(long, default_value_t = 200)]
    publish_every: u64,
    /// Games each worker thread plays at once.
    #[arg(long, default_value_t = 32)]
    games_per_thread: usize,
    /// Seed of the trainer.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Games of each strength match of a new model against the previous and the first one
    /// (0 turns strength tracking off).
    #[arg(long, default_value_t = 10)]
    match_games: u32,
    /// Playouts per move in strength matches.
    #[arg(long, default_value_t = 32)]
    match_playouts: u32,
}

/// A role's process; asked to stop with SIGTERM, killed if it does not.
struct Role {
    name: String,
    child: Child,
}

impl Role {
    fn spawn(name: &str, args: &[String], log: &Path) -> Result<Role> {
        let log_file = std::fs::OpenOptions::new().create(true).append(true).open(log)?;
        let child = Command::new(std::env::current_exe()?)
            .args(args)
            .stdout(Stdio::piped())
            .stderr(log_file)
            .spawn()
            .with_context(|| format!("start the {name}"))?;
        Ok(Role { name: name.to_string(), child })
    }

    /// Sends SIGTERM and waits up to `grace` for the exit.
    fn stop(&mut self, grace: Duration) {
        let pid = Pid::from_raw(self.child.id() as i32);
        let _ = kill(pid, Signal::SIGTERM);
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        eprintln!("{} did not stop in {grace:?}; killing it", self.name);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Role {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Copies a child's stdout to `log`, handing each line to `on_line`.
fn follow(child: &mut Child, log: PathBuf, mut on_line: impl FnMut(&str) + Send + 'static) -> Result<()> {
    use std::io::Write;
    let stdout = child.stdout.take().context("child stdout")?;
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(log)?;
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = writeln!(file, "{line}");
            on_line(&line);
        }
    });
    Ok(())
}

pub fn run(args: &RunArgs) -> Result<()> {
    // Checked here too: the trainer child would otherwise fail after the others started.
    crate::train::parse_schedule(&args.lr_schedule)?;
    let dir = args.runs.join(&args.name);
    for sub in ["coordinator", "trainer", "logs"] {
        std::fs::create_dir_all(dir.join(sub)).with_context(|| format!("create {}", dir.join(sub).display()))?;
    }
    let logs = dir.join("logs");
    let resumed = dir.join("trainer/metrics.csv").exists();
    println!("run {} in {}{}", args.name, dir.display(), if resumed { " (resumed)" } else { "" });

    // The coordinator first: the others need its address.
    let mut coordinator_args: Vec<String> = vec![
        "coordinator".into(),
        "--listen".into(),
        "127.0.0.1:0".into(),
        "--data".into(),
        dir.join("coordinator").display().to_string(),
        "--max-plies".into(),
        args.max_plies.to_string(),
        "--playouts".into(),
        args.playouts.to_string(),
        "--cheap-playouts".into(),
        args.cheap_playouts.to_string(),
        "--late-temperature".into(),
        args.late_temperature.to_string(),
        "--root-policy-temperature".into(),
        args.root_policy_temperature.to_string(),
    ];
    coordinator_args.extend(args.rules.to_args());
    let mut coordinator = Role::spawn("coordinator", &coordinator_args, &logs.join("coordinator.log"))?;
    let (addr_tx, addr_rx) = std::sync::mpsc::channel();
    follow(&mut coordinator.child, logs.join("coordinator.log"), move |line| {
        if let Some(addr) = line.strip_prefix("listening on ") {
            let _ = addr_tx.send(addr.trim().to_string());
        }
    })?;
    let addr = addr_rx.recv_timeout(Duration::from_secs(60)).context("the coordinator did not start; see its log")?;
    let url = format!("http://{addr}");

    let mut workers = Vec::new();
    for i in 0..args.workers {
        let mut worker = Role::spawn(
            "worker",
            &[
                "worker".into(),
                "--coordinator".into(),
                url.clone(),
                "--dir".into(),
                dir.join(format!("worker-{i}")).display().to_string(),
                "--init-model".into(),
                args.model.clone(),
                "--device".into(),
                args.device.clone(),
                "--threads".into(),
                "1".into(),
                "--games-per-thread".into(),
                args.games_per_thread.to_string(),
            ],
            &logs.join(format!("worker-{i}.log")),
        )?;
        follow(&mut worker.child, logs.join(format!("worker-{i}.log")), |_| {})?;
        workers.push(worker);
    }
    let mut trainer = Role::spawn(
        "trainer",
        &[
            "train".into(),
            "--coordinator".into(),
            url.clone(),
            "--data".into(),
            dir.join("coordinator/dataset").display().to_string(),
            "--run".into(),
            dir.join("trainer").display().to_string(),
            "--model".into(),
            args.model.clone(),
            "--device".into(),
            args.device.clone(),
            "--batch-size".into(),
            args.batch_size.to_string(),
            "--min-samples".into(),
            args.min_samples.to_string(),
            "--samples-per-sample".into(),
            args.samples_per_sample.to_string(),
            "--lr-schedule".into(),
            args.lr_schedule.clone(),
            "--value-q-ratio".into(),
            args.value_q_ratio.to_string(),
            "--policy-smoothing".into(),
            args.policy_smoothing.to_string(),
            "--result-horizon".into(),
            args.result_horizon.to_string(),
            "--material-target".into(),
            args.material_target.to_string(),
            "--publish-every".into(),
            args.publish_every.to_string(),
            "--checkpoint-every".into(),
            args.publish_every.min(100).to_string(),
            "--seed".into(),
            args.seed.to_string(),
            "--log-every".into(),
            "1".into(),
        ],
        &logs.join("trainer.log"),
    )?;
    let last_step = Arc::new(std::sync::Mutex::new(String::from("waiting for data")));
    {
        let last_step = Arc::clone(&last_step);
        follow(&mut trainer.child, logs.join("trainer.log"), move |line| {
            if line.starts_with("step ") {
                *last_step.lock().unwrap_or_else(|e| e.into_inner()) = line.to_string();
            }
        })?;
    }

    let stop = Arc::new(AtomicBool::new(false));
    let tracking = Arc::new(AtomicBool::new(true));
    let strength = if args.match_games > 0 {
        let tracker = crate::strength::Tracker {
            models: dir.join("coordinator/models"),
            out: dir.join("strength.csv"),
            games: args.match_games.div_ceil(2) * 2,
            playouts: args.match_playouts,
            device: xqz_net::parse_device(&args.device)?,
            model: xqz_net::ModelConfig::resolve(&args.model)?,
        };
        let tracking = Arc::clone(&tracking);
        Some(std::thread::spawn(move || tracker.run(&tracking)))
    } else {
        None
    };
    for signal in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        signal_hook::flag::register(signal, Arc::clone(&stop))?;
    }
    let bar = ProgressBar::new_spinner();
    bar.set_style(ProgressStyle::with_template("{elapsed_precise} {spinner} {msg}").expect("valid template"));
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let start = Instant::now();
    let deadline = args.minutes.map(|m| start + Duration::from_secs_f64(m * 60.0));
    let mut previous: Option<(Instant, u64)> = None;
    let outcome = loop {
        if stop.load(Ordering::Relaxed) || deadline.is_some_and(|d| Instant::now() >= d) {
            break Ok(());
        }
        if let Some(role) = std::iter::once(&mut coordinator)
            .chain(workers.iter_mut())
            .chain(std::iter::once(&mut trainer))
            .find_map(|r| r.child.try_wait().ok().flatten().map(|s| (r.name.clone(), s)))
        {
            break Err(anyhow::anyhow!("the {} exited ({}); see {}", role.0, role.1, logs.display()));
        }
        let stats = runtime.block_on(async {
            let mut client = CoordinatorClient::connect(url.clone()).await.ok()?;
            client.get_stats(GetStatsRequest {}).await.ok().map(|r| r.into_inner())
        });
        if let Some(stats) = stats {
            let now = Instant::now();
            let rate = previous
                .map_or(0.0, |(t, s)| (stats.samples - s) as f64 / now.duration_since(t).as_secs_f64().max(1e-9));
            previous = Some((now, stats.samples));
            let step = last_step.lock().unwrap_or_else(|e| e.into_inner()).clone();
            bar.set_message(format!(
                "model v{} | {} games, {} positions ({rate:.0}/s) | {step}",
                stats.latest_model_version, stats.games, stats.samples
            ));
        }
        bar.tick();
        std::thread::sleep(Duration::from_secs(2));
    };
    bar.finish();
    // Close the status connection: the coordinator's graceful stop waits for open connections.
    drop(runtime);
    println!("stopping: workers first (they upload what they finished), then the trainer, then the coordinator");
    for worker in &mut workers {
        worker.stop(Duration::from_secs(30));
    }
    trainer.stop(Duration::from_secs(60));
    coordinator.stop(Duration::from_secs(30));
    tracking.store(false, Ordering::Relaxed);
    if let Some(Err(e)) = strength.map(|t| t.join().unwrap_or_else(|_| Err(anyhow::anyhow!("panicked")))) {
        eprintln!("strength tracking stopped: {e:#}");
    }
    if dir.join("strength.csv").exists() {
        let plot = dir.join("strength.svg");
        match crate::plot::strength(&dir.join("strength.csv"), &plot) {
            Ok(()) => {
                println!("strength matches in {}, plotted in {}", dir.join("strength.csv").display(), plot.display())
            }
            Err(e) => eprintln!("no strength plot: {e:#}"),
        }
    }
    let metrics = dir.join("trainer/metrics.csv");
    if metrics.exists() {
        let plot = dir.join("losses.svg");
        match crate::plot::losses(&metrics, &plot) {
            Ok(()) => println!("losses plotted in {}", plot.display()),
            Err(e) => eprintln!("no plot: {e:#}"),
        }
    }
    outcome?;
    if stop.load(Ordering::Relaxed) {
        println!("stopped; run the same command again to resume");
    }
    Ok(())
}
