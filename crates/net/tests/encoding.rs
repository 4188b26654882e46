//! The input encoding and the policy index: round trips, the side-to-move flip, the left-right
//! mirror, and every legal move of many random positions having an index.

use xiangqi::{Color, Move, Piece, Position, Setup, Square};
use xqz_net::bench::sample_positions;
use xqz_net::encoding::{self, History, INPUT_SIZE};
use xqz_net::policy::{self, POLICY_SIZE};

/// The same position seen from the other side: colours swapped, board flipped top to bottom.
fn swap_sides(pos: &Position) -> Position {
    let setup = pos.to_setup();
    let mut board = [None; 90];
    for (i, piece) in setup.board.iter().enumerate() {
        if let Some(p) = piece {
            let sq = Square::from_index(i as u8).unwrap().flip_rank();
            board[sq.index()] = Some(Piece::new(p.color.opponent(), p.kind));
        }
    }
    Position::from_setup(&Setup { board, turn: setup.turn.opponent(), ..setup }).expect("swapped position is legal")
}

fn encode(pos: &Position, history: History) -> Vec<f32> {
    let mut planes = vec![0.0; INPUT_SIZE];
    encoding::encode_position(pos, history, &mut planes);
    planes
}

#[test]
fn policy_index_is_a_bijection_onto_possible_moves() {
    let mut seen = vec![false; POLICY_SIZE];
    let mut count = 0;
    for from in Square::all() {
        for to in Square::all() {
            if let Some(i) = policy::index(Move::new(from, to)) {
                assert!(!seen[i], "index {i} used twice");
                seen[i] = true;
                assert_eq!(policy::move_at(i), Some(Move::new(from, to)));
                count += 1;
            }
        }
    }
    assert_eq!(count, POLICY_SIZE);
    assert!(seen.iter().all(|&s| s));
    assert_eq!(policy::move_at(POLICY_SIZE), None);
}

#[test]
fn policy_index_counts_each_kind_of_move() {
    let (mut lines, mut horse, mut advisor, mut elephant) = (0, 0, 0, 0);
    for i in 0..POLICY_SIZE {
        let mv = policy::move_at(i).unwrap();
        let df = (mv.from().file().index() as i32 - mv.to().file().index() as i32).abs();
        let dr = (mv.from().rank().index() as i32 - mv.to().rank().index() as i32).abs();
        match (df, dr) {
            (0, _) | (_, 0) => lines += 1,
            (1, 2) | (2, 1) => horse += 1,
            (1, 1) => advisor += 1,
            (2, 2) => elephant += 1,
            other => panic!("move {mv} with offsets {other:?}"),
        }
    }
    assert_eq!((lines, horse, advisor, elephant), (1530, 508, 16, 32));
}

#[test]
fn mirror_and_flip_are_involutions_that_match_the_moves() {
    for i in 0..POLICY_SIZE {
        let mv = policy::move_at(i).unwrap();
        assert_eq!(policy::mirror(policy::mirror(i)), i);
        assert_eq!(policy::flip(policy::flip(i)), i);
        assert_eq!(policy::move_at(policy::mirror(i)), Some(mv.mirror()));
        assert_eq!(policy::move_at(policy::flip(i)), Some(mv.flip_rank()));
    }
}

#[test]
fn every_legal_move_of_random_positions_has_an_index() {
    let mut moves = 0;
    for (pos, _) in sample_positions(3000, 1) {
        let turn = pos.turn();
        for &mv in &pos.legal_moves() {
            let i = policy::index_for(mv, turn).unwrap_or_else(|| panic!("{mv} in {} has no index", pos.to_setup()));
            assert_eq!(policy::move_for(i, turn), Some(mv));
            moves += 1;
        }
    }
    assert!(moves > 50_000, "only {moves} moves checked");
}

#[test]
fn encoding_round_trips() {
    for (pos, history) in sample_positions(500, 2) {
        let planes = encode(&pos, history);
        let (board, decoded) = encoding::decode(&planes, pos.turn()).expect("planes decode");
        assert_eq!(board, pos.to_setup().board);
        assert_eq!(
            decoded,
            History { quiet_plies: history.quiet_plies.min(120), repetitions: history.repetitions.min(2) }
        );
    }
}

#[test]
fn a_position_and_its_colour_swapped_flip_look_the_same_to_the_network() {
    for (pos, history) in sample_positions(500, 3) {
        let swapped = swap_sides(&pos);
        assert_eq!(encode(&pos, history), encode(&swapped, history));
        for &mv in &pos.legal_moves() {
            assert_eq!(policy::index_for(mv, pos.turn()), policy::index_for(mv.flip_rank(), swapped.turn()));
        }
    }
}

#[test]
fn black_to_move_is_flipped_top_to_bottom() {
    let pos = Position::from_fen("4k4/9/9/9/9/9/9/9/9/3K5 b").unwrap();
    let planes = encode(&pos, History::default());
    // Black's king on e10 (file 4, rank 9) is the side to move's king at rank 0 of the view.
    assert_eq!(planes[4], 1.0);
    // Red's king on d1 (file 3, rank 0) is the opponent's king at rank 9.
    assert_eq!(planes[7 * 90 + 9 * 9 + 3], 1.0);
    assert_eq!(planes[..14 * 90].iter().sum::<f32>(), 2.0);
}

#[test]
fn mirrored_positions_encode_to_mirrored_planes() {
    for (pos, history) in sample_positions(300, 4) {
        let planes = encode(&pos, history);
        let mirrored = encode(&pos.mirror(), history);
        for plane in 0..encoding::PLANES {
            for rank in 0..10 {
                for file in 0..9 {
                    assert_eq!(planes[plane * 90 + rank * 9 + file], mirrored[plane * 90 + rank * 9 + 8 - file]);
                }
            }
        }
        for &mv in &pos.legal_moves() {
            let i = policy::index_for(mv, pos.turn()).unwrap();
            assert_eq!(policy::index_for(mv.mirror(), pos.turn()), Some(policy::mirror(i)));
        }
    }
}

#[test]
fn stored_boards_encode_like_positions() {
    for (pos, history) in sample_positions(300, 5) {
        let board: Vec<u8> = pos.to_setup().board.iter().map(|p| p.map_or(0, |p| p.index() as u8 + 1)).collect();
        let mut planes = vec![0.0; INPUT_SIZE];
        encoding::encode_board(&board, pos.turn(), history, &mut planes).unwrap();
        assert_eq!(planes, encode(&pos, history));
    }
    let mut bad = [0u8; 90];
    bad[17] = 15;
    let err = encoding::encode_board(&bad, Color::Red, History::default(), &mut vec![0.0; INPUT_SIZE]).unwrap_err();
    assert_eq!(err.to_string(), "bad board code 15 on square 17");
}

#[test]
fn history_planes_carry_the_counter_and_repetitions() {
    let pos = Position::startpos();
    let planes = encode(&pos, History { quiet_plies: 60, repetitions: 0 });
    assert!(planes[14 * 90..15 * 90].iter().all(|&v| v == 0.5));
    assert!(planes[15 * 90..17 * 90].iter().all(|&v| v == 0.0));
    assert!(planes[17 * 90..18 * 90].iter().all(|&v| v == 1.0));
    let planes = encode(&pos, History { quiet_plies: 500, repetitions: 2 });
    assert!(planes[14 * 90..17 * 90].iter().all(|&v| v == 1.0));
    let once = encode(&pos, History { quiet_plies: 0, repetitions: 1 });
    assert!(once[15 * 90..16 * 90].iter().all(|&v| v == 1.0));
    assert!(once[16 * 90..17 * 90].iter().all(|&v| v == 0.0));
}

/// The value of every square of count plane `plane` (18 + side * 6 + kind), which must be constant.
fn count_plane(planes: &[f32], plane: usize) -> f32 {
    let values = &planes[plane * 90..(plane + 1) * 90];
    assert!(values.iter().all(|&v| v == values[0]), "count plane {plane} is not constant");
    values[0]
}

#[test]
fn count_planes_carry_each_sides_material_from_the_movers_view() {
    let full = encode(&Position::startpos(), History::default());
    assert!((18..30).all(|plane| count_plane(&full, plane) == 1.0));
    // Red lacks a rook and three pawns, Black a horse; Black to move sees its own counts first.
    let pos = Position::from_fen("r1bakabnr/9/1c5c1/p1p1p1p1p/9/9/P3P4/1C5C1/9/1NBAKABNR b").unwrap();
    let planes = encode(&pos, History::default());
    let own: Vec<f32> = (18..24).map(|plane| count_plane(&planes, plane)).collect();
    let theirs: Vec<f32> = (24..30).map(|plane| count_plane(&planes, plane)).collect();
    assert_eq!(own, [1.0, 1.0, 0.5, 1.0, 1.0, 1.0]);
    assert_eq!(theirs, [1.0, 1.0, 1.0, 0.5, 1.0, 0.4]);
}

#[test]
fn game_history_reaches_the_encoding() {
    let mut game = xiangqi::game::Game::new(Default::default());
    for mv in ["h2e2", "h9g7", "e2h2", "g7h9", "h2e2", "h9g7", "e2h2", "g7h9"] {
        game.push_str(mv).unwrap();
    }
    assert_eq!(History::of_game(&game), History { quiet_plies: 8, repetitions: 2 });
}
