//! `xqz run`: the whole pipeline on this machine — a coordinator, workers and a trainer as child
//! processes talking real gRPC on 127.0.0.1, data in `runs/<name>/` — with a live status line,
//! a clean stop on Ctrl-C or when the time is up, resumption under the same name, and a plot of
//! the losses.

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::{ArgMatches, Args};
use indicatif::{ProgressBar, ProgressStyle};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use xqz_mcts::{PlaySchedule, PlaySettings};
use xqz_proto::v1::GetStatsRequest;
use xqz_proto::v1::coordinator_client::CoordinatorClient;
use xqz_trainer::TrainSettings;

use crate::coordinator::Ready;
use crate::settings::{SettingsFile, override_with};

/// Options of `xqz run`.
#[derive(Args)]
pub struct RunArgs {
    /// The run's name: its folder is `runs/<name>/`; an existing run is resumed, with the settings
    /// in its settings.toml.
    #[arg(long, default_value = "default")]
    name: String,
    /// Folder that holds the runs.
    #[arg(long, default_value = "runs")]
    runs: PathBuf,
    /// Address of the dashboard (and the coordinator's metrics at /metrics); port 0 picks a free
    /// port. The address is printed when the run starts. The run has no token: an address off
    /// loopback shows it to anyone who reaches that address.
    #[arg(long, default_value = "127.0.0.1:0")]
    dashboard: std::net::SocketAddr,
    /// Stop after this many minutes (default: until Ctrl-C).
    #[arg(long)]
    minutes: Option<f64>,
    /// Self-play worker processes (default: 1 where the network runs on the CPU, whose other
    /// cores the trainer needs; with CUDA, one per core but three, which the trainer and the
    /// coordinator keep).
    #[arg(long)]
    workers: Option<usize>,
    #[command(flatten)]
    device: crate::model::DeviceArg,
    /// Games each worker thread plays at once.
    #[arg(long, default_value_t = 32)]
    games_per_thread: usize,
    /// Games of each strength match of a new model against the anchor, the built-in material
    /// searcher at --match-playouts (0 turns strength tracking off).
    #[arg(long, default_value_t = 20)]
    match_games: u32,
    /// Playouts per move in strength matches, of the models and of the anchor.
    #[arg(long, default_value_t = 32)]
    match_playouts: u32,
    /// Largest share of the wall time strength matches may take (they rest in between), 0 to 1
    /// (1: back to back).
    #[arg(long, default_value_t = 0.2)]
    match_share: f64,
    /// Resuming with a flag that contradicts the run's settings.toml changes the setting (and
    /// the file) instead of refusing.
    #[arg(long = "override")]
    override_settings: bool,
    /// The opening suite that --opening-share of games start from (an EPD file or a book; see
    /// `xqz coordinator --openings`), handed to the coordinator.
    #[arg(long)]
    openings: Option<PathBuf>,
    #[command(flatten)]
    play: PlaySettings,
    #[command(flatten)]
    schedule: PlaySchedule,
    #[command(flatten)]
    train: TrainSettings,
}

/// A role's process; asked to stop with SIGTERM, killed if it does not.
struct Role {
    name: String,
    child: Child,
}

impl Role {
    fn spawn(name: &str, args: &[String], log: &Path) -> Result<Role> {
        let log_file = std::fs::OpenOptions::new().create(true).append(true).open(log)?;
        // The roles log as this process does; RUST_LOG passes down by itself.
        let child = Command::new(std::env::current_exe()?)
            .args(args)
            .env(crate::logs::FORMAT_ENV, crate::logs::format().name())
            .stdout(log_file.try_clone()?)
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
        tracing::warn!(role = %self.name, grace_s = grace.as_secs(), "did not stop in time; killing it");
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

/// The run's settings: those of its settings.toml when it has one, with the flags given on the
/// command line (`given`) over them, which must agree with the file unless `--override` is given;
/// for a new run, the defaults and the flags. Checked; nothing is written yet. Also the list of
/// flags that changed a stored setting (to log), and whether the file must be written.
fn run_settings(args: &RunArgs, given: &ArgMatches, path: &Path) -> Result<(SettingsFile, Option<String>, bool)> {
    let stored = path.exists().then(|| SettingsFile::load(path)).transpose()?;
    let base = stored.clone().unwrap_or_default();
    let (play, mut changes) = override_with(&base.play, &args.play, given)?;
    let (schedule, schedule_changes) = override_with(&base.schedule, &args.schedule, given)?;
    let (train, train_changes) = override_with(&base.train, &args.train, given)?;
    changes.extend(schedule_changes);
    changes.extend(train_changes);
    let settings = SettingsFile { play, schedule, train };
    settings.play.validate()?;
    settings.train.validate()?;
    // A new run's flags change nothing stored.
    let overridden = (stored.is_some() && !changes.is_empty())
        .then(|| changes.iter().map(ToString::to_string).collect::<Vec<_>>().join(", "));
    if let Some(list) = &overridden {
        anyhow::ensure!(
            args.override_settings,
            "{list}: the run's settings in {} say otherwise; pass --override to change them, or start a run \
             under another --name",
            path.display()
        );
    }
    let write = stored.as_ref() != Some(&settings);
    Ok((settings, overridden, write))
}

/// How often `xqz run` prints its status as a plain line when it has no terminal.
const PLAIN_STATUS_EVERY: Duration = Duration::from_secs(30);
/// The status's positions/s is taken over this long: workers upload a batch of games now and
/// then, so the few seconds between two polls mostly see none.
const RATE_WINDOW: Duration = Duration::from_secs(60);

/// A count's rate over the last [`RATE_WINDOW`] of readings.
#[derive(Default)]
struct RateWindow {
    /// (time, count), oldest first; the oldest is the last one at least the window old.
    seen: std::collections::VecDeque<(Instant, u64)>,
}

impl RateWindow {
    /// Adds a reading; returns the rate per second since the window's oldest (0 over no time).
    fn push(&mut self, now: Instant, count: u64) -> f64 {
        self.seen.push_back((now, count));
        while self.seen.len() > 2 && now.duration_since(self.seen[1].0) >= RATE_WINDOW {
            self.seen.pop_front();
        }
        let (t, c) = self.seen[0];
        let secs = now.duration_since(t).as_secs_f64();
        if secs > 0.0 { count.saturating_sub(c) as f64 / secs } else { 0.0 }
    }
}

/// The named columns of the last row of a CSV file with a header, if it has them all.
fn last_row(csv: &Path, names: &[&str]) -> Option<Vec<String>> {
    let text = std::fs::read_to_string(csv).ok()?;
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next()?.split(',').collect();
    let row: Vec<&str> = lines.next_back()?.split(',').collect();
    names.iter().map(|name| Some(row.get(header.iter().position(|h| h == name)?)?.to_string())).collect()
}

/// The latest strength match, from `strength.csv`: the model and its Elo against the anchor.
fn last_strength(csv: &Path) -> Option<String> {
    let [version, elo, opponent] = <[String; 3]>::try_from(last_row(csv, &["version", "elo", "opponent"])?).ok()?;
    Some(format!(" | v{version} Elo {elo} vs {opponent}"))
}

/// Seconds since the Unix epoch, for log lines.
fn unix_now() -> String {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    format!("unix {}", since.as_secs())
}

/// Waits for the coordinator's ready file, as long as the coordinator is running.
/// Worker processes when `--workers` is not given. On a CPU one worker leaves the other cores to
/// the trainer, whose steps then keep up with self-play. With the network on a GPU the trainer
/// needs few cores, and a GPU's inference keeps many workers busy: one per core but three (the
/// trainer's data loading and the coordinator), as in the run behind the shipped model's last
/// stretch (13 workers of 16 cores, docs/LEARNING.md).
fn default_workers(cores: usize, gpu: bool) -> usize {
    if gpu { cores.saturating_sub(3).max(1) } else { 1 }
}

/// The trainer's last step, from its `metrics.csv`.
fn last_step(metrics: &Path) -> Option<String> {
    let [step, policy, value, lr] =
        <[String; 4]>::try_from(last_row(metrics, &["step", "policy_loss", "value_loss", "learning_rate"])?).ok()?;
    Some(format!("step {step} policy {policy} value {value} lr {lr}"))
}

pub fn run(args: &RunArgs, given: &ArgMatches) -> Result<()> {
    let dir = args.runs.join(&args.name);
    let settings_path = dir.join("settings.toml");
    // Checked before anything is created: a run refused at the start leaves no trace.
    anyhow::ensure!(
        args.match_share > 0.0 && args.match_share <= 1.0,
        "--match-share {} must be above 0 and at most 1",
        args.match_share
    );
    let device = args.device.resolve()?;
    let (settings, overridden, write) = run_settings(args, given, &settings_path)?;
    match &args.openings {
        Some(path) => drop(crate::book::load_suite(path)?),
        None => anyhow::ensure!(
            settings.play.opening_share == 0.0,
            "opening_share = {} needs an opening suite: give one with --openings FILE",
            settings.play.opening_share
        ),
    }
    for sub in ["coordinator", "trainer", "logs"] {
        std::fs::create_dir_all(dir.join(sub)).with_context(|| format!("create {}", dir.join(sub).display()))?;
    }
    let logs = dir.join("logs");
    if let Some(list) = overridden {
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new().create(true).append(true).open(logs.join("settings.log"))?;
        writeln!(file, "{}: changed by --override: {list}", unix_now())?;
        tracing::info!(changes = %list, "settings changed by --override");
    }
    if write {
        settings.save(&settings_path)?;
    }
    let resumed = dir.join("trainer/metrics.csv").exists();
    let settings_arg = settings_path.display().to_string();

    // The coordinator first: the others need its address.
    let ready_file = logs.join("coordinator.ready");
    let _ = std::fs::remove_file(&ready_file);
    // The user who names an address off loopback asks for the read-only view to be seen there;
    // the coordinator's gRPC stays on loopback.
    let shown_off_loopback = !args.dashboard.ip().is_loopback();
    let mut coordinator = Role::spawn(
        "coordinator",
        &[
            "coordinator".into(),
            "--listen".into(),
            "127.0.0.1:0".into(),
            "--data".into(),
            dir.join("coordinator").display().to_string(),
            "--settings".into(),
            settings_arg.clone(),
            "--ready-file".into(),
            ready_file.display().to_string(),
            "--metrics".into(),
            args.dashboard.to_string(),
            "--run-folder".into(),
            dir.display().to_string(),
        ]
        .into_iter()
        .chain(shown_off_loopback.then(|| "--insecure".into()))
        .chain(args.openings.iter().flat_map(|path| ["--openings".into(), path.display().to_string()]))
        .collect::<Vec<String>>(),
        &logs.join("coordinator.log"),
    )?;
    let ready = Ready::wait(&mut coordinator.child, &ready_file, Duration::from_secs(60))
        .context("starting the coordinator (see its log)")?;
    let url = format!("http://{}", ready.listen);
    let dashboard = ready.metrics.context("the coordinator's ready file names no dashboard address")?;
    println!(
        "run {} in {}{} | dashboard http://{dashboard}/",
        args.name,
        dir.display(),
        if resumed { " (resumed)" } else { "" }
    );

    // Each role takes its share of the cores: one per worker (it searches on one thread), the
    // rest to the trainer; libtorch's default of one thread per core in every process makes
    // them all wait on each other.
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let gpu = matches!(device, tch::Device::Cuda(_));
    let n_workers = args.workers.unwrap_or_else(|| default_workers(cores, gpu));
    let mut workers = Vec::new();
    for i in 0..n_workers {
        let worker = Role::spawn(
            "worker",
            &[
                "worker".into(),
                "--coordinator".into(),
                url.clone(),
                "--dir".into(),
                dir.join(format!("worker-{i}")).display().to_string(),
                "--init-model".into(),
                settings.train.model.clone(),
                "--device".into(),
                args.device.device.clone(),
                "--torch-threads".into(),
                "1".into(),
                "--threads".into(),
                "1".into(),
                "--games-per-thread".into(),
                args.games_per_thread.to_string(),
            ],
            &logs.join(format!("worker-{i}.log")),
        )?;
        workers.push(worker);
    }
    let trainer_threads = cores.saturating_sub(n_workers).max(1);
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
            "--device".into(),
            args.device.device.clone(),
            "--torch-threads".into(),
            trainer_threads.to_string(),
            "--settings".into(),
            settings_arg,
        ],
        &logs.join("trainer.log"),
    )?;

    let stop = Arc::new(AtomicBool::new(false));
    let tracking = Arc::new(AtomicBool::new(true));
    let strength = if args.match_games > 0 {
        // The matches run beside self-play and training, on one thread.
        if args.device.torch_threads == 0 {
            tch::set_num_threads(1);
        }
        let tracker = crate::strength::Tracker {
            models: dir.join("coordinator/models"),
            out: dir.join("strength.csv"),
            games: args.match_games.div_ceil(2) * 2,
            playouts: args.match_playouts,
            device,
            share: args.match_share,
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
    let mut positions = RateWindow::default();
    // Without a terminal (a log file, CI) the spinner draws nothing: a plain line now and then.
    let mut last_line = Instant::now();
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
            let rate = positions.push(now, stats.samples);
            let step = last_step(&dir.join("trainer/metrics.csv")).unwrap_or_else(|| "waiting for data".into());
            let strength = last_strength(&dir.join("strength.csv")).unwrap_or_default();
            if bar.is_hidden() && last_line.elapsed() >= PLAIN_STATUS_EVERY {
                last_line = Instant::now();
                tracing::info!(
                    elapsed_s = start.elapsed().as_secs(),
                    model_version = stats.latest_model_version,
                    games = stats.games,
                    positions = stats.samples,
                    positions_per_s = rate.round(),
                    trainer = %step,
                    strength = %strength.trim_start_matches(" | "),
                    "status"
                );
            }
            bar.set_message(format!(
                "model v{} | {} games, {} positions ({rate:.0}/s) | {step}{strength}",
                stats.latest_model_version, stats.games, stats.samples
            ));
        }
        bar.tick();
        std::thread::sleep(Duration::from_secs(2));
    };
    bar.finish();
    // Close the status connection: the coordinator's graceful stop waits for open connections.
    drop(runtime);
    tracing::info!("stopping: workers first (they upload what they finished), then the trainer, then the coordinator");
    for worker in &mut workers {
        worker.stop(Duration::from_secs(30));
    }
    trainer.stop(Duration::from_secs(60));
    coordinator.stop(Duration::from_secs(30));
    tracking.store(false, Ordering::Relaxed);
    if let Some(Err(e)) = strength.map(|t| t.join().unwrap_or_else(|_| Err(anyhow::anyhow!("panicked")))) {
        tracing::error!(error = format!("{e:#}"), "strength tracking stopped");
    }
    for line in crate::plot::plot_run(&dir) {
        println!("{line}");
    }
    outcome?;
    if stop.load(Ordering::Relaxed) {
        tracing::info!("stopped; run the same command again to resume");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workers_default_to_one_on_a_cpu_and_to_all_cores_but_three_on_a_gpu() {
        assert_eq!([1, 2, 16].map(|cores| default_workers(cores, false)), [1, 1, 1]);
        assert_eq!([1, 2, 4, 16].map(|cores| default_workers(cores, true)), [1, 1, 1, 13]);
    }

    #[test]
    fn the_status_line_reads_the_last_rows_by_column_name() {
        let dir = tempfile::tempdir().unwrap();
        let metrics = dir.path().join("metrics.csv");
        std::fs::write(&metrics, "step,policy_loss,value_loss,learning_rate\n1,3.5,0.9,0.02\n2,3.4,0.8,0.02\n")
            .unwrap();
        assert_eq!(last_step(&metrics).as_deref(), Some("step 2 policy 3.4 value 0.8 lr 0.02"));
        let strength = dir.path().join("strength.csv");
        std::fs::write(
            &strength,
            format!("{}\n7,700,1,material@32,3,2,1,0.67,120.0,10.0,250.0\n", crate::strength::HEADER),
        )
        .unwrap();
        assert_eq!(last_strength(&strength).as_deref(), Some(" | v7 Elo 120.0 vs material@32"));
        std::fs::write(&strength, "version,elo\n7,120\n").unwrap();
        assert_eq!(last_strength(&strength), None, "a column is missing");
        assert_eq!(last_step(&dir.path().join("absent.csv")), None);
    }

    #[test]
    fn the_positions_rate_spans_the_last_minute_of_polls_not_the_last_two() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let mut rate = RateWindow::default();
        assert_eq!(rate.push(at(0), 1000), 0.0);
        assert_eq!(rate.push(at(2), 4000), 1500.0);
        // No upload between these two polls: the rate still counts the one before.
        assert_eq!(rate.push(at(4), 4000), 750.0);
        assert_eq!(rate.push(at(60), 4000), 3000.0 / 60.0);
        // Past the window the oldest readings go: from second 4 on, nothing was stored.
        assert_eq!(rate.push(at(70), 4000), 0.0);
        assert_eq!(rate.push(at(76), 7000), 3000.0 / 72.0);
    }
}
