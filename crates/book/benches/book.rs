//! Book throughput: building from a dataset and probing the SQLite file.
//!
//! Run with `cargo bench -p xqz-book`. Generates synthetic self-play games once (not timed;
//! `XQZ_BENCH_GAMES` games, 5000 by default, each up to 80 plies) into a dataset under `$TMPDIR`,
//! then prints:
//! - count: positions/s counting the games already in memory into a builder (all plies, no
//!   ply limit; random games make almost every position new, the builder's worst case);
//! - build: positions/s for the whole `xqz book build` path: reading the dataset, counting, and
//!   writing the SQLite file in one transaction;
//! - build, defaults: the same with the book's default settings (the first 40 plies of each
//!   game), as positions read from the dataset per second;
//! - probe: look-ups/s of `Book::probe` over positions taken from the games, half of them
//!   mirrored, in random order.

use std::time::Instant;

use rand::SeedableRng;
use rand::seq::SliceRandom;
use rand_chacha::ChaCha8Rng;
use xiangqi::Position;
use xqz_book::{Book, BookBuilder, BuildConfig};
use xqz_dataset::synthetic::{SyntheticConfig, random_game};
use xqz_dataset::{DatasetWriter, GameRecord, WriterConfig};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n_games: u128 = std::env::var("XQZ_BENCH_GAMES").ok().and_then(|v| v.parse().ok()).unwrap_or(5000);
    let config = SyntheticConfig { max_plies: 80, policy_moves: 1, capture_bias: 0.1, ..SyntheticConfig::default() };
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let dir = tempfile::tempdir()?;
    let data = dir.path().join("dataset");
    let writer_config = WriterConfig { flush_interval: None, shard_rows: 65_536, ..WriterConfig::default() };
    let (mut writer, _) = DatasetWriter::open(&data, writer_config)?;
    let mut games: Vec<GameRecord> = Vec::new();
    for id in 0..n_games {
        let (game, samples) = random_game(&mut rng, id, &config);
        games.push(game.clone());
        writer.append(game, samples)?;
    }
    writer.finish()?;
    let plies: usize = games.iter().map(GameRecord::len).sum();
    println!("data: {n_games} games, {plies} plies (generated, not timed)");

    let all = BuildConfig { max_ply: u32::MAX, min_games: 1 };
    let t = Instant::now();
    let mut builder = BookBuilder::new(all);
    for game in &games {
        builder.add_game(game)?;
    }
    let secs = t.elapsed().as_secs_f64();
    println!(
        "count: {:.0} positions/s ({} plies into {} positions in {secs:.2}s)",
        builder.plies() as f64 / secs,
        builder.plies(),
        builder.positions()
    );

    let book_path = dir.path().join("book.sqlite");
    let t = Instant::now();
    let mut builder = BookBuilder::new(all);
    builder.add_dataset(data.as_path())?;
    let counted = t.elapsed().as_secs_f64();
    let summary = builder.write(&book_path, false)?;
    let secs = t.elapsed().as_secs_f64();
    println!(
        "build: {:.0} positions/s ({} plies in {secs:.2}s: read and count {counted:.2}s, write {:.2}s; {} positions, \
         {} moves, {:.1} MB)",
        summary.plies as f64 / secs,
        summary.plies,
        secs - counted,
        summary.positions,
        summary.moves,
        std::fs::metadata(&book_path)?.len() as f64 / 1e6
    );

    // The same with the book's defaults (the first 40 plies of each game): what `xqz book build`
    // does unless told otherwise.
    let defaults_path = dir.path().join("defaults.sqlite");
    let t = Instant::now();
    let mut builder = BookBuilder::new(BuildConfig::default());
    builder.add_dataset(data.as_path())?;
    let counted = t.elapsed().as_secs_f64();
    let defaults = builder.write(&defaults_path, false)?;
    let secs = t.elapsed().as_secs_f64();
    println!(
        "build, defaults (max ply {}): {:.0} positions/s ({} plies read in {secs:.2}s: read and count {counted:.2}s, \
         write {:.2}s; {} positions, {} moves)",
        BuildConfig::default().max_ply,
        plies as f64 / secs,
        plies,
        secs - counted,
        defaults.positions,
        defaults.moves
    );

    // Probe positions along the games (every ply but the last, which has no book move).
    let mut probes: Vec<Position> = Vec::new();
    for (i, game) in games.iter().enumerate().take(2000) {
        let mut pos = game.start_position()?;
        for &mv in &game.moves[..game.moves.len().saturating_sub(1)] {
            pos.play_unchecked(mv);
            probes.push(if i % 2 == 0 { pos.mirror() } else { pos.clone() });
        }
    }
    // In random order: positions of one game lie side by side in the file, which would flatter
    // the page cache.
    probes.shuffle(&mut rng);
    let book = Book::open(&book_path)?;
    let t = Instant::now();
    let mut found = 0usize;
    for pos in &probes {
        found += usize::from(book.probe(pos)?.is_some());
    }
    let secs = t.elapsed().as_secs_f64();
    println!(
        "probe: {:.0} lookups/s ({} probes, {found} found, in {secs:.2}s)",
        probes.len() as f64 / secs,
        probes.len()
    );
    Ok(())
}
