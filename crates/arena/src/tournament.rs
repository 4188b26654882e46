//! Matches of many games between two players, several at once: paired openings with colours
//! swapped, statistics after every pair, and an optional SPRT that ends the match early.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use xiangqi::game::{Game, GameConfig, Outcome};
use xiangqi::{Color, Move, Position};
use xqz_mcts::{OpeningSuite, SuiteError, game_seed};

use crate::MatchResult;
use crate::player::{Forfeit, Player, PlayerError, play_game};
use crate::stats::{Pentanomial, Sprt, SprtState};

/// Random openings drawn for one pair before giving up on finding one that leaves the game going.
const OPENING_DRAWS: u32 = 1000;

/// Where each pair's games start.
#[derive(Clone, Debug, PartialEq)]
pub enum Openings {
    /// `plies` uniformly random legal moves from the start position; pair `i` draws with
    /// [`game_seed`]`(seed, i)`.
    Random {
        /// Random plies.
        plies: u32,
        /// Seed of the draws.
        seed: u64,
    },
    /// Positions from a suite (an EPD-style list of FENs), pair `i` taking entry `i` modulo
    /// its length.
    Suite(Vec<Position>),
}

impl Openings {
    /// Reads an opening suite ([`OpeningSuite::parse`]: one FEN per line, EPD-style).
    ///
    /// # Errors
    /// The first line that is not a valid position, with its number.
    pub fn parse_suite(text: &str) -> Result<Openings, SuiteError> {
        Ok(Openings::Suite(OpeningSuite::parse(text)?.positions().to_vec()))
    }

    /// The start of pair `pair` under `config`.
    ///
    /// # Panics
    /// If no random opening leaves the game going (a length cap not above the plies, say).
    pub fn game(&self, pair: u32, config: GameConfig) -> Game {
        match self {
            Openings::Suite(positions) => {
                Game::from_position(positions[pair as usize % positions.len()].clone(), config)
            }
            Openings::Random { plies, seed } => {
                let mut rng = ChaCha8Rng::seed_from_u64(game_seed(*seed, pair.into()));
                for _ in 0..OPENING_DRAWS {
                    let mut game = Game::new(config);
                    for _ in 0..*plies {
                        let legal = game.legal_moves();
                        let mv = legal[rng.random_range(0..legal.len())];
                        if game.push_unchecked(mv).is_over() {
                            break;
                        }
                    }
                    if !game.outcome().is_over() {
                        return game;
                    }
                }
                panic!("no opening of {plies} random plies out of {OPENING_DRAWS} left the game going")
            }
        }
    }
}

/// How a match is run.
#[derive(Clone, Debug, PartialEq)]
pub struct MatchPlan {
    /// Pairs of games at most (each opening played with both colours).
    pub pairs: u32,
    /// Pairs (by number) that an earlier part of this match played already: skipped, so that a
    /// match cut short goes on with the openings the whole match would have played.
    pub played: BTreeSet<u32>,
    /// Games played at once (each thread plays whole pairs with its own players).
    pub concurrency: usize,
    /// The openings.
    pub openings: Openings,
    /// Adjudication, including a length cap that keeps weak players' games finite.
    pub game: GameConfig,
    /// A test that ends the match once decided.
    pub sprt: Option<Sprt>,
}

impl MatchPlan {
    /// The pairs (by number) this plan plays: those below [`pairs`](Self::pairs) not
    /// [`played`](Self::played) already.
    pub fn to_play(&self) -> Vec<u32> {
        (0..self.pairs).filter(|pair| !self.played.contains(pair)).collect()
    }

    /// The opening pair `pair` starts from, named as [`opening_name`] names it.
    pub fn opening(&self, pair: u32) -> String {
        let game = self.openings.game(pair, self.game);
        opening_name(&game.start().to_string(), game.moves().map(|mv| mv.to_string()))
    }
}

/// An opening's name in the records: its start position's FEN and its moves, as a UCI `position`
/// command gives them. Two games from the same opening have the same name, whichever seed or
/// suite line drew it, and games from different openings have different names.
pub fn opening_name<S: AsRef<str>>(start: &str, moves: impl IntoIterator<Item = S>) -> String {
    let mut name = format!("fen {start} moves");
    for mv in moves {
        name.push(' ');
        name.push_str(mv.as_ref());
    }
    name
}

/// One finished game of a match.
#[derive(Clone, Debug)]
pub struct MatchGame {
    /// The pair it belongs to.
    pub pair: u32,
    /// The colour of the first player (`a`).
    pub first: Color,
    /// Red's name.
    pub red: String,
    /// Black's name.
    pub black: String,
    /// The opening's position (before its random plies).
    pub start: Position,
    /// Plies of the opening (random or none) at the start of `moves`.
    pub opening_plies: usize,
    /// Every move from `start`.
    pub moves: Vec<Move>,
    /// The result, as the rules (or a forfeit, recorded as a resignation) decided it.
    pub outcome: Outcome,
    /// Set when a player lost by failing or by an illegal move.
    pub forfeit: Option<Forfeit>,
}

impl MatchGame {
    /// The first player's score: 1, ½ or 0.
    pub fn first_score(&self) -> f64 {
        match self.outcome.winner() {
            None => 0.5,
            Some(w) if w == self.first => 1.0,
            Some(_) => 0.0,
        }
    }
}

/// A match's totals from the first player's point of view.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct MatchReport {
    /// Wins, draws, losses.
    pub games: MatchResult,
    /// Pair scores.
    pub pairs: Pentanomial,
    /// The test's state: its decision once reached (pairs still in flight then do not change
    /// it), else its state after the last pair; `None` without a test.
    pub sprt: Option<SprtState>,
    /// The pairs counted when the test decided.
    pub decided_after: Option<u64>,
}

/// A maker of a player, called once per thread (on that thread); the player may borrow what
/// the factory does.
pub type PlayerFactory<'a> = dyn Fn() -> Result<Box<dyn Player + 'a>, PlayerError> + Sync + 'a;

/// Plays `plan` between the players `a` and `b` make, `a` first; hands every game to `on_game`
/// (pair by pair, both games of a pair together) and returns the totals. The SPRT, if any, is
/// checked after each pair; once decided, no new pair starts and pairs already going finish.
///
/// # Errors
/// The first failure to make a player (a failing *move* is a forfeit, not an error).
pub fn run_match(
    plan: &MatchPlan,
    a: &PlayerFactory<'_>,
    b: &PlayerFactory<'_>,
    on_game: impl FnMut(&MatchGame, &MatchReport),
) -> Result<MatchReport, PlayerError> {
    run_match_until(plan, a, b, &AtomicBool::new(false), on_game)
}

/// [`run_match`], ended early once `halt` is set: games in progress play to their end, then no
/// game starts. A pair whose first game ends after `halt` was set is dropped (its second game is
/// not played and its first is neither handed to `on_game` nor counted), since a pair is what the
/// statistics and a resumed match ([`MatchPlan::played`]) count. Whether the match was cut short
/// is for the caller to see: fewer pairs than [`MatchPlan::to_play`] and no SPRT decision.
///
/// # Errors
/// As [`run_match`].
pub fn run_match_until(
    plan: &MatchPlan,
    a: &PlayerFactory<'_>,
    b: &PlayerFactory<'_>,
    halt: &AtomicBool,
    mut on_game: impl FnMut(&MatchGame, &MatchReport),
) -> Result<MatchReport, PlayerError> {
    let todo = plan.to_play();
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let mut report = MatchReport::default();
    let (tx, rx) = mpsc::channel::<Result<[MatchGame; 2], PlayerError>>();
    let mut failure = None;
    std::thread::scope(|scope| {
        for _ in 0..plan.concurrency.clamp(1, todo.len().max(1)) {
            let tx = tx.clone();
            let (next, stop, todo) = (&next, &stop, &todo);
            scope.spawn(move || {
                let players = a().and_then(|pa| Ok((pa, b()?)));
                let (mut pa, mut pb) = match players {
                    Ok(players) => players,
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                };
                let halted = || halt.load(Ordering::Relaxed);
                while !stop.load(Ordering::Relaxed) && !halted() {
                    let Some(&pair) = todo.get(next.fetch_add(1, Ordering::Relaxed)) else {
                        break;
                    };
                    let first = play_pair_game(plan, pair, Color::Red, pa.as_mut(), pb.as_mut());
                    if halted() {
                        break;
                    }
                    let second = play_pair_game(plan, pair, Color::Black, pa.as_mut(), pb.as_mut());
                    if tx.send(Ok([first, second])).is_err() {
                        break;
                    }
                }
            });
        }
        drop(tx);
        for games in rx {
            match games {
                Ok(games) => {
                    for game in &games {
                        report.games.record(game.outcome, game.first);
                    }
                    report.pairs.add_pair(games[0].first_score(), games[1].first_score());
                    // A decision stands: pairs that were already going when it came still
                    // count in the totals but cannot reopen the test.
                    if let Some(sprt) = &plan.sprt
                        && report.sprt.is_none_or(|state| state == SprtState::Continue)
                    {
                        let state = sprt.decide(&report.pairs);
                        report.sprt = Some(state);
                        if state != SprtState::Continue {
                            report.decided_after = Some(report.pairs.pairs());
                            stop.store(true, Ordering::Relaxed);
                        }
                    }
                    for game in &games {
                        on_game(game, &report);
                    }
                }
                Err(e) => {
                    stop.store(true, Ordering::Relaxed);
                    failure.get_or_insert(e);
                }
            }
        }
    });
    match failure {
        Some(e) => Err(e),
        None => Ok(report),
    }
}

/// One game of pair `pair`, the first player (`a`) playing `first`.
pub(crate) fn play_pair_game<'p>(
    plan: &MatchPlan,
    pair: u32,
    first: Color,
    a: &mut (dyn Player + 'p),
    b: &mut (dyn Player + 'p),
) -> MatchGame {
    let opening = plan.openings.game(pair, plan.game);
    let start = opening.start().clone();
    let opening_plies = opening.len();
    let (red, black) = if first == Color::Red { (a, b) } else { (b, a) };
    let names = (red.name().to_string(), black.name().to_string());
    let (game, forfeit) = play_game(opening, red, black);
    MatchGame {
        pair,
        first,
        red: names.0,
        black: names.1,
        start,
        opening_plies,
        moves: game.moves().collect(),
        outcome: game.outcome(),
        forfeit,
    }
}
