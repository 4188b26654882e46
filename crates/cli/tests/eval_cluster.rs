//! Evaluation as a cluster job: a coordinator and three match-only workers as processes on
//! 127.0.0.1 play an SPRT match between two checkpoints that differ clearly (the shipped model
//! and a random network) to its decision, each of them some of its pairs; in a second match one
//! worker is SIGKILLed as it takes a pair, which the others then play, and every pair is counted
//! exactly once. A match of deterministic players gives the same
//! games distributed as through `xqz eval match`. The Matches view shows the decided match in
//! headless Chromium where the browser test's variables are set.

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use xqz_test_support::process::ChildGuard;
use xqz_trainer::{GrpcPublisher, Publisher};

fn xqz() -> Command {
    Command::new(env!("CARGO_BIN_EXE_xqz"))
}

/// The coordinator, with its gRPC URL and its dashboard's.
fn coordinator(data: &Path) -> (ChildGuard, String, String) {
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
    (ChildGuard(child), format!("http://{grpc}"), dashboard)
}

/// What a worker logged of its pairs: (match, pair) taken, and handed in and counted.
#[derive(Default)]
struct Pairs {
    taken: Vec<(u64, u64)>,
    counted: Vec<(u64, u64)>,
}

fn worker(url: &str, dir: &Path, pairs: Arc<Mutex<Pairs>>) -> ChildGuard {
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
    ChildGuard(child)
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

/// The pairs of job `id` in the match table of `data`, each with both games and counted once, the
/// players as named, and as many as the job's counts say.
fn pairs_of(data: &Path, id: u64, job: &serde_json::Value, players: (&str, &str)) -> BTreeMap<u32, usize> {
    let rows = xqz_arena::records::read_games(data).unwrap();
    let mut games: BTreeMap<u32, usize> = BTreeMap::new();
    for row in rows.iter().filter(|r| r.match_id == format!("job-{id}")) {
        assert_eq!((row.a.as_str(), row.b.as_str()), players);
        *games.entry(row.pair).or_default() += 1;
    }
    assert!(games.values().all(|&n| n == 2), "each pair counted once, both games: {games:?}");
    let total = ["wins", "draws", "losses"].iter().map(|k| job[k].as_u64().unwrap()).sum::<u64>();
    assert_eq!(total as usize, 2 * games.len(), "{job}");
    games
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
    let mut workers: Vec<Option<ChildGuard>> =
        dirs.iter().zip(&logs).map(|(d, l)| Some(worker(&url, d.path(), l.clone()))).collect();
    let status = || -> serde_json::Value {
        serde_json::from_str(run(&["status", "--coordinator", &url, "--token", "t0k", "--json"]).trim()).unwrap()
    };
    wait_for("three workers", Duration::from_secs(120), || status()["workers_alive"] == 3);

    // An SPRT match that all three play from its start; a model ahead by two pawns at the cap wins.
    let decisive = ["--max-plies", "100", "--material-adjudication", "2"];
    let sprt = ["--a", "v1@8", "--b", "v2@8", "--pairs", "300", "--sprt", "0,50,0.001,0.001"];
    let id = submit(&url, &[&sprt[..], &decisive[..]].concat());
    wait_for("the SPRT to decide", Duration::from_secs(600), || job(&url, id)["state"] != "running");
    let decided = job(&url, id);
    assert_eq!(decided["state"], "H1", "{decided}");
    let games = pairs_of(data.path(), id, &decided, ("v1@8", "v2@8"));
    for (i, log) in logs.iter().enumerate() {
        let played = log.lock().unwrap().counted.iter().filter(|(m, _)| *m == id).count();
        assert!(played > 0, "worker {i} played none of the {} pairs", games.len());
    }
    println!("decided after {} pairs: {decided}", games.len());

    // A match of 9 pairs: the third worker is killed as it takes one, which the others then play
    // once it counts as gone (6 s); every pair is counted once.
    let fixed = ["--a", "v1@8", "--b", "v2@8", "--pairs", "9"];
    let id = submit(&url, &[&fixed[..], &decisive[..]].concat());
    wait_for("the third worker to take a pair", Duration::from_secs(300), || {
        logs[2].lock().unwrap().taken.iter().any(|(m, _)| *m == id)
    });
    let lost = *logs[2].lock().unwrap().taken.iter().find(|(m, _)| *m == id).unwrap();
    let mut killed = workers[2].take().unwrap();
    killed.0.kill().unwrap();
    killed.0.wait().unwrap();
    wait_for("the match to end", Duration::from_secs(600), || job(&url, id)["state"] != "running");
    let ended = job(&url, id);
    assert_eq!(ended["state"], "finished", "{ended}");
    let games = pairs_of(data.path(), id, &ended, ("v1@8", "v2@8"));
    assert_eq!(games.len(), 9, "every pair: {games:?}");
    // The worker dies within 200 ms of taking its pair, long before it could play two games of up
    // to 100 plies, so one of the live workers played it.
    assert!(!logs[2].lock().unwrap().counted.contains(&lost), "the killed worker handed in {lost:?} before it died");
    let by_others = logs[..2].iter().filter(|l| l.lock().unwrap().counted.contains(&lost)).count();
    assert_eq!(by_others, 1, "a live worker played the killed worker's pair {lost:?}, once");

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

    // A model against an anchor (the anchor first: the training view turns it round).
    let anchored = ["--a", "material@4", "--b", "v1@4", "--pairs", "1", "--max-plies", "20"];
    let anchored = submit(&url, &[&anchored[..], &["--material-adjudication", "1", "--wait"]].concat());
    assert_eq!(job(&url, anchored)["state"], "finished");

    let status = status();
    assert_eq!(status["matches"].as_array().unwrap().len(), 4, "{status}");
    let results = run(&["eval", "results", "--run", data.path().to_str().unwrap()]);
    assert!(results.contains("v1@8") && results.contains("material@8"), "{results}");

    browse(&format!("{dashboard}?token=t0k"), 1);
    drop(workers);
}

/// The Matches view in headless Chromium, if the browser test's variables are set.
fn browse(url: &str, id: u64) {
    let Some(found) = xqz_test_support::browser::browser("the Matches view") else { return };
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/dashboard_matches.py");
    let mut browser = Command::new(&found.python);
    browser.arg(&script).arg(url).arg(&found.chromium).arg(&found.chromedriver).arg(id.to_string()).arg("H1");
    if let Some(dir) = std::env::var_os("XQZ_DASHBOARD_SCREENSHOTS") {
        browser.arg("--screenshots").arg(dir);
    }
    let out = browser.output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && text.lines().any(|l| l == "ok"), "dashboard_matches.py failed:\n{text}");
}
