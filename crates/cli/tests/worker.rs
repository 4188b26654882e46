//! `xqz worker` against an in-process coordinator: games are played, uploaded and stored.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use xqz_coordinator::{CoordinatorConfig, serve};
use xqz_mcts::PlaySettings;
use xqz_proto::v1::GetStatsRequest;
use xqz_proto::v1::coordinator_client::CoordinatorClient;

/// An in-process coordinator on 127.0.0.1 with `settings` and `token`: its URL, the server and
/// the sender that stops it.
async fn coordinator(
    data: &std::path::Path,
    settings: PlaySettings,
    token: Option<&str>,
) -> (String, xqz_coordinator::Running, tokio::sync::oneshot::Sender<()>) {
    let mut config = CoordinatorConfig::new("127.0.0.1:0".parse().unwrap(), data);
    config.token = token.map(str::to_string);
    config.settings = settings;
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let running = serve(config, async move {
        let _ = stopped.await;
    })
    .await
    .unwrap();
    (format!("http://{}", running.addr()), running, stop)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_uploads_its_games_and_exits() {
    let data = tempfile::tempdir().unwrap();
    let worker_dir = tempfile::tempdir().unwrap();
    let settings = PlaySettings { max_plies: 20, playouts: 8, cheap_playouts: 4, ..PlaySettings::default() };
    let (url, running, stop) = coordinator(data.path(), settings, Some("secret")).await;

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_worker_finishes_its_games_in_progress_and_uploads_them() {
    let data = tempfile::tempdir().unwrap();
    let worker_dir = tempfile::tempdir().unwrap();
    let settings =
        PlaySettings { max_plies: 60, playouts: 8, cheap_playouts: 4, resign: false, ..PlaySettings::default() };
    let (url, running, stop) = coordinator(data.path(), settings, None).await;
    let mut worker = Command::new(env!("CARGO_BIN_EXE_xqz"))
        .args(["worker", "--coordinator", &url, "--init-model", "tiny", "--drain-seconds", "100"])
        .args(["--device", "cpu", "--threads", "1", "--games-per-thread", "2", "--dir"])
        .arg(worker_dir.path())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = worker.stderr.take().unwrap();
    let (playing_tx, playing) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut log = String::new();
        for line in std::io::BufRead::lines(std::io::BufReader::new(stderr)).map_while(Result::ok) {
            if line.contains("playing with model") {
                let _ = playing_tx.send(());
            }
            log.push_str(&line);
            log.push('\n');
        }
        log
    });
    // Two games are always under way once the worker plays; stop it in the middle of them.
    playing.recv_timeout(Duration::from_secs(60)).expect("the worker plays");
    tokio::time::sleep(Duration::from_secs(2)).await;
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(worker.id() as i32), nix::sys::signal::Signal::SIGTERM).unwrap();
    let status = tokio::task::spawn_blocking(move || worker.wait()).await.unwrap().unwrap();
    let log = reader.join().unwrap();
    assert!(status.success(), "{log}");
    assert!(log.contains("no new games") && !log.contains("are dropped"), "{log}");
    let finished = log.matches("finished game").count();
    let mut client = CoordinatorClient::connect(url).await.unwrap();
    let stats = client.get_stats(GetStatsRequest {}).await.unwrap().into_inner();
    assert!(finished >= 2 && stats.games == finished as u64, "{finished} finished, {} stored: {log}", stats.games);
    stop.send(()).unwrap();
    running.wait().await.unwrap();
}
