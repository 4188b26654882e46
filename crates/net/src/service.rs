//! Batched inference: one thread owns the network on its device; any number of [`Client`]s submit
//! positions and get back priors over their legal moves and a win/draw/loss estimate.
//!
//! A batch is sent to the network when it reaches `max_batch` positions, when `max_wait` has passed
//! since its first position arrived, or at once when every live client is already waiting (no
//! position can arrive that would fill it). A position asked again while its answer is among the
//! last `cache_entries` is answered without a forward pass (as lc0's NN cache does): a search that
//! starts a fresh tree each move asks again for much of the last move's tree. Dropping or [`InferenceService::shutdown`] answers the
//! queued requests, stops the thread and makes later requests fail with [`ServiceError::Closed`].
//!
//! ```
//! use xqz_net::service::{InferenceService, Query, ServiceConfig};
//! use xqz_net::{ModelConfig, Network, encoding::History};
//!
//! let net = Network::new(&ModelConfig::builtin("tiny")?, tch::Device::Cpu);
//! let service = InferenceService::spawn(net, ServiceConfig::default());
//! let client = service.client();
//! let pos = xiangqi::Position::startpos();
//! let eval = client.evaluate(Query::new(&pos, History::default()))?;
//! assert_eq!(eval.priors.len(), pos.legal_moves().len());
//! assert!((eval.priors.iter().sum::<f32>() - 1.0).abs() < 1e-4);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::{HashMap, VecDeque};
use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, SyncSender};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use xiangqi::game::Game;
use xiangqi::{Move, Position};

pub use xqz_mcts::Evaluation;

use crate::encoding::{self, History, INPUT_SIZE};
use crate::model::Network;
use crate::policy::{self, POLICY_SIZE};

/// When batches are sent to the network.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct ServiceConfig {
    /// Most positions in one forward pass.
    pub max_batch: usize,
    /// Longest a position waits for others to join its batch.
    pub max_wait: Duration,
    /// Answers kept to answer a position asked again without a forward pass (0: none), the
    /// oldest dropped first; about 300 bytes each.
    pub cache_entries: usize,
}

impl Default for ServiceConfig {
    fn default() -> ServiceConfig {
        ServiceConfig { max_batch: 256, max_wait: Duration::from_millis(2), cache_entries: 1 << 16 }
    }
}

/// A position to evaluate, encoded by the caller's thread.
#[derive(Clone, Debug)]
pub struct Query {
    input: Vec<f32>,
    /// A hash of `input`, computed by the caller's thread: the cache's key.
    key: u64,
    /// Policy indices of the legal moves, in the network's frame, in the caller's move order.
    legal: Vec<u16>,
}

impl Query {
    /// A position with its history; priors come back in `pos.legal_moves()` order.
    pub fn new(pos: &Position, history: History) -> Query {
        Query::with_moves(pos, history, &pos.legal_moves())
    }

    /// A game's current position; priors come back in `game.legal_moves()` order.
    pub fn from_game(game: &Game) -> Query {
        Query::with_moves(game.position(), History::of_game(game), game.legal_moves())
    }

    /// A position whose legal moves the caller already has; priors come back in `moves` order.
    ///
    /// # Panics
    /// If a move has no policy index (no piece could ever make it).
    pub fn with_moves(pos: &Position, history: History, moves: &[Move]) -> Query {
        let mut input = vec![0.0; INPUT_SIZE];
        encoding::encode_position(pos, history, &mut input);
        let turn = pos.turn();
        let legal = moves
            .iter()
            .map(|&mv| policy::index_for(mv, turn).unwrap_or_else(|| panic!("move {mv} has no policy index")) as u16)
            .collect();
        Query { key: input_hash(&input), input, legal }
    }
}

/// A 64-bit hash of a network input (FxHash's step over the floats' bits, then a finalizer).
fn input_hash(input: &[f32]) -> u64 {
    const K: u64 = 0x51_7c_c1_b7_27_22_0a_95;
    let mut h = input.len() as u64;
    for pair in input.chunks(2) {
        let word = pair.iter().fold(0u64, |w, x| (w << 32) | u64::from(x.to_bits()));
        h = (h.rotate_left(5) ^ word).wrapping_mul(K);
    }
    // SplitMix64's finalizer, so that every input bit reaches every key bit.
    h = (h ^ (h >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    h = (h ^ (h >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    h ^ (h >> 31)
}

/// The last answers, by their query's key; the oldest is dropped first.
struct Cache {
    capacity: usize,
    answers: HashMap<u64, (Vec<u16>, Evaluation)>,
    order: VecDeque<u64>,
}

impl Cache {
    fn new(capacity: usize) -> Cache {
        Cache { capacity, answers: HashMap::new(), order: VecDeque::new() }
    }

    /// The answer to `query` if kept (for the same legal moves in the same order).
    fn get(&self, query: &Query) -> Option<Evaluation> {
        let (legal, answer) = self.answers.get(&query.key)?;
        (*legal == query.legal).then(|| answer.clone())
    }

    fn insert(&mut self, query: &Query, answer: &Evaluation) {
        if self.capacity == 0 {
            return;
        }
        if self.answers.insert(query.key, (query.legal.clone(), answer.clone())).is_none() {
            self.order.push_back(query.key);
            if self.order.len() > self.capacity
                && let Some(oldest) = self.order.pop_front()
            {
                self.answers.remove(&oldest);
            }
        }
    }

    fn clear(&mut self) {
        self.answers.clear();
        self.order.clear();
    }
}

/// Why a request was not answered.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ServiceError {
    /// The service has shut down.
    #[error("the inference service has shut down")]
    Closed,
    /// The network failed on the batch holding this request.
    #[error("the network failed: {0}")]
    Model(String),
}

/// Counters of the work done so far.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct ServiceStats {
    /// Forward passes.
    pub batches: u64,
    /// Positions evaluated.
    pub positions: u64,
    /// Positions answered from the cache, without a forward pass.
    pub cached: u64,
}

struct Job {
    queries: Vec<Query>,
    reply: SyncSender<Result<Vec<Evaluation>, ServiceError>>,
}

enum Message {
    Evaluate(Job),
    Swap(Box<Network>),
    Shutdown,
}

#[derive(Default)]
struct Shared {
    clients: AtomicUsize,
    batches: AtomicU64,
    positions: AtomicU64,
    cached: AtomicU64,
}

/// The inference thread and its queue.
pub struct InferenceService {
    tx: Sender<Message>,
    shared: Arc<Shared>,
    worker: Option<JoinHandle<Network>>,
}

/// A handle that submits positions; each clone counts as one more caller.
pub struct Client {
    tx: Sender<Message>,
    shared: Arc<Shared>,
}

impl InferenceService {
    /// Starts the inference thread, which owns `net`.
    pub fn spawn(net: Network, config: ServiceConfig) -> InferenceService {
        assert!(config.max_batch > 0, "max_batch must be positive");
        let (tx, rx) = mpsc::channel();
        let shared = Arc::new(Shared::default());
        let worker = {
            let shared = Arc::clone(&shared);
            thread::Builder::new()
                .name("xqz-inference".into())
                .spawn(move || serve(net, rx, &shared, config))
                .expect("spawn the inference thread")
        };
        InferenceService { tx, shared, worker: Some(worker) }
    }

    /// A new caller.
    pub fn client(&self) -> Client {
        self.shared.clients.fetch_add(1, Ordering::SeqCst);
        Client { tx: self.tx.clone(), shared: Arc::clone(&self.shared) }
    }

    /// Replaces the network after the requests queued before this call are answered.
    pub fn swap(&self, net: Network) -> Result<(), ServiceError> {
        self.tx.send(Message::Swap(Box::new(net))).map_err(|_| ServiceError::Closed)
    }

    /// Batches and positions evaluated so far.
    pub fn stats(&self) -> ServiceStats {
        ServiceStats {
            batches: self.shared.batches.load(Ordering::Relaxed),
            positions: self.shared.positions.load(Ordering::Relaxed),
            cached: self.shared.cached.load(Ordering::Relaxed),
        }
    }

    /// Answers the queued requests, stops the thread and returns the network (`None` if the
    /// thread panicked).
    pub fn shutdown(mut self) -> Option<Network> {
        self.stop()
    }

    fn stop(&mut self) -> Option<Network> {
        let worker = self.worker.take()?;
        let _ = self.tx.send(Message::Shutdown);
        worker.join().ok()
    }
}

impl Drop for InferenceService {
    fn drop(&mut self) {
        self.stop();
    }
}

impl Client {
    /// Evaluates one position, waiting for its batch.
    pub fn evaluate(&self, query: Query) -> Result<Evaluation, ServiceError> {
        let mut answers = self.evaluate_many(vec![query])?;
        answers.pop().ok_or(ServiceError::Closed)
    }

    /// Evaluates several positions (one caller's share of a batch, e.g. many games' leaves).
    pub fn evaluate_many(&self, queries: Vec<Query>) -> Result<Vec<Evaluation>, ServiceError> {
        if queries.is_empty() {
            return Ok(Vec::new());
        }
        let (reply, answer) = mpsc::sync_channel(1);
        self.tx.send(Message::Evaluate(Job { queries, reply })).map_err(|_| ServiceError::Closed)?;
        answer.recv().map_err(|_| ServiceError::Closed)?
    }
}

impl Clone for Client {
    fn clone(&self) -> Client {
        self.shared.clients.fetch_add(1, Ordering::SeqCst);
        Client { tx: self.tx.clone(), shared: Arc::clone(&self.shared) }
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        self.shared.clients.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The inference thread's loop.
fn serve(mut net: Network, rx: Receiver<Message>, shared: &Shared, config: ServiceConfig) -> Network {
    let mut pending: Vec<Job> = Vec::new();
    let mut next: Option<Box<Network>> = None;
    let mut cache = Cache::new(config.cache_entries);
    let mut open = true;
    while open {
        let Ok(first) = rx.recv() else { break };
        let mut message = Some(first);
        let deadline = Instant::now() + config.max_wait;
        loop {
            match message.take() {
                Some(Message::Evaluate(job)) => pending.push(job),
                Some(Message::Swap(new)) => {
                    next = Some(new);
                    break;
                }
                Some(Message::Shutdown) => {
                    open = false;
                    break;
                }
                None => {}
            }
            let positions: usize = pending.iter().map(|j| j.queries.len()).sum();
            // Every live caller is waiting: nothing more can join this batch.
            if positions >= config.max_batch || pending.len() >= shared.clients.load(Ordering::SeqCst) {
                break;
            }
            match rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(m) => message = Some(m),
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => {
                    open = false;
                    break;
                }
            }
        }
        run(&net, &mut pending, shared, config.max_batch, &mut cache);
        if let Some(new) = next.take() {
            net = *new;
            cache.clear();
        }
    }
    // Answer what was queued before the shutdown.
    while let Ok(message) = rx.try_recv() {
        if let Message::Evaluate(job) = message {
            pending.push(job);
        }
    }
    run(&net, &mut pending, shared, config.max_batch, &mut cache);
    net
}

/// Answers the pending jobs: from the cache where it can, else in forward passes of at most
/// `max_batch`.
fn run(net: &Network, pending: &mut Vec<Job>, shared: &Shared, max_batch: usize, cache: &mut Cache) {
    if pending.is_empty() {
        return;
    }
    let kept: Vec<Vec<Option<Evaluation>>> =
        pending.iter().map(|job| job.queries.iter().map(|q| cache.get(q)).collect()).collect();
    let hits = kept.iter().flatten().filter(|k| k.is_some()).count();
    shared.cached.fetch_add(hits as u64, Ordering::Relaxed);
    let inputs: Vec<f32> = pending
        .iter()
        .zip(&kept)
        .flat_map(|(job, kept)| job.queries.iter().zip(kept))
        .filter(|(_, kept)| kept.is_none())
        .flat_map(|(q, _)| q.input.iter().copied())
        .collect();
    let outputs = panic::catch_unwind(AssertUnwindSafe(|| {
        let mut logits = Vec::with_capacity(inputs.len() / INPUT_SIZE * POLICY_SIZE);
        let mut wdl = Vec::with_capacity(inputs.len() / INPUT_SIZE * 3);
        for chunk in inputs.chunks(max_batch * INPUT_SIZE) {
            let out = net.predict_batch(chunk).map_err(|e| e.to_string())?;
            logits.extend_from_slice(&out.policy_logits);
            wdl.extend_from_slice(&out.wdl);
            shared.batches.fetch_add(1, Ordering::Relaxed);
            shared.positions.fetch_add(out.n as u64, Ordering::Relaxed);
        }
        Ok((logits, wdl))
    }))
    .unwrap_or_else(|panic| Err(panic_message(&panic)));
    let mut row = 0;
    for (job, kept) in pending.drain(..).zip(kept) {
        let answer = match &outputs {
            Ok((logits, wdl)) => Ok(job
                .queries
                .iter()
                .zip(kept)
                .map(|(q, kept)| {
                    kept.unwrap_or_else(|| {
                        let r = row;
                        row += 1;
                        let answer = Evaluation {
                            priors: legal_softmax(&logits[r * POLICY_SIZE..(r + 1) * POLICY_SIZE], &q.legal),
                            wdl: [wdl[3 * r], wdl[3 * r + 1], wdl[3 * r + 2]],
                        };
                        cache.insert(q, &answer);
                        answer
                    })
                })
                .collect()),
            Err(message) => Err(ServiceError::Model(message.clone())),
        };
        // A caller that gave up is no loss.
        let _ = job.reply.send(answer);
    }
}

/// Softmax of the logits at the legal moves' indices.
fn legal_softmax(logits: &[f32], legal: &[u16]) -> Vec<f32> {
    let max = legal.iter().map(|&i| logits[i as usize]).fold(f32::NEG_INFINITY, f32::max);
    let mut priors: Vec<f32> = legal.iter().map(|&i| (logits[i as usize] - max).exp()).collect();
    let sum: f32 = priors.iter().sum();
    priors.iter_mut().for_each(|p| *p /= sum);
    priors
}

fn panic_message(panic: &Box<dyn std::any::Any + Send>) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "panic in the inference thread".to_string())
}

/// The service as the search's evaluator: each search thread holds its own client.
impl xqz_mcts::Evaluator for Client {
    fn evaluate(&mut self, games: &[&Game]) -> Result<Vec<Evaluation>, xqz_mcts::EvalError> {
        let queries = games.iter().map(|g| Query::from_game(g)).collect();
        self.evaluate_many(queries).map_err(|e| xqz_mcts::EvalError(e.to_string()))
    }
}
