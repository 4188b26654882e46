//! What a worker that forges match pairs plays: legal games that are not the match's, which only
//! an audit can tell from honest ones.

use xiangqi::Move;
use xiangqi::game::Game;
use xqz_arena::player::{Player, PlayerError};

/// A player that blunders on purpose: the last of its legal moves, whatever the position, under
/// the name of the player it stands in for.
pub struct Blunderer {
    name: String,
}

impl Blunderer {
    /// A blunderer that signs its games as `name`.
    pub fn new(name: &str) -> Blunderer {
        Blunderer { name: name.to_string() }
    }
}

impl Player for Blunderer {
    fn name(&self) -> &str {
        &self.name
    }

    fn new_game(&mut self) -> Result<(), PlayerError> {
        Ok(())
    }

    fn choose(&mut self, game: &Game) -> Result<Move, PlayerError> {
        Ok(*game.position().legal_moves().last().expect("an ongoing game has a legal move"))
    }
}
