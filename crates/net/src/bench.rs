//! Throughput measurements for `xqz bench net`: the network alone at fixed batch sizes, and the
//! batching service under many concurrent callers.

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use xiangqi::game::{Game, GameConfig};

use crate::encoding::{self, History, INPUT_SIZE};
use crate::model::{BatchPrediction, Network};
use crate::service::{InferenceService, Query, ServiceConfig, ServiceStats};

/// Game positions from seeded random play, with their histories, as benchmark and test inputs.
pub fn sample_positions(count: usize, seed: u64) -> Vec<(xiangqi::Position, History)> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut out = Vec::with_capacity(count);
    while out.len() < count {
        let mut game = Game::new(GameConfig::default());
        let plies = rng.random_range(0..120);
        for _ in 0..plies {
            let Some(&mv) = game.legal_moves().choose(&mut rng) else { break };
            if game.outcome().is_over() {
                break;
            }
            game.push_unchecked(mv);
        }
        if !game.legal_moves().is_empty() && !game.outcome().is_over() {
            out.push((game.position().clone(), History::of_game(&game)));
        }
    }
    out
}

/// Positions per second of a network alone at one batch size (`predict`: the training graph's
/// [`Network::predict_batch`] or the inference graph's
/// [`InferenceNet::predict_batch`](crate::InferenceNet::predict_batch)): forward pass and copy of
/// the outputs to the host, on inputs encoded beforehand, repeated for about `duration`.
pub fn raw_throughput(
    predict: impl Fn(&[f32]) -> Result<BatchPrediction, tch::TchError>,
    positions: &[(xiangqi::Position, History)],
    batch: usize,
    duration: Duration,
) -> f64 {
    let mut inputs = vec![0.0; batch * INPUT_SIZE];
    for (i, chunk) in inputs.chunks_mut(INPUT_SIZE).enumerate() {
        let (pos, history) = &positions[i % positions.len()];
        encoding::encode_position(pos, *history, chunk);
    }
    predict(&inputs).expect("warm-up pass");
    let start = Instant::now();
    let mut evaluated = 0;
    while start.elapsed() < duration {
        predict(&inputs).expect("forward pass");
        evaluated += batch;
    }
    evaluated as f64 / start.elapsed().as_secs_f64()
}

/// What the batching service did under load.
#[derive(Copy, Clone, Debug)]
pub struct ServiceThroughput {
    /// Positions answered per second, encoding and legal-move priors included.
    pub positions_per_second: f64,
    /// Mean positions per forward pass.
    pub mean_batch: f64,
}

/// Runs `callers` threads that each evaluate one position at a time through a service on `net`
/// for about `duration`; returns the throughput and the network.
pub fn service_throughput(
    net: Network,
    positions: &[(xiangqi::Position, History)],
    callers: usize,
    config: ServiceConfig,
    duration: Duration,
) -> (ServiceThroughput, Network) {
    let service = InferenceService::spawn(net, config);
    let positions = Arc::new(positions.to_vec());
    // Warm up with one round from every caller before the clock starts.
    let run = |until: Option<Duration>| {
        let start = Instant::now();
        let handles: Vec<_> = (0..callers)
            .map(|c| {
                let client = service.client();
                let positions = Arc::clone(&positions);
                thread::spawn(move || {
                    let mut i = c;
                    let mut answered = 0u64;
                    loop {
                        let (pos, history) = &positions[i % positions.len()];
                        client.evaluate(Query::new(pos, *history)).expect("service answers");
                        answered += 1;
                        i += callers;
                        if until.is_none_or(|d| start.elapsed() >= d) {
                            return answered;
                        }
                    }
                })
            })
            .collect();
        let answered: u64 = handles.into_iter().map(|h| h.join().expect("caller thread")).sum();
        (answered, start.elapsed())
    };
    run(None);
    let before: ServiceStats = service.stats();
    let (answered, elapsed) = run(Some(duration));
    let after = service.stats();
    let net = service.shutdown().expect("inference thread ends cleanly");
    let batches = (after.batches - before.batches).max(1);
    let result = ServiceThroughput {
        positions_per_second: answered as f64 / elapsed.as_secs_f64(),
        mean_batch: (after.positions - before.positions) as f64 / batches as f64,
    };
    (result, net)
}
