//! The batching inference service: each caller gets its own answer under concurrency, batches form
//! without waiting for callers that cannot come, shutdown and model swaps.

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use xqz_net::bench::sample_positions;
use xqz_net::encoding::{self, History, INPUT_SIZE};
use xqz_net::policy;
use xqz_net::service::{Evaluation, InferenceService, Query, ServiceConfig, ServiceError};
use xqz_net::{Device, ModelConfig, Network};

fn tiny_net(seed: i64) -> Network {
    tch::manual_seed(seed);
    Network::new(&ModelConfig::builtin("tiny").unwrap(), Device::Cpu)
}

/// The answer computed directly from the network, one position at a time.
fn direct(net: &Network, pos: &xiangqi::Position, history: History) -> Evaluation {
    let mut input = vec![0.0; INPUT_SIZE];
    encoding::encode_position(pos, history, &mut input);
    let out = net.predict(&input).unwrap();
    let logits: Vec<f32> =
        pos.legal_moves().iter().map(|&mv| out.policy_logits[policy::index_for(mv, pos.turn()).unwrap()]).collect();
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let sum: f32 = logits.iter().map(|l| (l - max).exp()).sum();
    Evaluation { priors: logits.iter().map(|l| (l - max).exp() / sum).collect(), wdl: out.wdl }
}

fn assert_close(a: &Evaluation, b: &Evaluation, what: &str) {
    assert_eq!(a.priors.len(), b.priors.len(), "{what}: different move counts");
    for (x, y) in a.priors.iter().zip(&b.priors).chain(a.wdl.iter().zip(&b.wdl)) {
        assert!((x - y).abs() < 1e-4, "{what}: {a:?} vs {b:?}");
    }
}

#[test]
fn each_caller_gets_its_own_answer_under_concurrency() {
    let net = tiny_net(1);
    let positions = Arc::new(sample_positions(96, 11));
    let expected: Arc<Vec<Evaluation>> = Arc::new(positions.iter().map(|(p, h)| direct(&net, p, *h)).collect());
    // Two inference threads, each with its own batches.
    let service = InferenceService::spawn(
        net,
        ServiceConfig {
            max_batch: 16,
            max_wait: Duration::from_millis(5),
            cache_entries: 0,
            threads: 2,
            ..ServiceConfig::default()
        },
    );
    let callers: Vec<_> = (0..24)
        .map(|c| {
            let client = service.client();
            let (positions, expected) = (Arc::clone(&positions), Arc::clone(&expected));
            thread::spawn(move || {
                for round in 0..20 {
                    let i = (c * 7 + round * 5) % positions.len();
                    let (pos, history) = &positions[i];
                    let got = client.evaluate(Query::new(pos, *history)).unwrap();
                    assert_close(&got, &expected[i], &format!("caller {c} round {round} position {i}"));
                }
                // Several positions in one request come back in order.
                let picks = [c % 96, (c + 31) % 96, (c + 64) % 96];
                let queries = picks.iter().map(|&i| Query::new(&positions[i].0, positions[i].1)).collect();
                for (got, &i) in client.evaluate_many(queries).unwrap().iter().zip(&picks) {
                    assert_close(got, &expected[i], &format!("caller {c} many {i}"));
                }
            })
        })
        .collect();
    for caller in callers {
        caller.join().unwrap();
    }
    let stats = service.stats();
    assert_eq!(stats.positions, 24 * 23);
    assert!(stats.batches < stats.positions, "no batching happened: {stats:?}");
}

#[test]
fn a_lone_caller_does_not_wait_for_a_batch_that_cannot_fill() {
    let service = InferenceService::spawn(
        tiny_net(2),
        ServiceConfig {
            max_batch: 256,
            max_wait: Duration::from_secs(60),
            cache_entries: 0,
            threads: 1,
            ..ServiceConfig::default()
        },
    );
    let client = service.client();
    let (pos, history) = &sample_positions(1, 3)[0];
    let start = Instant::now();
    for _ in 0..5 {
        client.evaluate(Query::new(pos, *history)).unwrap();
    }
    assert!(start.elapsed() < Duration::from_secs(30), "waited {:?} for batches of one", start.elapsed());
    assert_eq!(service.stats().batches, 5);

    // Four callers: a batch goes as soon as two of them wait, so none waits for max_wait.
    drop(client);
    let clients: Vec<_> = (0..4).map(|_| service.client()).collect();
    let start = Instant::now();
    thread::scope(|s| {
        for client in &clients {
            s.spawn(|| client.evaluate(Query::new(pos, *history)).unwrap());
        }
    });
    assert!(start.elapsed() < Duration::from_secs(30), "waited {:?}", start.elapsed());
    assert_eq!(service.stats().positions, 9);
}

#[test]
fn shutdown_answers_queued_requests_then_refuses() {
    let service = InferenceService::spawn(
        tiny_net(3),
        ServiceConfig {
            max_batch: 8,
            max_wait: Duration::from_secs(10),
            cache_entries: 0,
            threads: 2,
            ..ServiceConfig::default()
        },
    );
    let client = service.client();
    let idle = service.client();
    let (pos, history) = sample_positions(1, 4)[0].clone();
    // With an idle second client, this request waits for max_wait: shut down meanwhile. The
    // wait is long, so that the request is queued before the shutdown even on a loaded machine
    // (with 50 ms and 10 ms here, it sometimes was not).
    let waiter = {
        let client = client.clone();
        let pos = pos.clone();
        thread::spawn(move || client.evaluate(Query::new(&pos, history)))
    };
    thread::sleep(Duration::from_millis(500));
    let net = service.shutdown();
    assert!(net.is_some());
    assert!(waiter.join().unwrap().is_ok(), "a request queued before shutdown was not answered");
    assert_eq!(client.evaluate(Query::new(&pos, history)), Err(ServiceError::Closed));
    drop(idle);
}

#[test]
fn a_position_asked_again_is_answered_from_the_cache() {
    let net = tiny_net(7);
    let positions = sample_positions(5, 8);
    let expected: Vec<Evaluation> = positions.iter().map(|(p, h)| direct(&net, p, *h)).collect();
    let config = ServiceConfig { cache_entries: 3, ..ServiceConfig::default() };
    let service = InferenceService::spawn(net, config);
    let client = service.client();
    let ask = |i: usize| client.evaluate(Query::new(&positions[i].0, positions[i].1)).unwrap();
    for i in [0, 1, 0, 1] {
        assert_close(&ask(i), &expected[i], &format!("position {i}"));
    }
    let stats = service.stats();
    assert_eq!((stats.positions, stats.cached), (2, 2), "{stats:?}");
    // Three answers are kept: after three more positions, the first is asked of the network again.
    for i in [2, 3, 4, 0] {
        assert_close(&ask(i), &expected[i], &format!("position {i}"));
    }
    let stats = service.stats();
    assert_eq!((stats.positions, stats.cached), (6, 2), "{stats:?}");
    // The same position with another history is another input.
    let (pos, history) = &positions[4];
    let other = History { repetitions: history.repetitions + 1, ..*history };
    client.evaluate(Query::new(pos, other)).unwrap();
    assert_eq!(service.stats().positions, 7);
    // Or with its legal moves in another order: answered in that order.
    let mut moves = pos.legal_moves().to_vec();
    moves.reverse();
    let reversed = client.evaluate(Query::with_moves(pos, *history, &moves)).unwrap();
    let mut priors = expected[4].priors.clone();
    priors.reverse();
    assert_close(&reversed, &Evaluation { priors, wdl: expected[4].wdl }, "moves reversed");
}

#[test]
fn swapping_the_model_changes_the_answers() {
    let (first, second) = (tiny_net(4), tiny_net(5));
    let (pos, history) = sample_positions(1, 6)[0].clone();
    let (a, b) = (direct(&first, &pos, history), direct(&second, &pos, history));
    // Two threads, each with its own copy of the model, and the cache on: no thread and no
    // cached answer may give the first model's answer after the swap.
    let service = InferenceService::spawn(first, ServiceConfig { threads: 2, ..ServiceConfig::default() });
    let client = service.client();
    assert_close(&client.evaluate(Query::new(&pos, history)).unwrap(), &a, "first model");
    service.swap(second).unwrap();
    for round in 0..6 {
        let pending: Vec<_> = (0..2).map(|_| client.submit_many(vec![Query::new(&pos, history)]).unwrap()).collect();
        for answers in pending {
            assert_close(&answers.wait().unwrap()[0], &b, &format!("second model, round {round}"));
        }
    }
}

#[test]
fn a_caller_keeps_several_submissions_in_flight() {
    let net = tiny_net(8);
    let positions = sample_positions(6, 9);
    let expected: Vec<Evaluation> = positions.iter().map(|(p, h)| direct(&net, p, *h)).collect();
    let service = InferenceService::spawn(net, ServiceConfig { threads: 2, ..ServiceConfig::default() });
    let client = service.client();
    // All three go before any answer is read; each comes back with its own positions, in order.
    let pending: Vec<_> = positions
        .chunks(2)
        .map(|pair| client.submit_many(pair.iter().map(|(p, h)| Query::new(p, *h)).collect()).unwrap())
        .collect();
    for (i, answers) in pending.into_iter().enumerate() {
        for (j, got) in answers.wait().unwrap().iter().enumerate() {
            assert_close(got, &expected[2 * i + j], &format!("submission {i}, position {j}"));
        }
    }
    assert_eq!(client.submit_many(Vec::new()).unwrap().wait().unwrap(), Vec::new());
    assert_eq!(xqz_mcts::Evaluator::batches_in_flight(&client), 3);
}

#[test]
fn queries_from_a_game_use_its_history() {
    let mut game = xiangqi::game::Game::new(Default::default());
    for mv in ["h2e2", "h9g7", "e2h2", "g7h9"] {
        game.push_str(mv).unwrap();
    }
    let net = tiny_net(6);
    let expected = direct(&net, game.position(), History { quiet_plies: 4, repetitions: 1 });
    let service = InferenceService::spawn(net, ServiceConfig::default());
    assert_close(&service.client().evaluate(Query::from_game(&game)).unwrap(), &expected, "game query");
}
