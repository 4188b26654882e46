//! A client we did not write: Python's grpcio, with stubs generated from the proto file, against
//! `xqz coordinator` run as a child process.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use xqz_test_support::certificates::{ca, leaf};
use xqz_test_support::process::{ChildGuard, start_listening};
use xqz_test_support::python as support;

#[test]
fn python_grpcio_client_is_served_over_tls_and_refused_in_plaintext() {
    let certs = tempfile::tempdir().unwrap();
    ca(certs.path(), "ca");
    leaf(certs.path(), "server", "ca");
    let path = |name: &str| certs.path().join(name).display().to_string();
    let (_coordinator, addr) = start_listening(
        Command::new(env!("CARGO_BIN_EXE_xqz"))
            .args(["coordinator", "--listen", "127.0.0.1:0", "--token", "py-token", "--max-plies", "2"])
            .args([
                "--alive-seconds",
                "2",
                "--data",
                &path("data"),
                "--tls-cert",
                &path("server.pem"),
                "--tls-key",
                &path("server.key"),
            ]),
    );
    grpc_client(&[addr.as_str(), "py-token", &path("ca.pem")]);
}

/// Runs tests/grpc_client.py with `args` under the project's Python, and checks that it passed.
fn grpc_client(args: &[&str]) {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/grpc_client.py");
    let out = Command::new(support::python("grpcio")).arg(&script).args(args).output().unwrap();
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "grpc_client.py {args:?} failed:\n{text}");
    assert!(text.contains("ok"), "{text}");
}

#[test]
fn python_grpcio_client_is_served() {
    let data = tempfile::tempdir().unwrap();
    let child = Command::new(env!("CARGO_BIN_EXE_xqz"))
        .args(["coordinator", "--listen", "127.0.0.1:0", "--token", "py-token", "--max-plies", "2"])
        .args(["--alive-seconds", "2", "--data"])
        .arg(data.path())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut guard = ChildGuard(child);
    let mut line = String::new();
    BufReader::new(guard.0.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let addr = line.trim().strip_prefix("listening on ").unwrap_or_else(|| panic!("unexpected first line {line:?}"));

    grpc_client(&[addr, "py-token"]);

    // SIGTERM is the graceful path: the coordinator drains and exits with success.
    let pid = guard.0.id().to_string();
    assert!(Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = guard.0.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "the coordinator did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "{status}");
    let games = xqz_dataset::Dataset::open(data.path().join("dataset")).unwrap().games().unwrap();
    assert_eq!(games.len(), 1);
    assert_eq!(games[0].reason, "max_length");
}
