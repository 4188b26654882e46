//! Replay batches become network inputs and targets that describe the stored positions: the
//! encoding matches the position, the policy mass sits on its legal moves, mirrored rows included.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use xiangqi::{Color, Move};
use xqz_dataset::synthetic::{SyntheticConfig, random_game};
use xqz_dataset::{Batch, DatasetWriter, ReplayConfig, ReplayWindow, WriterConfig, decode_board};
use xqz_mcts::MaterialEvaluator;
use xqz_net::encoding::{self, History, INPUT_SIZE};
use xqz_net::policy::{self, POLICY_SIZE};
use xqz_trainer::{Targets, TrainingData};

fn batches(mirror_probability: f64) -> Vec<Batch> {
    let dir = tempfile::tempdir().unwrap();
    let (mut writer, _) = DatasetWriter::open(dir.path(), WriterConfig::default()).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    for id in 0..20 {
        let (game, samples) = random_game(&mut rng, id, &SyntheticConfig::default());
        writer.append(game, samples).unwrap();
    }
    writer.finish().unwrap();
    let config = ReplayConfig { batch_size: 64, mirror_probability, ..Default::default() };
    ReplayWindow::open(dir.path(), config).unwrap().epoch(0).collect()
}

#[test]
fn inputs_and_targets_describe_the_stored_positions() {
    let mut rows = 0;
    let mut mirrored = 0;
    for batch in batches(0.5) {
        let data = TrainingData::from_replay(&batch, Targets::default()).unwrap();
        assert_eq!(data.rows(), batch.size);
        for row in 0..batch.size {
            let turn = if batch.side_to_move[row] == 0 { Color::Red } else { Color::Black };
            let pos = decode_board(batch.board(row), turn).unwrap();
            let history = History {
                quiet_plies: u32::from(batch.quiet_plies[row]),
                repetitions: u32::from(batch.repetitions[row]),
            };
            let mut expected = vec![0.0; INPUT_SIZE];
            encoding::encode_position(&pos, history, &mut expected);
            assert_eq!(&data.inputs[row * INPUT_SIZE..(row + 1) * INPUT_SIZE], &expected[..], "row {row}");

            let target = &data.policy[row * POLICY_SIZE..(row + 1) * POLICY_SIZE];
            let legal = pos.legal_moves();
            let mass: f32 = target.iter().sum();
            if batch.full_search[row] == 1 {
                assert!((mass - 1.0).abs() < 1e-4, "row {row}: policy mass {mass}");
            } else {
                assert_eq!(mass, 0.0, "row {row}: a cheap search's policy must not train");
            }
            for (i, &p) in target.iter().enumerate() {
                if p > 0.0 {
                    let mv = policy::move_for(i, turn).unwrap();
                    assert!(legal.contains(&mv), "row {row}: target on {mv}, not legal");
                }
            }
            // The policy's softmax runs over exactly the legal moves of rows with a target.
            let mask = &data.legal[row * POLICY_SIZE..(row + 1) * POLICY_SIZE];
            let flagged: Vec<Move> =
                (0..POLICY_SIZE).filter(|&i| mask[i] == 1.0).map(|i| policy::move_for(i, turn).unwrap()).collect();
            if batch.full_search[row] == 1 {
                assert_eq!(flagged.len(), legal.len(), "row {row}");
                assert!(flagged.iter().all(|mv| legal.contains(mv)), "row {row}");
            } else {
                assert!(flagged.is_empty(), "row {row}");
            }
            assert!(mask.iter().all(|&f| f == 0.0 || f == 1.0));
            let wdl = &data.wdl[row * 3..row * 3 + 3];
            assert_eq!(wdl.iter().sum::<f32>(), 1.0);
            rows += 1;
            mirrored += usize::from(batch.mirrored[row]);
        }
    }
    assert!(rows > 500 && mirrored > 100, "{rows} rows, {mirrored} mirrored");
}

#[test]
fn a_corrupt_board_is_refused_with_its_row() {
    let mut batch = batches(0.0).swap_remove(0);
    batch.boards[3 * 90 + 5] = 99;
    let err = TrainingData::from_replay(&batch, Targets::default()).unwrap_err();
    assert_eq!(err.to_string(), "row 3: bad board code 99 on square 5");
}

#[test]
fn the_value_target_mixes_the_result_with_the_root_estimate_by_the_q_ratio() {
    let batch = batches(0.0).swap_remove(0);
    for q_ratio in [0.0, 0.25, 1.0] {
        let data = TrainingData::from_replay(&batch, Targets { value_q_ratio: q_ratio, ..Targets::default() }).unwrap();
        for i in 0..batch.size * 3 {
            let expected = (1.0 - q_ratio) * batch.wdl_target[i] + q_ratio * batch.root_wdl[i];
            assert!((data.wdl[i] - expected).abs() < 1e-6, "q_ratio {q_ratio}, entry {i}");
        }
        for row in 0..batch.size {
            let sum: f32 = data.wdl[row * 3..row * 3 + 3].iter().sum();
            assert!((sum - 1.0).abs() < 1e-5, "q_ratio {q_ratio}, row {row}: sums to {sum}");
        }
    }
    // The synthetic games' root estimates differ from their results, so the mix is not a no-op.
    assert_ne!(
        TrainingData::from_replay(&batch, Targets { value_q_ratio: 0.5, ..Targets::default() }).unwrap().wdl,
        batch.wdl_target
    );
}

#[test]
fn with_a_result_horizon_the_result_fades_into_the_root_estimate_with_the_plies_to_the_end() {
    let batch = batches(0.0).swap_remove(0);
    let targets = Targets { value_q_ratio: 0.2, result_horizon: 10.0, ..Targets::default() };
    let data = TrainingData::from_replay(&batch, targets).unwrap();
    for row in 0..batch.size {
        let share = 0.8 * (-batch.plies_to_end[row] / 10.0).exp();
        for i in row * 3..row * 3 + 3 {
            let expected = share * batch.wdl_target[i] + (1.0 - share) * batch.root_wdl[i];
            assert!((data.wdl[i] - expected).abs() < 1e-6, "row {row}, entry {i}: {} != {expected}", data.wdl[i]);
        }
    }
    // The last position of a game keeps the plain mix; one 10 plies away a third of its result.
    assert_eq!(targets.result_share(0.0), 0.8);
    assert!((targets.result_share(10.0) - 0.8 / std::f32::consts::E).abs() < 1e-6);
    assert_eq!(Targets { value_q_ratio: 0.2, ..Targets::default() }.result_share(1000.0), 0.8);
}

#[test]
fn a_material_share_mixes_the_material_estimate_of_each_position_into_the_value_target() {
    let batch = batches(0.5).swap_remove(0);
    let targets = Targets { value_q_ratio: 0.5, material_share: 0.25, ..Targets::default() };
    let data = TrainingData::from_replay(&batch, targets).unwrap();
    let without = TrainingData::from_replay(&batch, Targets { material_share: 0.0, ..targets }).unwrap();
    let mut uneven = 0;
    for row in 0..batch.size {
        let turn = if batch.side_to_move[row] == 0 { Color::Red } else { Color::Black };
        let material = MaterialEvaluator::wdl(&decode_board(batch.board(row), turn).unwrap());
        for (k, i) in (row * 3..row * 3 + 3).enumerate() {
            let expected = 0.75 * without.wdl[i] + 0.25 * material[k];
            assert!((data.wdl[i] - expected).abs() < 1e-6, "row {row}, entry {i}: {} != {expected}", data.wdl[i]);
        }
        uneven += usize::from((material[0] - material[2]).abs() > 0.05);
    }
    // Random games trade pieces, so the material estimate is not a constant.
    assert!(uneven > batch.size / 4, "{uneven} of {} rows with a material lead", batch.size);
}

#[test]
fn a_board_that_is_no_position_is_refused_when_the_material_share_needs_one() {
    let mut batch = batches(0.0).swap_remove(0);
    // Both kings off the board: every code is valid, the position is not.
    for code in &mut batch.boards[2 * 90..3 * 90] {
        if *code == 1 || *code == 8 {
            *code = 0;
        }
    }
    TrainingData::from_replay(&batch, Targets::default()).unwrap();
    let err = TrainingData::from_replay(&batch, Targets { material_share: 0.5, ..Targets::default() }).unwrap_err();
    assert!(err.to_string().starts_with("row 2: "), "{err}");
}

#[test]
fn policy_smoothing_mixes_the_visits_with_a_uniform_spread_over_the_recorded_moves() {
    let batch = batches(0.0).swap_remove(0);
    let visits = TrainingData::from_replay(&batch, Targets::default()).unwrap();
    let smoothing = 0.25;
    let smoothed =
        TrainingData::from_replay(&batch, Targets { policy_smoothing: smoothing, ..Targets::default() }).unwrap();
    let mut checked = 0;
    for row in (0..batch.size).filter(|&row| batch.full_search[row] == 1) {
        let turn = if batch.side_to_move[row] == 0 { Color::Red } else { Color::Black };
        let recorded: Vec<usize> = batch
            .policy(row)
            .map(|(code, _)| policy::index_for(Move::from_u16(code).unwrap(), turn).unwrap())
            .collect();
        let span = row * POLICY_SIZE..(row + 1) * POLICY_SIZE;
        for (i, (&v, &s)) in visits.policy[span.clone()].iter().zip(&smoothed.policy[span]).enumerate() {
            let spread = if recorded.contains(&i) { smoothing / recorded.len() as f32 } else { 0.0 };
            let expected = (1.0 - smoothing) * v + spread;
            assert!((s - expected).abs() < 1e-6, "row {row}, index {i}: {s} != {expected}");
        }
        checked += 1;
    }
    assert!(checked > 0, "no full search in the batch");
    assert_eq!(smoothed.wdl, visits.wdl);
}

#[test]
fn the_opponent_reply_target_is_the_next_positions_policy_in_the_opponents_frame() {
    let (mut with_reply, mut rows) = (0, 0);
    for batch in batches(0.5) {
        assert!(TrainingData::from_replay(&batch, Targets::default()).unwrap().reply.is_empty(), "not asked for");
        let data = TrainingData::from_replay(&batch, Targets { opponent_reply: true, ..Targets::default() }).unwrap();
        assert_eq!(data.reply.len(), batch.size * POLICY_SIZE);
        for row in 0..batch.size {
            let opponent = if batch.side_to_move[row] == 0 { Color::Black } else { Color::Red };
            let target = &data.reply[row * POLICY_SIZE..(row + 1) * POLICY_SIZE];
            let entries: Vec<(u16, f32)> = batch.reply(row).collect();
            let sum: f32 = entries.iter().map(|e| e.1).sum();
            let mut expected = vec![0.0; POLICY_SIZE];
            for (code, p) in entries {
                expected[policy::index_for(Move::from_u16(code).unwrap(), opponent).unwrap()] += p / sum;
            }
            assert!(target.iter().zip(&expected).all(|(a, b)| (a - b).abs() < 1e-6), "row {row}");
            with_reply += usize::from(sum > 0.0);
            rows += 1;
        }
    }
    assert!(with_reply > rows / 4 && with_reply < rows, "{with_reply} of {rows} rows with a reply");
}
