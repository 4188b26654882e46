//! Self-play games from an opening suite: `xqz coordinator --openings FILE --opening-share S`
//! hands the suite to `xqz worker`, whose games start from it and are accepted.

use std::collections::HashSet;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use xqz_test_support::process::start_listening;

/// Three positions after Red's first move (a central cannon, a horse, an elephant), Black to move.
const SUITE: [&str; 3] = [
    "rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C2C4/9/RNBAKABNR b - - 1 1",
    "rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C4NC1/9/RNBAKAB1R b - - 1 1",
    "rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C2B2C1/9/RN1AKABNR b - - 1 1",
];

fn xqz() -> Command {
    Command::new(env!("CARGO_BIN_EXE_xqz"))
}

fn write_suite(dir: &Path, lines: &[&str]) -> String {
    let path = dir.join("suite.epd");
    std::fs::write(&path, format!("# test suite\n{}\n", lines.join(" ; ecco -\n"))).unwrap();
    path.display().to_string()
}

#[test]
fn the_coordinator_refuses_a_share_without_a_suite_and_names_a_bad_line() {
    let dir = tempfile::tempdir().unwrap();
    let start = |flags: &[&str]| {
        let out = xqz().args(["coordinator", "--listen", "127.0.0.1:0", "--data"]).arg(dir.path()).args(flags).output();
        String::from_utf8_lossy(&out.unwrap().stderr).into_owned()
    };
    let error = start(&["--opening-share", "0.5"]);
    assert!(error.contains("opening_share = 0.5 needs an opening suite"), "{error}");
    let error = start(&["--opening-share", "1.5"]);
    assert!(error.contains("opening_share = 1.5"), "{error}");
    let suite = write_suite(dir.path(), &[SUITE[0], "rnbakabnr/9/1c5c1 w"]);
    let error = start(&["--opening-share", "0.5", "--openings", &suite]);
    assert!(error.contains(&format!("{suite}: line 3:")), "{error}");
}

#[test]
fn a_worker_s_games_start_from_the_coordinator_s_suite() {
    let dir = tempfile::tempdir().unwrap();
    let suite = write_suite(dir.path(), &SUITE);
    let data = dir.path().join("data");
    let (mut coordinator, addr) = start_listening(
        xqz()
            .args(["coordinator", "--listen", "127.0.0.1:0", "--openings", &suite, "--opening-share", "1"])
            .args(["--max-plies", "6", "--playouts", "4", "--cheap-playouts", "2", "--data"])
            .arg(&data),
    );
    let status = xqz()
        .args(["worker", "--coordinator", &format!("http://{addr}"), "--max-games", "6", "--init-model", "tiny"])
        .args(["--device", "cpu", "--threads", "1", "--games-per-thread", "3", "--dir"])
        .arg(dir.path().join("worker"))
        .stderr(Stdio::inherit())
        .status()
        .unwrap();
    assert!(status.success(), "worker exited with {status}");
    let pid = coordinator.0.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let deadline = Instant::now() + Duration::from_secs(10);
    while coordinator.0.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "the coordinator did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    }

    let games = xqz_dataset::Dataset::open(data.join("dataset")).unwrap().games().unwrap();
    assert!(games.len() >= 6, "{} games stored", games.len());
    let starts: HashSet<&str> = games.iter().map(|g| g.start_fen.as_str()).collect();
    assert!(starts.iter().all(|start| SUITE.contains(start)), "{starts:?}");
    // Each stored game replays from its start into its samples, as training reads them.
    for game in &games {
        assert_eq!(game.start_position().unwrap().to_string(), game.start_fen);
        assert!(!game.moves.is_empty() && game.moves.len() <= 6, "{} moves", game.moves.len());
    }
}
