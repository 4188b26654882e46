//! The network, its training step and its checkpoints (libtorch on the CPU, `tiny` model).

use std::fs;
use std::path::Path;

use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use xqz_net::bench::sample_positions;
use xqz_net::checkpoint::{self, CheckpointError, CheckpointInfo};
use xqz_net::encoding::{self, INPUT_SIZE};
use xqz_net::policy::{self, POLICY_SIZE};
use xqz_net::{
    Device, DeviceBatch, InferenceNet, ModelConfig, Network, Precision, StepLosses, TrainBatch, TrainConfig, Trainer,
};

fn tiny() -> ModelConfig {
    ModelConfig::builtin("tiny").unwrap()
}

/// A fixed batch: random positions, a one-hot target on a random legal move, a random result.
struct Data {
    inputs: Vec<f32>,
    policy: Vec<f32>,
    legal: Vec<f32>,
    wdl: Vec<f32>,
}

impl Data {
    fn new(rows: usize, seed: u64) -> Data {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let positions = sample_positions(rows, seed);
        let mut data = Data {
            inputs: vec![0.0; rows * INPUT_SIZE],
            policy: vec![0.0; rows * POLICY_SIZE],
            legal: vec![0.0; rows * POLICY_SIZE],
            wdl: vec![0.0; rows * 3],
        };
        for (r, (pos, history)) in positions.iter().enumerate() {
            encoding::encode_position(pos, *history, &mut data.inputs[r * INPUT_SIZE..(r + 1) * INPUT_SIZE]);
            for &mv in pos.legal_moves().iter() {
                data.legal[r * POLICY_SIZE + policy::index_for(mv, pos.turn()).unwrap()] = 1.0;
            }
            let mv = *pos.legal_moves().choose(&mut rng).unwrap();
            data.policy[r * POLICY_SIZE + policy::index_for(mv, pos.turn()).unwrap()] = 1.0;
            data.wdl[r * 3 + rng.random_range(0..3)] = 1.0;
        }
        data
    }

    fn batch(&self) -> TrainBatch<'_> {
        TrainBatch {
            inputs: &self.inputs,
            policy: &self.policy,
            legal: &self.legal,
            wdl: &self.wdl,
            plies_left: &[],
            reply: &[],
        }
    }
}

#[test]
fn tiny_net_overfits_a_fixed_batch() {
    tch::manual_seed(0);
    let data = Data::new(64, 1);
    let mut trainer = Trainer::new(
        Network::new(&tiny(), Device::Cpu),
        TrainConfig { learning_rate: 0.05, momentum: 0.9, weight_decay: 1e-4, ..TrainConfig::default() },
    );
    let first = trainer.step(&data.batch()).unwrap();
    let mut last = first;
    for _ in 0..300 {
        last = trainer.step(&data.batch()).unwrap();
    }
    assert!(last.total <= 0.2 * first.total, "loss fell from {:.3} to {:.3} only", first.total, last.total);
    assert_eq!(trainer.info().training_steps, 301);
    assert_eq!(trainer.info().samples_seen, 301 * 64);
}

#[test]
fn policy_surprise_weighting_trains_the_surprising_rows_harder() {
    // Row 0's target is even over its legal moves, about what a fresh network plays already; row
    // 1's is one move, a surprise. With the weighting, one step teaches row 1 more.
    let data = Data::new(2, 21);
    let mut policy = data.policy.clone();
    let legal = data.legal[..POLICY_SIZE].iter().sum::<f32>();
    for (target, &allowed) in policy[..POLICY_SIZE].iter_mut().zip(&data.legal[..POLICY_SIZE]) {
        *target = allowed / legal;
    }
    let surprising = TrainBatch {
        inputs: &data.inputs[INPUT_SIZE..],
        policy: &policy[POLICY_SIZE..],
        legal: &data.legal[POLICY_SIZE..],
        wdl: &data.wdl[3..],
        plies_left: &[],
        reply: &[],
    };
    let after_one_step = |policy_surprise: f32| {
        tch::manual_seed(7);
        let config = TrainConfig { learning_rate: 0.05, policy_surprise, ..TrainConfig::default() };
        let mut trainer = Trainer::new(Network::new(&tiny(), Device::Cpu), config);
        let reported = trainer.step(&TrainBatch { policy: &policy, ..data.batch() }).unwrap().policy;
        trainer.set_learning_rate(0.0);
        (reported, trainer.step(&surprising).unwrap().policy)
    };
    let (plain_reported, plain) = after_one_step(0.0);
    let (weighted_reported, weighted) = after_one_step(1.0);
    assert_eq!(plain_reported, weighted_reported, "the loss reported is the plain mean either way");
    assert!(weighted < plain - 1e-3, "the surprising row's loss after one step: {weighted} weighted, {plain} plain");
}

#[test]
fn the_policy_loss_is_taken_over_the_legal_moves_only() {
    // One legal move and its target: the loss is zero whatever the illegal moves' logits, and a
    // fresh network's uniform policy over two legal moves, a target on one, costs ln 2.
    let data = Data::new(1, 5);
    let mut trainer = Trainer::new(Network::new(&tiny(), Device::Cpu), TrainConfig::default());
    let target = data.policy.iter().position(|&p| p == 1.0).unwrap();
    let mut only = vec![0.0; POLICY_SIZE];
    only[target] = 1.0;
    let lone = TrainBatch { legal: &only, ..data.batch() };
    let losses = trainer.step(&lone).unwrap();
    assert!(losses.policy.abs() < 1e-6, "policy loss {}", losses.policy);
    let mut trainer = Trainer::new(Network::new(&tiny(), Device::Cpu), TrainConfig::default());
    let mut two = only.clone();
    two[(0..POLICY_SIZE).find(|&i| i != target && data.legal[i] == 1.0).unwrap()] = 1.0;
    let losses = trainer.step(&TrainBatch { legal: &two, ..data.batch() }).unwrap();
    assert!((losses.policy - std::f64::consts::LN_2).abs() < 1e-5, "policy loss {}", losses.policy);
}

#[test]
fn rows_without_a_policy_target_do_not_dilute_the_policy_loss() {
    // Playout cap randomization leaves most rows without a policy target: the loss is the mean
    // over the rows that have one. Four copies of one row (so that batch norm sees the same
    // statistics), with a target on all of them or on the first only, give the same loss.
    let data = Data::new(1, 9);
    let copies = |v: &[f32]| v.repeat(4);
    let (inputs, legal, wdl, all) =
        (copies(&data.inputs), copies(&data.legal), copies(&data.wdl), copies(&data.policy));
    let mut first = all.clone();
    first[POLICY_SIZE..].fill(0.0);
    let loss = |policy: &[f32]| {
        tch::manual_seed(3);
        let mut trainer = Trainer::new(Network::new(&tiny(), Device::Cpu), TrainConfig::default());
        trainer
            .step(&TrainBatch { inputs: &inputs, policy, legal: &legal, wdl: &wdl, plies_left: &[], reply: &[] })
            .unwrap()
            .policy
    };
    let (expected, diluted) = (loss(&all), loss(&first));
    assert!(expected > 1.0, "a fresh network's policy loss {expected}");
    assert!((diluted - expected).abs() < 1e-4, "{diluted} with target-less rows, {expected} without");
    assert_eq!(loss(&vec![0.0; all.len()]), 0.0);
}

#[test]
fn a_malformed_batch_is_refused() {
    let mut trainer = Trainer::new(Network::new(&tiny(), Device::Cpu), TrainConfig::default());
    let data = Data::new(4, 2);
    let short = TrainBatch { wdl: &data.wdl[..9], ..data.batch() };
    let err = trainer.step(&short).unwrap_err().to_string();
    assert!(err.contains("4 rows of inputs"), "{err}");
    let unflagged = TrainBatch { legal: &data.legal[..POLICY_SIZE], ..data.batch() };
    assert!(trainer.step(&unflagged).unwrap_err().to_string().contains("legal-move flags"));
    assert_eq!(trainer.info().training_steps, 0);
}

#[test]
fn the_inference_graph_gives_the_training_graphs_outputs() {
    // A few steps move the batch-norm statistics and the policy layer off their initial values,
    // so that folding them has something to fold.
    let data = Data::new(12, 9);
    let mut trainer = Trainer::new(Network::seeded(&tiny(), Device::Cpu, 9), TrainConfig::default());
    for _ in 0..3 {
        trainer.step(&data.batch()).unwrap();
    }
    let net = trainer.network();
    let fast = InferenceNet::new(net);
    let (expected, got) = (net.predict_batch(&data.inputs).unwrap(), fast.predict_batch(&data.inputs).unwrap());
    let close = |a: &[f32], b: &[f32]| a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-4 * (1.0 + x.abs()));
    assert!(close(&expected.policy_logits, &got.policy_logits), "policy logits differ");
    assert!(close(&expected.wdl, &got.wdl), "{:?} vs {:?}", expected.wdl, got.wdl);
    // The logits of chosen moves alone are the whole policy's at those moves, in the order asked.
    let legal: Vec<Vec<u16>> = data
        .legal
        .chunks(POLICY_SIZE)
        .map(|flags| flags.iter().enumerate().rev().filter(|(_, f)| **f > 0.0).map(|(i, _)| i as u16).collect())
        .collect();
    let slices: Vec<&[u16]> = legal.iter().map(Vec::as_slice).collect();
    let legal_only = fast.predict_legal(&data.inputs, &slices).unwrap();
    for (row, (moves, logits)) in legal.iter().zip(&legal_only.logits).enumerate() {
        let whole: Vec<f32> = moves.iter().map(|&i| expected.policy_logits[row * POLICY_SIZE + i as usize]).collect();
        assert!(close(&whole, logits), "row {row}: {whole:?} vs {logits:?}");
    }
    let wdl: Vec<f32> = legal_only.wdl.iter().flatten().copied().collect();
    assert!(close(&expected.wdl, &wdl));
    // In bfloat16 (8 bits of mantissa) the answers are near single precision's, not equal.
    let half = InferenceNet::with_precision(net, Precision::Bf16).predict_batch(&data.inputs).unwrap();
    let near = |a: &[f32], b: &[f32], tolerance: f32| a.iter().zip(b).all(|(x, y)| (x - y).abs() < tolerance);
    assert!(near(&expected.policy_logits, &half.policy_logits, 0.1), "bf16 policy logits far off");
    assert!(near(&expected.wdl, &half.wdl, 0.02), "{:?} vs {:?}", expected.wdl, half.wdl);
    assert_ne!(expected.policy_logits, half.policy_logits, "bf16 rounds");
}

fn outputs(net: &Network, data: &Data) -> (Vec<f32>, Vec<f32>) {
    let out = net.predict_batch(&data.inputs).unwrap();
    (out.policy_logits, out.wdl)
}

#[test]
fn a_fresh_network_has_a_uniform_policy_and_learns_away_from_it() {
    let data = Data::new(16, 4);
    let mut trainer = Trainer::new(Network::new(&tiny(), Device::Cpu), TrainConfig::default());
    let flat = |logits: &[f32]| logits.iter().all(|&l| l == logits[0]);
    let (logits, wdl) = outputs(trainer.network(), &data);
    assert!(logits.chunks(POLICY_SIZE).all(flat), "every move starts with the same logit");
    // The value head is random, not a constant draw.
    assert!(wdl.chunks(3).any(|w| w != wdl[..3].to_vec().as_slice()));
    trainer.step(&data.batch()).unwrap();
    assert!(!outputs(trainer.network(), &data).0.chunks(POLICY_SIZE).all(flat), "one step moves the policy");
}

#[test]
fn save_then_load_gives_identical_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("net.json");
    let data = Data::new(16, 3);
    let mut trainer = Trainer::new(Network::new(&tiny(), Device::Cpu), TrainConfig::default());
    for _ in 0..5 {
        trainer.step(&data.batch()).unwrap();
    }
    let meta = checkpoint::save(
        &path,
        trainer.network(),
        CheckpointInfo { model_version: 7, training_steps: 5, samples_seen: 80, ..Default::default() },
    )
    .unwrap();
    let (loaded, read) = checkpoint::load(&path, Device::Cpu, Some(&tiny())).unwrap();
    assert_eq!(read, meta);
    assert_eq!(read.info.model_version, 7);
    assert_eq!(outputs(&loaded, &data), outputs(trainer.network(), &data));
    // A fresh network differs, so the comparison above means something.
    assert_ne!(outputs(&Network::new(&tiny(), Device::Cpu), &data), outputs(&loaded, &data));
}

#[test]
fn a_half_precision_copy_is_half_the_size_and_plays_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let (full, half) = (dir.path().join("full.json"), dir.path().join("half.json"));
    let data = Data::new(16, 6);
    let mut trainer = Trainer::new(Network::new(&tiny(), Device::Cpu), TrainConfig::default());
    for _ in 0..5 {
        trainer.step(&data.batch()).unwrap();
    }
    let info = CheckpointInfo { model_version: 3, training_steps: 5, samples_seen: 80, ..Default::default() };
    let full_meta = checkpoint::save(&full, trainer.network(), info).unwrap();
    let half_meta = checkpoint::save_half(&half, trainer.network(), info).unwrap();
    assert!(half_meta.weights.bytes * 10 < full_meta.weights.bytes * 6, "{half_meta:?}");
    let (loaded, meta) = checkpoint::load(&half, Device::Cpu, Some(&tiny())).unwrap();
    assert_eq!((meta.info, meta.optimizer), (info, None));
    let (expected, got) = (outputs(trainer.network(), &data), outputs(&loaded, &data));
    let close = |a: &[f32], b: &[f32]| a.iter().zip(b).all(|(x, y)| (x - y).abs() < 2e-2);
    assert!(close(&expected.0, &got.0) && close(&expected.1, &got.1));

    // The same checkpoint held in memory loads alike, and refuses bytes its digest does not name.
    let text = std::fs::read_to_string(&half).unwrap();
    let mut weights = std::fs::read(dir.path().join("half.safetensors")).unwrap();
    let (in_memory, _) = checkpoint::load_bytes(&half, &text, &weights, Device::Cpu).unwrap();
    assert_eq!(outputs(&in_memory, &data), got);
    weights[100] ^= 1;
    let error = checkpoint::load_bytes(&half, &text, &weights, Device::Cpu).unwrap_err();
    assert!(matches!(error, CheckpointError::Corrupted { .. }), "{error}");
}

#[test]
fn training_resumes_from_a_checkpoint_with_its_momentum() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trainer.json");
    let data = Data::new(16, 4);
    let config = TrainConfig { learning_rate: 0.03, momentum: 0.8, weight_decay: 2e-4, ..TrainConfig::default() };
    let mut trainer = Trainer::new(Network::new(&tiny(), Device::Cpu), config);
    for _ in 0..3 {
        trainer.step(&data.batch()).unwrap();
    }
    trainer.save(&path, 2).unwrap();
    let mut resumed = Trainer::resume(&path, Device::Cpu, Some(&tiny())).unwrap();
    assert_eq!(resumed.config(), config);
    assert_eq!(
        resumed.info(),
        CheckpointInfo { model_version: 2, training_steps: 3, samples_seen: 48, ..Default::default() }
    );
    let a = trainer.step(&data.batch()).unwrap();
    let b = resumed.step(&data.batch()).unwrap();
    assert_eq!(a, b);
    let (ta, tb) = (outputs(trainer.network(), &data), outputs(resumed.network(), &data));
    assert_eq!(ta, tb, "the step after resuming moved the weights differently (momentum lost?)");
    // A run resumed with other settings takes them all but the learning rate, which its schedule
    // sets.
    let settings = TrainConfig { learning_rate: 0.5, momentum: 0.7, soft_policy_weight: 3.0, ..TrainConfig::default() };
    resumed.reconfigure(settings);
    assert_eq!(resumed.config(), TrainConfig { learning_rate: 0.03, ..settings });
}

#[test]
fn a_step_whose_loss_is_not_finite_changes_nothing() {
    let data = Data::new(8, 7);
    let config = TrainConfig { average_samples: 64, ..TrainConfig::default() };
    let mut trainer = Trainer::new(Network::new(&tiny(), Device::Cpu), config);
    trainer.step(&data.batch()).unwrap();
    let (before, info) = (outputs(trainer.network(), &data), trainer.info());
    let mut poisoned = data.inputs.clone();
    poisoned[3] = f32::NAN;
    let batch = TrainBatch { inputs: &poisoned, ..data.batch() };
    let error = trainer.step(&batch).unwrap_err();
    assert!(matches!(error, xqz_net::TrainError::NonFinite { .. }), "{error}");
    assert!(outputs(trainer.network(), &data) == before, "the weights or their statistics moved");
    assert_eq!(trainer.info(), info, "the step was counted");

    // Stepped without reading, it is counted, still changes nothing, and its error comes with
    // the mean of the steps it is read with.
    let good = trainer.step_on(&DeviceBatch::new(&data.batch(), Device::Cpu).unwrap()).unwrap();
    let after_good = outputs(trainer.network(), &data);
    let bad = trainer.step_on(&DeviceBatch::new(&batch, Device::Cpu).unwrap()).unwrap();
    assert!(outputs(trainer.network(), &data) == after_good, "the weights or their statistics moved");
    assert_eq!(trainer.info().training_steps, info.training_steps + 2);
    assert!(good.read().unwrap().total.is_finite());
    assert!(matches!(StepLosses::mean(&[good, bad]), Err(xqz_net::TrainError::NonFinite { .. })));
    // A badly shaped batch is refused before it reaches the device.
    let short = TrainBatch { wdl: &data.wdl[..3], ..data.batch() };
    assert!(matches!(DeviceBatch::new(&short, Device::Cpu), Err(xqz_net::TrainError::BadBatch(_))));
}

/// The tensors of a checkpoint's weights file (`NAME.safetensors` beside `NAME.json`) by name.
fn weights(meta: &Path) -> std::collections::BTreeMap<String, tch::Tensor> {
    tch::Tensor::read_safetensors(meta.with_extension("safetensors")).unwrap().into_iter().collect()
}

/// Every variable of a network by name, as a checkpoint at `path` holds them.
fn variables(net: &Network, path: &Path) -> std::collections::BTreeMap<String, tch::Tensor> {
    checkpoint::save(path, net, CheckpointInfo::default()).unwrap();
    weights(path)
}

#[test]
fn an_averaging_trainer_saves_the_average_and_resumes_from_the_latest_weights() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("averaged.json");
    let data = Data::new(16, 6);
    // A horizon far beyond the run: the average is the plain mean of the weights after each step.
    let config = TrainConfig { average_samples: 1 << 40, ..TrainConfig::default() };
    let mut trainer = Trainer::new(Network::new(&tiny(), Device::Cpu), config);
    let mut after = Vec::new();
    for _ in 0..3 {
        trainer.step(&data.batch()).unwrap();
        after.push(variables(trainer.network(), &dir.path().join("snapshot.json")));
    }
    trainer.save(&path, 1).unwrap();
    let saved = weights(&path);
    let mut moved = false;
    for (name, tensor) in &saved {
        let mean = (&after[0][name] + &after[1][name] + &after[2][name]) / 3.0;
        let gap = (tensor - &mean).abs().max().double_value(&[]);
        assert!(gap < 1e-5, "{name}: the saved weights are {gap} from the mean of the three steps' weights");
        moved |= (tensor - &after[2][name]).abs().max().double_value(&[]) > 1e-4;
    }
    assert!(moved, "the saved weights are the latest ones, not their average");

    // Resumed, it trains on from the latest weights and keeps the average: both go on alike.
    let mut resumed = Trainer::resume(&path, Device::Cpu, Some(&tiny())).unwrap();
    assert_eq!(resumed.config(), config);
    assert_eq!(outputs(resumed.network(), &data), outputs(trainer.network(), &data));
    assert_eq!(trainer.step(&data.batch()).unwrap(), resumed.step(&data.batch()).unwrap());
    let (a, b) = (dir.path().join("a.json"), dir.path().join("b.json"));
    trainer.save(&a, 2).unwrap();
    resumed.save(&b, 2).unwrap();
    let load = |p: &Path| checkpoint::load(p, Device::Cpu, None).unwrap().0;
    assert_eq!(outputs(&load(&a), &data), outputs(&load(&b), &data));

    // Turned off, the latest weights are saved again.
    resumed.set_average_samples(0);
    resumed.save(&b, 3).unwrap();
    assert_eq!(outputs(&load(&b), &data), outputs(resumed.network(), &data));
}

fn flip_byte(path: &Path, at: usize) {
    let mut bytes = fs::read(path).unwrap();
    let i = at.min(bytes.len() - 1);
    bytes[i] ^= 0x40;
    fs::write(path, bytes).unwrap();
}

#[test]
fn a_corrupted_checkpoint_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("c.json");
    let mut trainer = Trainer::new(Network::new(&tiny(), Device::Cpu), TrainConfig::default());
    trainer.step(&Data::new(4, 5).batch()).unwrap();
    trainer.save(&path, 1).unwrap();
    let weights = dir.path().join("c.safetensors");
    let len = fs::metadata(&weights).unwrap().len() as usize;
    flip_byte(&weights, len / 2);
    let err = checkpoint::load(&path, Device::Cpu, None).unwrap_err();
    assert!(matches!(err, CheckpointError::Corrupted { .. }), "{err}");
    assert!(err.to_string().contains("c.safetensors is corrupted"), "{err}");

    // The optimizer state is checked too.
    trainer.save(&path, 1).unwrap();
    flip_byte(&dir.path().join("c.optimizer.safetensors"), 100);
    let err = Trainer::resume(&path, Device::Cpu, None).unwrap_err();
    assert!(err.to_string().contains("c.optimizer.safetensors is corrupted"), "{err}");

    // A damaged metadata file is refused with a message naming it.
    trainer.save(&path, 1).unwrap();
    let text = fs::read_to_string(&path).unwrap();
    fs::write(&path, &text[..text.len() / 2]).unwrap();
    let err = checkpoint::load(&path, Device::Cpu, None).unwrap_err();
    assert!(err.to_string().contains("c.json is malformed"), "{err}");
}

#[test]
fn a_mismatched_checkpoint_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.json");
    checkpoint::save(&path, &Network::new(&tiny(), Device::Cpu), CheckpointInfo::default()).unwrap();

    let small = ModelConfig::builtin("small").unwrap();
    let err = checkpoint::load(&path, Device::Cpu, Some(&small)).unwrap_err();
    assert!(matches!(err, CheckpointError::ConfigMismatch { .. }), "{err}");
    let message = err.to_string();
    assert!(message.contains("name: \"tiny\"") && message.contains("name: \"small\""), "{message}");

    let text = fs::read_to_string(&path).unwrap();
    let current = format!("\"encoding_version\": {}", xqz_net::encoding::ENCODING_VERSION);
    assert!(text.contains(&current), "{text}");
    fs::write(&path, text.replace(&current, "\"encoding_version\": 99")).unwrap();
    let err = checkpoint::load(&path, Device::Cpu, None).unwrap_err();
    assert!(err.to_string().contains("input encoding 99"), "{err}");

    // Metadata that claims another shape than the weights hold: the weights do not fit.
    let wider = text.replace("\"channels\": 16", "\"channels\": 24");
    fs::write(&path, wider).unwrap();
    let err = checkpoint::load(&path, Device::Cpu, None).unwrap_err();
    assert!(matches!(err, CheckpointError::Weights { .. }), "{err}");
    assert!(err.to_string().contains("has shape"), "{err}");
}

#[test]
fn model_configs_parse_and_validate() {
    for name in ["tiny", "mid", "mid-opponent-policy", "small", "standard"] {
        let config = ModelConfig::builtin(name).unwrap();
        assert_eq!(config.name, name);
    }
    let err = ModelConfig::from_toml("name = \"x\"\nblocks = 0\nchannels = 8\nse_ratio = 0\npolicy_channels = 2\nvalue_channels = 2\nvalue_hidden = 8\n", "x.toml").unwrap_err();
    assert_eq!(err.to_string(), "bad model config x.toml: blocks must be at least 1");
    let err = ModelConfig::from_toml("name = \"x\"\nblocks = 1\n", "y.toml").unwrap_err();
    assert!(err.to_string().starts_with("bad model config y.toml:"), "{err}");
    assert!(ModelConfig::resolve("no-such-model").unwrap_err().to_string().contains("unknown model"));
}

#[test]
fn devices_parse() {
    assert_eq!(xqz_net::parse_device("cpu"), Ok(Device::Cpu));
    assert!(xqz_net::parse_device("gpu").unwrap_err().to_string().contains("bad device"));
    if !tch::Cuda::is_available() {
        assert!(xqz_net::parse_device("cuda:0").unwrap_err().to_string().contains("CUDA is not available"));
        assert_eq!(xqz_net::parse_device("auto"), Ok(Device::Cpu));
    }
}

#[test]
fn a_moves_left_head_learns_the_plies_to_the_end_and_survives_a_checkpoint() {
    tch::manual_seed(5);
    let config = ModelConfig { moves_left: true, ..tiny() };
    let data = Data::new(32, 4);
    let plies: Vec<f32> = (0..32).map(|r| (r * 7 % 90) as f32).collect();
    let batch = TrainBatch { plies_left: &plies, ..data.batch() };
    let net = Network::new(&config, Device::Cpu);
    let predicted = |net: &Network| {
        let shape = [32, encoding::PLANES as i64, encoding::HEIGHT as i64, encoding::WIDTH as i64];
        let input = tch::Tensor::from_slice(&data.inputs).view(shape);
        let left = tch::no_grad(|| net.forward_heads(&input, false)).moves_left;
        Vec::<f32>::try_from(left.expect("the head") * 100.0).unwrap()
    };
    let error = |left: &[f32]| left.iter().zip(&plies).map(|(p, t)| (p - t).abs()).sum::<f32>() / 32.0;
    let before = error(&predicted(&net));
    let mut trainer =
        Trainer::new(net, TrainConfig { learning_rate: 0.05, moves_left_weight: 5.0, ..TrainConfig::default() });
    for _ in 0..60 {
        trainer.step(&batch).unwrap();
    }
    let after = error(&predicted(trainer.network()));
    assert!(after < before / 2.0, "mean error in plies {before} -> {after}");
    // The head is in the checkpoint, and a network without one ignores the target.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ml.json");
    trainer.save(&path, 0).unwrap();
    let (loaded, meta) = xqz_net::checkpoint::load(&path, Device::Cpu, None).unwrap();
    assert!(meta.model.moves_left);
    assert_eq!(predicted(&loaded), predicted(trainer.network()));
    let mut plain = Trainer::new(Network::new(&tiny(), Device::Cpu), TrainConfig::default());
    plain.step(&batch).unwrap();
    let short = TrainBatch { plies_left: &plies[..3], ..data.batch() };
    assert!(plain.step(&short).is_err(), "plies-left targets must match the rows");
    // A config written before the auxiliary heads existed has none.
    let old = ModelConfig::from_toml(
        &std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../models/mid.toml")).unwrap(),
        "mid",
    )
    .unwrap();
    assert!(!old.moves_left && !old.soft_policy && !old.opponent_policy);
}

#[test]
fn a_soft_policy_head_learns_the_flattened_target_and_leaves_play_to_the_policy() {
    tch::manual_seed(6);
    let config = ModelConfig { soft_policy: true, ..tiny() };
    // Each row's target: 0.9 on one legal move, 0.1 on another. Raised to the power 1/4 and
    // renormalised, the second move's share is 0.1^0.25 / (0.9^0.25 + 0.1^0.25) = 0.366.
    let mut data = Data::new(32, 7);
    let mut pairs = Vec::new();
    for row in 0..32 {
        let legal = &data.legal[row * POLICY_SIZE..(row + 1) * POLICY_SIZE];
        let moves: Vec<usize> = (0..POLICY_SIZE).filter(|&i| legal[i] > 0.0).take(2).collect();
        let target = &mut data.policy[row * POLICY_SIZE..(row + 1) * POLICY_SIZE];
        target.fill(0.0);
        target[moves[0]] = 0.9;
        target[moves[1]] = 0.1;
        pairs.push((moves[0], moves[1]));
    }
    let soft_share = 0.1f32.powf(0.25) / (0.9f32.powf(0.25) + 0.1f32.powf(0.25));
    let input = || {
        let shape = [32, encoding::PLANES as i64, encoding::HEIGHT as i64, encoding::WIDTH as i64];
        tch::Tensor::from_slice(&data.inputs).view(shape)
    };
    // The mean share of each row's second move under the logits, over the pair alone.
    let second_share = |logits: tch::Tensor| {
        let logits = Vec::<f32>::try_from(logits.flatten(0, -1)).unwrap();
        let shares = pairs.iter().enumerate().map(|(row, &(first, second))| {
            let (a, b) = (logits[row * POLICY_SIZE + first], logits[row * POLICY_SIZE + second]);
            1.0 / (1.0 + (a - b).exp())
        });
        shares.sum::<f32>() / 32.0
    };
    let mut trainer =
        Trainer::new(Network::new(&config, Device::Cpu), TrainConfig { learning_rate: 0.05, ..TrainConfig::default() });
    for _ in 0..150 {
        trainer.step(&data.batch()).unwrap();
    }
    let heads = tch::no_grad(|| trainer.network().forward_heads(&input(), false));
    let (policy, soft) = (second_share(heads.policy), second_share(heads.soft_policy.expect("the head")));
    assert!((soft - soft_share).abs() < 0.08, "soft head's share of the second move {soft}, target {soft_share}");
    assert!((policy - 0.1).abs() < 0.08, "policy head's share of the second move {policy}, target 0.1");
    // Play reads the policy head alone: the inference graph gives the training graph's policy.
    let net = trainer.network();
    let (expected, got) =
        (net.predict_batch(&data.inputs).unwrap(), InferenceNet::new(net).predict_batch(&data.inputs).unwrap());
    let close = |a: &[f32], b: &[f32]| a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-4 * (1.0 + x.abs()));
    assert!(close(&expected.policy_logits, &got.policy_logits), "policy logits differ");
    // The head is in the checkpoint.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("soft.json");
    trainer.save(&path, 0).unwrap();
    let (loaded, meta) = xqz_net::checkpoint::load(&path, Device::Cpu, None).unwrap();
    assert!(meta.model.soft_policy);
    let reloaded = tch::no_grad(|| loaded.forward_heads(&input(), false)).soft_policy.expect("the head");
    let saved = tch::no_grad(|| net.forward_heads(&input(), false)).soft_policy.expect("the head");
    assert_eq!(
        Vec::<f32>::try_from(reloaded.flatten(0, -1)).unwrap(),
        Vec::<f32>::try_from(saved.flatten(0, -1)).unwrap()
    );
}

#[test]
fn an_opponent_policy_head_learns_the_replies_of_the_rows_that_have_one() {
    tch::manual_seed(8);
    let config = ModelConfig { opponent_policy: true, ..tiny() };
    let data = Data::new(32, 8);
    // Even rows: a reply on a move of their own (any of the 2086, in the opponent's frame);
    // odd rows: none.
    let mut reply = vec![0.0; 32 * POLICY_SIZE];
    let wanted: Vec<usize> = (0..32).map(|row| (row * 61) % POLICY_SIZE).collect();
    for row in (0..32).step_by(2) {
        reply[row * POLICY_SIZE + wanted[row]] = 1.0;
    }
    let batch = TrainBatch { reply: &reply, ..data.batch() };
    let weight = TrainConfig { learning_rate: 0.05, opponent_policy_weight: 1.0, ..TrainConfig::default() };
    let mut trainer = Trainer::new(Network::new(&config, Device::Cpu), weight);
    for _ in 0..100 {
        trainer.step(&batch).unwrap();
    }
    let shape = [32, encoding::PLANES as i64, encoding::HEIGHT as i64, encoding::WIDTH as i64];
    let input = tch::Tensor::from_slice(&data.inputs).view(shape);
    let logits = tch::no_grad(|| trainer.network().forward_heads(&input, false)).opponent_policy.expect("the head");
    let probabilities = Vec::<f32>::try_from(logits.softmax(-1, tch::Kind::Float).flatten(0, -1)).unwrap();
    let share = |row: usize| probabilities[row * POLICY_SIZE + wanted[row]];
    let (taught, untaught) =
        ((0..32).step_by(2).map(share).sum::<f32>() / 16.0, (1..32).step_by(2).map(share).sum::<f32>() / 16.0);
    assert!(taught > 0.5 && untaught < 0.2, "the replies' share: {taught} where taught, {untaught} where not");
    let short = TrainBatch { reply: &reply[..POLICY_SIZE], ..data.batch() };
    assert!(trainer.step(&short).unwrap_err().to_string().contains("reply floats"));
}
