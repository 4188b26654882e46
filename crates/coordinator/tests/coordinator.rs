//! The coordinator in-process on 127.0.0.1:0, driven through the generated tonic client.

mod common;

use std::future::Future;
use std::path::Path;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use sha2::{Digest, Sha256};
use tokio::sync::oneshot;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;
use tonic::{Code, Request, Status};
use xiangqi::Move;
use xqz_coordinator::{CoordinatorConfig, CoordinatorError, Running, WorkerIds, serve};
use xqz_dataset::{Dataset, DatasetLocation};
use xqz_mcts::{MaterialEvaluator, SelfPlayConfig, self_play};
use xqz_mcts::{PlaySchedule, PlaySettings};
use xqz_proto::v1::coordinator_client::CoordinatorClient;
use xqz_proto::v1::*;
use xqz_proto::wire::GameStamp;
use xqz_worker::WorkerMetrics;
use xqz_worker::remote::{RemoteConfig, Session};

type AddToken = Box<dyn FnMut(Request<()>) -> Result<Request<()>, Status> + Send>;
type Client = CoordinatorClient<InterceptedService<Channel, AddToken>>;
type Spoil = Box<dyn Fn(&mut GameSubmission)>;

const TOKEN: &str = "s3cret";

/// The worker-id key every test's data folder gets (see [`keyed`]), so that [`WORKER`] is an id
/// those coordinators issued.
const KEY: [u8; 32] = [7; 32];

/// `data`, with the worker-id key [`KEY`] put in it before a coordinator opens it.
fn keyed(data: &Path) -> &Path {
    std::fs::create_dir_all(data).unwrap();
    std::fs::write(xqz_run_folder::CoordinatorFolder::new(data).worker_id_key(), KEY).unwrap();
    data
}

/// A worker id under [`KEY`], as Register would issue it.
static WORKER: LazyLock<String> = LazyLock::new(|| {
    let dir = tempfile::tempdir().unwrap();
    WorkerIds::open(keyed(dir.path())).unwrap().issue("test")
});

struct Server {
    running: Running,
    stop: oneshot::Sender<()>,
}

impl Server {
    /// A coordinator whose settings stay as given.
    async fn start(data: &Path, settings: PlaySettings) -> Server {
        Server::scheduled(data, settings, PlaySchedule { cap_growth: 0, cap_limit: 0 }).await
    }

    async fn scheduled(data: &Path, settings: PlaySettings, schedule: PlaySchedule) -> Server {
        Server::serve(Server::config(data, settings, schedule)).await.unwrap()
    }

    fn config(data: &Path, settings: PlaySettings, schedule: PlaySchedule) -> CoordinatorConfig {
        let mut config = CoordinatorConfig::new("127.0.0.1:0".parse().unwrap(), keyed(data));
        config.token = Some(TOKEN.into());
        config.settings = settings;
        config.schedule = schedule;
        config.limits.max_games_per_request = 8;
        config
    }

    async fn serve(config: CoordinatorConfig) -> Result<Server, CoordinatorError> {
        let (stop, rx) = oneshot::channel::<()>();
        let running = serve(config, async move { drop(rx.await) }).await?;
        Ok(Server { running, stop })
    }

    async fn client(&self, token: Option<&str>) -> Client {
        let channel = Channel::from_shared(format!("http://{}", self.running.addr())).unwrap().connect().await.unwrap();
        let header: Option<tonic::metadata::MetadataValue<_>> = token.map(|t| format!("Bearer {t}").parse().unwrap());
        let add: AddToken = Box::new(move |mut r| {
            if let Some(h) = &header {
                r.metadata_mut().insert("authorization", h.clone());
            }
            Ok(r)
        });
        CoordinatorClient::with_interceptor(channel, add)
    }

    async fn stop(self) {
        self.stop.send(()).unwrap();
        self.running.wait().await.unwrap();
    }
}

fn short() -> PlaySettings {
    PlaySettings { max_plies: 2, ..PlaySettings::default() }
}

fn code(text: &str) -> u32 {
    u32::from(text.parse::<Move>().unwrap().to_u16())
}

/// h2e2 h9g7: a `max_length` draw when games are capped at 2 plies.
fn draw(id: u8) -> GameSubmission {
    let moves = vec![code("h2e2"), code("h9g7")];
    GameSubmission {
        game_id: vec![id; 16],
        start_fen: xiangqi::START_FEN.into(),
        plies: moves
            .iter()
            .zip([code("b2e2"), code("b9c7")])
            .map(|(&m, other)| PlySearch {
                policy_moves: vec![m, other],
                policy_probs: vec![0.75, 0.25],
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

fn batch(key: &str, games: Vec<GameSubmission>) -> SubmitGamesRequest {
    SubmitGamesRequest { idempotency_key: key.into(), worker_id: WORKER.clone(), games }
}

fn stored(data: &Path) -> Vec<[u8; 16]> {
    Dataset::open(data.join("dataset")).unwrap().games().unwrap().iter().map(|g| g.game_id.0).collect()
}

/// `count` games of self-play under `config` with the material evaluator, and their submissions.
fn self_played(config: &SelfPlayConfig, count: u64) -> (Vec<xqz_mcts::SelfPlayGame>, Vec<GameSubmission>) {
    let mut games = Vec::new();
    self_play(config, MaterialEvaluator, count, &AtomicBool::new(false), |g| games.push(g)).unwrap();
    let subs = games
        .iter()
        .map(|g| {
            // As a worker stamps a game: a fresh random id, the model, no times.
            let stamp = GameStamp {
                game_id: xqz_dataset::GameId::from_u128(rand::random()),
                model_version: 0,
                start_time_ms: 0,
                end_time_ms: 0,
            };
            xqz_proto::wire::encode_self_play(g, &stamp).unwrap()
        })
        .collect();
    (games, subs)
}

async fn with_timeout<T>(f: impl Future<Output = T>) -> T {
    tokio::time::timeout(std::time::Duration::from_secs(15), f).await.expect("timed out")
}

#[tokio::test]
async fn self_played_game_is_accepted_and_stored() {
    let dir = tempfile::tempdir().unwrap();
    let config = PlaySettings { playouts: 8, cheap_playouts: 4, max_plies: 8, ..PlaySettings::default() }
        .self_play_config(1, 32, 0);
    let (_, subs) = self_played(&config, 2);
    let server = Server::start(dir.path(), PlaySettings { max_plies: 8, ..PlaySettings::default() }).await;
    let mut client = server.client(Some(TOKEN)).await;
    let answer = with_timeout(client.submit_games(batch("k1", subs.clone()))).await.unwrap().into_inner();
    assert_eq!((answer.accepted, answer.duplicates, answer.replayed_batch), (2, 0, false));
    let stats = client.get_stats(GetStatsRequest {}).await.unwrap().into_inner();
    assert_eq!(stats.games, 2);
    assert_eq!(stats.games_by_model, vec![ModelGames { model_version: 0, games: 2 }]);
    server.stop().await;
    let ids = stored(dir.path());
    assert_eq!(ids.len(), 2);
    assert!(subs.iter().all(|s| ids.iter().any(|id| id[..] == s.game_id[..])));
}

/// A client that made a call and then leaves its connection open and unread (a process whose
/// runtime is idle, as the trainer's was between publications) cannot hold the shutdown: the
/// coordinator stops after its drain time and releases the dataset.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_holding_an_idle_connection_does_not_hold_the_shutdown() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = Server::config(dir.path(), short(), PlaySchedule { cap_growth: 0, cap_limit: 0 });
    config.limits.drain_timeout = Duration::from_millis(500);
    let server = Server::serve(config).await.unwrap();
    let url = format!("http://{}", server.running.addr());
    let (called, parked) = std::sync::mpsc::channel();
    let holder = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let client = runtime.block_on(async {
            let mut client = CoordinatorClient::connect(url).await.unwrap();
            let register = RegisterRequest { name: "idle".into(), ..RegisterRequest::default() };
            // Refused without the token; the connection stays open all the same.
            assert_eq!(client.register(register).await.unwrap_err().code(), tonic::Code::Unauthenticated);
            client
        });
        called.send(()).unwrap();
        // The runtime is not driven again: the connection is neither read nor closed.
        std::thread::park();
        drop(client);
    });
    tokio::task::spawn_blocking(move || parked.recv().unwrap()).await.unwrap();
    let started = std::time::Instant::now();
    with_timeout(server.stop()).await;
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    // The dataset is released: a new coordinator opens it at once.
    Server::start(dir.path(), short()).await.stop().await;
    holder.thread().unpark();
    holder.join().unwrap();
}

#[tokio::test]
async fn dedup_by_key_and_game_id_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), short()).await;
    let mut client = server.client(Some(TOKEN)).await;
    let first = client.submit_games(batch("k1", vec![draw(1), draw(2)])).await.unwrap().into_inner();
    assert_eq!((first.accepted, first.duplicates, first.replayed_batch), (2, 0, false));
    let again = client.submit_games(batch("k1", vec![draw(1), draw(2)])).await.unwrap().into_inner();
    assert_eq!((again.accepted, again.duplicates, again.replayed_batch), (2, 0, true));
    let dup = client.submit_games(batch("k2", vec![draw(2), draw(3)])).await.unwrap().into_inner();
    assert_eq!((dup.accepted, dup.duplicates, dup.replayed_batch), (1, 1, false));
    assert_eq!(stored(dir.path()).len(), 3, "stored (and flushed) before the answer");
    server.stop().await;

    let server = Server::start(dir.path(), short()).await;
    let mut client = server.client(Some(TOKEN)).await;
    let again = client.submit_games(batch("k1", vec![draw(1), draw(2)])).await.unwrap().into_inner();
    assert_eq!((again.accepted, again.duplicates, again.replayed_batch), (2, 0, true));
    let dup = client.submit_games(batch("k3", vec![draw(1), draw(3)])).await.unwrap().into_inner();
    assert_eq!((dup.accepted, dup.duplicates, dup.replayed_batch), (0, 2, false));
    // A key bound to other games (across the restart too) is refused, not answered as a replay.
    let reused = client.submit_games(batch("k1", vec![draw(4)])).await.unwrap_err();
    assert_eq!(reused.code(), Code::AlreadyExists, "{reused:?}");
    assert!(reused.message().contains("\"k1\" was used before for other games"), "{}", reused.message());
    // Keys are bounded and printable.
    for key in ["k".repeat(129), "a key".to_string(), "k\u{7f}".to_string()] {
        let error = client.submit_games(batch(&key, vec![draw(5)])).await.unwrap_err();
        assert_eq!(error.code(), Code::InvalidArgument, "{key:?}");
        assert!(error.message().len() < 200, "{}", error.message());
    }
    let stats = client.get_stats(GetStatsRequest {}).await.unwrap().into_inner();
    assert_eq!((stats.games, stats.samples, stats.duplicate_games), (3, 6, 2));
    server.stop().await;
    assert_eq!(stored(dir.path()).len(), 3);
}

/// The dataset in an S3 bucket (moto, started by the test): ingest stores shards there, a second
/// coordinator on the prefix is refused while the first runs, and takes over once it stopped,
/// with the models the first published, from the backup in the bucket.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dataset_can_live_in_an_s3_bucket_held_by_one_coordinator() {
    let moto = xqz_test_support::moto::Moto::start("xqz-coordinator");
    let location = DatasetLocation::parse_with(&moto.url("run/dataset"), moto.env()).unwrap();
    let backup = DatasetLocation::parse_with(&moto.url("run/coordinator"), moto.env()).unwrap();
    let (first_data, second_data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let on_s3 = |data: &Path| CoordinatorConfig {
        dataset: Some(location.clone()),
        backup: Some(backup.clone()),
        ..Server::config(data, short(), PlaySchedule { cap_growth: 0, cap_limit: 0 })
    };
    let server = Server::serve(on_s3(first_data.path())).await.unwrap();
    let mut client = server.client(Some(TOKEN)).await;
    let answer = with_timeout(client.submit_games(batch("k1", vec![draw(1), draw(2)]))).await.unwrap().into_inner();
    assert_eq!((answer.accepted, answer.duplicates), (2, 0));
    let w = weights();
    assert_eq!(publish(&mut client, metadata(&w), &w).await.unwrap(), 1);
    for name in ["v1.safetensors", "v1.json", "registry.json", "settings.json", "worker-ids.key"] {
        assert!(backup.get_file(name).unwrap().is_some(), "{name} is in the backup");
    }
    let in_bucket = Dataset::open_at(location.clone()).unwrap();
    assert_eq!((in_bucket.shards().len(), in_bucket.num_games(), in_bucket.num_samples()), (1, 2, 4));
    assert!(!first_data.path().join("dataset").exists(), "the dataset went to the bucket, not the data folder");

    let refused = Server::serve(on_s3(second_data.path())).await.err().expect("a second coordinator started");
    let message = refused.to_string();
    assert!(message.contains("dataset s3://xqz-coordinator/run/dataset is in use"), "{message}");
    assert!(message.contains("xqz-coordinator, process"), "{message}");

    server.stop().await;
    let server = Server::serve(on_s3(second_data.path())).await.unwrap();
    let mut client = server.client(Some(TOKEN)).await;
    let registered = client.register(RegisterRequest { name: "box2".into(), ..Default::default() }).await.unwrap();
    let model = registered.into_inner().current_model.expect("the model published before the move");
    assert_eq!(model.version, 1);
    assert_eq!(std::fs::read(second_data.path().join("models/v1.safetensors")).unwrap(), w);
    let again = with_timeout(client.submit_games(batch("k2", vec![draw(2), draw(3)]))).await.unwrap().into_inner();
    assert_eq!((again.accepted, again.duplicates), (1, 1), "the games in the bucket are known after the move");
    server.stop().await;
    assert_eq!(Dataset::open_at(location).unwrap().num_games(), 3);
}

#[tokio::test]
async fn invalid_games_reject_the_whole_batch() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), short()).await;
    let mut client = server.client(Some(TOKEN)).await;
    let cases: Vec<(&str, Spoil)> = vec![
        ("illegal move", Box::new(|g| g.moves[1] = code("h2e2"))),
        ("claims red", Box::new(|g| g.result = "red".into())),
        ("policy on illegal move", Box::new(|g| g.plies[0].policy_moves[1] = code("a0a5"))),
        ("twice", Box::new(|g| g.plies[0].policy_moves[1] = g.plies[0].policy_moves[0])),
        ("sum to", Box::new(|g| g.plies[1].policy_probs[0] = 0.5)),
        ("unknown model version 3", Box::new(|g| g.model_version = 3)),
        ("root_wdl", Box::new(|g| g.plies[0].root_wdl = vec![f32::NAN, 0.0, 1.0])),
        ("2 plies of search for 3 moves", Box::new(|g| g.moves.push(code("a0a1")))),
    ];
    for (i, (want, spoil)) in cases.iter().enumerate() {
        let mut bad = draw(100 + i as u8);
        spoil(&mut bad);
        let err = client.submit_games(batch(&format!("bad{i}"), vec![draw(1), bad])).await.unwrap_err();
        assert_eq!(err.code(), Code::InvalidArgument, "{want}: {err:?}");
        assert!(err.message().contains(want), "{want}: {}", err.message());
        assert!(err.message().contains(&format!("game #1 ({})", format!("{:02x}", 100 + i).repeat(16))));
    }
    let stats = client.get_stats(GetStatsRequest {}).await.unwrap().into_inner();
    assert_eq!((stats.games, stats.rejected_batches), (0, cases.len() as u64));
    let err = client.submit_games(batch("big", (0..9).map(draw).collect())).await.unwrap_err();
    assert_eq!(err.code(), Code::ResourceExhausted, "{err:?}");
    // The good game of the rejected batches is still welcome.
    let ok = client.submit_games(batch("good", vec![draw(1)])).await.unwrap().into_inner();
    assert_eq!(ok.accepted, 1);
    server.stop().await;
    assert_eq!(stored(dir.path()).len(), 1);
}

/// A worker's settings for `server`: one thread, one game at a time, batches of one game.
fn worker_config(server: &Server, dir: &Path, max_games: u64, metrics: WorkerMetrics) -> RemoteConfig {
    RemoteConfig {
        coordinator: format!("http://{}", server.running.addr()),
        token: Some(TOKEN.into()),
        tls: None,
        dir: dir.join("worker"),
        name: "box".into(),
        threads: 1,
        games_per_thread: 1,
        max_games: Some(max_games),
        batch_games: 1,
        batch_interval: Duration::from_secs(1),
        heartbeat_interval: Duration::from_secs(1),
        drain: Duration::from_secs(1),
        metrics,
        eval_share: 0.0,
    }
}

#[tokio::test]
async fn a_worker_searches_as_the_coordinator_says() {
    let dir = tempfile::tempdir().unwrap();
    let settings =
        PlaySettings { mate_moves: 1, playouts: 24, policy_target: xqz_mcts::PolicyTarget::QSoftmax, ..short() };
    let server = Server::start(dir.path(), settings).await;
    let config = worker_config(&server, dir.path(), 0, WorkerMetrics::default());
    let session = Session::connect(config).await.unwrap();
    let config = session.self_play_config();
    assert_eq!(config.settings_version, 1);
    assert_eq!(
        (config.search.mate_moves, config.playouts, config.policy_target),
        (1, 24, xqz_mcts::PolicyTarget::QSoftmax)
    );
    assert_eq!(config.game_config().max_plies, Some(2));
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_counts_its_games_moves_evaluations_and_uploads_in_its_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), short()).await;
    let mut registry = xqz_metrics::Registry::default();
    let metrics = WorkerMetrics::register(&mut registry);
    let session = Session::connect(worker_config(&server, dir.path(), 3, metrics)).await.unwrap();
    let uploaded = session.run(Arc::new(common::MaterialHost), 0, std::future::pending()).await.unwrap();
    assert_eq!(uploaded, 3);
    let text = xqz_metrics::render(&registry);
    let value = |name: &str| -> f64 {
        let line =
            text.lines().find(|l| l.split(' ').next() == Some(name)).unwrap_or_else(|| panic!("{name} in {text}"));
        line[name.len() + 1..].parse().unwrap()
    };
    assert_eq!(value("xqz_worker_games_total"), 3.0);
    // The settings cap games at 2 plies.
    assert_eq!(value("xqz_worker_moves_total"), 6.0);
    assert_eq!(value("xqz_worker_games_uploaded_total"), 3.0);
    assert_eq!(value("xqz_worker_batches_rejected_total"), 0.0);
    assert_eq!(value("xqz_worker_model_version"), 0.0);
    let (evaluations, calls) = (value("xqz_worker_evaluations_total"), value("xqz_worker_evaluator_calls_total"));
    assert!(calls > 0.0 && evaluations >= calls, "{evaluations} evaluations in {calls} calls");
    server.stop().await;
}

#[tokio::test]
async fn token_is_required() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), short()).await;
    for token in [None, Some("wrong")] {
        let mut client = server.client(token).await;
        let err = client.get_stats(GetStatsRequest {}).await.unwrap_err();
        assert_eq!(err.code(), Code::Unauthenticated, "{token:?}");
        let err = client.submit_games(batch("k", vec![draw(1)])).await.unwrap_err();
        assert_eq!(err.code(), Code::Unauthenticated);
    }
    let mut client = server.client(Some(TOKEN)).await;
    let reg = client.register(RegisterRequest { name: "box 1".into(), ..Default::default() }).await.unwrap();
    let reg = reg.into_inner();
    assert!(reg.worker_id.starts_with("box1-"), "{}", reg.worker_id);
    assert_eq!(reg.settings.unwrap().max_plies, 2);
    assert!(reg.current_model.is_none());
    let stats = client.get_stats(GetStatsRequest {}).await.unwrap().into_inner();
    assert_eq!(stats.workers_alive, 1);
    server.stop().await;
}

/// A safetensors file of one tensor of 1250 floats (about 5 kB).
fn weights() -> Vec<u8> {
    let data: Vec<u8> = (0..1250u32).flat_map(|i| (i as f32 / 100.0).to_le_bytes()).collect();
    let tensor = safetensors::tensor::TensorView::new(safetensors::Dtype::F32, vec![1250], &data).unwrap();
    safetensors::serialize([("w", tensor)], &None).unwrap()
}

fn metadata(weights: &[u8]) -> String {
    serde_json::json!({
        "format": 2,
        "info": { "model_version": 0, "training_steps": 10, "samples_seen": 640 },
        "weights": { "file": "latest.safetensors", "bytes": weights.len(), "sha256": format!("{:x}", Sha256::digest(weights)) },
        "optimizer": null,
    })
    .to_string()
}

async fn publish(client: &mut Client, meta: String, weights: &[u8]) -> Result<u64, Status> {
    let mut chunks = vec![PublishModelChunk {
        part: Some(publish_model_chunk::Part::Header(PublishHeader {
            metadata_json: meta,
            publisher: "trainer".into(),
        })),
    }];
    chunks.extend(
        weights.chunks(1000).map(|c| PublishModelChunk { part: Some(publish_model_chunk::Part::Data(c.to_vec())) }),
    );
    Ok(client.publish_model(tokio_stream::iter(chunks)).await?.into_inner().version)
}

#[tokio::test]
async fn an_overlong_worker_id_is_refused_and_nothing_is_stored() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), short()).await;
    let mut client = server.client(Some(TOKEN)).await;
    for worker_id in ["w".repeat(1 << 20), "tab\there".to_string()] {
        let request = SubmitGamesRequest { worker_id: worker_id.clone(), ..batch("long", vec![draw(1)]) };
        let error = client.submit_games(request).await.unwrap_err();
        assert_eq!(error.code(), Code::InvalidArgument);
        assert!(error.message().contains("worker id") && error.message().len() < 200, "{}", error.message());
        let heartbeat = HeartbeatRequest { worker_id, ..Default::default() };
        assert_eq!(client.heartbeat(heartbeat).await.unwrap_err().code(), Code::InvalidArgument);
    }
    server.stop().await;
    assert!(Dataset::open(dir.path().join("dataset")).unwrap().games().unwrap().is_empty());
}

#[tokio::test]
async fn only_ids_the_coordinator_issued_are_taken_even_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), short()).await;
    let mut client = server.client(Some(TOKEN)).await;
    let issued = client.register(RegisterRequest { name: "box".into(), ..Default::default() }).await.unwrap();
    let issued = issued.into_inner().worker_id;
    let other = tempfile::tempdir().unwrap();
    let elsewhere = WorkerIds::open(other.path()).unwrap().issue("box");
    let (body, tag) = issued.rsplit_once('.').unwrap();
    let forged = [format!("{body}.{}", "0".repeat(tag.len())), body.to_string(), "py".into(), elsewhere, String::new()];
    for worker_id in forged {
        let request = SubmitGamesRequest { worker_id: worker_id.clone(), ..batch("forged", vec![draw(1)]) };
        let error = client.submit_games(request).await.unwrap_err();
        assert_eq!(error.code(), Code::Unauthenticated, "{worker_id:?}");
        assert!(error.message().contains("unknown worker id") && error.message().len() < 200, "{}", error.message());
        let heartbeat = HeartbeatRequest { worker_id, ..Default::default() };
        assert_eq!(client.heartbeat(heartbeat).await.unwrap_err().code(), Code::Unauthenticated);
    }
    server.stop().await;
    assert!(stored(dir.path()).is_empty(), "nothing from a forged id is stored");

    // The key stays with the data: the restarted coordinator takes the id it issued before.
    let server = Server::start(dir.path(), short()).await;
    let mut client = server.client(Some(TOKEN)).await;
    let request = SubmitGamesRequest { worker_id: issued.clone(), ..batch("issued", vec![draw(1)]) };
    assert_eq!(client.submit_games(request).await.unwrap().into_inner().accepted, 1);
    server.stop().await;
    assert_eq!(stored(dir.path()).len(), 1);
}

#[tokio::test]
async fn only_the_publisher_token_publishes_when_there_is_one() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = CoordinatorConfig::new("127.0.0.1:0".parse().unwrap(), keyed(dir.path()));
    config.token = Some(TOKEN.into());
    config.publisher_token = Some("trainer-secret".into());
    config.settings = short();
    let (stop, rx) = oneshot::channel::<()>();
    let server = Server { running: serve(config, async move { drop(rx.await) }).await.unwrap(), stop };
    let weights = weights();
    let mut worker = server.client(Some(TOKEN)).await;
    let error = publish(&mut worker, metadata(&weights), &weights).await.unwrap_err();
    assert_eq!(error.code(), Code::PermissionDenied, "{error:?}");
    let mut trainer = server.client(Some("trainer-secret")).await;
    assert_eq!(publish(&mut trainer, metadata(&weights), &weights).await.unwrap(), 1);
    // The trainer's credential serves the other calls too; a wrong one serves none.
    assert_eq!(trainer.get_stats(GetStatsRequest {}).await.unwrap().into_inner().latest_model_version, 1);
    let mut stranger = server.client(Some("guess")).await;
    assert_eq!(publish(&mut stranger, metadata(&weights), &weights).await.unwrap_err().code(), Code::Unauthenticated);
    server.stop().await;
}

#[tokio::test]
async fn published_models_are_announced_and_downloadable() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), short()).await;
    let mut client = server.client(Some(TOKEN)).await;
    let mut watcher = client.watch_models(WatchModelsRequest { after_version: 0 }).await.unwrap().into_inner();
    let weights = weights();

    let err = publish(&mut client, metadata(&weights[..10]), &weights).await.unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument, "{err:?}");
    assert_eq!(publish(&mut client, metadata(&weights), &weights).await.unwrap(), 1);
    let announced = with_timeout(watcher.message()).await.unwrap().unwrap();
    assert_eq!((announced.version, announced.weights_bytes), (1, weights.len() as u64));
    assert_eq!(announced.weights_sha256, format!("{:x}", Sha256::digest(&weights)));
    let meta: serde_json::Value = serde_json::from_str(&announced.metadata_json).unwrap();
    assert_eq!(
        (meta["weights"]["file"].as_str(), meta["info"]["model_version"].as_u64()),
        (Some("v1.safetensors"), Some(1))
    );

    let mut tail = Vec::new();
    let mut stream =
        client.download_model(DownloadModelRequest { version: 1, offset: 1234 }).await.unwrap().into_inner();
    while let Some(chunk) = stream.message().await.unwrap() {
        assert_eq!((chunk.offset, chunk.total_bytes), (1234 + tail.len() as u64, weights.len() as u64));
        tail.extend(chunk.data);
    }
    assert_eq!(tail, weights[1234..]);
    let err = client.download_model(DownloadModelRequest { version: 2, offset: 0 }).await.unwrap_err();
    assert_eq!(err.code(), Code::NotFound);

    // Version 1 is known now, and a new watcher is told about it first.
    let mut game = draw(5);
    game.model_version = 1;
    assert_eq!(client.submit_games(batch("m1", vec![game])).await.unwrap().into_inner().accepted, 1);
    let mut late = client.watch_models(WatchModelsRequest { after_version: 0 }).await.unwrap().into_inner();
    assert_eq!(with_timeout(late.message()).await.unwrap().unwrap().version, 1);
    // Shutdown ends the open watch streams rather than waiting for them.
    with_timeout(server.stop()).await;
    assert!(Path::new(&dir.path().join("models/v1.safetensors")).exists());
    assert!(Path::new(&dir.path().join("models/registry.json")).exists());
}

#[tokio::test]
async fn a_published_model_brings_the_settings_its_schedule_calls_for() {
    let dir = tempfile::tempdir().unwrap();
    let schedule = PlaySchedule { cap_growth: 2, cap_limit: 6 };
    let server = Server::scheduled(dir.path(), short(), schedule).await;
    let mut client = server.client(Some(TOKEN)).await;
    assert_eq!(register(&mut client).await.max_plies, 2);
    let mut watcher = client.watch_models(WatchModelsRequest { after_version: 0 }).await.unwrap().into_inner();
    let weights = weights();
    assert_eq!(publish(&mut client, metadata(&weights), &weights).await.unwrap(), 1);
    // The model is announced with the settings it brings: 4-ply games, as version 2.
    let settings = with_timeout(watcher.message()).await.unwrap().unwrap().settings.unwrap();
    assert_eq!((settings.version, settings.max_plies), (2, 4));
    // A 2-ply game of version 1 still counts; the same claim under version 2 does not.
    let mut old = draw(1);
    old.settings_version = 1;
    assert_eq!(client.submit_games(batch("s1", vec![old])).await.unwrap().into_inner().accepted, 1);
    let mut new = draw(2);
    new.settings_version = 2;
    assert_eq!(client.submit_games(batch("s2", vec![new])).await.unwrap_err().code(), Code::InvalidArgument);
    // Model 2 reaches the limit: no cap and no adjudication, the rules alone.
    let mut meta: serde_json::Value = serde_json::from_str(&metadata(&weights)).unwrap();
    meta["info"]["training_steps"] = 2.into();
    assert_eq!(publish(&mut client, meta.to_string(), &weights).await.unwrap(), 2);
    let settings = with_timeout(watcher.message()).await.unwrap().unwrap().settings.unwrap();
    assert_eq!((settings.version, settings.max_plies, settings.material_adjudication), (3, 0, 0));
    server.stop().await;
    // A restart keeps them.
    let server = Server::scheduled(dir.path(), short(), schedule).await;
    let mut client = server.client(Some(TOKEN)).await;
    let settings = register(&mut client).await;
    assert_eq!((settings.version, settings.max_plies), (3, 0));
    server.stop().await;
}

#[tokio::test]
async fn a_request_that_would_swell_when_decoded_is_refused_before_decoding() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), short()).await;
    let mut client = server.client(Some(TOKEN)).await;
    // 200 kB of empty plies: some 8 MB once decoded.
    let mut game = draw(1);
    game.plies = vec![PlySearch::default(); 100_000];
    let error = client.submit_games(batch("swell", vec![game])).await.unwrap_err();
    assert_eq!(error.code(), Code::ResourceExhausted, "{error:?}");
    assert!(error.message().contains("1 games with 100000 plies"), "{}", error.message());
    // The same game honestly told is stored.
    assert_eq!(client.submit_games(batch("honest", vec![draw(1)])).await.unwrap().into_inner().accepted, 1);
    server.stop().await;
    assert_eq!(Dataset::open(dir.path().join("dataset")).unwrap().games().unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_waiting_for_the_byte_budget_do_not_stall_the_connection_they_share() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = Server::config(dir.path(), short(), PlaySchedule { cap_growth: 0, cap_limit: 0 });
    // Room for one of the requests below at a time, and for all of them on one connection.
    config.limits.max_request_bytes_in_flight = 1 << 20;
    config.limits.max_calls_per_connection = 8;
    let server = Server::serve(config).await.unwrap();
    // One connection for every call.
    let channel = Channel::from_shared(format!("http://{}", server.running.addr())).unwrap().connect().await.unwrap();
    let bearer: tonic::metadata::MetadataValue<_> = format!("Bearer {TOKEN}").parse().unwrap();
    let client = CoordinatorClient::with_interceptor(channel, move |mut r: tonic::Request<()>| {
        r.metadata_mut().insert("authorization", bearer.clone());
        Ok(r)
    });
    // About 800 kB each, more than a stream's window: each must be read to be sent whole, while
    // the others wait unread. 50,000 plies with only a root value for 2 moves: refused once decoded.
    let big = |i: u8| {
        let mut game = draw(i);
        game.plies = vec![PlySearch { root_wdl: vec![0.3, 0.4, 0.3], ..PlySearch::default() }; 50_000];
        batch(&format!("big{i}"), vec![game])
    };
    let calls: Vec<_> = (0..8)
        .map(|i| {
            let mut client = client.clone();
            let request = big(i);
            tokio::spawn(async move { client.submit_games(request).await })
        })
        .collect();
    let answers = tokio::time::timeout(std::time::Duration::from_secs(120), async {
        let mut answers = Vec::new();
        for call in calls {
            answers.push(call.await.unwrap());
        }
        answers
    })
    .await
    .expect("calls on one connection stalled");
    for answer in answers {
        let error = answer.unwrap_err();
        assert_eq!(error.code(), Code::InvalidArgument, "{error:?}");
    }
    let mut client = client;
    assert_eq!(client.submit_games(batch("honest", vec![draw(1)])).await.unwrap().into_inner().accepted, 1);
    server.stop().await;
    assert_eq!(stored(dir.path()), vec![[1; 16]]);
}

#[tokio::test]
async fn weights_no_worker_could_load_never_become_a_model() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), short()).await;
    let mut client = server.client(Some(TOKEN)).await;
    let random: Vec<u8> = (0..65536u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8).collect();
    let mut infinite = weights();
    let at = infinite.len() - 4;
    infinite[at..].copy_from_slice(&f32::INFINITY.to_le_bytes());
    for (bad, why) in [(vec![], "not a safetensors file"), (random, "not a safetensors file"), (infinite, "not finite")]
    {
        let error = publish(&mut client, metadata(&bad), &bad).await.unwrap_err();
        assert_eq!(error.code(), Code::InvalidArgument, "{error:?}");
        assert!(error.message().contains(why), "{}", error.message());
    }
    assert_eq!(client.get_stats(GetStatsRequest {}).await.unwrap().into_inner().latest_model_version, 0);
    server.stop().await;
}

#[tokio::test]
async fn metrics_endpoint_answers_get() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().unwrap();
    let mut config = CoordinatorConfig::new("127.0.0.1:0".parse().unwrap(), keyed(dir.path()));
    config.metrics = Some("127.0.0.1:0".parse().unwrap());
    let (stop, rx) = oneshot::channel::<()>();
    let running = serve(config, async move { drop(rx.await) }).await.unwrap();
    let mut conn = tokio::net::TcpStream::connect(running.metrics_addr().unwrap()).await.unwrap();
    conn.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").await.unwrap();
    let mut text = String::new();
    with_timeout(conn.read_to_string(&mut text)).await.unwrap();
    assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
    for name in [
        "xqz_games_accepted_total 0\n",
        "xqz_workers_alive 0\n",
        "xqz_model_version 0\n",
        "xqz_ingest_latency_seconds_count 0\n",
        "# EOF\n",
    ] {
        assert!(text.contains(name), "{name} missing in {text}");
    }
    stop.send(()).unwrap();
    running.wait().await.unwrap();
}

#[tokio::test]
async fn invalid_settings_keep_the_coordinator_from_starting() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = CoordinatorConfig::new("127.0.0.1:0".parse().unwrap(), keyed(dir.path()));
    config.settings = PlaySettings { playouts: 0, ..PlaySettings::default() };
    let error = serve(config, std::future::pending()).await.unwrap_err();
    assert!(error.to_string().contains("playouts = 0"), "{error}");
}

async fn register(client: &mut Client) -> xqz_proto::v1::SelfPlaySettings {
    client.register(RegisterRequest::default()).await.unwrap().into_inner().settings.unwrap()
}

#[tokio::test]
async fn a_game_of_earlier_settings_is_validated_under_them_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    // Version 1: 2-ply games, where h2e2 h9g7 is a finished draw.
    let server = Server::start(dir.path(), short()).await;
    let mut client = server.client(Some(TOKEN)).await;
    assert_eq!(register(&mut client).await.version, 1);
    server.stop().await;
    // Version 2: 300-ply games. A game a worker spooled under version 1 still counts...
    let server = Server::start(dir.path(), PlaySettings { max_plies: 300, ..PlaySettings::default() }).await;
    let mut client = server.client(Some(TOKEN)).await;
    let wire = register(&mut client).await;
    assert_eq!((wire.version, wire.max_plies), (2, 300));
    let mut old = draw(1);
    old.settings_version = 1;
    let answer = client.submit_games(batch("k1", vec![old])).await.unwrap().into_inner();
    assert_eq!(answer.accepted, 1);
    // ...while the same claim under the settings in force, or an unknown version, is refused.
    for (id, version) in [(2, 2), (3, 0), (4, 9)] {
        let mut game = draw(id);
        game.settings_version = version;
        let error = client.submit_games(batch(&format!("k{id}"), vec![game])).await.unwrap_err();
        assert_eq!(error.code(), Code::InvalidArgument, "{version}: {error:?}");
    }
    server.stop().await;
    let games = Dataset::open(dir.path().join("dataset")).unwrap().games().unwrap();
    assert_eq!(games.iter().map(|g| g.settings_version).collect::<Vec<_>>(), vec![1]);
}

#[tokio::test]
async fn self_played_resignations_are_accepted_under_the_same_rule() {
    let dir = tempfile::tempdir().unwrap();
    // Every side resigns as soon as two of its searches value it below +0.3: at once.
    let settings = PlaySettings {
        playouts: 8,
        cheap_playouts: 4,
        max_plies: 30,
        resign_threshold: 0.3,
        resign_consecutive: 2,
        resign_disabled_fraction: 0.0,
        ..PlaySettings::default()
    };
    let config = SelfPlayConfig { settings_version: 1, ..settings.self_play_config(1, 4, 7) };
    let (games, subs) = self_played(&config, 4);
    assert!(games.iter().all(|g| g.game.outcome().verdict().unwrap().reason.name() == "resignation"));
    let server = Server::start(dir.path(), settings).await;
    let mut client = server.client(Some(TOKEN)).await;
    let answer = with_timeout(client.submit_games(batch("k1", subs.clone()))).await.unwrap().into_inner();
    assert_eq!(answer.accepted, 4);
    // The same games claimed for the other side are refused.
    let mut flipped = subs[0].clone();
    (flipped.game_id, flipped.result) = (vec![9; 16], if flipped.result == "red" { "black" } else { "red" }.into());
    let error = client.submit_games(batch("k2", vec![flipped])).await.unwrap_err();
    assert_eq!(error.code(), Code::InvalidArgument);
    assert!(error.message().contains("only the side to move resigns"), "{}", error.message());
    server.stop().await;
}

/// `GET path` on the coordinator's HTTP port, with `Authorization: Bearer <token>` if given:
/// the status code and the body.
async fn http_get(addr: std::net::SocketAddr, path: &str, token: Option<&str>) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let auth = token.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
    let mut conn = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{auth}\r\n");
    conn.write_all(request.as_bytes()).await.unwrap();
    let mut text = String::new();
    with_timeout(conn.read_to_string(&mut text)).await.unwrap();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or_else(|| panic!("no HTTP answer: {text:?}"));
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("{head}"));
    (status, body.to_string())
}

/// The JSON body of a 200 answer as `T`.
async fn http_json<T: serde::de::DeserializeOwned>(addr: std::net::SocketAddr, path: &str, token: Option<&str>) -> T {
    let (status, body) = http_get(addr, path, token).await;
    assert_eq!(status, 200, "GET {path}: {body}");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("GET {path}: {e}: {body}"))
}

#[tokio::test]
async fn the_dashboard_shows_games_models_and_the_run_folder_to_token_holders() {
    use xqz_coordinator::dashboard::{ApiError, GameList, GameView, Models, Overview, Strength, Training};
    let dir = tempfile::tempdir().unwrap();
    let run = tempfile::tempdir().unwrap();
    std::fs::create_dir(run.path().join("trainer")).unwrap();
    std::fs::write(
        run.path().join("trainer/metrics.csv"),
        "step,samples_seen,dataset_samples,window,policy_loss,value_loss,learning_rate,samples_per_second,model_version\n\
         1,64,256,256,5.1,1.1,0.02,300.0,0\n2,128,256,256,4.9,1.0,0.02,310.5,1\n",
    )
    .unwrap();
    std::fs::write(
        run.path().join("strength.csv"),
        "version,steps,published_unix,opponent,wins,draws,losses,score,elo,elo_lower,elo_upper\n\
         1,10,1700000000,material@8,2,0,0,1.0000,inf,-20.0,inf\n",
    )
    .unwrap();
    let mut config = CoordinatorConfig::new("127.0.0.1:0".parse().unwrap(), keyed(dir.path()));
    config.token = Some(TOKEN.into());
    config.settings = short();
    config.metrics = Some("127.0.0.1:0".parse().unwrap());
    config.run_folder = Some(run.path().to_path_buf());
    let (stop, rx) = oneshot::channel::<()>();
    let server = Server { running: serve(config, async move { drop(rx.await) }).await.unwrap(), stop };
    let http = server.running.metrics_addr().unwrap();
    let mut client = server.client(Some(TOKEN)).await;
    assert_eq!(client.submit_games(batch("d1", vec![draw(1), draw(2)])).await.unwrap().into_inner().accepted, 2);
    let weights = weights();
    assert_eq!(publish(&mut client, metadata(&weights), &weights).await.unwrap(), 1);

    // The token opens the page and the JSON, as a bearer header or in the query; /metrics stays open.
    for (path, token) in [("/", None), ("/api/overview", None), ("/api/games", Some("guess"))] {
        let (status, body) = http_get(http, path, token).await;
        assert_eq!(status, 401, "{path}: {body}");
        let error: ApiError = serde_json::from_str(&body).unwrap();
        assert!(error.error.contains("token"), "{error:?}");
    }
    let (status, page) = http_get(http, &format!("/?token={TOKEN}"), None).await;
    assert!(status == 200 && page.contains("<svg id=\"board\"") && page.contains("/api/overview"), "{status}");
    assert!(!page.contains(" src=") && !page.contains("<link"), "the page is self-contained");
    assert_eq!(http_get(http, "/metrics", None).await.0, 200);

    let overview: Overview = http_json(http, "/api/overview", Some(TOKEN)).await;
    let settings_version = register(&mut client).await.version;
    assert_eq!((overview.games, overview.samples, overview.settings_version), (2, 4, settings_version));
    assert!(overview.dataset_bytes > 0 && overview.games_per_second > 0.0, "{overview:?}");
    let worker = overview.workers.iter().find(|w| w.id == *WORKER).expect("the submitting worker is alive");
    assert_eq!((worker.games, worker.samples), (2, 4));
    let model = overview.latest_model.expect("a model");
    assert_eq!((model.version, model.training_steps, model.published_by.as_str()), (1, Some(10), "trainer"));
    assert!(model.published_ms > 0);
    let models: Models = http_json(http, &format!("/api/models?token={TOKEN}"), None).await;
    assert_eq!((models.total, models.models.len(), models.models[0].version), (1, 1, 1));

    let list: GameList = http_json(http, "/api/games?limit=1", Some(TOKEN)).await;
    assert_eq!((list.total, list.games.len()), (2, 1));
    let newest = &list.games[0];
    assert_eq!(newest.id, "02".repeat(16), "newest first");
    assert_eq!((newest.result.as_str(), newest.reason.as_str(), newest.plies), ("draw", "max_length", 2));
    assert!(!newest.article.is_empty());
    let game: GameView = http_json(http, &format!("/api/games/{}", newest.id), Some(TOKEN)).await;
    let moves: Vec<(&str, &str)> = game.moves.iter().map(|m| (m.iccs.as_str(), m.chinese.as_str())).collect();
    assert_eq!(moves, [("h2e2", "炮二平五"), ("h9g7", "马8进7")]);
    let board = game.moves[1].fen.split(' ').next().unwrap();
    assert_eq!(board, "rnbakab1r/9/1c4nc1/p1p1p1p1p/9/9/P1P1P1P1P/1C2C4/9/RNBAKABNR");
    assert_eq!((game.start_fen.as_str(), &game.summary), (xiangqi::START_FEN, newest));

    // Hostile queries get a 4xx with a reason.
    for (path, status, says) in [
        ("/api/games?limit=0", 400, "limit 0"),
        ("/api/games?limit=101", 400, "1 to 100"),
        ("/api/games?limit=many", 400, "limit"),
        ("/api/games?colour=red", 400, "colour"),
        ("/api/models?limit=1001", 400, "1 to 1000"),
        ("/api/games/not-an-id", 400, "not a game id"),
        ("/api/games/000000000000000000000000000000ff", 404, "latest 100"),
    ] {
        let (got, body) = http_get(http, path, Some(TOKEN)).await;
        let error: ApiError = serde_json::from_str(&body).unwrap_or_else(|e| panic!("{path}: {e}: {body}"));
        assert!(got == status && error.error.contains(says), "{path}: {got} {error:?}");
    }

    let training: Training = http_json(http, "/api/training", Some(TOKEN)).await;
    assert!(training.available && training.rows == 2, "{training:?}");
    assert_eq!((training.points[1].step, training.points[1].samples_per_second), (2, 310.5));
    let strength: Strength = http_json(http, "/api/strength", Some(TOKEN)).await;
    assert_eq!((strength.rows, strength.points[0].opponent.as_str()), (1, "material@8"));
    assert_eq!((strength.points[0].elo, strength.points[0].elo_lower), (None, Some(-20.0)));
    server.stop().await;
}

#[tokio::test]
async fn without_a_token_or_run_folder_the_dashboard_is_open_and_says_what_it_lacks() {
    use xqz_coordinator::dashboard::{GameList, Overview, Strength, Training};
    let dir = tempfile::tempdir().unwrap();
    let mut config = CoordinatorConfig::new("127.0.0.1:0".parse().unwrap(), keyed(dir.path()));
    config.metrics = Some("127.0.0.1:0".parse().unwrap());
    let (stop, rx) = oneshot::channel::<()>();
    let server = Server { running: serve(config, async move { drop(rx.await) }).await.unwrap(), stop };
    let http = server.running.metrics_addr().unwrap();
    assert_eq!(http_get(http, "/", None).await.0, 200);
    let overview: Overview = http_json(http, "/api/overview", None).await;
    assert!(overview.games == 0 && overview.workers.is_empty() && overview.latest_model.is_none(), "{overview:?}");
    let list: GameList = http_json(http, "/api/games", None).await;
    assert!(list.games.is_empty());
    let training: Training = http_json(http, "/api/training", None).await;
    let strength: Strength = http_json(http, "/api/strength", None).await;
    assert!(!training.available && training.points.is_empty() && !strength.available);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_submissions_are_each_stored_once_in_shared_commits() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), short()).await;
    let mut tasks = Vec::new();
    for w in 0..8u8 {
        let mut client = server.client(Some(TOKEN)).await;
        tasks.push(tokio::spawn(async move {
            for b in 0..4u8 {
                let first = 1 + 8 * w + 2 * b * 32;
                let games = vec![draw(first), draw(first + 1)];
                let answer = client.submit_games(batch(&format!("w{w}-b{b}"), games)).await.unwrap().into_inner();
                assert_eq!((answer.accepted, answer.duplicates), (2, 0), "w{w} b{b}");
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    server.stop().await;
    let mut ids = stored(dir.path());
    let shards = Dataset::open(dir.path().join("dataset")).unwrap().shards().len();
    assert_eq!(ids.len(), 64);
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), 64, "a game stored twice");
    assert!((1..=32).contains(&shards), "{shards} shards for 32 requests");
}
