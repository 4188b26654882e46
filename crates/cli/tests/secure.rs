//! The roles as processes over TLS with two credentials: `xqz coordinator` with a certificate and a
//! publisher token, an `xqz worker` that reaches it on https:// with the CA and the workers'
//! token, and the trainer's publisher, which publishes with the publisher token while the
//! workers' token may not.

mod common;

use std::process::Command;
use std::time::{Duration, Instant};

use xqz_proto::tls::ClientTls;
use xqz_test_support::certificates::{ca, leaf};
use xqz_test_support::process::{ChildGuard, start_listening};
use xqz_trainer::{GrpcPublisher, PublishError, Publisher};

#[test]
fn workers_and_the_trainer_reach_a_tls_coordinator_each_with_its_own_credential() {
    let dir = tempfile::tempdir().unwrap();
    let certs = dir.path();
    ca(certs, "ca");
    leaf(certs, "server", "ca");
    std::fs::write(certs.join("worker.token"), "worker-secret\n").unwrap();
    std::fs::write(certs.join("trainer.token"), "trainer-secret\n").unwrap();
    let path = |name: &str| certs.join(name).display().to_string();

    let (_coordinator, addr) = start_listening(
        Command::new(env!("CARGO_BIN_EXE_xqz"))
            .args(["coordinator", "--listen", "127.0.0.1:0", "--data", &path("data")])
            .args(["--tls-cert", &path("server.pem"), "--tls-key", &path("server.key")])
            .args(["--token-file", &path("worker.token"), "--publisher-token-file", &path("trainer.token")])
            .args(["--max-plies", "20", "--playouts", "8", "--cheap-playouts", "4"]),
    );
    let url = format!("https://{addr}");

    // A worker over TLS plays and uploads its games, then exits.
    let worker = Command::new(env!("CARGO_BIN_EXE_xqz"))
        .args(["worker", "--coordinator", &url, "--tls-ca", &path("ca.pem")])
        .args(["--token-file", &path("worker.token"), "--max-games", "2", "--init-model", "tiny"])
        .args(["--device", "cpu", "--threads", "1", "--games-per-thread", "2", "--dir", &path("worker")])
        .spawn()
        .unwrap();
    let mut worker = ChildGuard(worker);
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(status) = worker.0.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "the worker did not finish");
        std::thread::sleep(Duration::from_millis(200));
    };
    assert!(status.success(), "worker: {status}");

    // The workers' token may not publish; the trainer's may.
    let tls = ClientTls { ca_pem: std::fs::read(certs.join("ca.pem")).unwrap(), identity: None };
    let checkpoints = tempfile::tempdir().unwrap();
    let model = common::tiny_checkpoint(checkpoints.path());
    let as_worker = GrpcPublisher::new(&url, Some(&tls), Some("worker-secret".into()), "w").unwrap().publish(&model);
    match as_worker {
        Err(PublishError::Refused(status)) => assert_eq!(status.code(), tonic::Code::PermissionDenied, "{status:?}"),
        other => panic!("the workers' token published: {other:?}"),
    }
    let version = GrpcPublisher::new(&url, Some(&tls), Some("trainer-secret".into()), "t").unwrap().publish(&model);
    assert_eq!(version.unwrap(), 1);
    // Without the CA, no connection.
    assert!(GrpcPublisher::new(&url, None, Some("trainer-secret".into()), "t").is_err(), "https needs --tls-ca");

    // `xqz status` over the same TLS, with the workers' token.
    let status = Command::new(env!("CARGO_BIN_EXE_xqz"))
        .args(["status", "--coordinator", &url, "--tls-ca", &path("ca.pem"), "--token-file", &path("worker.token")])
        .arg("--json")
        .output()
        .unwrap();
    assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stderr));
    let stats: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(stats["latest_model_version"], 1, "{stats}");
    assert!(stats["games"].as_u64().unwrap() >= 2, "{stats}");

    drop(_coordinator);
    let games = xqz_dataset::Dataset::open(certs.join("data/dataset")).unwrap().games().unwrap();
    assert!(games.len() >= 2, "{} games stored", games.len());
}
