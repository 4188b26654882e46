//! A coordinator and two workers as processes on 127.0.0.1: a model published mid-run reaches
//! both workers, the coordinator is SIGKILLed and restarted, and afterwards every game each worker
//! reports as finished is in the dataset exactly once.

mod common;

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use xqz_trainer::{GrpcPublisher, Publisher};

fn xqz() -> Command {
    Command::new(env!("CARGO_BIN_EXE_xqz"))
}

/// A child process killed when dropped.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn coordinator(port: u16, data: &Path) -> Proc {
    let mut child = xqz()
        .args(["coordinator", "--listen", &format!("127.0.0.1:{port}"), "--token", "t0k"])
        .args(["--max-plies", "40", "--playouts", "16", "--cheap-playouts", "8", "--data"])
        .arg(data)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = lines.next().expect("the coordinator says where it listens").unwrap();
    assert!(line.starts_with("listening on "), "{line}");
    std::thread::spawn(move || lines.for_each(drop));
    Proc(child)
}

/// The games a worker reported as finished: (hex id, model version).
type Finished = Arc<Mutex<Vec<(String, u64)>>>;

/// A worker whose `finished game` log events (JSON lines) are collected.
fn worker(url: &str, dir: &Path, finished: Finished) -> Proc {
    let mut child = xqz()
        .args(["worker", "--coordinator", url, "--token", "t0k", "--max-games", "40", "--init-model", "tiny"])
        .args(["--log-format", "json"])
        .args(["--device", "cpu", "--threads", "1", "--games-per-thread", "2", "--dir"])
        .arg(dir)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            let event: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
            if event["message"] == "finished game" {
                let id = event["game"].as_str().unwrap().to_string();
                finished.lock().unwrap().push((id, event["model_version"].as_u64().unwrap()));
            } else {
                eprintln!("{line}");
            }
        }
    });
    Proc(child)
}

fn wait_for(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn games_survive_a_model_switch_and_a_coordinator_crash() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}");
    let (data, dirs) = (tempfile::tempdir().unwrap(), [tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap()]);
    let mut coord = coordinator(port, data.path());
    let finished: [Finished; 2] = Default::default();
    let mut workers: Vec<Proc> =
        dirs.iter().zip(&finished).map(|(d, f)| worker(&url, d.path(), Arc::clone(f))).collect();
    let count = |i: usize, version: u64| finished[i].lock().unwrap().iter().filter(|g| g.1 == version).count();

    wait_for("games of the random network", Duration::from_secs(120), || count(0, 0) >= 2 && count(1, 0) >= 2);
    let ckpt = tempfile::tempdir().unwrap();
    let path = common::tiny_checkpoint(ckpt.path());
    let version = GrpcPublisher::new(&url, None, Some("t0k".into()), "test").unwrap().publish(&path).unwrap();
    assert_eq!(version, 1);
    wait_for("games of model v1 from both workers", Duration::from_secs(120), || count(0, 1) >= 1 && count(1, 1) >= 1);

    // SIGKILL: no shutdown, no flush.
    coord.0.kill().unwrap();
    coord.0.wait().unwrap();
    std::thread::sleep(Duration::from_secs(2));
    let _coord = coordinator(port, data.path());

    for (i, w) in workers.iter_mut().enumerate() {
        let deadline = Instant::now() + Duration::from_secs(240);
        let status = loop {
            if let Some(status) = w.0.try_wait().unwrap() {
                break status;
            }
            assert!(Instant::now() < deadline, "worker {i} did not finish");
            std::thread::sleep(Duration::from_millis(200));
        };
        assert!(status.success(), "worker {i}: {status}");
    }
    drop(_coord);

    let dataset = xqz_dataset::Dataset::open(data.path().join("dataset")).unwrap();
    let mut stored: HashMap<String, usize> = HashMap::new();
    for game in dataset.games().unwrap() {
        *stored.entry(game.game_id.to_string()).or_default() += 1;
    }
    let reported: Vec<(String, u64)> = finished.iter().flat_map(|f| f.lock().unwrap().clone()).collect();
    assert_eq!(reported.len(), 80, "each worker reports its 40 games");
    for (id, _) in &reported {
        assert_eq!(stored.get(id), Some(&1), "game {id} stored {:?} times", stored.get(id));
    }
    assert_eq!(stored.len(), reported.len(), "no game stored that no worker reported");
    assert!(stored.values().all(|&n| n == 1));
}
