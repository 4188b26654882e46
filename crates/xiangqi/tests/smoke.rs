//! Sanity checks of the shared random-game helper.
mod common;

#[test]
fn random_games_are_reproducible_and_legal() {
    let a = common::random_games(7, 20, 150);
    let b = common::random_games(7, 20, 150);
    assert_eq!(a.len(), 20);
    for (ga, gb) in a.iter().zip(&b) {
        assert_eq!(ga.moves, gb.moves);
        let mut pos = ga.start.clone();
        for &mv in &ga.moves {
            pos.play(mv).expect("every generated move is legal");
        }
    }
}
