//! Batched inference: inference threads own the network on its device; any number of
//! [`Client`]s submit positions and get back priors over their legal moves and a win/draw/loss
//! estimate.
//!
//! A batch is sent to the network when it reaches `max_batch` positions, when `max_wait` has
//! passed since its first position arrived, or at once when half the live clients are waiting:
//! the other half then fill the next batch while the network works on this one, and a client
//! that keeps several submissions in flight ([`Client::submit_many`]) overlaps its own search
//! with the network. On the CPU there is one inference thread per libtorch thread, each running
//! its batches single-threaded beside the others ([`ServiceConfig::threads`]). A position asked
//! again while its answer is among the last `cache_entries` is answered without a forward pass
//! (as lc0's NN cache does): a search that starts a fresh tree each move asks again for much of
//! the last move's tree. Dropping or [`InferenceService::shutdown`] answers the queued requests,
//! stops the threads and makes later requests fail with [`ServiceError::Closed`].
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
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

use xiangqi::game::Game;
use xiangqi::{Move, Position};

pub use xqz_mcts::Evaluation;

use crate::encoding::{self, History, INPUT_SIZE};
use crate::inference::{InferenceNet, Precision};
use crate::model::Network;
use crate::policy;

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
    /// Inference threads, each running its own batches with its own copy of the weights (0: one
    /// per libtorch thread on the CPU, one on CUDA). On the CPU they share libtorch's threads
    /// ([`tch::get_num_threads`] when the service starts) between them.
    pub threads: usize,
    /// The number format of the convolutions ([`Precision`]).
    pub precision: Precision,
}

impl Default for ServiceConfig {
    fn default() -> ServiceConfig {
        ServiceConfig {
            max_batch: 256,
            max_wait: Duration::from_millis(2),
            cache_entries: 1 << 16,
            threads: 0,
            precision: Precision::F32,
        }
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

/// The last answers of one model, by their query's key; the oldest is dropped first.
struct Cache {
    capacity: usize,
    /// The model generation the answers come from.
    generation: u64,
    answers: HashMap<u64, (Vec<u16>, Evaluation)>,
    order: VecDeque<u64>,
}

impl Cache {
    fn new(capacity: usize) -> Cache {
        Cache { capacity, generation: 0, answers: HashMap::new(), order: VecDeque::new() }
    }

    /// The answer of model `generation` to `query` if kept (for the same legal moves in the
    /// same order).
    fn get(&self, query: &Query, generation: u64) -> Option<Evaluation> {
        if generation != self.generation {
            return None;
        }
        let (legal, answer) = self.answers.get(&query.key)?;
        (*legal == query.legal).then(|| answer.clone())
    }

    /// Keeps an answer of model `generation`; the answers of older models go.
    fn insert(&mut self, query: &Query, answer: &Evaluation, generation: u64) {
        if self.capacity == 0 || generation < self.generation {
            return;
        }
        if generation > self.generation {
            self.clear();
            self.generation = generation;
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

/// What the service and its clients share: the count of callers and the work done.
#[derive(Default)]
struct Shared {
    /// Inference threads.
    threads: usize,
    clients: AtomicUsize,
    batches: AtomicU64,
    positions: AtomicU64,
    cached: AtomicU64,
}

/// What the inference threads share.
struct Pool {
    /// The queue's receiving end: the thread that holds it forms the next batch.
    queue: Mutex<Receiver<Message>>,
    /// The network answers come from, with its generation (raised by each swap). Each thread
    /// builds its own inference graph of it.
    model: Mutex<Option<(u64, Network)>>,
    cache: Mutex<Cache>,
    /// Set once the queue is shut down or has no senders left: no batch forms after it.
    closed: AtomicBool,
    config: ServiceConfig,
}

/// The inference threads and their queue.
pub struct InferenceService {
    tx: Sender<Message>,
    shared: Arc<Shared>,
    pool: Arc<Pool>,
    workers: Vec<JoinHandle<()>>,
}

/// A handle that submits positions; each clone counts as one more caller.
pub struct Client {
    tx: Sender<Message>,
    shared: Arc<Shared>,
}

impl InferenceService {
    /// Starts the inference threads, which serve `net`.
    pub fn spawn(net: Network, config: ServiceConfig) -> InferenceService {
        assert!(config.max_batch > 0, "max_batch must be positive");
        let torch_threads = usize::try_from(tch::get_num_threads()).unwrap_or(1).max(1);
        let threads = match (config.threads, net.device()) {
            (0, tch::Device::Cpu) => torch_threads,
            (0, _) => 1,
            (n, _) => n,
        };
        // On the CPU each thread runs its batches on its share of libtorch's threads: batches
        // that run side by side keep every core busy while callers walk their trees, where one
        // batch on every core at a time would wait at each layer for a core a caller holds.
        let per_thread = (net.device() == tch::Device::Cpu).then(|| (torch_threads / threads).max(1));
        let (tx, rx) = mpsc::channel();
        let shared = Arc::new(Shared { threads, ..Shared::default() });
        let pool = Arc::new(Pool {
            queue: Mutex::new(rx),
            model: Mutex::new(Some((0, net))),
            cache: Mutex::new(Cache::new(config.cache_entries)),
            closed: AtomicBool::new(false),
            config,
        });
        let workers = (0..threads)
            .map(|i| {
                let (shared, pool) = (Arc::clone(&shared), Arc::clone(&pool));
                thread::Builder::new()
                    .name("xqz-inference".into())
                    .spawn(move || {
                        if let Some(n) = per_thread {
                            tch::set_num_threads(i32::try_from(n).unwrap_or(1));
                        }
                        serve(&pool, &shared);
                    })
                    .unwrap_or_else(|e| panic!("spawn inference thread {i}: {e}"))
            })
            .collect();
        InferenceService { tx, shared, pool, workers }
    }

    /// A new caller.
    pub fn client(&self) -> Client {
        self.shared.clients.fetch_add(1, Ordering::SeqCst);
        Client { tx: self.tx.clone(), shared: Arc::clone(&self.shared) }
    }

    /// Replaces the network: requests queued after this call are answered by `net`.
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

    /// Answers the queued requests, stops the threads and returns the network (`None` if a
    /// thread panicked).
    pub fn shutdown(mut self) -> Option<Network> {
        if !self.stop() {
            return None;
        }
        self.pool.model.lock().unwrap_or_else(|e| e.into_inner()).take().map(|(_, net)| net)
    }

    /// Stops the threads once the queued requests are answered; whether they all ended cleanly.
    fn stop(&mut self) -> bool {
        if self.workers.is_empty() {
            return true;
        }
        let _ = self.tx.send(Message::Shutdown);
        // Every thread is joined, whether or not one before it panicked.
        let joined: Vec<bool> = self.workers.drain(..).map(|worker| worker.join().is_ok()).collect();
        joined.into_iter().all(|clean| clean)
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
        self.submit_many(queries)?.wait()
    }

    /// Queues several positions and returns at once; [`Answers::wait`] gives their evaluations.
    /// A caller may have several submissions in flight, and fill the next while the network
    /// works on the last.
    pub fn submit_many(&self, queries: Vec<Query>) -> Result<Answers, ServiceError> {
        if queries.is_empty() {
            return Ok(Answers(None));
        }
        let (reply, answer) = mpsc::sync_channel(1);
        self.tx.send(Message::Evaluate(Job { queries, reply })).map_err(|_| ServiceError::Closed)?;
        Ok(Answers(Some(answer)))
    }
}

/// The evaluations of a [`Client::submit_many`], on their way.
#[derive(Debug)]
pub struct Answers(Option<Receiver<Result<Vec<Evaluation>, ServiceError>>>);

impl Answers {
    /// Blocks until the evaluations are there.
    pub fn wait(self) -> Result<Vec<Evaluation>, ServiceError> {
        match self.0 {
            None => Ok(Vec::new()),
            Some(answer) => answer.recv().map_err(|_| ServiceError::Closed)?,
        }
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

/// A batch of jobs, and the generation of the model they are to be answered by (or a later one).
struct Batch {
    jobs: Vec<Job>,
    generation: u64,
}

/// One inference thread's loop: forms a batch while it holds the queue, then runs it.
fn serve(pool: &Pool, shared: &Shared) {
    let precision = pool.config.precision;
    let graph_of = |model: &Option<(u64, Network)>| {
        model.as_ref().map(|(generation, net)| (*generation, InferenceNet::with_precision(net, precision)))
    };
    let Some((mut generation, mut graph)) = graph_of(&pool.model.lock().unwrap_or_else(|e| e.into_inner())) else {
        return;
    };
    while let Some(mut batch) = next_batch(pool, shared) {
        if generation < batch.generation
            && let Some((g, new)) = graph_of(&pool.model.lock().unwrap_or_else(|e| e.into_inner()))
        {
            (generation, graph) = (g, new);
        }
        run(&graph, generation, &mut batch.jobs, shared, pool);
    }
}

/// Waits for the next batch (see the module docs for when it goes); `None` once the service
/// has shut down. A swap met on the way installs the new model before the queue is let go, so
/// that every request queued after it is answered by it.
fn next_batch(pool: &Pool, shared: &Shared) -> Option<Batch> {
    let queue = pool.queue.lock().unwrap_or_else(|e| e.into_inner());
    let generation = || pool.model.lock().unwrap_or_else(|e| e.into_inner()).as_ref().map_or(0, |m| m.0);
    let mut batch = Batch { jobs: Vec::new(), generation: generation() };
    while batch.jobs.is_empty() {
        if pool.closed.load(Ordering::SeqCst) {
            return None;
        }
        let Ok(first) = queue.recv() else {
            pool.closed.store(true, Ordering::SeqCst);
            return None;
        };
        let mut message = Some(first);
        let deadline = Instant::now() + pool.config.max_wait;
        loop {
            match message.take() {
                Some(Message::Evaluate(job)) => batch.jobs.push(job),
                Some(Message::Swap(new)) => {
                    let mut model = pool.model.lock().unwrap_or_else(|e| e.into_inner());
                    let next = model.as_ref().map_or(0, |m| m.0) + 1;
                    *model = Some((next, *new));
                    // The jobs queued before the swap go with the old model.
                    if !batch.jobs.is_empty() {
                        return Some(batch);
                    }
                    batch.generation = next;
                }
                Some(Message::Shutdown) => {
                    // Answer what was queued before the shutdown.
                    while let Ok(message) = queue.try_recv() {
                        if let Message::Evaluate(job) = message {
                            batch.jobs.push(job);
                        }
                    }
                    pool.closed.store(true, Ordering::SeqCst);
                    return (!batch.jobs.is_empty()).then_some(batch);
                }
                None => {}
            }
            let positions: usize = batch.jobs.iter().map(|j| j.queries.len()).sum();
            // Half the live callers are waiting: the batch goes, and the other half fills the
            // next one while the network works on this one (callers that wait in step would
            // leave the network idle while they walk their trees, and their trees while it runs).
            let callers = shared.clients.load(Ordering::SeqCst);
            if !batch.jobs.is_empty() && (positions >= pool.config.max_batch || batch.jobs.len() >= callers.div_ceil(2))
            {
                break;
            }
            match queue.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(m) => message = Some(m),
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => {
                    pool.closed.store(true, Ordering::SeqCst);
                    break;
                }
            }
        }
    }
    Some(batch)
}

/// Answers the jobs with the model of `generation`: from the cache where it can, else in
/// forward passes of at most `max_batch`.
fn run(net: &InferenceNet, generation: u64, jobs: &mut Vec<Job>, shared: &Shared, pool: &Pool) {
    if jobs.is_empty() {
        return;
    }
    let kept: Vec<Vec<Option<Evaluation>>> = {
        let cache = pool.cache.lock().unwrap_or_else(|e| e.into_inner());
        jobs.iter().map(|job| job.queries.iter().map(|q| cache.get(q, generation)).collect()).collect()
    };
    let hits = kept.iter().flatten().filter(|k| k.is_some()).count();
    shared.cached.fetch_add(hits as u64, Ordering::Relaxed);
    let misses: Vec<&Query> = jobs
        .iter()
        .zip(&kept)
        .flat_map(|(job, kept)| job.queries.iter().zip(kept))
        .filter(|(_, k)| k.is_none())
        .map(|(q, _)| q)
        .collect();
    let max_batch = pool.config.max_batch;
    let outputs = panic::catch_unwind(AssertUnwindSafe(|| {
        let mut answers = Vec::with_capacity(misses.len());
        let mut inputs = Vec::with_capacity(misses.len().min(max_batch) * INPUT_SIZE);
        for chunk in misses.chunks(max_batch) {
            inputs.clear();
            chunk.iter().for_each(|q| inputs.extend_from_slice(&q.input));
            let legal: Vec<&[u16]> = chunk.iter().map(|q| q.legal.as_slice()).collect();
            let out = net.predict_legal(&inputs, &legal).map_err(|e| e.to_string())?;
            answers.extend(
                out.logits.iter().zip(out.wdl).map(|(logits, wdl)| Evaluation { priors: softmax(logits), wdl }),
            );
            shared.batches.fetch_add(1, Ordering::Relaxed);
            shared.positions.fetch_add(chunk.len() as u64, Ordering::Relaxed);
        }
        Ok(answers)
    }))
    .unwrap_or_else(|panic| Err(panic_message(&panic)));
    let mut cache = pool.cache.lock().unwrap_or_else(|e| e.into_inner());
    let mut fresh = match outputs {
        Ok(answers) => Ok(answers.into_iter()),
        Err(message) => Err(ServiceError::Model(message)),
    };
    for (job, kept) in jobs.drain(..).zip(kept) {
        let answer = match &mut fresh {
            Ok(fresh) => Ok(job
                .queries
                .iter()
                .zip(kept)
                .map(|(q, kept)| {
                    kept.unwrap_or_else(|| {
                        let answer = fresh.next().expect("an answer for each position sent");
                        cache.insert(q, &answer, generation);
                        answer
                    })
                })
                .collect()),
            Err(e) => Err(e.clone()),
        };
        // A caller that gave up is no loss.
        let _ = job.reply.send(answer);
    }
}

/// Softmax of the legal moves' logits.
fn softmax(logits: &[f32]) -> Vec<f32> {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut priors: Vec<f32> = logits.iter().map(|&l| (l - max).exp()).collect();
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
        xqz_mcts::Evaluator::submit(self, games).wait()
    }

    fn submit(&mut self, games: &[&Game]) -> xqz_mcts::Pending {
        let failed = |e: ServiceError| xqz_mcts::EvalError(e.to_string());
        let queries = games.iter().map(|g| Query::from_game(g)).collect();
        match self.submit_many(queries) {
            Ok(answers) => xqz_mcts::Pending::later(move || answers.wait().map_err(failed)),
            Err(e) => xqz_mcts::Pending::ready(Err(failed(e))),
        }
    }

    /// One batch for each inference thread, and one the caller fills meanwhile.
    fn batches_in_flight(&self) -> usize {
        self.shared.threads + 1
    }
}
