//! Evaluation as a cluster job: a coordinator and three match-only workers as processes on
//! 127.0.0.1 play an SPRT match between two checkpoints that differ clearly (the shipped model
//! and a random network); one worker is SIGKILLed while it plays a pair, which the others then
//! play, and every pair is counted exactly once. A match of deterministic players gives the same
//! games distributed as through `xqz eval match`. The Matches view shows the decided match in
//! headless Chromium where the browser test's variables are set.

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
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

/// The coordinator, with its gRPC URL and its dashboard's.
fn coordinator(data: &Path) -> (Proc, String, String) {
    let mut child = xqz()
        .args(["coordinator", "--listen", "127.0.0.1:0", "--metrics", "127.0.0.1:0", "--token", "t0k"])
        .args(["--alive-seconds", "6", "--data"])
        .arg(data)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let grpc = lines.next().unwrap().unwrap().strip_prefix("listening on ").expect("the address first").to_string();
    let http = lines.next().unwrap().unwrap();
    let dashboard = http.split("dashboard on ").nth(1).expect("the dashboard's address").to_string();
    std::thread::spawn(move || lines.for_each(drop));
    (Proc(child), format!("http://{grpc}"), dashboard)
}

/// What a worker logged of its pairs: (match, pair) taken, and handed in and counted.
#[derive(Default)]
struct Pairs {
    taken: Vec<(u64, u64)>,
    counted: Vec<(u64, u64)>,
}

fn worker(url: &str, dir: &Path, pairs: Arc<Mutex<Pairs>>) -> Proc {
    let mut child = xqz()
        .args(["worker", "--coordinator", url, "--token", "t0k", "--eval-share", "1", "--init-model", "tiny"])
        .args(["--log-format", "json", "--device", "cpu", "--threads", "1", "--dir"])
        .arg(dir)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            let event: serde_json::Value = serde_json::from_str(&line).unwrap_or_default();
            let at = || (event["match_id"].as_u64().unwrap(), event["pair"].as_u64().unwrap());
            match event["message"].as_str() {
                Some("playing match pair") => pairs.lock().unwrap().taken.push(at()),
                Some("match pair handed in") if event["counted"] == true => pairs.lock().unwrap().counted.push(at()),
                _ => eprintln!("{line}"),
            }
        }
    });
    Proc(child)
}

fn wait_for(what: &str, timeout: Duration, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// `xqz ARGS` that must succeed; its stdout.
fn run(args: &[&str]) -> String {
    let out = xqz().args(args).output().unwrap();
    assert!(out.status.success(), "xqz {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn job(url: &str, id: u64) -> serde_json::Value {
    let jobs = run(&["eval", "jobs", "--coordinator", url, "--token", "t0k", "--json"]);
    jobs.lines().map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap()).find(|j| j["id"] == id).unwrap()
}

fn submit(url: &str, args: &[&str]) -> u64 {
    let mut all = vec!["eval", "submit", "--coordinator", url, "--token", "t0k", "--json"];
    all.extend_from_slice(args);
    let job: serde_json::Value = serde_json::from_str(run(&all).trim()).unwrap();
    job["id"].as_u64().unwrap()
}

#[test]
fn three_workers_play_an_sprt_match_and_a_killed_worker_loses_no_pair() {
    let data = tempfile::tempdir().unwrap();
    let (_coord, url, dashboard) = coordinator(data.path());
    let shipped = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../models/shipped.json");
    let ckpt = tempfile::tempdir().unwrap();
    let random = common::tiny_checkpoint(ckpt.path());
    let mut publisher = GrpcPublisher::new(&url, None, Some("t0k".into()), "test").unwrap();
    assert_eq!(publisher.publish(&shipped).unwrap(), 1);
    assert_eq!(publisher.publish(&random).unwrap(), 2);

    let dirs: Vec<_> = (0..3).map(|_| tempfile::tempdir().unwrap()).collect();
    let logs: Vec<Arc<Mutex<Pairs>>> = (0..3).map(|_| Arc::default()).collect();
    let mut workers: Vec<Option<Proc>> =
        dirs.iter().zip(&logs).map(|(d, l)| Some(worker(&url, d.path(), l.clone()))).collect();
    let id = submit(
        &url,
        &["--a", "v1@8", "--b", "v2@8", "--pairs", "300", "--sprt", "0,150,0.001,0.001", "--max-plies", "100"],
    );
    assert_eq!(job(&url, id)["state"], "running");

    // Once each worker has handed in a pair, the third is killed while it plays its next one.
    let counted = |i: usize| logs[i].lock().unwrap().counted.len();
    wait_for("a pair from each worker", Duration::from_secs(400), || (0..3).all(|i| counted(i) >= 1));
    wait_for("the third worker to take another pair", Duration::from_secs(120), || {
        let log = logs[2].lock().unwrap();
        log.taken.len() > log.counted.len()
    });
    let lost = *logs[2].lock().unwrap().taken.last().unwrap();
    let mut killed = workers[2].take().unwrap();
    killed.0.kill().unwrap();
    killed.0.wait().unwrap();

    // Handed out again once the killed worker counts as gone (6 s), and counted.
    let in_table = || {
        let rows = xqz_arena::records::read_games(data.path()).unwrap();
        rows.iter().any(|r| r.match_id == format!("job-{id}") && u64::from(r.pair) == lost.1)
    };
    wait_for("the killed worker's pair in the match table", Duration::from_secs(300), in_table);
    let by_others = logs[..2].iter().any(|l| l.lock().unwrap().counted.contains(&lost));
    println!("the killed worker's pair {lost:?} was handed in by another worker: {by_others}");
    wait_for("the SPRT to decide", Duration::from_secs(600), || job(&url, id)["state"] != "running");
    let decided = job(&url, id);
    assert_eq!(decided["state"], "H1", "{decided}");
    let rows = xqz_arena::records::read_games(data.path()).unwrap();
    let mut games: BTreeMap<u32, usize> = BTreeMap::new();
    for row in rows.iter().filter(|r| r.match_id == format!("job-{id}")) {
        assert_eq!((row.a.as_str(), row.b.as_str()), ("v1@8", "v2@8"));
        *games.entry(row.pair).or_default() += 1;
    }
    assert!(games.values().all(|&n| n == 2), "each pair counted once, both games: {games:?}");
    let total = ["wins", "draws", "losses"].iter().map(|k| decided[k].as_u64().unwrap()).sum::<u64>();
    assert_eq!(total as usize, 2 * games.len(), "{decided}");
    assert!(games.contains_key(&(lost.1 as u32)), "the killed worker's pair {lost:?} is in the table");
    println!("decided after {} pairs: {decided}", games.len());

    // The same match of deterministic players distributed and through `xqz eval match`.
    let args = ["--a", "material@8", "--b", "uniform@8", "--pairs", "3", "--max-plies", "60", "--seed", "5"];
    let local = tempfile::tempdir().unwrap();
    let mut eval_match = vec!["eval", "match", "--json", "--openings", "random", "--out"];
    eval_match.push(local.path().to_str().unwrap());
    eval_match.extend_from_slice(&args);
    let alone: serde_json::Value = serde_json::from_str(run(&eval_match).trim()).unwrap();
    let mut distributed = args.to_vec();
    distributed.extend_from_slice(&["--openings", "random", "--wait"]);
    let spread = submit(&url, &distributed);
    let spread = job(&url, spread);
    assert_eq!(spread["state"], "finished");
    assert_eq!(
        (&spread["wins"], &spread["draws"], &spread["losses"], &spread["pentanomial"]),
        (&alone["wins"], &alone["draws"], &alone["losses"], &alone["pairs"]),
        "distributed {spread}\nalone {alone}"
    );
    // Game by game: the same openings, scores and endings.
    let key = |r: &xqz_arena::records::GameRow| (r.pair, r.opening.clone(), r.a_score, r.reason.clone());
    let mut here: Vec<_> = xqz_arena::records::read_games(local.path()).unwrap().iter().map(key).collect();
    let rows = xqz_arena::records::read_games(data.path()).unwrap();
    let mut there: Vec<_> = rows.iter().filter(|r| r.match_id == format!("job-{}", spread["id"])).map(key).collect();
    here.sort_by(|x, y| x.partial_cmp(y).unwrap());
    there.sort_by(|x, y| x.partial_cmp(y).unwrap());
    assert_eq!(here, there);

    let status: serde_json::Value =
        serde_json::from_str(run(&["status", "--coordinator", &url, "--token", "t0k", "--json"]).trim()).unwrap();
    assert_eq!(status["matches"].as_array().unwrap().len(), 2, "{status}");
    let results = run(&["eval", "results", "--run", data.path().to_str().unwrap()]);
    assert!(results.contains("v1@8") && results.contains("material@8"), "{results}");

    browse(&format!("{dashboard}?token=t0k"), id);
    drop(workers);
}

/// The Matches view in headless Chromium, if the browser test's variables are set.
fn browse(url: &str, id: u64) {
    let vars = ["XQZ_CHROMIUM", "XQZ_CHROMEDRIVER", "XQZ_PYTHON"].map(std::env::var_os);
    let [Some(chromium), Some(chromedriver), Some(python)] = vars else {
        eprintln!("SKIPPED the Matches view: XQZ_CHROMIUM, XQZ_CHROMEDRIVER and XQZ_PYTHON are unset");
        return;
    };
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/dashboard_matches.py");
    let mut browser = Command::new(python);
    browser.arg(&script).arg(url).arg(&chromium).arg(&chromedriver).arg(id.to_string()).arg("H1");
    if let Some(dir) = std::env::var_os("XQZ_DASHBOARD_SCREENSHOTS") {
        browser.arg("--screenshots").arg(dir);
    }
    let out = browser.output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && text.lines().any(|l| l == "ok"), "dashboard_matches.py failed:\n{text}");
}
