//! Does the replay loader keep the trainer fed? Measures, on one synthetic dataset:
//! - the background `ReplayLoader` alone, in batches/s;
//! - the loader plus the conversion to network inputs and targets (`TrainingData::from_replay`);
//! - the training step of a model (`XQZ_BENCH_MODEL`, `small` by default) on those batches,
//!   serial (each batch converted on the step's thread, the losses read after every step, as the
//!   trainer's loop was) and fed (batches prepared on a thread of their own, the losses read
//!   every ten steps, as it is), in alternation, twice each;
//!
//! and prints the ratio of the two and how many times faster the data side is than the trainer
//! consumes it. Batch 256.
//! `XQZ_BENCH_GAMES` (300) sets the dataset size, `XQZ_BENCH_STEPS` (10) the timed training steps,
//! `XQZ_BENCH_DEVICE` (`cpu`) the device of the training step (`cuda`, `cuda:N`, `auto`).
//! Run with `cargo bench -p xqz-trainer --bench consumption`.

use std::error::Error;
use std::time::{Duration, Instant};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use xqz_dataset::synthetic::{SyntheticConfig, random_game};
use xqz_dataset::{Batch, DatasetWriter, ReplayConfig, ReplayLoader, WriterConfig};
use xqz_net::{DeviceBatch, ModelConfig, Network, StepLosses, TrainConfig, Trainer, parse_device};
use xqz_trainer::{Targets, TrainingData};

const BATCH: usize = 256;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let games = env("XQZ_BENCH_GAMES", 300);
    let steps = env("XQZ_BENCH_STEPS", 10);
    let model = std::env::var("XQZ_BENCH_MODEL").unwrap_or_else(|_| "small".into());
    let device = parse_device(&std::env::var("XQZ_BENCH_DEVICE").unwrap_or_else(|_| "cpu".into()))?;
    let dir = tempfile::tempdir()?;
    let (mut writer, _) = DatasetWriter::open(dir.path(), WriterConfig::default())?;
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let mut samples = 0;
    for id in 0..games as u128 {
        let (game, rows) = random_game(&mut rng, id, &SyntheticConfig::default());
        samples += rows.len();
        writer.append(game, rows)?;
    }
    writer.finish()?;
    println!("data: {games} synthetic games, {samples} samples, batch {BATCH}");

    let config = ReplayConfig { batch_size: BATCH, ..ReplayConfig::default() };
    let measure = |convert: bool| -> Result<f64, Box<dyn std::error::Error>> {
        let mut loader = ReplayLoader::spawn(dir.path(), config.clone())?;
        loader.next_batch().ok_or("no batch")??;
        let start = Instant::now();
        let mut n = 0;
        while start.elapsed() < Duration::from_secs(3) {
            let batch = loader.next_batch().ok_or("loader ended")??;
            if convert {
                std::hint::black_box(TrainingData::from_replay(&batch, Targets::default())?);
            }
            n += 1;
        }
        Ok(n as f64 / start.elapsed().as_secs_f64())
    };
    let loader_only = measure(false)?;
    println!("loader:                 {loader_only:>9.1} batches/s ({:.0} samples/s)", loader_only * BATCH as f64);
    let loader_converted = measure(true)?;
    println!(
        "loader + conversion:    {loader_converted:>9.1} batches/s ({:.0} samples/s)",
        loader_converted * BATCH as f64
    );

    let mut loader = ReplayLoader::spawn(dir.path(), config)?;
    let batches: Vec<Batch> = (0..steps + 1)
        .map(|_| Ok(loader.next_batch().ok_or("loader ended")??))
        .collect::<Result<_, Box<dyn Error>>>()?;
    drop(loader);
    let net = Network::new(&ModelConfig::builtin(&model)?, device);
    let mut trainer = Trainer::new(net, TrainConfig::default());
    trainer.step(&TrainingData::from_replay(&batches[0], Targets::default())?.batch())?;
    let timed = &batches[1..];

    // As the trainer's loop was before it was fed: each batch converted and copied on the step's
    // thread, the losses read back after every step.
    let serial_loop = |trainer: &mut Trainer| -> Result<f64, Box<dyn Error>> {
        let start = Instant::now();
        for batch in timed {
            trainer.step(&TrainingData::from_replay(batch, Targets::default())?.batch())?;
        }
        Ok(steps as f64 / start.elapsed().as_secs_f64())
    };
    // As it is fed: batches converted and copied to the device on a thread of their own, two
    // ahead, and the losses read once for every ten steps.
    let fed_loop = |trainer: &mut Trainer| -> Result<f64, Box<dyn Error>> {
        let start = Instant::now();
        std::thread::scope(|scope| -> Result<(), Box<dyn Error + Send + Sync>> {
            let (ready, prepared) = std::sync::mpsc::sync_channel(2);
            scope.spawn(move || {
                for batch in timed {
                    let data = TrainingData::from_replay(batch, Targets::default()).expect("synthetic batches convert");
                    if ready.send(DeviceBatch::new(&data.batch(), device)).is_err() {
                        break;
                    }
                }
            });
            let mut unread = Vec::new();
            for batch in prepared {
                unread.push(trainer.step_on(&batch?)?);
                if unread.len() == 10 {
                    StepLosses::mean(&unread)?;
                    unread.clear();
                }
            }
            if !unread.is_empty() {
                StepLosses::mean(&unread)?;
            }
            Ok(())
        })
        .map_err(|e| e.to_string())?;
        Ok(steps as f64 / start.elapsed().as_secs_f64())
    };
    // In alternation, twice each, and the means: neither warm-up nor a busy spell favours one.
    let (mut serial, mut fed) = (0.0, 0.0);
    for _ in 0..2 {
        serial += serial_loop(&mut trainer)? / 2.0;
        fed += fed_loop(&mut trainer)? / 2.0;
    }
    println!("train, serial ({model}, {device:?}): {serial:>9.2} batches/s ({:.0} samples/s)", serial * BATCH as f64);
    println!("train, fed ({model}, {device:?}):    {fed:>9.2} batches/s ({:.0} samples/s)", fed * BATCH as f64);
    println!("fed / serial:           {:>9.2}x", fed / serial);
    println!("data side / trainer:    {:>9.0}x", loader_converted / fed);
    Ok(())
}
