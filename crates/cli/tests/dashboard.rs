//! The dashboard of a short `xqz run` in a real browser: headless Chromium driven by Python's
//! selenium (tests/dashboard_browser.py) sees the games count rise and a model appear, and steps
//! through a stored game on the board.
//!
//! Needs XQZ_CHROMIUM, XQZ_CHROMEDRIVER and XQZ_PYTHON (scripts/test sets them); skipped, saying
//! so, when one is unset, and failed instead under XQZ_REQUIRE_BROWSER (scripts/test sets it).
//! With XQZ_DASHBOARD_SCREENSHOTS=DIR it also saves the views as PNG there.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use xqz_test_support::process::ChildGuard;

#[test]
fn the_dashboard_of_a_run_shows_it_live_in_a_browser() {
    let Some(found) = xqz_test_support::browser::browser("the dashboard in a browser") else { return };
    let runs = tempfile::tempdir().unwrap();
    // The settings of tests/run.rs's short run, which publishes models within a minute.
    let child = Command::new(env!("CARGO_BIN_EXE_xqz"))
        .args(["run", "--name", "watched", "--model", "tiny", "--device", "cpu", "--minutes", "4"])
        .args(["--playouts", "16", "--cheap-playouts", "8", "--max-plies", "40", "--games-per-thread", "8"])
        .args(["--batch-size", "64", "--min-samples", "256", "--publish-every-samples", "640"])
        .args(["--match-games", "2", "--match-playouts", "8", "--runs"])
        .arg(runs.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut run = ChildGuard(child);
    let mut stdout = BufReader::new(run.0.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let url = line
        .split(" | dashboard ")
        .nth(1)
        .map(str::trim)
        .unwrap_or_else(|| panic!("no dashboard address in the start-up line {line:?}"))
        .to_string();
    assert!(url.starts_with("http://127.0.0.1:") && url.ends_with('/'), "{url}");
    // The status lines that follow are not needed, but the pipe must not fill up.
    std::thread::spawn(move || std::io::copy(&mut stdout, &mut std::io::sink()));

    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/dashboard_browser.py");
    let mut browser = Command::new(&found.python);
    browser.arg(&script).arg(&url).arg(&found.chromium).arg(&found.chromedriver).args(["--timeout", "100"]);
    if let Some(dir) = std::env::var_os("XQZ_DASHBOARD_SCREENSHOTS") {
        browser.arg("--screenshots").arg(dir);
    }
    let out = browser.output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let log = std::fs::read_to_string(runs.path().join("watched/logs/coordinator.log")).unwrap_or_default();
    assert!(out.status.success(), "dashboard_browser.py failed:\n{text}\n--- coordinator log\n{log}");
    assert!(text.lines().any(|l| l == "ok"), "{text}");

    // SIGTERM stops the run cleanly, as Ctrl-C does.
    assert!(Command::new("kill").args(["-TERM", &run.0.id().to_string()]).status().unwrap().success());
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(status) = run.0.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "the run did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(status.success(), "{status}");
}
