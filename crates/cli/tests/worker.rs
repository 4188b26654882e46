//! `xqz worker` against an in-process coordinator: games are played, uploaded and stored.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use xqz_coordinator::{CoordinatorConfig, serve};
use xqz_mcts::PlaySettings;
use xqz_proto::v1::GetStatsRequest;
use xqz_proto::v1::coordinator_client::CoordinatorClient;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_uploads_its_games_and_exits() {
    let data = tempfile::tempdir().unwrap();
    let worker_dir = tempfile::tempdir().unwrap();
    let mut config = CoordinatorConfig::new("127.0.0.1:0".parse().unwrap(), data.path());
    config.token = Some("secret".into());
    config.settings = PlaySettings { max_plies: 20, playouts: 8, cheap_playouts: 4, ..PlaySettings::default() };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = serve(config, async move {
        let _ = stopped.await;
    })
    .await
    .unwrap();
    let url = format!("http://{}", running.addr());

    let mut worker = Command::new(env!("CARGO_BIN_EXE_xqz"))
        .args(["worker", "--coordinator", &url, "--token", "secret", "--max-games", "4", "--init-model", "tiny"])
        .args(["--device", "cpu", "--threads", "1", "--games-per-thread", "2", "--dir"])
        .arg(worker_dir.path())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    let status = loop {
        if let Some(status) = worker.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            worker.kill().unwrap();
            panic!("the worker did not finish in time");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(status.success(), "worker exited with {status}");

    let mut client = CoordinatorClient::connect(url).await.unwrap();
    let mut request = tonic::Request::new(GetStatsRequest {});
    request.metadata_mut().insert("authorization", "Bearer secret".parse().unwrap());
    let stats = client.get_stats(request).await.unwrap().into_inner();
    assert_eq!(stats.games, 4);
    assert_eq!(stats.rejected_batches, 0);
    let spool = xqz_worker::spool::Spool::open(&worker_dir.path().join("spool")).unwrap();
    assert!(spool.is_empty());

    stop.send(()).unwrap();
    running.wait().await.unwrap();
}
