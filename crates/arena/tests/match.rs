//! Matches as every match is played (`tournament::run_match` over a [`MatchConfig`]'s plan): a
//! stronger evaluator wins, a player against itself breaks even over paired colours, seeds
//! reproduce results, an evaluator error forfeits the games of its player, and a match halted
//! from outside ends between games.

use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};

use xiangqi::Move;
use xiangqi::game::{Game, GameConfig};
use xqz_arena::player::{Player, PlayerError, SearchPlayer};
use xqz_arena::tournament::{MatchReport, run_match, run_match_until};
use xqz_arena::{MatchConfig, MatchResult};
use xqz_mcts::{EvalError, Evaluation, Evaluator, MaterialEvaluator, UniformEvaluator};

fn config(games: u32, playouts: u32, max_plies: u32, seed: u64) -> MatchConfig {
    MatchConfig {
        games,
        playouts,
        game: GameConfig { max_plies: Some(max_plies), ..GameConfig::default() },
        seed,
        ..MatchConfig::default()
    }
}

/// `a` against `b`, each a search over its evaluator, under `config`; `forfeits` counts the
/// games a player lost by forfeit.
fn play<A, B>(a: A, b: B, config: &MatchConfig, forfeits: &mut u32) -> MatchReport
where
    A: Evaluator + Clone + Send + Sync,
    B: Evaluator + Clone + Send + Sync,
{
    let make_a = || Ok(Box::new(SearchPlayer::new("a", a.clone(), config.playouts, config.search)) as Box<dyn Player>);
    let make_b = || Ok(Box::new(SearchPlayer::new("b", b.clone(), config.playouts, config.search)) as Box<dyn Player>);
    run_match(&config.plan(), &make_a, &make_b, |game, _| *forfeits += u32::from(game.forfeit.is_some())).unwrap()
}

fn games(
    a: impl Evaluator + Clone + Send + Sync,
    b: impl Evaluator + Clone + Send + Sync,
    config: &MatchConfig,
) -> MatchResult {
    let mut forfeits = 0;
    let report = play(a, b, config, &mut forfeits);
    assert_eq!(forfeits, 0);
    report.games
}

#[test]
fn material_beats_uniform() {
    // Scores 75-94% over seeds 0-5 (about 0.3 s each); 60% leaves room for changes in the search.
    let result = games(MaterialEvaluator, UniformEvaluator, &config(16, 128, 300, 1));
    assert_eq!(result.games(), 16);
    assert!(result.score() > 0.6, "{result:?}");
}

#[test]
fn identical_players_break_even_over_paired_colours() {
    // Both sides play the same deterministic moves, so each pair's second game replays the
    // first with the players swapped: whoever won with a colour wins with it again.
    let result = games(MaterialEvaluator, MaterialEvaluator, &config(8, 32, 150, 2));
    assert_eq!(result.games(), 8);
    assert!(result.wins > 0, "decisive games make the test mean something: {result:?}");
    assert_eq!(result.wins, result.losses, "{result:?}");
    assert_eq!(result.score(), 0.5);
}

#[test]
fn the_same_seed_reproduces_the_match() {
    let config = config(4, 16, 60, 3);
    assert_eq!(
        games(MaterialEvaluator, UniformEvaluator, &config),
        games(MaterialEvaluator, UniformEvaluator, &config)
    );
}

/// Fails every evaluation.
#[derive(Clone)]
struct Broken;

impl Evaluator for Broken {
    fn evaluate(&mut self, _: &[&Game]) -> Result<Vec<Evaluation>, EvalError> {
        Err(EvalError("broken".into()))
    }
}

#[test]
fn an_evaluator_error_forfeits_its_player_s_games() {
    let mut forfeits = 0;
    let report = play(UniformEvaluator, Broken, &config(2, 8, 40, 4), &mut forfeits);
    assert_eq!(forfeits, 2);
    assert_eq!(report.games, MatchResult { wins: 2, draws: 0, losses: 0 });
}

/// A material searcher that sets `halt` as it starts to choose its first move of its game number
/// `halt_in_game` (from 1), and counts the games it was asked to start and the moves it chose
/// once `halt` was set.
struct Halting<'h> {
    search: SearchPlayer<MaterialEvaluator>,
    halt: &'h AtomicBool,
    halt_in_game: u32,
    games: &'h AtomicU32,
    moves_after_halt: &'h AtomicU32,
}

impl Player for Halting<'_> {
    fn name(&self) -> &str {
        self.search.name()
    }

    fn new_game(&mut self) -> Result<(), PlayerError> {
        self.games.fetch_add(1, Ordering::Relaxed);
        self.search.new_game()
    }

    fn choose(&mut self, game: &Game) -> Result<Move, PlayerError> {
        if self.games.load(Ordering::Relaxed) == self.halt_in_game {
            self.halt.store(true, Ordering::Relaxed);
        }
        if self.halt.load(Ordering::Relaxed) {
            self.moves_after_halt.fetch_add(1, Ordering::Relaxed);
        }
        self.search.choose(game)
    }
}

#[test]
fn a_halted_match_ends_between_games_and_drops_the_pair_it_was_in() {
    let config = config(8, 8, 40, 5);
    let (halt, games, moves_after_halt) = (AtomicBool::new(false), AtomicU32::new(0), AtomicU32::new(0));
    // The halt comes in the first game of the second pair.
    let make_a = || {
        let search = SearchPlayer::new("a", MaterialEvaluator, 8, config.search);
        let halting =
            Halting { search, halt: &halt, halt_in_game: 3, games: &games, moves_after_halt: &moves_after_halt };
        Ok(Box::new(halting) as Box<dyn Player + '_>)
    };
    let make_b = || Ok(Box::new(SearchPlayer::new("b", UniformEvaluator, 8, config.search)) as Box<dyn Player>);
    let mut handed = Vec::new();
    let report = run_match_until(&config.plan(), &make_a, &make_b, &halt, |game, _| handed.push(game.pair)).unwrap();

    assert_eq!(report.pairs.pairs(), 1, "only the pair played before the halt counts: {report:?}");
    assert_eq!(report.games.games(), 2);
    assert_eq!(handed, [0, 0]);
    // The game in progress went on after the halt, and no game started after it.
    assert!(moves_after_halt.load(Ordering::Relaxed) > 1, "the game in progress was played on");
    assert_eq!(games.load(Ordering::Relaxed), 3, "the halted pair's second game never started");
}
