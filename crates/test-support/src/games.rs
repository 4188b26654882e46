//! Games built from coordinate moves.

use xiangqi::game::{Game, GameConfig};

/// The game after `moves` (coordinate moves separated by spaces) from the start position.
///
/// # Panics
/// On a move that is not legal where it is played.
pub fn game_after(moves: &str) -> Game {
    let mut game = Game::new(GameConfig::default());
    for mv in moves.split_whitespace() {
        game.push_str(mv).unwrap_or_else(|e| panic!("{mv} in {moves:?}: {e}"));
    }
    game
}
