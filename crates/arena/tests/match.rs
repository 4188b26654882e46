//! Matches: a stronger evaluator wins, a player against itself breaks even over paired colours,
//! seeds reproduce results, an evaluator error fails the match, and the Elo arithmetic.

use xiangqi::game::{Game, GameConfig};
use xqz_arena::{MatchConfig, MatchResult, play_match};
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

#[test]
fn material_beats_uniform() {
    // Scores 75-94% over seeds 0-5 (about 0.3 s each); 60% leaves room for changes in the search.
    let result = play_match(&mut MaterialEvaluator, &mut UniformEvaluator, &config(16, 128, 300, 1)).unwrap();
    assert_eq!(result.games(), 16);
    assert!(result.score() > 0.6, "{result}");
}

#[test]
fn identical_players_break_even_over_paired_colours() {
    // Both sides play the same deterministic moves, so each pair's second game replays the
    // first with the players swapped: whoever won with a colour wins with it again.
    let result = play_match(&mut MaterialEvaluator, &mut MaterialEvaluator, &config(8, 32, 150, 2)).unwrap();
    assert_eq!(result.games(), 8);
    assert!(result.wins > 0, "decisive games make the test mean something: {result}");
    assert_eq!(result.wins, result.losses, "{result}");
    assert_eq!(result.elo(), 0.0);
}

#[test]
fn the_same_seed_reproduces_the_match() {
    let config = config(4, 16, 60, 3);
    let first = play_match(&mut MaterialEvaluator, &mut UniformEvaluator, &config).unwrap();
    let again = play_match(&mut MaterialEvaluator, &mut UniformEvaluator, &config).unwrap();
    assert_eq!(first, again);
}

/// Fails every evaluation.
struct Broken;

impl Evaluator for Broken {
    fn evaluate(&mut self, _: &[&Game]) -> Result<Vec<Evaluation>, EvalError> {
        Err(EvalError("broken".into()))
    }
}

#[test]
fn an_evaluator_error_ends_the_match() {
    let err = play_match(&mut UniformEvaluator, &mut Broken, &config(2, 8, 40, 4)).unwrap_err();
    assert!(err.0.ends_with("evaluation failed: broken"), "{err}");
}

#[test]
#[should_panic(expected = "even number of games")]
fn an_odd_number_of_games_is_refused() {
    let _ = play_match(&mut UniformEvaluator, &mut UniformEvaluator, &config(3, 8, 40, 5));
}

#[test]
fn elo_follows_the_score() {
    let even = MatchResult { wins: 3, draws: 4, losses: 3 };
    assert_eq!(even.score(), 0.5);
    assert_eq!(even.elo(), 0.0);

    let three_quarters = MatchResult { wins: 5, draws: 2, losses: 1 };
    assert_eq!(three_quarters.score(), 0.75);
    assert!((three_quarters.elo() - 190.85).abs() < 0.01, "{}", three_quarters.elo());
    assert!((MatchResult { wins: 1, draws: 2, losses: 5 }.elo() + 190.85).abs() < 0.01);

    // A perfect score implies an infinite difference; it is reported at the clamp.
    assert_eq!(MatchResult { wins: 4, draws: 0, losses: 0 }.elo(), 800.0);
    assert_eq!(MatchResult { wins: 0, draws: 0, losses: 4 }.elo(), -800.0);
    assert_eq!(MatchResult::default().score(), 0.5);
}

#[test]
fn the_error_bar_shrinks_with_more_games() {
    let few = MatchResult { wins: 10, draws: 6, losses: 4 };
    let many = MatchResult { wins: 100, draws: 60, losses: 40 };
    assert_eq!(few.elo(), many.elo());
    assert!(many.elo_error95() > 0.0);
    // Ten times the games: about 1/sqrt(10) of the width, give or take the curve of the Elo scale.
    let ratio = many.elo_error95() / few.elo_error95();
    assert!((0.25..0.35).contains(&ratio), "{ratio}");
    assert_eq!(MatchResult::default().elo_error95(), f64::INFINITY);
}

#[test]
fn display_shows_the_record_score_and_elo() {
    let result = MatchResult { wins: 12, draws: 5, losses: 3 };
    assert_eq!(result.to_string(), "+12 =5 -3 (score 72.5%, Elo +168 ± 157)");
    assert_eq!(MatchResult { wins: 1, draws: 0, losses: 1 }.to_string(), "+1 =0 -1 (score 50.0%, Elo +0 ± 800)");
}
