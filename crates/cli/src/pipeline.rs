//! `xqz run`: the whole pipeline on this machine — a coordinator, workers and a trainer as child
//! processes talking real gRPC on 127.0.0.1, data in `runs/<name>/` — with a live status line,
//! a clean stop on Ctrl-C or when the time is up, resumption under the same name, and a plot of
//! the losses.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use clap::{ArgMatches, Args};
use xqz_dataset::DatasetLocation;
use xqz_mcts::{PlaySchedule, PlaySettings};
use xqz_run_folder::{RunFolder, RunState};
use xqz_trainer::TrainSettings;

use crate::roles::{Group, RoleOutput, spawn_coordinator};
use crate::run_status::watch;
use crate::settings::{SettingsFile, override_with};
use crate::supervisor::{StopSignals, Stopped, Stopping, Supervisor};

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
    /// Keep the run's state at this folder or object store prefix (`s3://bucket/prefix`, ...),
    /// so that the run outlives its machine: the coordinator's dataset lives there, the
    /// coordinator's and the trainer's backups are kept there as they publish and checkpoint,
    /// and the run's settings.toml and strength.csv are copied there every minute and at the
    /// stop. A new run folder given a state location that holds a run resumes that run from it,
    /// on any machine: the same counters, schedules and settings (docs/TRAINING.md). Noted in the
    /// run folder, so a later `xqz run --name NAME` keeps it.
    #[arg(long)]
    state: Option<String>,
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
    let settings = SettingsFile { play, schedule, train, evaluation: base.evaluation };
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

/// Seconds since the Unix epoch, for log lines.
fn unix_now() -> String {
    let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    format!("unix {}", since.as_secs())
}

/// Worker processes when `--workers` is not given. On a CPU one worker leaves the other cores to
/// the trainer, whose steps then keep up with self-play. With the network on a GPU the trainer
/// needs few cores, and a GPU's inference keeps many workers busy: one per core but three (the
/// trainer's data loading and the coordinator), as in the run behind the shipped model's last
/// stretch (13 workers of 16 cores, docs/LEARNING.md).
fn default_workers(cores: usize, gpu: bool) -> usize {
    if gpu { cores.saturating_sub(3).max(1) } else { 1 }
}

/// Checks the run's options and settings, makes its folder and writes its settings (nothing is
/// made when a check fails); the settings and the device.
fn prepare(args: &RunArgs, given: &ArgMatches, run: &RunFolder) -> Result<(SettingsFile, tch::Device)> {
    anyhow::ensure!(
        args.match_share > 0.0 && args.match_share <= 1.0,
        "--match-share {} must be above 0 and at most 1",
        args.match_share
    );
    let device = args.device.resolve()?;
    let settings_path = run.settings_file();
    let (settings, overridden, write) = run_settings(args, given, &settings_path)?;
    match &args.openings {
        Some(path) => drop(crate::book::load_suite(path)?),
        None => anyhow::ensure!(
            settings.play.opening_share == 0.0,
            "opening_share = {} needs an opening suite: give one with --openings FILE",
            settings.play.opening_share
        ),
    }
    run.create()?;
    if let Some(list) = overridden {
        use std::io::Write;
        let mut file = std::fs::OpenOptions::new().create(true).append(true).open(run.settings_log())?;
        writeln!(file, "{}: changed by --override: {list}", unix_now())?;
        tracing::info!(changes = %list, "settings changed by --override");
    }
    if write {
        settings.save(&settings_path)?;
    }
    Ok((settings, device))
}

/// The run's state location: the one given, or the one the run folder notes (they must agree);
/// checked as a location. Nothing is written.
fn state_location(args: &RunArgs, run: &RunFolder) -> Result<Option<RunState>> {
    let noted = run.state()?;
    let given = args.state.as_deref().map(RunState::new);
    let state = match (noted, given) {
        (Some(noted), Some(given)) if noted != given => anyhow::bail!(
            "{} keeps its state at {}, not {}: drop --state, or start a run under another --name",
            run.root().display(),
            noted.location(),
            given.location()
        ),
        (noted, given) => noted.or(given),
    };
    if let Some(state) = &state {
        for part in [state.coordinator(), state.dataset(), state.trainer(), state.run()] {
            DatasetLocation::parse(&part).with_context(|| format!("--state {}", state.location()))?;
        }
    }
    Ok(state)
}

/// Fills a run folder that has no settings yet with the run files its state holds; whether it
/// did (the run resumes from the state).
fn restore_run_files(state: &RunState, run: &RunFolder) -> Result<bool> {
    if run.settings_file().exists() {
        return Ok(false);
    }
    let from = DatasetLocation::parse(&state.run())?;
    let Some(settings) = from.get_file(RunState::RUN_FILES[0])? else { return Ok(false) };
    std::fs::create_dir_all(run.root())?;
    for name in &RunState::RUN_FILES[1..] {
        if let Some(bytes) = from.get_file(name)? {
            xqz_run_folder::write_atomic(&run.root().join(name), &bytes)?;
        }
    }
    // The settings last: their presence says the folder was filled.
    xqz_run_folder::write_atomic(&run.settings_file(), &settings)?;
    tracing::info!(state = state.location(), "run folder filled from the run's state");
    Ok(true)
}

/// Copies the run's own files to its state.
fn save_run_files(state: &RunState, run: &RunFolder) -> Result<()> {
    DatasetLocation::parse(&state.run())?.put_files(run.state_files()?)?;
    Ok(())
}

/// How often the run's own files are copied to its state.
const SAVE_RUN_FILES_EVERY: Duration = Duration::from_secs(60);

/// Copies the run's own files to its state every minute on a thread of its own, until
/// `stopping` is set; a failed copy is logged and tried again.
fn start_saving_run_files(state: RunState, run: RunFolder, stopping: Arc<AtomicBool>) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut last = Instant::now();
        while !stopping.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(200));
            if last.elapsed() >= SAVE_RUN_FILES_EVERY {
                last = Instant::now();
                if let Err(e) = save_run_files(&state, &run) {
                    tracing::warn!(error = format!("{e:#}"), state = state.location(), "copying the run's files");
                }
            }
        }
    })
}

/// The coordinator's arguments besides its ports and ready file.
fn coordinator_args(args: &RunArgs, run: &RunFolder, state: Option<&RunState>) -> Vec<OsString> {
    let mut argv: Vec<OsString> = vec![
        "--data".into(),
        run.coordinator_dir().into(),
        "--settings".into(),
        run.settings_file().into(),
        "--run-folder".into(),
        run.root().into(),
    ];
    if let Some(state) = state {
        argv.extend(["--dataset".into(), state.dataset().into(), "--backup".into(), state.coordinator().into()]);
    }
    // The user who names an address off loopback asks for the read-only view to be seen there;
    // the coordinator's gRPC stays on loopback.
    if !args.dashboard.ip().is_loopback() {
        argv.push("--insecure".into());
    }
    if let Some(path) = &args.openings {
        argv.extend(["--openings".into(), path.into()]);
    }
    argv
}

/// Worker `index`'s arguments: it searches on one thread, as one torch thread.
fn worker_args(args: &RunArgs, run: &RunFolder, settings: &SettingsFile, url: &str, index: usize) -> Vec<OsString> {
    let mut argv: Vec<OsString> = vec!["worker".into(), "--coordinator".into(), url.into(), "--dir".into()];
    argv.push(run.worker_dir(index).into());
    for (flag, value) in [
        ("--init-model", settings.train.model.clone()),
        ("--device", args.device.device.clone()),
        ("--torch-threads", "1".into()),
        ("--threads", "1".into()),
        ("--games-per-thread", args.games_per_thread.to_string()),
    ] {
        argv.extend([flag.into(), value.into()]);
    }
    if let Some(precision) = args.device.precision {
        argv.extend(["--precision".into(), precision.to_string().into()]);
    }
    argv
}

/// The trainer's arguments: the run folder (its dataset, its trainer folder and its settings
/// file), the device and its share of the cores.
fn trainer_args(args: &RunArgs, run: &RunFolder, url: &str, threads: usize) -> Vec<OsString> {
    let mut argv: Vec<OsString> = vec!["train".into(), "--coordinator".into(), url.into()];
    argv.extend(["--run-folder".into(), run.root().into(), "--device".into(), (&args.device.device).into()]);
    argv.extend(["--torch-threads".into(), threads.to_string().into()]);
    argv
}

/// Starts the roles: the coordinator first (the others need its address), then the workers
/// and the trainer. The supervisor of them, the coordinator's URL and its dashboard's address.
fn start_roles(
    args: &RunArgs,
    run: &RunFolder,
    settings: &SettingsFile,
    gpu: bool,
    state: Option<&RunState>,
) -> Result<(Supervisor, String, std::net::SocketAddr)> {
    let coordinator_log = run.log("coordinator");
    let (coordinator, ready) = spawn_coordinator(
        coordinator_args(args, run, state),
        args.dashboard,
        &run.ready_file(),
        RoleOutput::Log(coordinator_log.clone()),
        Group::Own,
        Duration::from_secs(60),
    )
    .with_context(|| format!("see {}", coordinator_log.display()))?;
    let url = format!("http://{}", ready.listen);
    let dashboard = ready.metrics.context("the coordinator's ready file names no dashboard address")?;
    let mut roles = Supervisor::new(coordinator, &run.roles_csv())?;
    // Each role takes its share of the cores: one per worker (it searches on one thread), the
    // rest to the trainer; libtorch's default of one thread per core in every process makes
    // them all wait on each other.
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    let workers = args.workers.unwrap_or_else(|| default_workers(cores, gpu));
    for i in 0..workers {
        let name = format!("worker-{i}");
        roles.start_worker(&name, &worker_args(args, run, settings, &url, i), &run.log(&name))?;
    }
    let threads = cores.saturating_sub(workers).max(1);
    roles.start_trainer(&trainer_args(args, run, &url, threads), &run.log("trainer"))?;
    Ok((roles, url, dashboard))
}

/// Starts the strength matches on a thread of their own, unless they are off; they stop when
/// `stopping` is set, between two games.
fn start_strength(
    args: &RunArgs,
    run: &RunFolder,
    device: tch::Device,
    stopping: &Arc<AtomicBool>,
) -> Option<JoinHandle<Result<()>>> {
    if args.match_games == 0 {
        return None;
    }
    // The matches run beside self-play and training, on one thread.
    if args.device.torch_threads == 0 {
        tch::set_num_threads(1);
    }
    let tracker = crate::strength::Tracker {
        run: run.clone(),
        games: args.match_games.div_ceil(2) * 2,
        playouts: args.match_playouts,
        device,
        share: args.match_share,
    };
    let stopping = Arc::clone(stopping);
    Some(std::thread::spawn(move || tracker.run(&stopping)))
}

/// Waits for `thread` to end, unless `stop` asks for everything at once first: then `None`, and
/// the thread ends with the process.
fn join_unless_at_once<T>(thread: JoinHandle<T>, stop: &Stopping) -> Option<std::thread::Result<T>> {
    while !thread.is_finished() {
        if stop.at_once() {
            return None;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Some(thread.join())
}

/// What `xqz run` answers when asked to stop at once.
const STOPPED_AT_ONCE: &str =
    "stopped at once: every role was killed; run the same command again to resume from what they had stored";

/// Runs `xqz run`.
pub fn run(args: &RunArgs, given: &ArgMatches) -> Result<()> {
    let run = RunFolder::new(args.runs.join(&args.name));
    let state = state_location(args, &run)?;
    let from_state = match &state {
        Some(state) => restore_run_files(state, &run)?,
        None => false,
    };
    // Checked before anything is created: a run refused at the start leaves no trace.
    let (settings, device) = prepare(args, given, &run)?;
    if let Some(state) = &state {
        run.set_state(state)?;
        // At once: a run killed before the first periodic copy resumes under its settings too.
        save_run_files(state, &run).with_context(|| format!("saving the run's files to {}", state.location()))?;
    }
    let resumed = from_state || run.trainer().metrics_csv().exists();
    if !resumed {
        run.record_start()?;
    }
    // Caught before the roles start: a Ctrl-C while they start stops them once they have.
    let signals = StopSignals::catch()?;
    let (mut roles, url, dashboard) =
        start_roles(args, &run, &settings, matches!(device, tch::Device::Cuda(_)), state.as_ref())?;
    println!(
        "run {} in {}{} | dashboard http://{dashboard}/",
        args.name,
        run.root().display(),
        if resumed { " (resumed)" } else { "" }
    );
    let stopping = Arc::new(AtomicBool::new(false));
    let strength = start_strength(args, &run, device, &stopping);
    let deadline = args.minutes.map(|m| Instant::now() + Duration::from_secs_f64(m * 60.0));
    let saving = state.clone().map(|state| start_saving_run_files(state, run.clone(), Arc::clone(&stopping)));
    let outcome = watch(&mut roles, &run, &url, deadline, &signals);
    let stop = signals.stopping();
    // The strength match ends between games while the roles stop.
    stopping.store(true, Ordering::Relaxed);
    if roles.stop(&stop) == Stopped::AtOnce {
        anyhow::bail!(STOPPED_AT_ONCE);
    }
    match strength.map(|thread| join_unless_at_once(thread, &stop)) {
        Some(None) => anyhow::bail!(STOPPED_AT_ONCE),
        Some(Some(Ok(Err(e)))) => tracing::error!(error = format!("{e:#}"), "strength tracking stopped"),
        Some(Some(Err(_))) => tracing::error!("strength tracking panicked"),
        Some(Some(Ok(Ok(())))) | None => {}
    }
    if let Some(saving) = saving {
        let _ = saving.join();
    }
    let saved = state.as_ref().map_or(Ok(()), |state| {
        save_run_files(state, &run).with_context(|| format!("saving the run's files to {}", state.location()))
    });
    for line in crate::plot::plot_run(&run) {
        println!("{line}");
    }
    outcome?;
    saved?;
    if signals.asked() {
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
}
