//! The logs of `xqz`: a coordinator run as a child process logs, as JSON lines on stderr, a worker
//! joining, a rejected batch with its reason, a published model and a worker lost; `RUST_LOG`
//! filters them.

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use xiangqi::Move;
use xqz_proto::v1::coordinator_client::CoordinatorClient;
use xqz_proto::v1::{GameSubmission, PlySearch, RegisterRequest, SubmitGamesRequest};
use xqz_test_support::process::{ChildGuard, start_listening};
use xqz_trainer::Publisher as _;

/// A coordinator on 127.0.0.1:0 that adjudicates games at 2 plies, started with `env` and `args`;
/// its address and the stderr lines it has written so far (collected as they come).
fn coordinator(data: &Path, env: &[(&str, &str)], args: &[&str]) -> (ChildGuard, String, Arc<Mutex<Vec<String>>>) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_xqz"));
    command.args(["coordinator", "--listen", "127.0.0.1:0", "--max-plies", "2", "--data"]).arg(data).args(args);
    command.env_remove("RUST_LOG").env_remove("XQZ_LOG_FORMAT").envs(env.iter().copied()).stderr(Stdio::piped());
    let (mut child, addr) = start_listening(&mut command);
    let lines = Arc::new(Mutex::new(Vec::new()));
    let stderr = BufReader::new(child.0.stderr.take().unwrap());
    let collected = Arc::clone(&lines);
    std::thread::spawn(move || stderr.lines().map_while(Result::ok).for_each(|l| collected.lock().unwrap().push(l)));
    (child, format!("http://{addr}"), lines)
}

/// Waits until a collected line satisfies `found`; returns all lines then.
fn wait_for(lines: &Mutex<Vec<String>>, what: &str, found: impl Fn(&str) -> bool) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let now = lines.lock().unwrap().clone();
        if now.iter().any(|l| found(l)) {
            return now;
        }
        assert!(Instant::now() < deadline, "no {what} in the log:\n{}", now.join("\n"));
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn code(text: &str) -> u32 {
    u32::from(text.parse::<Move>().unwrap().to_u16())
}

/// `moves` as a game that ends as a draw at the 2-ply cap, with plausible searches.
fn game(id: u8, moves: [&str; 2]) -> GameSubmission {
    let moves: Vec<u32> = moves.iter().map(|m| code(m)).collect();
    GameSubmission {
        game_id: vec![id; 16],
        start_fen: xiangqi::START_FEN.into(),
        plies: moves
            .iter()
            .map(|&m| PlySearch {
                policy_moves: vec![m],
                policy_probs: vec![1.0],
                root_wdl: vec![0.3, 0.4, 0.3],
                full_search: true,
            })
            .collect(),
        moves,
        result: "draw".into(),
        reason: "max_length".into(),
        ..Default::default()
    }
}

/// Registers as `name` and submits a batch with an illegal move, then (if `good`) a legal one;
/// returns the worker id.
fn register_and_submit(url: &str, name: &str, good: bool) -> String {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(async {
        let mut client = CoordinatorClient::connect(url.to_string()).await.unwrap();
        let register = RegisterRequest { name: name.into(), ..Default::default() };
        let worker_id = client.register(register).await.unwrap().into_inner().worker_id;
        let submit = |key: &str, game: GameSubmission| SubmitGamesRequest {
            idempotency_key: key.into(),
            worker_id: worker_id.clone(),
            games: vec![game],
        };
        // Black answers with a red cannon's move.
        let bad = client.submit_games(submit("bad-1", game(1, ["h2e2", "e2e6"]))).await.unwrap_err();
        assert_eq!(bad.code(), tonic::Code::InvalidArgument, "{bad:?}");
        if good {
            let good = client.submit_games(submit("good-1", game(2, ["h2e2", "h9g7"]))).await.unwrap();
            assert_eq!(good.into_inner().accepted, 1);
        }
        worker_id
    })
}

/// The one event of `events` whose message is `message`.
fn event<'a>(events: &'a [Value], message: &str) -> &'a Value {
    let found: Vec<&Value> = events.iter().filter(|e| e["message"] == message).collect();
    assert_eq!(found.len(), 1, "one {message:?} event in {events:#?}");
    found[0]
}

#[test]
fn the_coordinator_logs_joins_rejections_and_models_as_json_lines() {
    let data = tempfile::tempdir().unwrap();
    let (_child, url, lines) =
        coordinator(&data.path().join("coordinator"), &[("RUST_LOG", "info"), ("XQZ_LOG_FORMAT", "json")], &[]);
    let worker_id = register_and_submit(&url, "rack-7", true);
    let checkpoint = common::tiny_checkpoint(data.path());
    let mut publisher = xqz_trainer::GrpcPublisher::new(&url, None, None, "trainer-logs").unwrap();
    assert_eq!(publisher.publish(&checkpoint).unwrap(), 1);

    let lines = wait_for(&lines, "published model", |l| l.contains("model published"));
    let events: Vec<Value> =
        lines.iter().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}"))).collect();
    for e in &events {
        let time = e["timestamp"].as_str().unwrap_or_else(|| panic!("no timestamp: {e}"));
        assert!(time.len() >= 20 && time.as_bytes()[10] == b'T', "{e}");
        assert!(["INFO", "WARN", "ERROR"].contains(&e["level"].as_str().unwrap()), "info and above only: {e}");
        assert!(e["target"].as_str().is_some(), "{e}");
    }
    let serving = event(&events, "coordinator serving");
    assert_eq!(serving["listen"].as_str().map(|a| format!("http://{a}")), Some(url.clone()));

    let joined = event(&events, "worker joined");
    assert_eq!(joined["level"], "INFO");
    assert_eq!((joined["worker"].as_str(), joined["name"].as_str()), (Some(worker_id.as_str()), Some("rack-7")));

    let rejected = event(&events, "batch rejected");
    assert_eq!(rejected["level"], "WARN");
    assert_eq!((rejected["worker"].as_str(), rejected["key"].as_str()), (Some(worker_id.as_str()), Some("bad-1")));
    assert_eq!(rejected["code"], "InvalidArgument");
    assert_eq!(rejected["games"], 1);
    let reason = rejected["reason"].as_str().unwrap();
    assert!(reason.contains("e2e6"), "the reason names the illegal move: {reason}");
    // The good batch is logged at debug level, below the filter.
    assert!(events.iter().all(|e| e["message"] != "batch stored"), "{events:#?}");

    let published = event(&events, "model published and announced");
    assert_eq!(published["level"], "INFO");
    // The default schedule grows the game cap with each model: settings version 2 comes with it.
    assert_eq!((published["version"].as_u64(), published["settings_version"].as_u64()), (Some(1), Some(2)));
    assert_eq!(published["settings_changed"], true);
    assert_eq!(published["publisher"], "trainer-logs");
}

#[test]
fn rust_log_warn_hides_the_info_lines() {
    let data = tempfile::tempdir().unwrap();
    // Text lines this time (the default format).
    let (_child, url, lines) = coordinator(data.path(), &[("RUST_LOG", "warn")], &[]);
    register_and_submit(&url, "quiet", false);
    let lines = wait_for(&lines, "rejected batch", |l| l.contains("batch rejected"));
    let rejected = lines.iter().find(|l| l.contains("batch rejected")).unwrap();
    assert!(rejected.contains(" WARN ") && rejected.contains("code=InvalidArgument"), "{rejected}");
    assert!(lines.iter().all(|l| !l.contains(" INFO ")), "{}", lines.join("\n"));
    assert!(lines.iter().all(|l| !l.contains("worker joined") && !l.contains("coordinator serving")), "{lines:?}");
}

#[test]
fn a_worker_that_falls_silent_is_logged_lost_once() {
    let data = tempfile::tempdir().unwrap();
    let (_child, url, lines) = coordinator(data.path(), &[("XQZ_LOG_FORMAT", "json")], &["--alive-seconds", "2"]);
    let worker_id = register_and_submit(&url, "rack-9", true);
    wait_for(&lines, "lost worker", |l| l.contains("worker lost"));
    // Sweeps go on every half second: a worker lost is logged once, not at every sweep.
    std::thread::sleep(Duration::from_secs(3));
    let events: Vec<Value> = lines.lock().unwrap().iter().map(|l| serde_json::from_str(l).unwrap()).collect();
    let lost = event(&events, "worker lost: not heard from within 2s");
    assert_eq!(lost["level"], "WARN");
    assert_eq!((lost["worker"].as_str(), lost["games"].as_u64()), (Some(worker_id.as_str()), Some(1)), "{lost}");
    assert!(lost["silent_s"].as_u64().is_some_and(|s| (2..=4).contains(&s)), "{lost}");

    let out = Command::new(env!("CARGO_BIN_EXE_xqz"))
        .args(["coordinator", "--listen", "127.0.0.1:0", "--alive-seconds", "0.5", "--data"])
        .arg(data.path().join("other"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("--alive-seconds 0.5 is too short"), "{stderr}");
}

#[test]
fn a_log_setting_that_cannot_be_used_is_named() {
    let run = |env: (&str, &str), args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_xqz"))
            .args(["perft", "--depth", "1"])
            .args(args)
            .env_remove("RUST_LOG")
            .env_remove("XQZ_LOG_FORMAT")
            .env(env.0, env.1)
            .output()
            .unwrap()
    };
    let out = run(("XQZ_LOG_FORMAT", "xml"), &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("XQZ_LOG_FORMAT=\"xml\" is not a log format"), "{stderr}");
    // The flag wins over the variable.
    let out = run(("XQZ_LOG_FORMAT", "xml"), &["--log-format", "json"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let out = run(("RUST_LOG", "xqz=loud"), &[]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("RUST_LOG=\"xqz=loud\" is not a log filter"), "{stderr}");
}
