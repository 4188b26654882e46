//! Match jobs through the API: a gated model reaches self-play workers only after it wins its
//! match against the current one, and a pair is counted only as the rules end it from its opening,
//! once.

mod common;

use std::path::Path;

use sha2::{Digest, Sha256};
use tokio::sync::oneshot;
use tonic::Code;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;
use xqz_arena::job::{Contestant, play_pair};
use xqz_arena::player::SearchPlayer;
use xqz_arena::stats::Sprt;
use xqz_coordinator::{CoordinatorConfig, Evaluation, Running, serve};
use xqz_mcts::{Evaluator, MaterialEvaluator, PlaySettings, SearchConfig, UniformEvaluator};
use xqz_proto::matches::{pair_to_wire, spec_from_wire};
use xqz_proto::v1::coordinator_client::CoordinatorClient;
use xqz_proto::v1::*;

type AddToken = Box<dyn FnMut(tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> + Send>;
type Client = CoordinatorClient<InterceptedService<Channel, AddToken>>;

struct Server {
    running: Running,
    stop: oneshot::Sender<()>,
}

async fn start(data: &Path, evaluation: Evaluation, publisher: Option<&str>) -> Server {
    start_sweeping(data, evaluation, publisher, xqz_coordinator::Limits::default().alive_window).await
}

/// [`start`] with a sweep (of silent workers, and of held models without a match) every quarter
/// of `alive_window`.
async fn start_sweeping(
    data: &Path,
    evaluation: Evaluation,
    publisher: Option<&str>,
    alive_window: std::time::Duration,
) -> Server {
    let mut config = CoordinatorConfig::new("127.0.0.1:0".parse().unwrap(), data);
    config.limits.alive_window = alive_window;
    config.token = Some("worker".into());
    config.publisher_token = publisher.map(String::from);
    config.settings = PlaySettings { max_plies: 2, ..PlaySettings::default() };
    config.evaluation = evaluation;
    let (stop, rx) = oneshot::channel::<()>();
    let running = serve(config, async move { drop(rx.await) }).await.unwrap();
    Server { running, stop }
}

impl Server {
    async fn client(&self, token: &str) -> Client {
        let channel = Channel::from_shared(format!("http://{}", self.running.addr())).unwrap().connect().await.unwrap();
        let header: tonic::metadata::MetadataValue<_> = format!("Bearer {token}").parse().unwrap();
        let add: AddToken = Box::new(move |mut r: tonic::Request<()>| {
            r.metadata_mut().insert("authorization", header.clone());
            Ok(r)
        });
        CoordinatorClient::with_interceptor(channel, add)
    }

    async fn stop(self) {
        self.stop.send(()).unwrap();
        self.running.wait().await.unwrap();
    }
}

/// A model of its own weights, `n` making each one different.
async fn publish(client: &mut Client, n: u32) -> u64 {
    let data: Vec<u8> = (0..64u32).flat_map(|i| ((i + n) as f32).to_le_bytes()).collect();
    let tensor = safetensors::tensor::TensorView::new(safetensors::Dtype::F32, vec![64], &data).unwrap();
    let weights = safetensors::serialize([("w", tensor)], &None).unwrap();
    let meta = serde_json::json!({
        "format": 2,
        "weights": { "file": "w.safetensors", "bytes": weights.len(), "sha256": format!("{:x}", Sha256::digest(&weights)) },
    });
    let header = PublishHeader { metadata_json: meta.to_string(), publisher: "trainer".into() };
    let chunks = vec![
        PublishModelChunk { part: Some(publish_model_chunk::Part::Header(header)) },
        PublishModelChunk { part: Some(publish_model_chunk::Part::Data(weights)) },
    ];
    client.publish_model(tokio_stream::iter(chunks)).await.unwrap().into_inner().version
}

async fn worker_id(client: &mut Client) -> String {
    client.register(RegisterRequest::default()).await.unwrap().into_inner().worker_id
}

/// Plays the pairs the coordinator hands out until it hands out none, the first player searching
/// with `a` and the second with `b` (a stand-in for the models, which the coordinator cannot tell
/// apart from them).
async fn play_out<A, B>(client: &mut Client, worker: &str, a: A, b: B) -> u32
where
    A: Evaluator + Clone,
    B: Evaluator + Clone,
{
    let mut pairs = 0;
    loop {
        let request = TakePairRequest { worker_id: worker.into(), ..Default::default() };
        let Some(assignment) = client.take_pair(request).await.unwrap().into_inner().pair else { return pairs };
        let spec = spec_from_wire(assignment.spec.as_ref().unwrap()).unwrap();
        let playouts = |c: &Contestant| if let Contestant::Model { playouts, .. } = c { *playouts } else { 8 };
        let mut pa = SearchPlayer::new(&spec.a.name(), a.clone(), playouts(&spec.a), SearchConfig::default());
        let mut pb = SearchPlayer::new(&spec.b.name(), b.clone(), playouts(&spec.b), SearchConfig::default());
        let games = play_pair(&spec, assignment.pair, &mut pa, &mut pb).unwrap();
        let request = SubmitPairRequest {
            worker_id: worker.into(),
            match_id: assignment.match_id,
            pair: assignment.pair,
            games: pair_to_wire(&games),
        };
        assert!(client.submit_pair(request).await.unwrap().into_inner().counted);
        pairs += 1;
    }
}

/// A worker of `server` with its folder in `dir`, one thread, one game at a time.
fn worker_config(server: &Server, dir: &Path, name: &str, eval_share: f64) -> xqz_worker::remote::RemoteConfig {
    xqz_worker::remote::RemoteConfig {
        coordinator: format!("http://{}", server.running.addr()),
        token: Some("worker".into()),
        tls: None,
        dir: dir.join("worker"),
        name: name.into(),
        threads: 1,
        games_per_thread: 1,
        max_games: None,
        batch_games: 1,
        batch_interval: std::time::Duration::from_millis(200),
        heartbeat_interval: std::time::Duration::from_secs(1),
        drain: std::time::Duration::from_secs(1),
        metrics: xqz_worker::WorkerMetrics::default(),
        eval_share,
    }
}

/// Resolves once the newest match no longer runs (a worker's shutdown signal).
async fn newest_match_ends(mut client: Client) {
    loop {
        let jobs = client.list_matches(ListMatchesRequest::default()).await.unwrap().into_inner().jobs;
        if jobs[0].state != MatchState::Running as i32 {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

async fn latest(client: &mut Client) -> u64 {
    client.get_stats(GetStatsRequest {}).await.unwrap().into_inner().latest_model_version
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gated_model_reaches_self_play_only_after_it_wins_its_match() {
    let dir = tempfile::tempdir().unwrap();
    let gate = Sprt { elo0: 0.0, elo1: 100.0, alpha: 0.1, beta: 0.1, model: Default::default() };
    let evaluation = Evaluation {
        previous_pairs: 40,
        playouts: 16,
        max_plies: 40,
        material_adjudication: Some(1),
        gate: Some(gate),
        ..Evaluation::default()
    };
    let server = start(dir.path(), evaluation.clone(), None).await;
    let mut client = server.client("worker").await;
    let worker = worker_id(&mut client).await;
    let mut watch = client.watch_models(WatchModelsRequest { after_version: 0 }).await.unwrap().into_inner();
    assert_eq!(publish(&mut client, 1).await, 1);
    assert_eq!(watch.message().await.unwrap().unwrap().version, 1, "the first model has nothing to beat");
    assert_eq!(publish(&mut client, 2).await, 2);
    assert_eq!(latest(&mut client).await, 1, "v2 waits for its match");
    let jobs = client.list_matches(ListMatchesRequest::default()).await.unwrap().into_inner().jobs;
    assert_eq!((jobs.len(), jobs[0].a_name.as_str(), jobs[0].b_name.as_str()), (1, "v2@16", "v1@16"));
    assert_eq!(jobs[0].gates_model, 2);

    // v2 "plays" material counting against the bare rules: it wins, and is announced.
    play_out(&mut client, &worker, MaterialEvaluator, UniformEvaluator).await;
    let decided = &client.list_matches(ListMatchesRequest::default()).await.unwrap().into_inner().jobs[0];
    assert_eq!(decided.state, MatchState::H1 as i32, "{decided:?}");
    assert_eq!(latest(&mut client).await, 2);
    assert_eq!(watch.message().await.unwrap().unwrap().version, 2);

    // v3 loses to v2 and is never announced, also after a restart.
    assert_eq!(publish(&mut client, 3).await, 3);
    play_out(&mut client, &worker, UniformEvaluator, MaterialEvaluator).await;
    let jobs = client.list_matches(ListMatchesRequest::default()).await.unwrap().into_inner().jobs;
    assert_eq!((jobs[0].gates_model, jobs[0].state), (3, MatchState::H0 as i32), "{:?}", jobs[0]);
    assert_eq!(latest(&mut client).await, 2);
    server.stop().await;
    let server = start(dir.path(), evaluation, None).await;
    let mut client = server.client("worker").await;
    assert_eq!(latest(&mut client).await, 2);
    let models = client.register(RegisterRequest::default()).await.unwrap().into_inner().current_model.unwrap();
    assert_eq!(models.version, 2);
    assert_eq!(client.list_matches(ListMatchesRequest::default()).await.unwrap().into_inner().jobs.len(), 2);
    server.stop().await;
}

/// A gate that material counting passes against the bare rules in a few pairs, and fails the
/// other way round.
fn quick_gate() -> Evaluation {
    Evaluation {
        previous_pairs: 40,
        playouts: 16,
        max_plies: 40,
        material_adjudication: Some(1),
        gate: Some(Sprt { elo0: 0.0, elo1: 100.0, alpha: 0.1, beta: 0.1, model: Default::default() }),
        ..Evaluation::default()
    }
}

async fn jobs(client: &mut Client) -> Vec<MatchJob> {
    client.list_matches(ListMatchesRequest::default()).await.unwrap().into_inner().jobs
}

/// Model `version`'s gate as `registry.json` in the data folder `data` keeps it.
fn stored_gate(data: &Path, version: u64) -> String {
    let registry: serde_json::Value =
        serde_json::from_slice(&std::fs::read(data.join("models/registry.json")).unwrap()).unwrap();
    registry["models"][version as usize - 1]["gate"].as_str().unwrap().to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_model_is_settled_at_the_start_whatever_a_crash_left_of_its_match() {
    let dir = tempfile::tempdir().unwrap();
    let (data, matches_file, registry_file) =
        (dir.path(), dir.path().join("matches.json"), dir.path().join("models/registry.json"));
    let server = start(data, quick_gate(), None).await;
    let mut client = server.client("worker").await;
    publish(&mut client, 1).await;
    assert_eq!(publish(&mut client, 2).await, 2);
    server.stop().await;

    // A crash between v2's publication and its match's queueing: held, and no match gates it.
    std::fs::remove_file(&matches_file).unwrap();
    let server = start(data, quick_gate(), None).await;
    let mut client = server.client("worker").await;
    let queued = jobs(&mut client).await;
    assert_eq!(queued.len(), 1, "the gating match is queued again");
    assert_eq!((queued[0].gates_model, queued[0].a_name.as_str(), queued[0].b_name.as_str()), (2, "v2@16", "v1@16"));
    let worker = worker_id(&mut client).await;
    play_out(&mut client, &worker, MaterialEvaluator, UniformEvaluator).await;
    assert_eq!(latest(&mut client).await, 2, "it passes as it would have");

    // A crash between the deciding pair of v3's match and the saving of its state (and of the
    // model's refusal): the jobs file says running, the registry held, the table decided.
    assert_eq!(publish(&mut client, 3).await, 3);
    let (running, held) = (std::fs::read(&matches_file).unwrap(), std::fs::read(&registry_file).unwrap());
    play_out(&mut client, &worker, UniformEvaluator, MaterialEvaluator).await;
    assert_eq!(stored_gate(data, 3), "refused");
    server.stop().await;
    std::fs::write(&matches_file, running).unwrap();
    std::fs::write(&registry_file, held).unwrap();
    assert_eq!(stored_gate(data, 3), "held");
    let server = start(data, quick_gate(), None).await;
    let mut client = server.client("worker").await;
    let judged = jobs(&mut client).await;
    assert_eq!((judged[0].gates_model, judged[0].state), (3, MatchState::H0 as i32), "{:?}", judged[0]);
    assert_eq!(stored_gate(data, 3), "refused");
    assert_eq!(latest(&mut client).await, 2);
    assert!(
        client
            .take_pair(TakePairRequest { worker_id: worker, ..Default::default() })
            .await
            .unwrap()
            .into_inner()
            .pair
            .is_none()
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gating_match_that_could_not_be_stored_is_queued_at_the_next_sweep() {
    let dir = tempfile::tempdir().unwrap();
    let window = std::time::Duration::from_millis(400);
    let server = start_sweeping(dir.path(), quick_gate(), None, window).await;
    let mut client = server.client("worker").await;
    publish(&mut client, 1).await;
    // The jobs file cannot be written while its temporary name is a folder.
    let blocker = dir.path().join("matches.json.tmp");
    std::fs::create_dir(&blocker).unwrap();
    assert_eq!(publish(&mut client, 2).await, 2, "the model is published, and held");
    assert!(jobs(&mut client).await.is_empty());
    assert_eq!(latest(&mut client).await, 1);
    std::fs::remove_dir(&blocker).unwrap();
    let mut queued = Vec::new();
    for _ in 0..200 {
        queued = jobs(&mut client).await;
        if !queued.is_empty() {
            break;
        }
        tokio::time::sleep(window / 4).await;
    }
    assert_eq!(queued.len(), 1, "queued by a sweep");
    assert_eq!((queued[0].gates_model, queued[0].state), (2, MatchState::Running as i32));
    let worker = worker_id(&mut client).await;
    play_out(&mut client, &worker, MaterialEvaluator, UniformEvaluator).await;
    assert_eq!(latest(&mut client).await, 2);
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pair_counts_once_and_only_as_the_rules_end_it_from_its_opening() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path(), Evaluation::default(), Some("trainer")).await;
    let (mut worker, mut trainer) = (server.client("worker").await, server.client("trainer").await);
    let id = worker_id(&mut worker).await;
    let spec = xqz_arena::job::MatchSpec {
        max_plies: 30,
        ..xqz_arena::job::MatchSpec::new("material@8".parse().unwrap(), "uniform@8".parse().unwrap(), 2)
    };
    let request = SubmitMatchRequest { spec: Some(xqz_proto::matches::spec_to_wire(&spec)) };
    let refused = worker.submit_match(request.clone()).await.unwrap_err();
    assert_eq!(refused.code(), Code::PermissionDenied, "only the trainer's token submits: {refused:?}");
    let job = trainer.submit_match(request).await.unwrap().into_inner();
    let bad = SubmitMatchRequest {
        spec: Some(xqz_proto::matches::spec_to_wire(&xqz_arena::job::MatchSpec::new(
            "v9@8".parse().unwrap(),
            "uniform@8".parse().unwrap(),
            2,
        ))),
    };
    assert_eq!(trainer.submit_match(bad).await.unwrap_err().code(), Code::FailedPrecondition, "no model v9");

    let assignment = worker
        .take_pair(TakePairRequest { worker_id: id.clone(), ..Default::default() })
        .await
        .unwrap()
        .into_inner()
        .pair
        .unwrap();
    let search = SearchConfig::default();
    let mut a = SearchPlayer::new("a", MaterialEvaluator, 8, search);
    let mut b = SearchPlayer::new("b", UniformEvaluator, 8, search);
    let games = pair_to_wire(&play_pair(&spec, assignment.pair, &mut a, &mut b).unwrap());
    let submit =
        |games: Vec<PlayedGame>, pair: u32| SubmitPairRequest { worker_id: id.clone(), match_id: job.id, pair, games };
    // The other pair is not leased to this worker yet: refused before its games are looked at.
    let unleased = worker.submit_pair(submit(games.clone(), 1 - assignment.pair)).await.unwrap_err();
    assert_eq!(unleased.code(), Code::FailedPrecondition, "{unleased:?}");
    assert!(unleased.message().contains("never handed out"), "{}", unleased.message());
    // Leased, it is replayed, and this pair's games do not start from its opening.
    let other = worker.take_pair(TakePairRequest { worker_id: id.clone(), ..Default::default() }).await.unwrap();
    assert_eq!(other.into_inner().pair.map(|p| p.pair), Some(1 - assignment.pair));
    // A forged result, a game cut short, another pair's opening, one game: refused, nothing counted.
    let mut forged = games.clone();
    forged[0].result = if forged[0].result == "draw" { "red".into() } else { "draw".into() };
    let mut short = games.clone();
    short[1].moves.pop();
    for (request, what) in [
        (submit(forged, assignment.pair), "result"),
        (submit(short, assignment.pair), "not over"),
        (submit(games.clone(), 1 - assignment.pair), "opening"),
        (submit(games[..1].to_vec(), assignment.pair), "two games"),
    ] {
        let error = worker.submit_pair(request).await.unwrap_err();
        assert_eq!(error.code(), Code::InvalidArgument, "{what}: {error:?}");
        assert!(error.message().contains(what), "{what}: {}", error.message());
    }
    let unknown = SubmitPairRequest { match_id: 99, ..submit(games.clone(), 0) };
    assert_eq!(worker.submit_pair(unknown).await.unwrap_err().code(), Code::NotFound);
    let stranger = SubmitPairRequest { worker_id: "nobody".into(), ..submit(games.clone(), 0) };
    assert_eq!(worker.submit_pair(stranger).await.unwrap_err().code(), Code::Unauthenticated);
    let answer = worker.submit_pair(submit(games.clone(), assignment.pair)).await.unwrap().into_inner();
    assert!(answer.counted);
    assert_eq!(answer.job.as_ref().map(|j| j.wins + j.draws + j.losses), Some(2));
    let again = worker.submit_pair(submit(games, assignment.pair)).await.unwrap().into_inner();
    assert!(!again.counted, "a retry counts nothing");
    assert_eq!(again.job.map(|j| j.wins + j.draws + j.losses), Some(2));
    let many = TakePairRequest { worker_id: id.clone(), can_play: vec!["x".repeat(65)], ..Default::default() };
    assert_eq!(worker.take_pair(many).await.unwrap_err().code(), Code::InvalidArgument);
    let long = TakePairRequest { worker_id: id, failure: "x".repeat(1025), ..Default::default() };
    let error = worker.take_pair(long).await.unwrap_err();
    assert_eq!(error.code(), Code::InvalidArgument, "{error:?}");
    assert!(error.message().contains("failure is at most 1024 bytes"), "{}", error.message());
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_with_an_eval_share_plays_match_pairs_beside_self_play() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path(), Evaluation::default(), None).await;
    let mut client = server.client("worker").await;
    let spec = xqz_arena::job::MatchSpec {
        max_plies: 20,
        ..xqz_arena::job::MatchSpec::new("material@4".parse().unwrap(), "uniform@4".parse().unwrap(), 3)
    };
    let request = SubmitMatchRequest { spec: Some(xqz_proto::matches::spec_to_wire(&spec)) };
    let job = client.submit_match(request).await.unwrap().into_inner();
    let config = worker_config(&server, dir.path(), "mixed", 0.5);
    let session = xqz_worker::remote::Session::connect(config).await.unwrap();
    let finished = newest_match_ends(server.client("worker").await);
    let run = session.run(std::sync::Arc::new(common::MaterialHost), 0, finished);
    tokio::time::timeout(std::time::Duration::from_secs(120), run).await.expect("the match ends").unwrap();
    let jobs = client.list_matches(ListMatchesRequest::default()).await.unwrap().into_inner().jobs;
    assert_eq!((jobs[0].id, jobs[0].state), (job.id, MatchState::Finished as i32));
    assert_eq!(jobs[0].wins + jobs[0].draws + jobs[0].losses, 6);
    let games = client.get_stats(GetStatsRequest {}).await.unwrap().into_inner().games;
    assert!(games > 0, "self-play went on beside the match");
    server.stop().await;
}

/// A host whose match players fail to load with `why`, once the test lets them (at once if
/// `release`'s sender is gone: dropped by the test, or at its end).
struct FailingHost {
    release: std::sync::Mutex<std::sync::mpsc::Receiver<()>>,
    why: &'static str,
}

impl FailingHost {
    /// A host whose players fail at once.
    fn broken(why: &'static str) -> FailingHost {
        FailingHost { release: std::sync::Mutex::new(std::sync::mpsc::channel().1), why }
    }
}

impl xqz_worker::remote::ModelHost for FailingHost {
    type Evaluator = MaterialEvaluator;

    fn evaluator(&self) -> MaterialEvaluator {
        MaterialEvaluator
    }

    fn install(&self, _: &Path) -> Result<(), xqz_worker::remote::InstallError> {
        Ok(())
    }

    type Player = MaterialEvaluator;

    fn load_player(&self, path: &Path) -> Result<MaterialEvaluator, xqz_worker::remote::InstallError> {
        let _ = self.release.lock().unwrap().recv();
        Err(xqz_worker::remote::InstallError { path: path.into(), source: self.why.into() })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pair_no_worker_can_play_is_given_back_with_the_reason_until_its_match_fails() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path(), Evaluation::default(), None).await;
    let mut client = server.client("worker").await;
    assert_eq!(publish(&mut client, 1).await, 1);
    let spec = xqz_arena::job::MatchSpec::new("v1@4".parse().unwrap(), "material@4".parse().unwrap(), 3);
    let request = SubmitMatchRequest { spec: Some(xqz_proto::matches::spec_to_wire(&spec)) };
    client.submit_match(request).await.unwrap();
    let config = worker_config(&server, dir.path(), "broken", 1.0);
    let session = xqz_worker::remote::Session::connect(config).await.unwrap();
    let failed = newest_match_ends(server.client("worker").await);
    let run = session.run(std::sync::Arc::new(FailingHost::broken("not a network")), 0, failed);
    tokio::time::timeout(std::time::Duration::from_secs(60), run).await.expect("the match fails").unwrap();
    let job = client.list_matches(ListMatchesRequest::default()).await.unwrap().into_inner().jobs.remove(0);
    assert_eq!(job.state, MatchState::Failed as i32, "{job:?}");
    assert!(job.failure.contains("pair 0 failed on workers 5 times"), "{}", job.failure);
    assert!(job.failure.contains("not a network"), "the worker's reason: {}", job.failure);
    assert_eq!(job.wins + job.draws + job.losses, 0);
    server.stop().await;
}

/// Resolves once a pair of some match is in flight.
async fn a_pair_is_taken(mut client: Client) {
    loop {
        let jobs = client.list_matches(ListMatchesRequest::default()).await.unwrap().into_inner().jobs;
        if jobs.iter().any(|j| j.pairs_in_flight > 0) {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopping_worker_gives_its_pair_back_at_once_and_the_jobs_come_in_pages() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path(), Evaluation::default(), None).await;
    let mut client = server.client("worker").await;
    assert_eq!(publish(&mut client, 1).await, 1);
    for b in ["material@4", "uniform@4"] {
        let spec = xqz_arena::job::MatchSpec::new("v1@4".parse().unwrap(), b.parse().unwrap(), 1);
        client.submit_match(SubmitMatchRequest { spec: Some(xqz_proto::matches::spec_to_wire(&spec)) }).await.unwrap();
    }
    let (release, stuck) = std::sync::mpsc::channel();
    let session =
        xqz_worker::remote::Session::connect(worker_config(&server, dir.path(), "stopping", 1.0)).await.unwrap();
    // The worker stops while its pair's players load.
    let run = session.run(
        std::sync::Arc::new(FailingHost { release: std::sync::Mutex::new(stuck), why: "released" }),
        0,
        a_pair_is_taken(server.client("worker").await),
    );
    tokio::time::timeout(std::time::Duration::from_secs(60), run).await.expect("the worker stops").unwrap();
    let page = |page_size: u32, page_token: &str| ListMatchesRequest { page_size, page_token: page_token.into() };
    let first = client.list_matches(page(1, "")).await.unwrap().into_inner();
    assert_eq!((first.jobs.len(), first.jobs[0].id, first.next_page_token.as_str(), first.total), (1, 2, "1", 2));
    let second = client.list_matches(page(1, &first.next_page_token)).await.unwrap().into_inner();
    assert_eq!(second.next_page_token, "", "the last page");
    let job = &second.jobs[0];
    assert_eq!((job.id, job.state, job.pairs_in_flight), (1, MatchState::Running as i32, 0), "{job:?}");
    assert_eq!(job.failure, "", "a pair given back untried is no failure");
    // Another worker has the pair at once, without waiting for the first to count as gone.
    let other = worker_id(&mut client).await;
    let taken = client.take_pair(TakePairRequest { worker_id: other, ..Default::default() }).await.unwrap();
    assert_eq!(taken.into_inner().pair.map(|p| (p.match_id, p.pair)), Some((1, 0)));
    drop(release);
    for (request, what) in [(page(1001, ""), "page_size"), (page(1, "x"), "page_token"), (page(1, "0"), "page_token")] {
        let error = client.list_matches(request).await.unwrap_err();
        assert_eq!(error.code(), Code::InvalidArgument, "{what}: {error:?}");
        assert!(error.message().contains(what), "{}", error.message());
    }
}

/// Takes a pair as `worker` and hands it in forged (the second player blundering in legal games);
/// `Ok(false)` when there was nothing to take, the refusal's status when there is one.
async fn forge_one(client: &mut Client, worker: &str) -> Result<bool, tonic::Status> {
    let request = TakePairRequest { worker_id: worker.into(), ..Default::default() };
    let Some(assignment) = client.take_pair(request).await?.into_inner().pair else { return Ok(false) };
    let spec = spec_from_wire(assignment.spec.as_ref().unwrap()).unwrap();
    let mut a = SearchPlayer::new(&spec.a.name(), MaterialEvaluator, 4, SearchConfig::default());
    let mut b = xqz_test_support::forger::Blunderer::new(&spec.b.name());
    let games = play_pair(&spec, assignment.pair, &mut a, &mut b).unwrap();
    let request = SubmitPairRequest {
        worker_id: worker.into(),
        match_id: assignment.match_id,
        pair: assignment.pair,
        games: pair_to_wire(&games),
    };
    assert!(client.submit_pair(request).await?.into_inner().counted, "taken in, audited or not");
    Ok(true)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_that_forges_pairs_among_honest_ones_is_quarantined_and_the_gate_decided_by_honest_games() {
    let dir = tempfile::tempdir().unwrap();
    let gate = Sprt { elo0: 0.0, elo1: 100.0, alpha: 0.1, beta: 0.1, model: Default::default() };
    let evaluation = Evaluation {
        previous_pairs: 12,
        playouts: 4,
        max_plies: 40,
        material_adjudication: Some(1),
        gate: Some(gate),
        audit_share: 1.0,
        ..Evaluation::default()
    };
    let server = start(dir.path(), evaluation, None).await;
    let mut client = server.client("worker").await;
    let forger = worker_id(&mut client).await;
    assert_eq!(publish(&mut client, 1).await, 1);
    assert_eq!(publish(&mut client, 2).await, 2);
    // Alone, the forger's pair counts unaudited (nobody could check it): v1 blunders there.
    assert!(forge_one(&mut client, &forger).await.unwrap());
    let job = client.list_matches(ListMatchesRequest::default()).await.unwrap().into_inner().jobs.remove(0);
    let won = job.pentanomial[3] + job.pentanomial[4];
    assert_eq!((job.state, won, job.workers.len()), (MatchState::Running as i32, 1, 1), "{job:?}");

    // Two honest workers join: v2 and v1 both play material counting, so no pair is won twice.
    let mut honest = Vec::new();
    for name in ["honest1", "honest2"] {
        let config = worker_config(&server, &dir.path().join(name), name, 1.0);
        let session = xqz_worker::remote::Session::connect(config).await.unwrap();
        let ends = newest_match_ends(server.client("worker").await);
        honest.push(tokio::spawn(session.run(std::sync::Arc::new(common::MaterialHost), 0, ends)));
    }
    loop {
        let job = client.list_matches(ListMatchesRequest::default()).await.unwrap().into_inner().jobs.remove(0);
        if job.pairs_in_flight + job.pairs_held >= 2 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    // The forger goes on forging, among them copies of honest pairs, until it is refused.
    let refused = tokio::time::timeout(std::time::Duration::from_secs(120), async {
        loop {
            match forge_one(&mut client, &forger).await {
                Err(status) => return status,
                Ok(false) => tokio::time::sleep(std::time::Duration::from_millis(50)).await,
                Ok(true) => {}
            }
        }
    })
    .await
    .expect("the forger is caught");
    assert_eq!(refused.code(), Code::PermissionDenied, "{refused:?}");
    assert!(refused.message().contains("quarantined") && refused.message().contains(&forger), "{}", refused.message());
    for run in honest {
        tokio::time::timeout(std::time::Duration::from_secs(120), run).await.expect("the match ends").unwrap().unwrap();
    }

    let job = client.list_matches(ListMatchesRequest::default()).await.unwrap().into_inner().jobs.remove(0);
    assert!([MatchState::H0 as i32, MatchState::Finished as i32].contains(&job.state), "{job:?}");
    // Material against material from one opening each way round: every honest pair scores 1.
    let others: u64 = job.pentanomial.iter().sum::<u64>() - job.pentanomial[2];
    assert_eq!(others, 0, "the forged pair was discarded and played again: {job:?}");
    assert!(job.pairs_audited > 0, "{job:?}");
    assert!(job.workers.iter().all(|w| w.worker_id != forger && w.residual.abs() <= 3.0), "{:?}", job.workers);
    assert_eq!(job.quarantines.len(), 1, "{job:?}");
    assert_eq!((job.quarantines[0].worker_id.as_str(), job.quarantines[0].pairs_discarded), (forger.as_str(), 1));
    assert_eq!(latest(&mut client).await, 1, "v2 is never announced on forged games");
    server.stop().await;
}
