//! Clients that connect and say nothing, or declare a message and never finish it, cannot starve
//! the others: connections past the cap wait until one closes, silent ones are closed, a stalled
//! upload is ended and gives its bytes back, and one connection's calls past its caps are refused.
//! The stalling clients speak HTTP/2 by hand (`h2`); the honest ones are the generated client.

use std::net::SocketAddr;
use std::path::Path;
use std::time::Duration;

use h2::client::{ResponseFuture, SendRequest};
use tokio::io::AsyncReadExt as _;
use tokio::net::TcpStream;
use tokio::sync::oneshot;
use tonic::Code;
use tonic::codegen::Bytes;
use tonic::codegen::http;
use tonic::transport::Channel;
use xiangqi::Move;
use xqz_coordinator::{CoordinatorConfig, Limits, Running, serve};
use xqz_dataset::Dataset;
use xqz_mcts::PlaySettings;
use xqz_proto::v1::coordinator_client::CoordinatorClient;
use xqz_proto::v1::*;

struct Server {
    running: Running,
    stop: oneshot::Sender<()>,
}

/// A coordinator without a token whose games are 2 plies long, with `limits`.
async fn start(data: &Path, limits: Limits) -> Server {
    let mut config = CoordinatorConfig::new("127.0.0.1:0".parse().unwrap(), data);
    config.settings = PlaySettings { max_plies: 2, ..PlaySettings::default() };
    config.limits = Limits { max_games_per_request: 8, ..limits };
    let (stop, rx) = oneshot::channel::<()>();
    let running = serve(config, async move { drop(rx.await) }).await.unwrap();
    Server { running, stop }
}

impl Server {
    fn url(&self) -> String {
        format!("http://{}", self.running.addr())
    }

    /// A generated client on a connection of its own (made at its first call).
    fn client(&self) -> CoordinatorClient<Channel> {
        CoordinatorClient::new(Channel::from_shared(self.url()).unwrap().connect_lazy())
    }

    /// Stops the coordinator; the ids of the games it stored.
    async fn stop(self, data: &Path) -> Vec<[u8; 16]> {
        self.stop.send(()).unwrap();
        self.running.wait().await.unwrap();
        Dataset::open(data.join("dataset")).unwrap().games().unwrap().iter().map(|g| g.game_id.0).collect()
    }
}

async fn with_timeout<T>(f: impl Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(20), f).await.expect("timed out")
}

/// Whether `f` is still unfinished after a while (long enough for a call on loopback).
async fn still_waiting<T>(f: impl Future<Output = T>) -> bool {
    tokio::time::timeout(Duration::from_millis(500), f).await.is_err()
}

fn code(text: &str) -> u32 {
    u32::from(text.parse::<Move>().unwrap().to_u16())
}

/// h2e2 h9g7: a `max_length` draw when games are capped at 2 plies.
fn draw(id: u8) -> GameSubmission {
    let moves = vec![code("h2e2"), code("h9g7")];
    let plies = moves
        .iter()
        .map(|&m| PlySearch {
            policy_moves: vec![m],
            policy_probs: vec![1.0],
            root_wdl: vec![0.3, 0.4, 0.3],
            full_search: true,
        })
        .collect();
    GameSubmission {
        game_id: vec![id; 16],
        start_fen: xiangqi::START_FEN.into(),
        plies,
        moves,
        result: "draw".into(),
        reason: "max_length".into(),
        ..Default::default()
    }
}

/// Registers with `client` and submits game `id` under the key `key`; the games accepted.
async fn honest_upload(client: &mut CoordinatorClient<Channel>, key: &str, id: u8) -> u32 {
    let worker_id = client.register(RegisterRequest::default()).await.unwrap().into_inner().worker_id;
    let request = SubmitGamesRequest { idempotency_key: key.into(), worker_id, games: vec![draw(id)] };
    client.submit_games(request).await.unwrap().into_inner().accepted
}

/// An HTTP/2 connection driven by hand, to send what no well-behaved client would.
struct Raw {
    send: SendRequest<Bytes>,
}

impl Raw {
    async fn connect(addr: SocketAddr) -> Raw {
        let (send, connection) = h2::client::handshake(TcpStream::connect(addr).await.unwrap()).await.unwrap();
        tokio::spawn(connection);
        Raw { send }
    }

    /// Opens a `method` call and sends the first `bytes` of its body, unless the call is refused
    /// and closed before they go.
    async fn open(&mut self, method: &str, bytes: Vec<u8>) -> (ResponseFuture, h2::SendStream<Bytes>) {
        let request = http::Request::post(format!("http://coordinator/xqz.v1.Coordinator/{method}"))
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .body(())
            .unwrap();
        let mut send = self.send.clone().ready().await.unwrap();
        let (response, mut body) = send.send_request(request, false).unwrap();
        let _ = body.send_data(Bytes::from(bytes), false);
        (response, body)
    }

    /// A `method` call whose message declares `declared` bytes and stops after the first `sent`.
    async fn stall(&mut self, method: &str, declared: u32, sent: usize) -> (ResponseFuture, h2::SendStream<Bytes>) {
        let mut bytes = vec![0];
        bytes.extend(declared.to_be_bytes());
        bytes.resize(5 + sent, 0);
        self.open(method, bytes).await
    }

    /// A whole `method` call of `message`; its answer's gRPC status.
    async fn unary(&mut self, method: &str, message: &impl prost::Message) -> (Code, String) {
        let message = message.encode_to_vec();
        let mut bytes = vec![0];
        bytes.extend((message.len() as u32).to_be_bytes());
        bytes.extend(message);
        let (response, mut body) = self.open(method, bytes).await;
        let _ = body.send_data(Bytes::new(), true);
        status(response).await
    }
}

/// The gRPC status of an answer, from its headers (a refusal) or its trailers.
async fn status(response: ResponseFuture) -> (Code, String) {
    status_of(response.await.unwrap()).await
}

/// The gRPC status of an answer that has begun.
async fn status_of(response: http::Response<h2::RecvStream>) -> (Code, String) {
    let read = |headers: &http::HeaderMap| {
        let code = headers.get("grpc-status")?.to_str().ok()?.parse::<i32>().ok()?;
        let message = headers.get("grpc-message").map_or(&[][..], |m| m.as_bytes());
        Some((Code::from(code), percent_decoded(message)))
    };
    if let Some(status) = read(response.headers()) {
        return status;
    }
    let mut body = response.into_body();
    while let Some(data) = body.data().await {
        data.unwrap();
    }
    read(&body.trailers().await.unwrap().unwrap()).unwrap()
}

/// A `grpc-message` as it was before it was percent-encoded for the header.
fn percent_decoded(mut text: &[u8]) -> String {
    let mut bytes = Vec::new();
    while let Some((&first, rest)) = text.split_first() {
        match (first, rest.get(..2).and_then(|hex| u8::from_str_radix(std::str::from_utf8(hex).ok()?, 16).ok())) {
            (b'%', Some(byte)) => {
                bytes.push(byte);
                text = &rest[2..];
            }
            _ => {
                bytes.push(first);
                text = rest;
            }
        }
    }
    String::from_utf8(bytes).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_or_trickling_upload_is_ended_and_gives_the_budget_back() {
    let dir = tempfile::tempdir().unwrap();
    let limits = Limits {
        max_request_bytes_in_flight: 1 << 20,
        max_request_bytes_per_connection: 1 << 20,
        upload_timeout: Duration::from_secs(1),
        ..Limits::default()
    };
    let server = start(dir.path(), limits).await;
    // One client declares the whole budget and stalls; another declares it and trickles a byte
    // at a time, never finishing in time.
    let mut stalling = Raw::connect(server.running.addr()).await;
    let (stalled, _held) = stalling.stall("SubmitGames", 1 << 20, 10).await;
    let mut trickling = Raw::connect(server.running.addr()).await;
    let (trickled, mut drip) = trickling.stall("SubmitGames", 1 << 20, 0).await;
    tokio::spawn(async move {
        while drip.send_data(Bytes::from_static(&[0]), false).is_ok() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    // An honest worker waits for the budget, and gets it once the others are ended.
    let mut honest = server.client();
    assert_eq!(with_timeout(honest_upload(&mut honest, "honest", 1)).await, 1);
    for (name, answer) in [("stalled", stalled), ("trickled", trickled)] {
        let (code, message) = with_timeout(status(answer)).await;
        assert_eq!(code, Code::DeadlineExceeded, "{name}: {message}");
        assert!(message.contains("upload timeout of 1s"), "{name}: {message}");
    }
    assert_eq!(server.stop(dir.path()).await, vec![[1; 16]]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_connection_cannot_hold_more_than_its_share_of_the_budget() {
    let dir = tempfile::tempdir().unwrap();
    // Stalls last until the test ends; the budget has room for four shares.
    let limits = Limits { upload_timeout: Duration::from_secs(600), ..Limits::default() };
    let share = limits.max_request_bytes_per_connection as u32;
    let server = start(dir.path(), limits).await;
    let mut greedy = Raw::connect(server.running.addr()).await;
    let mut stalls = Vec::new();
    for _ in 0..4 {
        stalls.push(greedy.stall("SubmitGames", share, 10).await);
    }
    let mut honest = server.client();
    let upload = honest_upload(&mut honest, "honest", 1);
    assert_eq!(with_timeout(upload).await, 1, "stored beside the stalled share");
    // One of the four holds the connection's share; the others were refused at once.
    let mut refused = 0;
    for (answer, _body) in stalls {
        let Ok(answer) = tokio::time::timeout(Duration::from_millis(500), answer).await else { continue };
        let (code, message) = status_of(answer.unwrap()).await;
        assert_eq!(code, Code::Unavailable, "{message}");
        assert!(message.contains("max_request_bytes_per_connection"), "{message}");
        refused += 1;
    }
    assert_eq!(refused, 3);
    assert_eq!(server.stop(dir.path()).await, vec![[1; 16]]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_past_a_connections_cap_are_refused_and_store_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let limits = Limits { max_calls_per_connection: 2, upload_timeout: Duration::from_secs(600), ..Limits::default() };
    let server = start(dir.path(), limits).await;
    let worker_id = server.client().register(RegisterRequest::default()).await.unwrap().into_inner().worker_id;
    let request = SubmitGamesRequest { idempotency_key: "k".into(), worker_id, games: vec![draw(1)] };
    let mut raw = Raw::connect(server.running.addr()).await;
    let mut stalls = vec![raw.stall("SubmitGames", 100, 0).await, raw.stall("SubmitGames", 100, 0).await];
    for (answer, _) in &mut stalls {
        assert!(still_waiting(answer).await, "a stalled call is not answered");
    }
    // Calls on one connection are taken up in no set order: wait until the stalled two hold
    // their slots, which a call that stores nothing finds out.
    with_timeout(async {
        while raw.unary("GetStats", &GetStatsRequest {}).await.0 == Code::Ok {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    })
    .await;
    let (code, message) = with_timeout(raw.unary("SubmitGames", &request)).await;
    assert_eq!(code, Code::Unavailable, "{message}");
    assert!(message.contains("2 calls in flight") && message.contains("max_calls_per_connection"), "{message}");
    // Once the stalled calls are given up, the same request is taken, once.
    for (_, body) in &mut stalls {
        body.send_reset(h2::Reason::CANCEL);
    }
    let taken = with_timeout(async {
        loop {
            match raw.unary("SubmitGames", &request).await {
                (Code::Unavailable, _) => tokio::time::sleep(Duration::from_millis(20)).await,
                answer => return answer,
            }
        }
    })
    .await;
    assert_eq!(taken.0, Code::Ok, "{}", taken.1);
    assert_eq!(server.stop(dir.path()).await, vec![[1; 16]]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_past_the_cap_wait_until_one_closes() {
    let dir = tempfile::tempdir().unwrap();
    let server = start(dir.path(), Limits { max_connections: 2, ..Limits::default() }).await;
    let mut first = server.client();
    let mut second = server.client();
    first.get_stats(GetStatsRequest {}).await.unwrap();
    second.get_stats(GetStatsRequest {}).await.unwrap();
    let mut third = server.client();
    let mut waiting = tokio::spawn(async move { third.get_stats(GetStatsRequest {}).await.map(drop) });
    assert!(still_waiting(&mut waiting).await, "a third connection is not served while two are open");
    drop(first);
    with_timeout(waiting).await.unwrap().unwrap();
    // The second connection was served throughout.
    second.get_stats(GetStatsRequest {}).await.unwrap();
    server.stop(dir.path()).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_connections_are_closed_for_an_honest_upload_while_a_model_watch_stays_open() {
    let dir = tempfile::tempdir().unwrap();
    let limits = Limits { max_connections: 3, idle_timeout: Duration::from_millis(300), ..Limits::default() };
    let server = start(dir.path(), limits).await;
    let mut watcher = server.client();
    let mut watch = watcher.watch_models(WatchModelsRequest::default()).await.unwrap().into_inner();
    // A socket that never says a word, and an HTTP/2 connection that answers pings but calls nothing.
    let mut mute = TcpStream::connect(server.running.addr()).await.unwrap();
    let _pinging = Raw::connect(server.running.addr()).await;
    let mut honest = server.client();
    assert_eq!(with_timeout(honest_upload(&mut honest, "honest", 1)).await, 1);
    // The mute socket was closed (it read the server's HTTP/2 settings, then the end).
    let _ = with_timeout(mute.read_to_end(&mut Vec::new())).await;
    // The watch outlived several idle timeouts, still open and silent.
    assert!(still_waiting(watch.message()).await, "the watch ended");
    assert_eq!(server.stop(dir.path()).await, vec![[1; 16]]);
}
