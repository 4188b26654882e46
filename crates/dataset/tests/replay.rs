//! The replay window and loader: mirror augmentation on real positions, sampling without
//! replacement, newest-first windows, determinism, and picking up new shards.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use xiangqi::{Color, Move};
use xqz_dataset::synthetic::SyntheticConfig;
use xqz_dataset::{
    Batch, Compression, DatasetWriter, GameRecord, ReplayConfig, ReplayLoader, ReplayWindow, SampleRecord, WindowSize,
    decode_board, encode_board,
};

use common::*;

fn config(batch_size: usize) -> ReplayConfig {
    ReplayConfig {
        window: WindowSize::Fixed(usize::MAX),
        batch_size,
        seed: 7,
        epochs: Some(1),
        poll_interval: Duration::from_millis(10),
        ..ReplayConfig::default()
    }
}

fn tag(batch: &Batch, i: usize) -> usize {
    batch.root_wdl[i * 3] as usize
}

#[test]
fn mirrored_policy_mass_sits_on_the_mirrored_legal_moves() {
    // Real games: every policy target covers legal moves of its position.
    let synthetic = SyntheticConfig { max_plies: 60, policy_moves: 12, ..SyntheticConfig::default() };
    let mut games = games(20, 0, 4, &synthetic);
    let n = tag_samples(&mut games);
    let by_tag: Vec<SampleRecord> = games.iter().flat_map(|(_, s)| s.clone()).collect();
    // Each sample's successor in its game, whose search answered its move.
    let next: Vec<Option<&SampleRecord>> =
        games.iter().flat_map(|(_, s)| (0..s.len()).map(move |i| s.get(i + 1))).collect();
    let dir = tempfile::tempdir().unwrap();
    write_all(dir.path(), small_shards(50, Compression::Zstd), &games);

    let window =
        ReplayWindow::open(dir.path(), ReplayConfig { mirror_probability: 0.5, drop_last: false, ..config(16) })
            .unwrap();
    let (mut mirrored, mut plain, mut replies) = (0, 0, 0);
    for batch in window.epoch(0) {
        for i in 0..batch.size {
            let original = &by_tag[tag(&batch, i)];
            let side = if batch.side_to_move[i] == 0 { Color::Red } else { Color::Black };
            assert_eq!(side, original.side_to_move);
            // Mirroring leaves the per-position counters alone.
            assert_eq!((batch.quiet_plies[i], batch.repetitions[i]), (original.quiet_plies, original.repetitions));
            // The batch's board is a legal position: the original, mirrored when flagged.
            let pos = decode_board(batch.board(i), side).unwrap();
            let source = decode_board(&original.board, side).unwrap();
            let expected = if batch.mirrored[i] == 1 { source.mirror() } else { source };
            assert_eq!(encode_board(&pos), encode_board(&expected));
            // All policy mass is on legal moves of that position, and on the (mirrored) original moves.
            let legal: BTreeSet<u16> = pos.legal_moves().iter().map(|m| m.to_u16()).collect();
            let mut mass = 0.0;
            let mut got = BTreeMap::new();
            for (code, p) in batch.policy(i) {
                assert!(legal.contains(&code), "move {:?} is not legal in {pos}", Move::from_u16(code));
                mass += p;
                got.insert(code, p);
            }
            assert!((mass - 1.0).abs() < 1e-4, "mass {mass}");
            let want: BTreeMap<u16, f32> = original
                .policy
                .iter()
                .map(|e| (if batch.mirrored[i] == 1 { e.mv.mirror() } else { e.mv }.to_u16(), e.p))
                .collect();
            assert_eq!(got, want);
            // The opponent's reply: the next position's policy where its search was full (the
            // target of an auxiliary head), mirrored with the row; none after a cheap search or
            // at the game's end.
            let flip = |mv: Move| if batch.mirrored[i] == 1 { mv.mirror() } else { mv };
            let reply: Vec<(u16, f32)> = batch.reply(i).collect();
            let want: Vec<(u16, f32)> = match next[tag(&batch, i)] {
                Some(next) if next.full_search => next.policy.iter().map(|e| (flip(e.mv).to_u16(), e.p)).collect(),
                _ => Vec::new(),
            };
            assert_eq!(reply, want);
            replies += usize::from(!reply.is_empty());
            if batch.mirrored[i] == 1 {
                mirrored += 1;
            } else {
                plain += 1;
            }
        }
    }
    assert_eq!(mirrored + plain, n);
    assert!(mirrored > n / 4 && plain > n / 4, "mirrored {mirrored} of {n}");
    assert!(replies > n / 2 && replies < n, "{replies} of {n} rows with a reply");
}

#[test]
fn an_epoch_draws_every_sample_once() {
    let mut games = games(21, 0, 6, &short());
    let n = tag_samples(&mut games);
    let dir = tempfile::tempdir().unwrap();
    write_all(dir.path(), small_shards(40, Compression::Zstd), &games);
    for drop_last in [false, true] {
        let window = ReplayWindow::open(dir.path(), ReplayConfig { drop_last, ..config(32) }).unwrap();
        assert_eq!(window.len(), n);
        let mut seen = Vec::new();
        for batch in window.epoch(3) {
            assert_eq!(batch.epoch, 3);
            assert!(batch.size == 32 || !drop_last);
            assert_eq!(batch.boards.len(), batch.size * 90);
            assert_eq!(batch.wdl_target.len(), batch.size * 3);
            assert_eq!(batch.policy_offsets.len(), batch.size + 1);
            seen.extend((0..batch.size).map(|i| tag(&batch, i)));
        }
        let unique: BTreeSet<_> = seen.iter().copied().collect();
        assert_eq!(unique.len(), seen.len(), "no sample twice in an epoch");
        let expected = if drop_last { n / 32 * 32 } else { n };
        assert_eq!(seen.len(), expected);
        assert!(seen.windows(2).any(|w| w[0] > w[1]), "shuffled");
    }
}

#[test]
fn the_window_holds_the_newest_samples() {
    let mut games = games(22, 0, 8, &short());
    let n = tag_samples(&mut games);
    let dir = tempfile::tempdir().unwrap();
    write_all(dir.path(), small_shards(30, Compression::Zstd), &games);
    let keep = n / 3;
    let window =
        ReplayWindow::open(dir.path(), ReplayConfig { window: WindowSize::Fixed(keep), drop_last: false, ..config(8) })
            .unwrap();
    assert_eq!(window.len(), keep);
    assert_eq!(window.total_samples(), n as u64);
    let seen: BTreeSet<_> = window.epoch(0).flat_map(|b| (0..b.size).map(move |i| tag(&b, i))).collect();
    assert_eq!(seen, (n - keep..n).collect());
}

#[test]
fn result_targets_follow_the_side_to_move() {
    let mut games = games(23, 0, 4, &short());
    tag_samples(&mut games);
    let by_tag: Vec<SampleRecord> = games.iter().flat_map(|(_, s)| s.clone()).collect();
    let dir = tempfile::tempdir().unwrap();
    write_all(dir.path(), small_shards(1000, Compression::Zstd), &games);
    let window = ReplayWindow::open(dir.path(), ReplayConfig { drop_last: false, ..config(64) }).unwrap();
    let mut checked = 0;
    for batch in window.epoch(0) {
        for i in 0..batch.size {
            let original = &by_tag[tag(&batch, i)];
            let want = match original.result {
                1 => [1.0, 0.0, 0.0],
                0 => [0.0, 1.0, 0.0],
                _ => [0.0, 0.0, 1.0],
            };
            assert_eq!(batch.wdl_target[i * 3..i * 3 + 3], want);
            assert_eq!(batch.plies_to_end[i], original.plies_to_end as f32);
            assert_eq!(batch.full_search[i], u8::from(original.full_search));
            assert_eq!(batch.quiet_plies[i], original.quiet_plies);
            assert_eq!(batch.repetitions[i], original.repetitions);
            checked += 1;
        }
    }
    assert_eq!(checked, by_tag.len());
}

#[test]
fn the_loader_is_deterministic_given_a_seed() {
    let mut games = games(24, 0, 5, &short());
    tag_samples(&mut games);
    let dir = tempfile::tempdir().unwrap();
    write_all(dir.path(), small_shards(40, Compression::Zstd), &games);
    let run = |seed: u64| -> Vec<Batch> {
        let cfg = ReplayConfig { seed, epochs: Some(2), prefetch: 2, ..config(16) };
        ReplayLoader::spawn(dir.path(), cfg).unwrap().collect::<Result<_, _>>().unwrap()
    };
    let a = run(1);
    assert!(!a.is_empty());
    assert_eq!(a, run(1));
    assert_ne!(a, run(2));
    assert!(a.iter().any(|b| b.epoch == 1));
    // Epochs differ in order.
    let first: Vec<_> = a.iter().filter(|b| b.epoch == 0).flat_map(|b| b.root_wdl.clone()).collect();
    let second: Vec<_> = a.iter().filter(|b| b.epoch == 1).flat_map(|b| b.root_wdl.clone()).collect();
    assert_ne!(first, second);
}

#[test]
fn the_loader_waits_for_data_and_sees_new_shards() {
    let games: Vec<(GameRecord, Vec<SampleRecord>)> = games(25, 0, 6, &short());
    let dir = tempfile::tempdir().unwrap();
    let (mut writer, _) = DatasetWriter::open(dir.path(), small_shards(10_000, Compression::Zstd)).unwrap();
    let first: usize = games[..3].iter().map(|(_, s)| s.len()).sum();
    let cfg = ReplayConfig { epochs: None, min_samples: first + 1, ..config(4) };
    let mut loader = ReplayLoader::spawn(dir.path(), cfg).unwrap();
    for (g, s) in &games[..3] {
        writer.append(g.clone(), s.clone()).unwrap();
    }
    writer.flush().unwrap();
    std::thread::sleep(Duration::from_millis(50));
    for (g, s) in &games[3..] {
        writer.append(g.clone(), s.clone()).unwrap();
    }
    writer.flush().unwrap();
    let total: usize = games.iter().map(|(_, s)| s.len()).sum();
    // The loader starts only once both shards are in, so its first epoch covers all samples.
    for _ in 0..total / 4 {
        let batch = loader.next_batch().unwrap().unwrap();
        assert_eq!(batch.epoch, 0);
    }
    assert!(loader.next_batch().unwrap().unwrap().epoch == 1, "infinite epochs go on");
    drop(loader); // stops the thread
}

#[test]
fn bad_configurations_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    for cfg in [
        ReplayConfig { batch_size: 0, ..config(1) },
        ReplayConfig { mirror_probability: 1.5, ..config(1) },
        ReplayConfig { window: WindowSize::Fixed(3), ..config(4) },
    ] {
        assert!(ReplayLoader::spawn(dir.path(), cfg).is_err());
    }
    // A missing dataset folder comes through the loader as an error.
    let mut loader = ReplayLoader::spawn(dir.path().join("absent"), config(1)).unwrap();
    assert!(loader.next_batch().unwrap().is_err());
    assert!(loader.next_batch().is_none());
}
