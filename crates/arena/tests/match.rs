//! Matches as every match is played (`tournament::run_match` over a [`MatchConfig`]'s plan): a
//! stronger evaluator wins, a player against itself breaks even over paired colours, seeds
//! reproduce results, and an evaluator error forfeits the games of its player.

use xiangqi::game::{Game, GameConfig};
use xqz_arena::player::{Player, SearchPlayer};
use xqz_arena::tournament::{MatchReport, run_match};
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
