//! Ctrl-C stops `xqz run` in order. The terminal's SIGINT reaches the supervisor alone (each role
//! leads a process group of its own), which stops the workers (they finish the games in play and
//! upload what they finished), then the trainer, then the coordinator, as `logs/roles.csv`
//! records; every game a worker finished is in the coordinator's dataset. A second Ctrl-C kills
//! every role at once.

#[path = "common/run_guard.rs"]
mod run_guard;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::killpg;
use nix::unistd::Pid;
use run_guard::RunGuard;
use xqz_run_folder::{RoleEvent, RoleRow, RowReader, RunFolder};

/// `xqz run` in `runs/r` with the tiny net, no strength matches and the roles logging JSON
/// lines, started as a terminal starts a command.
fn start(runs: &Path, flags: &[&str]) -> RunGuard {
    let mut command = Command::new(env!("CARGO_BIN_EXE_xqz"));
    command
        .args(["run", "--name", "r", "--model", "tiny", "--device", "cpu", "--match-games", "0"])
        .args(["--log-format", "json", "--runs"])
        .arg(runs)
        .args(flags)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(runs.join("stderr")).unwrap());
    RunGuard::start(&mut command, RunFolder::new(runs.join("r")))
}

fn wait_for(what: &str, run: &mut RunGuard, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while !done() {
        assert!(run.child.try_wait().unwrap().is_none(), "the run ended while waiting for {what}");
        assert!(Instant::now() < deadline, "no {what} after 2 minutes");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits for the run in `runs` to end; its exit status and its standard error.
fn ended(run: &mut RunGuard, runs: &Path) -> (std::process::ExitStatus, String) {
    let status = run.child.wait().unwrap();
    (status, std::fs::read_to_string(runs.join("stderr")).unwrap())
}

/// The games worker `log` reported as finished (spooled): their ids.
fn finished_games(log: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|event| event["message"] == "finished game")
        .map(|event| event["game"].as_str().unwrap().to_string())
        .collect()
}

/// Each role's events in the order they were noted, with their positions in the whole record.
type ByRole = BTreeMap<String, Vec<(usize, RoleEvent)>>;

/// The record of the roles, whole and [`ByRole`].
fn events(run: &RunFolder) -> (Vec<RoleRow>, ByRole) {
    let rows = RowReader::<RoleRow>::new(run.roles_csv()).read_all().unwrap();
    let mut by_role = ByRole::new();
    for (at, row) in rows.iter().enumerate() {
        by_role.entry(row.role.clone()).or_default().push((at, row.event));
    }
    (rows, by_role)
}

/// Where `role`'s first `event` is in the record.
fn position(by_role: &ByRole, role: &str, event: RoleEvent) -> usize {
    let events = &by_role[role];
    events.iter().find(|(_, e)| *e == event).unwrap_or_else(|| panic!("{role} has no {event:?}: {events:?}")).0
}

#[test]
fn ctrl_c_stops_the_workers_then_the_trainer_then_the_coordinator_and_loses_no_finished_game() {
    let runs = tempfile::tempdir().unwrap();
    let dir = RunFolder::new(runs.path().join("r"));
    let flags = ["--workers", "2", "--games-per-thread", "8", "--playouts", "8", "--cheap-playouts", "4"];
    let mut run = start(runs.path(), &[&flags[..], &["--max-plies", "24", "--min-samples", "256"]].concat());
    let workers = ["worker-0", "worker-1"];
    wait_for("finished games from both workers", &mut run, || {
        workers.iter().all(|w| !finished_games(&dir.log(w)).is_empty())
    });
    run.ctrl_c();
    let (status, stderr) = ended(&mut run, runs.path());
    let (rows, by_role) = events(&dir);
    assert!(status.success(), "{status}\n{stderr}\n{rows:#?}");

    // In order: no role was asked before the stage before it had exited, and none had exited
    // before it was asked (as a Ctrl-C that reached it too would have made it).
    let (asked, exited) =
        (|role| position(&by_role, role, RoleEvent::AskedToStop), |role| position(&by_role, role, RoleEvent::Exited));
    for worker in workers {
        assert!(asked(worker) < exited(worker), "{rows:#?}");
        assert!(exited(worker) < asked("trainer"), "{worker} before the trainer: {rows:#?}");
    }
    assert!(asked("trainer") < exited("trainer") && exited("trainer") < asked("coordinator"), "{rows:#?}");
    assert!(asked("coordinator") < exited("coordinator"), "{rows:#?}");
    // Each stopped by itself, in its time, with success.
    let ends: Vec<&RoleRow> = rows.iter().filter(|r| r.event == RoleEvent::Exited).collect();
    assert_eq!(ends.len(), 4, "{rows:#?}");
    assert!(ends.iter().all(|r| r.code == Some(0)), "{rows:#?}");

    // Every game a worker finished is in the dataset, once; nothing is left in a spool.
    let mut stored: BTreeMap<String, usize> = BTreeMap::new();
    for game in xqz_dataset::Dataset::open(dir.dataset_dir()).unwrap().games().unwrap() {
        *stored.entry(game.game_id.to_string()).or_default() += 1;
    }
    for (i, worker) in workers.iter().enumerate() {
        let finished = finished_games(&dir.log(worker));
        for id in &finished {
            assert_eq!(stored.get(id), Some(&1), "{worker}'s game {id} is stored {:?} times", stored.get(id));
        }
        let spool = xqz_worker::spool::Spool::open(&dir.root().join(format!("worker-{i}/spool"))).unwrap();
        assert!(spool.is_empty(), "{worker} left {} batches in its spool", spool.len());
    }
}

#[test]
fn a_second_ctrl_c_kills_every_role_at_once() {
    let runs = tempfile::tempdir().unwrap();
    let dir = RunFolder::new(runs.path().join("r"));
    // Long games: those in play when the workers are asked to stop take a while to finish.
    let flags = ["--workers", "1", "--games-per-thread", "8", "--playouts", "64", "--max-plies", "300"];
    let mut run = start(runs.path(), &flags);
    wait_for("the worker playing", &mut run, || dir.root().join("worker-0/spool").exists());
    run.ctrl_c();
    wait_for("the worker asked to stop", &mut run, || {
        events(&dir).1.get("worker-0").is_some_and(|e| e.iter().any(|(_, e)| *e == RoleEvent::AskedToStop))
    });
    run.ctrl_c();
    let (status, stderr) = ended(&mut run, runs.path());
    let (rows, by_role) = events(&dir);
    assert!(!status.success() && stderr.contains("stopped at once"), "{status}\n{stderr}");

    // The roles still running were killed, the coordinator among them, never asked in order.
    let coordinator: Vec<RoleEvent> = by_role["coordinator"].iter().map(|(_, e)| *e).collect();
    assert_eq!(coordinator, [RoleEvent::Started, RoleEvent::Killed, RoleEvent::Exited], "{rows:#?}");
    assert!(by_role["trainer"].iter().any(|(_, e)| *e == RoleEvent::Killed), "{rows:#?}");
    // Every role is gone, its process group with it.
    for (role, events) in &by_role {
        assert_eq!(events.last().map(|(_, e)| *e), Some(RoleEvent::Exited), "{role}: {rows:#?}");
    }
    for row in rows.iter().filter(|r| r.event == RoleEvent::Started) {
        assert!(killpg(Pid::from_raw(row.pid as i32), None).is_err(), "{}'s process group remains", row.role);
    }
}
