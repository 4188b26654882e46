//! Players of arena games: a search over any [`Evaluator`], or an external UCI engine; and one
//! game between two of them, adjudicated by [`Game`].

use xiangqi::game::Game;
use xiangqi::{Color, Move};
use xqz_mcts::{EvalError, Evaluator, SearchConfig, Tree, search};

use crate::uci::{EngineConfig, EngineError, Limit, UciEngine};

/// Why a player could not move.
#[derive(Debug, thiserror::Error)]
pub enum PlayerError {
    /// The network (or other evaluator) failed.
    #[error(transparent)]
    Eval(#[from] EvalError),
    /// The external engine failed or broke the protocol.
    #[error(transparent)]
    Engine(#[from] EngineError),
}

/// Something that picks moves in ongoing games.
pub trait Player {
    /// The name in records and reports.
    fn name(&self) -> &str;
    /// Forgets the previous game (an engine's `ucinewgame`).
    fn new_game(&mut self) -> Result<(), PlayerError>;
    /// The move for the side to move in `game`, which is not over.
    fn choose(&mut self, game: &Game) -> Result<Move, PlayerError>;
}

/// MCTS with a fixed number of playouts per move over an evaluator; plays the most visited move
/// of a fresh tree each time (deterministic for a deterministic evaluator).
pub struct SearchPlayer<E> {
    name: String,
    evaluator: E,
    playouts: u32,
    search: SearchConfig,
}

impl<E: Evaluator> SearchPlayer<E> {
    /// A player called `name` searching `playouts` playouts per move with `evaluator`.
    pub fn new(name: &str, evaluator: E, playouts: u32, search: SearchConfig) -> SearchPlayer<E> {
        SearchPlayer { name: name.to_string(), evaluator, playouts, search }
    }
}

impl<E: Evaluator> Player for SearchPlayer<E> {
    fn name(&self) -> &str {
        &self.name
    }

    fn new_game(&mut self) -> Result<(), PlayerError> {
        Ok(())
    }

    fn choose(&mut self, game: &Game) -> Result<Move, PlayerError> {
        let mut tree = Tree::new(game.clone());
        search(&mut tree, &mut self.evaluator, self.playouts, &self.search)?;
        Ok(tree.root().best_move().expect("an ongoing game has a legal move"))
    }
}

/// An external UCI engine with a fixed limit per move; restarted for the next game after an
/// error that leaves its state unknown (a timeout, an exit).
pub struct EnginePlayer {
    config: EngineConfig,
    limit: Limit,
    engine: Option<UciEngine>,
    name: String,
}

impl EnginePlayer {
    /// Starts the engine of `config`, which will think with `limit` on each move. Its name is
    /// the engine's own with the options set and the limit (`Fairy-Stockfish 11.1 [Skill Level=0]
    /// depth 1`): one engine at two settings is two players, which a ladder must not merge.
    ///
    /// # Errors
    /// If the engine does not start or fails its handshake.
    pub fn spawn(config: EngineConfig, limit: Limit) -> Result<EnginePlayer, PlayerError> {
        let engine = UciEngine::spawn(&config)?;
        let options: Vec<String> = config.options.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let options = if options.is_empty() { String::new() } else { format!(" [{}]", options.join(", ")) };
        let name = format!("{}{options} {limit}", engine.name());
        Ok(EnginePlayer { config, limit, engine: Some(engine), name })
    }

    fn engine(&mut self) -> Result<&mut UciEngine, PlayerError> {
        if self.engine.is_none() {
            self.engine = Some(UciEngine::spawn(&self.config)?);
        }
        Ok(self.engine.as_mut().expect("just started"))
    }
}

impl Player for EnginePlayer {
    fn name(&self) -> &str {
        &self.name
    }

    fn new_game(&mut self) -> Result<(), PlayerError> {
        let result = self.engine()?.new_game();
        self.keep_if_usable(result)
    }

    fn choose(&mut self, game: &Game) -> Result<Move, PlayerError> {
        let limit = self.limit;
        let result = self.engine()?.go(game, &limit).map(|reply| reply.best);
        self.keep_if_usable(result)
    }
}

impl EnginePlayer {
    /// Drops the engine after an error that leaves it unusable, so the next game restarts it.
    fn keep_if_usable<T>(&mut self, result: Result<T, EngineError>) -> Result<T, PlayerError> {
        if let Err(e) = &result
            && !matches!(e, EngineError::IllegalMove { .. } | EngineError::NoMove)
        {
            self.engine = None;
        }
        Ok(result?)
    }
}

/// How a game ended when a player, not the rules, ended it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Forfeit {
    /// The side that lost by it.
    pub loser: Color,
    /// What went wrong.
    pub reason: String,
}

/// Plays `game` to its end with `red` and `black`; a player that fails or answers an illegal
/// move loses the game (recorded as a resignation in the game, with the forfeit's reason).
pub fn play_game<'p>(
    mut game: Game,
    red: &mut (dyn Player + 'p),
    black: &mut (dyn Player + 'p),
) -> (Game, Option<Forfeit>) {
    for (color, player) in [(Color::Red, &mut *red), (Color::Black, &mut *black)] {
        if let Err(e) = player.new_game() {
            return forfeit(game, color, format!("{} failed to start a game: {e}", player.name()));
        }
    }
    while !game.outcome().is_over() {
        let color = game.position().turn();
        let player: &mut (dyn Player + 'p) = if color == Color::Red { &mut *red } else { &mut *black };
        match player.choose(&game) {
            Ok(mv) => {
                if let Err(e) = game.push(mv) {
                    let reason = format!("{} played an illegal move: {e}", player.name());
                    return forfeit(game, color, reason);
                }
            }
            Err(e) => return forfeit(game, color, format!("{}: {e}", player.name())),
        }
    }
    (game, None)
}

fn forfeit(mut game: Game, loser: Color, reason: String) -> (Game, Option<Forfeit>) {
    game.resign(loser).expect("the game is still going");
    (game, Some(Forfeit { loser, reason }))
}
