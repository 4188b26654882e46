//! The search as a player: finds mates, avoids a forbidden perpetual, counts its playouts, and
//! self-play games replay exactly from their seeds.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use xiangqi::game::{Game, GameConfig, Reason};
use xiangqi::{Move, Position};
use xqz_mcts::{
    EvalError, Evaluation, Evaluator, MaterialEvaluator, OpeningSuite, Pending, PlaySettings, RootStats, SearchConfig,
    SelfPlayConfig, Tree, UniformEvaluator, replay, search, search_until, self_play,
};

fn game(fen: &str, moves: &str) -> Game {
    let mut game = Game::from_position(fen.parse::<Position>().unwrap(), GameConfig::default());
    for mv in moves.split_whitespace() {
        game.push_str(mv).unwrap();
    }
    game
}

fn best(game: Game, playouts: u32) -> Move {
    let mut tree = Tree::new(game);
    search(&mut tree, &mut UniformEvaluator, playouts, &SearchConfig::default()).unwrap();
    tree.root().best_move().unwrap()
}

fn mv(text: &str) -> Move {
    text.parse().unwrap()
}

#[test]
fn finds_a_mate_in_one() {
    // The rook takes the open d-file (mate) or rank 8 (stalemate, which also loses); the kings
    // face on the e-file, so the black king is trapped.
    assert!([mv("a1d1"), mv("a1a8")].contains(&best(game("3k5/9/9/9/9/9/9/9/R8/4K4 w", ""), 300)));
}

#[test]
fn a_mate_in_one_with_a_tiny_prior_is_played_with_playouts_too_few_to_visit_every_move() {
    // Red has about 30 moves; a1d1 and a1a8 mate (checked with pyffish). The network puts 95%
    // of its prior on a quiet king move.
    let game = game("3k5/9/9/9/9/9/9/9/R8/4K4 w", "");
    let mates = [mv("a1d1"), mv("a1a8")];
    for playouts in [1, 4, 16] {
        let tree = search_fixated(&game, mv("e0f0"), playouts, &SearchConfig::default());
        let root = tree.root();
        let wins: Vec<Move> =
            root.children.iter().zip(&root.mates).filter(|c| *c.1 == Some(1)).map(|c| c.0.0).collect();
        assert_eq!(wins.len(), 2, "{playouts} playouts");
        assert!(wins.iter().all(|m| mates.contains(m)), "{playouts} playouts: {wins:?}");
        assert!(mates.contains(&root.best_move().unwrap()), "{playouts} playouts");
        assert!(mates.contains(&root.sample_move(1.0, &mut rand::rng()).unwrap()), "{playouts} playouts");
    }
}

#[test]
fn finds_a_mate_in_two() {
    // Only R a5-d5 (a check on the d-file) mates next move whatever Black does; checked
    // exhaustively with pyffish when the case was written.
    assert_eq!(best(game("3a5/3k5/9/p8/R4R3/9/9/9/9/5K3 w", ""), 3000), mv("a5d5"));
}

#[test]
fn avoids_a_move_that_loses_by_perpetual_check() {
    // Red's rook has checked from h9/h8 twice; h8h9 now would repeat the cycle a third time and
    // lose (25.1), though the position is otherwise a win for Red.
    let game = game("3k5/9/7R1/9/9/9/9/9/9/4K4 w - - 0 1", "h7h9 d9d8 h9h8 d8d9 h8h9 d9d8 h9h8 d8d9");
    let mut losing = game.clone();
    losing.push(mv("h8h9")).unwrap();
    assert_eq!(losing.outcome().verdict().map(|v| v.reason), Some(Reason::PerpetualCheck));
    let mut tree = Tree::new(game);
    search(&mut tree, &mut UniformEvaluator, 400, &SearchConfig::default()).unwrap();
    let root = tree.root();
    assert_ne!(root.best_move(), Some(mv("h8h9")));
    let visits = |m: Move| root.children.iter().find(|c| c.0 == m).unwrap().1;
    assert!(visits(mv("h8h9")) <= 2, "the losing check got {} visits", visits(mv("h8h9")));
}

/// A network fond of one move: `share` of the prior on it wherever it is legal, the rest spread
/// evenly, and `wdl` as its view of every position.
fn fond(games: &[&Game], favourite: Move, share: f32, wdl: impl Fn(&Game) -> [f32; 3]) -> Vec<Evaluation> {
    games
        .iter()
        .map(|g| {
            let legal = g.legal_moves();
            let rest = if legal.contains(&favourite) {
                (1.0 - share) / (legal.len() - 1) as f32
            } else {
                1.0 / legal.len() as f32
            };
            let priors = legal.iter().map(|&m| if m == favourite { share } else { rest }).collect();
            Evaluation { priors, wdl: wdl(g) }
        })
        .collect()
}

/// A confident network: 95% of the prior on one move wherever it is legal, a draw everywhere.
struct Fixated(Move);

impl Evaluator for Fixated {
    fn evaluate(&mut self, games: &[&Game]) -> Result<Vec<Evaluation>, EvalError> {
        Ok(fond(games, self.0, 0.95, |_| [0.0, 1.0, 0.0]))
    }
}

#[test]
fn a_confident_prior_on_a_move_that_loses_on_the_spot_is_overruled_at_once() {
    let game = game("3k5/9/7R1/9/9/9/9/9/9/4K4 w - - 0 1", "h7h9 d9d8 h9h8 d8d9 h8h9 d9d8 h9h8 d8d9");
    for playouts in [8, 32] {
        assert_overruled_at_once(&game, mv("h8h9"), playouts);
    }
}

/// Searches `game` to `playouts` with [`Fixated`] on `favourite`.
fn search_fixated(game: &Game, favourite: Move, playouts: u32, config: &SearchConfig) -> Tree {
    let mut tree = Tree::new(game.clone());
    search(&mut tree, &mut Fixated(favourite), playouts, config).unwrap();
    tree
}

/// Searches `game` with [`Fixated`] on `favourite` and checks that the favourite got one visit
/// and was not chosen; returns the tree.
fn assert_overruled_at_once(game: &Game, favourite: Move, playouts: u32) -> Tree {
    let tree = search_fixated(game, favourite, playouts, &SearchConfig::default());
    let root = tree.root();
    let visits = root.children.iter().find(|c| c.0 == favourite).unwrap().1;
    assert_eq!(visits, 1, "{playouts} playouts: {favourite} was tried more than once");
    assert_ne!(root.best_move(), Some(favourite));
    tree
}

/// A network that likes one move (half the prior where it is legal) and believes Red is
/// winning wherever it looks.
struct FondRedWins(Move);

impl Evaluator for FondRedWins {
    fn evaluate(&mut self, games: &[&Game]) -> Result<Vec<Evaluation>, EvalError> {
        Ok(fond(games, self.0, 0.5, |g| {
            if g.position().turn() == xiangqi::Color::Red { [0.6, 0.2, 0.2] } else { [0.2, 0.2, 0.6] }
        }))
    }
}

#[test]
fn a_side_that_values_playing_on_does_not_repeat_into_a_draw() {
    // Both sides have shuffled: the start position came back a third time at ply 8, and neither
    // side varied in the two rounds since (23.5), so e1d0 ends them with a repetition the rules
    // call a draw.
    let game = game("4k4/4a4/9/9/9/R8/9/9/9/3AK4 b", "e9d9 d0e1 d9e9 e1d0 e9d9 d0e1 d9e9 e1d0 e9d9 d0e1 d9e9");
    let mut drawn = game.clone();
    drawn.push(mv("e1d0")).unwrap();
    assert_eq!(drawn.outcome().verdict().map(|v| v.reason), Some(Reason::AllowedRepetition));
    for playouts in [32, 64] {
        let mut tree = Tree::new(game.clone());
        search(&mut tree, &mut FondRedWins(mv("e1d0")), playouts, &SearchConfig::default()).unwrap();
        let root = tree.root();
        let most_visited = root.children.iter().max_by_key(|c| c.1).unwrap().0;
        assert_eq!(most_visited, mv("e1d0"), "{playouts} playouts: the prior still draws the visits");
        assert_ne!(root.best_move(), Some(mv("e1d0")), "{playouts} playouts: Red repeated a won game");
    }
}

#[test]
fn a_draw_on_the_spot_is_weighed_by_its_exact_value_not_its_visits() {
    let [draw, a, b] = [mv("h2e2"), mv("b2e2"), mv("h0g2")];
    let root = |values: [Option<f32>; 3], visits: [u32; 3]| RootStats {
        children: vec![(draw, visits[0], 0.6), (a, visits[1], 0.3), (b, visits[2], 0.1)],
        values: values.to_vec(),
        wdl: [0.3, 0.4, 0.3],
        draws: vec![true, false, false],
        mates: vec![None; 3],
        refuted: vec![false; 3],
    };
    // The most visited move draws; the most visited move valued above a draw is played.
    assert_eq!(root([Some(0.0), Some(0.1), Some(0.3)], [10, 5, 1]).best_move(), Some(a));
    assert_eq!(root([Some(0.0), Some(-0.1), Some(0.3)], [10, 5, 1]).best_move(), Some(b));
    // Nothing beats the draw: it stays.
    assert_eq!(root([Some(0.0), Some(-0.1), None], [10, 5, 0]).best_move(), Some(draw));
    // Otherwise the visits decide, even for a most visited move valued below a draw.
    assert_eq!(root([Some(0.0), Some(-0.2), Some(0.5)], [2, 9, 1]).best_move(), Some(a));
    assert_eq!(root([Some(0.0), Some(0.2), Some(0.5)], [2, 9, 1]).best_move(), Some(a));
    assert_eq!(root([Some(0.0), Some(0.0), Some(0.5)], [2, 9, 1]).best_move(), Some(a));
}

#[test]
fn a_lead_is_worth_less_as_the_natural_move_limit_nears_and_a_capture_restores_it() {
    // Red is far ahead. e1e8 gives the rook for the horse that the king guards, so on material
    // alone Red keeps its rook. With the clock at 110, 10 plies are left before the natural
    // move limit (120), and only a capture restarts the count.
    let fen = |clock: u32| format!("4k4/4n4/9/9/9/9/P1P3P1P/9/4R4/3A1K3 w - - {clock} 1");
    let searched = |clock: u32, natural_limit_ramp: u32| {
        let config = SearchConfig { natural_limit_ramp, mate_moves: 1, ..SearchConfig::default() };
        let mut tree = Tree::new(game(&fen(clock), ""));
        search(&mut tree, &mut MaterialEvaluator, 400, &config).unwrap();
        tree.root()
    };
    let ramp = SearchConfig::default().natural_limit_ramp;
    assert_eq!(ramp, 40);
    let value = |root: &RootStats, m: &str| {
        let i = root.children.iter().position(|c| c.0 == mv(m)).unwrap();
        root.values[i].unwrap()
    };
    let (fresh, late, late_unramped) = (searched(0, ramp), searched(110, ramp), searched(110, 0));
    // A quiet move searched once is its leaf's evaluation, 9 plies before the limit: 9/40 of it.
    let quiet = "a3a4";
    assert_eq!(late.children.iter().find(|c| c.0 == mv(quiet)).unwrap().1, 1);
    let [win, _, loss] = MaterialEvaluator::wdl(game(&fen(110), quiet).position());
    assert!((value(&late, quiet) - (loss - win) * 9.0 / 40.0).abs() < 1e-5);
    assert!(value(&fresh, "e1e8") < value(&fresh, quiet), "with time left the rook is kept");
    assert!(value(&late, "e1e8") > value(&late, quiet), "near the limit the capture is worth more");
    for (m, unramped) in late_unramped.children.iter().zip(&late_unramped.values) {
        let i = fresh.children.iter().position(|c| c.0 == m.0).unwrap();
        assert_eq!(
            (m.1, *unramped),
            (fresh.children[i].1, fresh.values[i]),
            "{}: without the ramp the clock is no matter",
            m.0
        );
    }
}

#[test]
fn an_absolute_root_first_play_value_of_a_win_tries_every_root_move() {
    let game = game("4k4/4a4/9/9/9/R8/9/9/9/3AK4 w", "");
    let moves = game.legal_moves().len() as u32;
    let visited = |root_fpu| {
        let config = SearchConfig { root_fpu, ..SearchConfig::default() };
        let tree = search_fixated(&game, mv("a4a5"), moves + 8, &config);
        tree.root().children.iter().filter(|c| c.1 > 0).count() as u32
    };
    assert_eq!(visited(Some(1.0)), moves);
    assert!(visited(None) < moves / 2, "the usual first-play value follows the 95% prior");
}

#[test]
fn a_policy_temperature_flattens_the_priors_the_search_uses() {
    let game = game("4k4/4a4/9/9/9/R8/9/9/9/3AK4 w", "");
    let favourite = mv("a4a5");
    let searched = |policy_temperature| {
        let config = SearchConfig { policy_temperature, ..SearchConfig::default() };
        search_fixated(&game, favourite, 64, &config).root()
    };
    let (sharp, flat) = (searched(1.0), searched(4.0));
    let prior = |root: &RootStats| f64::from(root.children.iter().find(|c| c.0 == favourite).unwrap().2);
    let others = game.legal_moves().len() as f64 - 1.0;
    let tempered = |p: f64| p.powf(1.0 / 4.0);
    let expected = tempered(0.95) / (tempered(0.95) + others * tempered(0.05 / others));
    assert!((prior(&sharp) - 0.95).abs() < 1e-6, "1 leaves the priors alone");
    assert!((prior(&flat) - expected).abs() < 1e-5, "prior {} where {expected} was due", prior(&flat));
    let visited = |root: &RootStats| root.children.iter().filter(|c| c.1 > 0).count();
    assert!(visited(&flat) > 3 * visited(&sharp), "{} moves visited flat, {} sharp", visited(&flat), visited(&sharp));
}

#[test]
fn ruling_on_first_repetitions_makes_a_perpetual_check_lost_and_a_quiet_cycle_drawn_at_once() {
    let searched = |game: &Game, favourite: Move, rule_first_repetition| {
        search_fixated(game, favourite, 32, &SearchConfig { rule_first_repetition, ..SearchConfig::default() })
    };
    // The rook has checked twice; h8h9 brings back the position after its first check.
    let checking = game("3k5/9/7R1/9/9/9/9/9/9/4K4 w", "h7h9 d9d8 h9h8 d8d9");
    let check = mv("h8h9");
    let line = |tree: &Tree| tree.lines().into_iter().find(|l| l.moves[0] == check).unwrap();
    let ruled = line(&searched(&checking, check, true));
    assert_eq!((ruled.visits, ruled.wdl), (1, [0.0, 0.0, 1.0]), "a perpetual check loses");
    assert!(!ruled.ends_game, "the game itself goes on");
    assert!(line(&searched(&checking, check, false)).visits > 1, "the first repetition is not final");

    // Knights out and back: the start position again, a quiet cycle.
    let quiet = game("rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABNR w", "h0g2 h9g7 g2h0");
    let back = mv("g7h9");
    let drawn = |rule| {
        let root = searched(&quiet, back, rule).root();
        let i = root.children.iter().position(|c| c.0 == back).unwrap();
        (root.draws[i], root.values[i])
    };
    assert_eq!(drawn(true), (true, Some(0.0)));
    assert!(!drawn(false).0);
    // A root that repeats a position is searched all the same.
    let mut repeated = quiet.clone();
    repeated.push(back).unwrap();
    assert_eq!(searched(&repeated, mv("h0g2"), true).root().playouts(), 32);
}

#[test]
fn a_move_that_allows_mate_in_one_is_refuted_at_its_first_visit() {
    // Red's rook on i4 can block a check on the d-file along its rank; from i0 it cannot, and
    // a8d8 mates (the kings may not face each other, so the red king cannot step to e0).
    let game = game("4k4/r8/9/9/9/8R/9/9/9/3K5 w", "");
    let mut lost = game.clone();
    lost.push(mv("i4i0")).unwrap();
    lost.push(mv("a8d8")).unwrap();
    assert_eq!(lost.outcome().winner(), Some(xiangqi::Color::Black));
    for playouts in [8, 32] {
        let tree = assert_overruled_at_once(&game, mv("i4i0"), playouts);
        let line = tree.lines().into_iter().find(|l| l.moves[0] == mv("i4i0")).unwrap();
        assert_eq!(line.wdl, [0.0, 0.0, 1.0], "{playouts} playouts: the blunder is a proven loss");
        assert!(!line.ends_game, "the blunder itself does not end the game");
    }
}

#[test]
fn a_move_that_allows_a_mate_by_checks_is_refuted_at_its_first_visit() {
    // After i4a4, a8d8+ forces mate: the rook can only block on d4, where it is taken with mate
    // (and the king cannot step to e0, which faces the black king); checked with pyffish. Only
    // a search for mates of two moves at the leaves sees it without expanding the reply.
    let game = game("4k4/r8/9/9/9/8R/9/9/9/3K5 w", "");
    let blunder = mv("i4a4");
    for playouts in [8, 32] {
        let tree = assert_overruled_at_once(&game, blunder, playouts);
        let root = tree.root();
        let at = root.children.iter().position(|c| c.0 == blunder).unwrap();
        assert!(root.refuted[at], "{playouts} playouts: the blunder is a proven loss");
    }
    // Looking for mates in one only, the search must expand the check and its one reply first
    // (and then carries the proof up): until then the blunder is played.
    let mates_in_one_only = SearchConfig { mate_moves: 1, ..SearchConfig::default() };
    assert_eq!(search_fixated(&game, blunder, 2, &mates_in_one_only).root().best_move(), Some(blunder));
    let root = search_fixated(&game, blunder, 32, &mates_in_one_only).root();
    assert!(root.refuted[root.children.iter().position(|c| c.0 == blunder).unwrap()]);
}

#[test]
fn the_root_plays_a_forced_mate_by_checks_before_any_playout_reaches_it() {
    // a5d5+ mates next move whatever Black does (the mate in two above); the network puts 95% of
    // its prior on a quiet king move and one playout cannot look past it.
    let game = game("3a5/3k5/9/p8/R4R3/9/9/9/9/5K3 w", "");
    let mate = mv("a5d5");
    let tree = search_fixated(&game, mv("f0e0"), 1, &SearchConfig::default());
    let root = tree.root();
    let found: Vec<(Move, u32)> =
        root.children.iter().zip(&root.mates).filter_map(|(c, m)| m.map(|m| (c.0, m))).collect();
    // Another check forces mate in three; the quickest mate is played.
    assert!(found.contains(&(mate, 2)) && found.iter().all(|&(m, n)| m == mate || n > 2), "{found:?}");
    assert_eq!(root.best_move(), Some(mate));
    assert_eq!(root.sample_move(1.0, &mut rand::rng()), Some(mate));
    // A mate that would end after the game's length cap is no win.
    let mut capped =
        Game::from_position(game.position().clone(), GameConfig { max_plies: Some(4), ..GameConfig::default() });
    capped.push(mv("f0f1")).unwrap();
    capped.push(mv("d8e8")).unwrap();
    let tree = search_fixated(&capped, mv("f1f0"), 1, &SearchConfig::default());
    assert!(tree.root().mates.iter().all(Option::is_none), "{:?}", tree.root().mates);
}

#[test]
fn a_quiet_move_that_leaves_every_reply_mated_is_proven_won_and_a_move_that_allows_it_lost() {
    // P e5-f5 (quiet: it opens the e-file, where the kings would face) leaves the black king two
    // moves, each mated at once; no other move mates in two, and none by checks within three
    // (all checked exhaustively with pyffish). The mate search here looks for mates in one at
    // the leaves and by checks of two moves at the root, so only proofs carried up the tree
    // find this one.
    let fen = "9/3k5/9/9/4P4/9/9/4K4/9/4R4";
    let config = SearchConfig { mate_moves: 1, ..SearchConfig::default() };
    let mut tree = Tree::new(game(&format!("{fen} w"), ""));
    search(&mut tree, &mut UniformEvaluator, 400, &config).unwrap();
    let root = tree.root();
    let found: Vec<(Move, u32)> =
        root.children.iter().zip(&root.mates).filter_map(|(c, m)| m.map(|m| (c.0, m))).collect();
    assert_eq!(found, [(mv("e5f5"), 2)]);
    assert_eq!(root.best_move(), Some(mv("e5f5")));
    // The proven move keeps its subtree when played: Black's replies are all known lost.
    tree.advance(mv("e5f5"));
    let root = tree.root();
    assert!(root.playouts() > 0 && root.refuted.len() == 2 && root.refuted.iter().all(|&r| r), "{root:?}");
    // With Black to move, K d8-d7 and K d8-d9 allow that mate; K d8-e8 does not.
    let mut tree = Tree::new(game(&format!("{fen} b"), ""));
    search(&mut tree, &mut UniformEvaluator, 400, &config).unwrap();
    let root = tree.root();
    let refuted: Vec<Move> = root.children.iter().zip(&root.refuted).filter(|c| *c.1).map(|c| c.0.0).collect();
    assert_eq!(refuted.len(), 2, "{refuted:?}");
    assert!(refuted.contains(&mv("d8d7")) && refuted.contains(&mv("d8d9")), "{refuted:?}");
    assert_eq!(root.best_move(), Some(mv("d8e8")));
}

#[test]
fn lines_lead_with_the_best_move_and_follow_the_most_visited_replies() {
    let mut tree = Tree::new(game("3k5/9/9/9/9/9/9/9/R8/4K4 w", ""));
    search(&mut tree, &mut UniformEvaluator, 300, &SearchConfig::default()).unwrap();
    let lines = tree.lines();
    assert_eq!(lines.len(), tree.game().legal_moves().len());
    assert!([mv("a1d1"), mv("a1a8")].contains(&lines[0].moves[0]));
    assert!(lines[0].ends_game, "the mate ends the game at once");
    assert_eq!(lines[0].wdl, [1.0, 0.0, 0.0]);
    assert!(lines.windows(2).all(|w| w[0].visits >= w[1].visits));
    assert_eq!(lines.iter().map(|l| l.visits).sum::<u32>(), tree.root().playouts());
    // Every principal variation is a legal line.
    for line in &lines {
        let mut game = tree.game().clone();
        for &m in &line.moves {
            assert!(!game.outcome().is_over());
            game.push(m).unwrap();
        }
    }
    let mut tree = Tree::new(Game::new(GameConfig::default()));
    search(&mut tree, &mut MaterialEvaluator, 2000, &SearchConfig::default()).unwrap();
    assert!(tree.lines()[0].moves.len() >= 3, "the best line goes deeper than one reply");
}

#[test]
fn a_search_stops_when_asked_but_not_before_the_root_is_evaluated() {
    let mut tree = Tree::new(Game::new(GameConfig::default()));
    search_until(&mut tree, &mut UniformEvaluator, 1000, &SearchConfig::default(), |_| true).unwrap();
    assert!(tree.root_expanded());
    assert!(tree.root().playouts() <= 1);
    let mut tree = Tree::new(Game::new(GameConfig::default()));
    let mut calls = 0;
    search_until(&mut tree, &mut UniformEvaluator, 1000, &SearchConfig::default(), |_| {
        calls += 1;
        calls > 10
    })
    .unwrap();
    let leaves = SearchConfig::default().leaves_per_batch as u32;
    assert!(tree.root().playouts() <= 1 + 10 * leaves, "{} playouts", tree.root().playouts());
    assert!(tree.root().playouts() > 10);
}

#[test]
fn root_visits_sum_to_the_playouts() {
    for (playouts, leaves) in [(1, 1), (50, 1), (200, 8), (333, 16)] {
        let config = SearchConfig { leaves_per_batch: leaves, ..SearchConfig::default() };
        let mut tree = Tree::new(Game::new(GameConfig::default()));
        search(&mut tree, &mut MaterialEvaluator, playouts, &config).unwrap();
        let root = tree.root();
        assert_eq!(root.playouts(), playouts);
        assert_eq!(root.children.len(), 44);
        let policy_sum: f32 = root.policy().iter().map(|p| p.1).sum();
        assert!((policy_sum - 1.0).abs() < 1e-5);
    }
}

#[test]
fn a_reused_subtree_keeps_its_visits() {
    let mut tree = Tree::new(Game::new(GameConfig::default()));
    search(&mut tree, &mut MaterialEvaluator, 400, &SearchConfig::default()).unwrap();
    let best = tree.root().best_move().unwrap();
    let kept = tree.root().children.iter().find(|c| c.0 == best).unwrap().1;
    tree.advance(best);
    assert_eq!(tree.root().playouts(), kept - 1, "the child's own expansion is not a playout of the new root");
    assert_eq!(tree.game().len(), 1);
    search(&mut tree, &mut MaterialEvaluator, 400, &SearchConfig::default()).unwrap();
    assert_eq!(tree.root().playouts(), 400);
}

/// An evaluator that answers wrongly: the search must stop with an error, not panic.
#[derive(Clone)]
struct Broken;

impl Evaluator for Broken {
    fn evaluate(&mut self, games: &[&Game]) -> Result<Vec<Evaluation>, EvalError> {
        Ok(games.iter().map(|_| Evaluation { priors: vec![1.0], wdl: [0.0, 1.0, 0.0] }).collect())
    }
}

/// Priors that fall off geometrically in the order of the legal moves.
struct Skewed;

impl Evaluator for Skewed {
    fn evaluate(&mut self, games: &[&Game]) -> Result<Vec<Evaluation>, EvalError> {
        Ok(games
            .iter()
            .map(|g| {
                let raw: Vec<f32> = (0..g.legal_moves().len()).map(|i| 0.5f32.powi(i as i32)).collect();
                let total: f32 = raw.iter().sum();
                Evaluation { priors: raw.iter().map(|p| p / total).collect(), wdl: [0.0, 1.0, 0.0] }
            })
            .collect())
    }
}

#[test]
fn tempering_the_root_flattens_its_priors_by_the_power_of_one_over_the_temperature() {
    let priors = |temperature: f32| {
        let mut tree = Tree::new(Game::new(GameConfig::default()));
        search(&mut tree, &mut Skewed, 1, &SearchConfig::default()).unwrap();
        tree.temper_root_priors(temperature);
        tree.root().children.iter().map(|c| c.2).collect::<Vec<f32>>()
    };
    let raw = priors(1.0);
    assert!((raw[1] / raw[0] - 0.5).abs() < 1e-6, "1 leaves the network's priors: {raw:?}");
    for temperature in [2.0f32, 4.0] {
        let tempered = priors(temperature);
        assert!((tempered.iter().sum::<f32>() - 1.0).abs() < 1e-5);
        for (t, r) in tempered.iter().zip(&raw) {
            let expected = r.powf(1.0 / temperature) / raw.iter().map(|r| r.powf(1.0 / temperature)).sum::<f32>();
            assert!((t - expected).abs() < 1e-6, "temperature {temperature}: {t} against {expected}");
        }
        assert!(tempered[0] < raw[0] && tempered[43] > raw[43], "a higher temperature flattens");
    }
}

#[test]
fn a_wrong_answer_is_an_error() {
    let mut tree = Tree::new(Game::new(GameConfig::default()));
    let err = search(&mut tree, &mut Broken, 10, &SearchConfig::default()).unwrap_err();
    assert!(err.to_string().contains("1 priors (expected 44)"), "{err}");
}

/// Short games by the rules alone: a cap of 40 plies, no material adjudication.
fn short_settings() -> PlaySettings {
    PlaySettings {
        playouts: 24,
        cheap_playouts: 8,
        max_plies: 40,
        material_adjudication: 0,
        repeater_loses: false,
        ..PlaySettings::default()
    }
}

fn short_config() -> SelfPlayConfig {
    short_settings().self_play_config(2, 3, 42)
}

/// [`short_config`] under other settings.
fn short_config_with(settings: PlaySettings) -> SelfPlayConfig {
    SelfPlayConfig { settings, ..short_config() }
}

#[test]
fn self_play_games_replay_from_their_seeds() {
    for config in
        [short_config(), short_config_with(PlaySettings { gumbel_considered: 8, ..short_settings() }), from_suite(0.5)]
    {
        assert_games_replay_from_their_seeds(&config);
    }
}

/// [`short_config`] with `share` of its games starting from one of two positions after Red's
/// first move.
fn from_suite(share: f64) -> SelfPlayConfig {
    let suite = OpeningSuite::parse(
        "rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C2C4/9/RNBAKABNR b - - 1 1\n\
         rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C4NC1/9/RNBAKAB1R b - - 1 1",
    )
    .unwrap();
    SelfPlayConfig {
        openings: Some(Arc::new(suite)),
        ..short_config_with(PlaySettings { opening_share: share, ..short_settings() })
    }
}

#[test]
fn a_share_of_self_play_games_start_from_the_suite() {
    let starts = |config: &SelfPlayConfig| {
        let games = Mutex::new(Vec::new());
        self_play(config, MaterialEvaluator, 6, &AtomicBool::new(false), |g| games.lock().unwrap().push(g)).unwrap();
        games.into_inner().unwrap().into_iter().map(|g| g.game.start().to_string()).collect::<Vec<_>>()
    };
    let suite = from_suite(1.0).openings.unwrap();
    assert!(starts(&from_suite(1.0)).iter().all(|fen| suite.contains(&fen.parse().unwrap())));
    assert!(starts(&from_suite(0.0)).iter().all(|fen| fen == xiangqi::START_FEN));
    // Without a suite the share means nothing.
    let no_suite = short_config_with(PlaySettings { opening_share: 1.0, ..short_settings() });
    assert!(starts(&no_suite).iter().all(|fen| fen == xiangqi::START_FEN));
}

/// The material evaluator behind a queue: answers are computed only when waited for, and it
/// asks for three batches in flight, as the inference service does.
#[derive(Clone)]
struct Deferred {
    in_flight: Arc<AtomicUsize>,
    most_in_flight: Arc<AtomicUsize>,
}

impl Evaluator for Deferred {
    fn evaluate(&mut self, games: &[&Game]) -> Result<Vec<Evaluation>, EvalError> {
        self.submit(games).wait()
    }

    fn submit(&mut self, games: &[&Game]) -> Pending {
        let games: Vec<Game> = games.iter().map(|&g| g.clone()).collect();
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.most_in_flight.fetch_max(now, Ordering::SeqCst);
        let in_flight = Arc::clone(&self.in_flight);
        Pending::later(move || {
            in_flight.fetch_sub(1, Ordering::SeqCst);
            MaterialEvaluator.evaluate(&games.iter().collect::<Vec<_>>())
        })
    }

    fn batches_in_flight(&self) -> usize {
        3
    }
}

#[test]
fn games_played_with_batches_in_flight_are_the_games_played_one_batch_at_a_time() {
    let config = SelfPlayConfig { games_per_thread: 7, threads: 1, ..short_config() };
    let deferred = Deferred { in_flight: Arc::default(), most_in_flight: Arc::default() };
    let games = Mutex::new(Vec::new());
    let stats =
        self_play(&config, deferred.clone(), 9, &AtomicBool::new(false), |g| games.lock().unwrap().push(g)).unwrap();
    assert_eq!(stats.games, 9);
    // A thread's seven games went in three groups, whose batches were waited for in turn.
    assert_eq!(deferred.most_in_flight.load(Ordering::SeqCst), 3);
    for g in games.into_inner().unwrap() {
        // Each game alone, with answers given at once, plays the same moves after the same searches.
        let again = replay(&config, &mut MaterialEvaluator, g.index).unwrap();
        assert_eq!(again.game.moves().collect::<Vec<_>>(), g.game.moves().collect::<Vec<_>>(), "game {}", g.index);
        assert_eq!(again.plies, g.plies, "game {}", g.index);
    }
}

#[test]
fn one_search_keeps_the_batches_its_evaluator_asks_for_in_flight() {
    // The black rook on i0 checks the red king; Red's cannon takes it over the king.
    let game = game("3k5/9/9/9/9/9/9/9/9/C3K3r w", "");
    let deferred = Deferred { in_flight: Arc::default(), most_in_flight: Arc::default() };
    for playouts in [1, 7, 64, 200] {
        let mut overlapped = Tree::new(game.clone());
        search(&mut overlapped, &mut deferred.clone(), playouts, &SearchConfig::default()).unwrap();
        let mut serial = Tree::new(game.clone());
        search(&mut serial, &mut MaterialEvaluator, playouts, &SearchConfig::default()).unwrap();
        assert_eq!(overlapped.root().playouts(), playouts.max(1), "{playouts} playouts, no more");
        assert_eq!(deferred.in_flight.load(Ordering::SeqCst), 0, "every batch was waited for");
        if playouts >= 64 {
            assert_eq!(overlapped.root().best_move(), serial.root().best_move());
            assert_eq!(overlapped.root().best_move(), Some(mv("a0i0")));
        }
    }
    assert_eq!(deferred.most_in_flight.load(Ordering::SeqCst), 3);
    // A stop condition ends it early with the batches in flight drained into the tree.
    let mut stopped = Tree::new(game.clone());
    search_until(&mut stopped, &mut deferred.clone(), 10_000, &SearchConfig::default(), |t| t.playouts() >= 20)
        .unwrap();
    assert!((20..40).contains(&stopped.root().playouts()), "{}", stopped.root().playouts());
    assert_eq!(deferred.in_flight.load(Ordering::SeqCst), 0);
}

fn assert_games_replay_from_their_seeds(config: &SelfPlayConfig) {
    let games = Mutex::new(Vec::new());
    let stats =
        self_play(config, MaterialEvaluator, 8, &AtomicBool::new(false), |g| games.lock().unwrap().push(g)).unwrap();
    let mut games = games.into_inner().unwrap();
    games.sort_by_key(|g| g.index);
    assert_eq!(games.iter().map(|g| g.index).collect::<Vec<_>>(), (0..8).collect::<Vec<_>>());
    assert_eq!(stats.games, 8);
    assert_eq!(stats.moves, games.iter().map(|g| g.plies.len() as u64).sum::<u64>());
    for g in &games {
        assert!(g.game.outcome().is_over());
        let again = replay(config, &mut MaterialEvaluator, g.index).unwrap();
        assert_eq!((again.seed, again.game.start()), (g.seed, g.game.start()));
        assert_eq!(again.game.moves().collect::<Vec<_>>(), g.game.moves().collect::<Vec<_>>(), "game {}", g.index);
        assert_eq!(again.plies, g.plies);
    }
    // Different seeds, different games.
    assert_ne!(games[0].game.moves().collect::<Vec<_>>(), games[1].game.moves().collect::<Vec<_>>());
}

#[test]
fn self_play_records_one_search_per_move_with_capped_playouts() {
    let config = short_config_with(PlaySettings { full_search_probability: 0.5, ..short_settings() });
    let games = Mutex::new(Vec::new());
    self_play(&config, MaterialEvaluator, 4, &AtomicBool::new(false), |g| games.lock().unwrap().push(g)).unwrap();
    let (mut full, mut cheap) = (0, 0);
    for g in games.into_inner().unwrap() {
        let resigned = g.game.outcome().verdict().map(|v| v.reason) == Some(Reason::Resignation);
        assert_eq!(g.plies.len(), g.game.len(), "resigned: {resigned}");
        for (ply, record) in g.plies.iter().enumerate() {
            let sum: f32 = record.policy.iter().map(|p| p.1).sum();
            assert!((sum - 1.0).abs() < 1e-4, "ply {ply}");
            if record.full_search {
                full += 1;
                assert!(record.playouts >= 24);
            } else {
                cheap += 1;
                assert!(record.playouts >= 8);
            }
        }
    }
    assert!(full > 10 && cheap > 10, "{full} full and {cheap} cheap searches");
}

#[test]
fn resignation_ends_lost_games_and_checks_false_positives() {
    // A rook and a horse up for Red from the start: Black's value is low at once.
    let settings = PlaySettings {
        resign: true,
        resign_threshold: -0.5,
        resign_consecutive: 2,
        resign_disabled_fraction: 0.5,
        ..short_settings()
    };
    let config = SelfPlayConfig { threads: 1, ..short_config_with(settings) };
    let games = Mutex::new(Vec::new());
    self_play(&config, MaterialEvaluator, 12, &AtomicBool::new(false), |g| games.lock().unwrap().push(g)).unwrap();
    let games = games.into_inner().unwrap();
    let resigned: Vec<_> = games.iter().filter(|g| g.resign_allowed && g.resignation.is_some()).collect();
    for g in &resigned {
        let r = g.resignation.unwrap();
        assert_eq!(g.game.outcome().verdict().unwrap().reason, Reason::Resignation);
        assert_eq!(g.game.outcome().winner(), Some(r.side.opponent()));
        assert_eq!(g.game.len(), r.ply);
        assert_eq!(g.resign_false_positive(), None);
    }
    for g in games.iter().filter(|g| !g.resign_allowed) {
        assert_ne!(g.game.outcome().verdict().unwrap().reason, Reason::Resignation);
        assert_eq!(g.resign_false_positive().is_some(), g.resignation.is_some());
    }
    assert!(games.iter().any(|g| !g.resign_allowed), "some games never resign");
}

#[test]
fn the_completed_q_policy_moves_prior_mass_by_the_searched_values_only() {
    let [a, b, c] = [mv("h2e2"), mv("b2e2"), mv("h0g2")];
    let root = RootStats {
        children: vec![(a, 3, 0.5), (b, 1, 0.25), (c, 0, 0.25)],
        values: vec![Some(0.5), Some(-0.5), None],
        wdl: [0.4, 0.3, 0.3],
        draws: vec![false; 3],
        mates: vec![None; 3],
        refuted: vec![false; 3],
    };
    let policy: Vec<f32> = root.completed_q_policy(&[0.5, 0.25, 0.25]).iter().map(|e| e.1).collect();
    assert!((policy.iter().sum::<f32>() - 1.0).abs() < 1e-6);
    // q is rescaled to [0, 1] by the lowest and highest value (b's -0.5 and a's 0.5) and sigma
    // scales it by (50 + 3 visits) * 0.1: a is worth 5.3 more logits than b.
    let logit = |i: usize, prior: f32| (policy[i] / prior).ln();
    assert!((logit(0, 0.5) - logit(1, 0.25) - 5.3).abs() < 1e-4);
    // The unvisited move is valued at the visited moves' prior-weighted mean, (0.25 - 0.125) / 0.75.
    assert!((logit(0, 0.5) - logit(2, 0.25) - 5.3 * (0.5 - 1.0 / 6.0)).abs() < 1e-4);

    // Where the search finds nothing to tell the moves apart, the target is the prior itself.
    let mut tree = Tree::new(Game::new(GameConfig::default()));
    search(&mut tree, &mut UniformEvaluator, 64, &SearchConfig::default()).unwrap();
    let root = tree.root();
    let priors: Vec<f32> = root.children.iter().map(|c| c.2).collect();
    for ((_, p), prior) in root.completed_q_policy(&priors).iter().zip(&priors) {
        assert!((p - prior).abs() < 1e-6);
    }

    // A free rook: the material search values the capture highest, and the target follows.
    let mut tree = Tree::new(game("4k4/9/9/9/9/9/9/r8/9/R2K5 w", ""));
    search(&mut tree, &mut MaterialEvaluator, 200, &SearchConfig::default()).unwrap();
    let root = tree.root();
    let priors: Vec<f32> = root.children.iter().map(|c| c.2).collect();
    let policy = root.completed_q_policy(&priors);
    let top = policy.iter().max_by(|x, y| x.1.total_cmp(&y.1)).unwrap();
    assert_eq!(top.0, mv("a0a2"));
}

#[test]
fn the_q_softmax_policy_follows_the_searched_values_whatever_the_prior_likes() {
    let [a, b, c] = [mv("h2e2"), mv("b2e2"), mv("h0g2")];
    // The prior likes a; the search found it worst.
    let root = RootStats {
        children: vec![(a, 3, 0.97), (b, 1, 0.015), (c, 0, 0.015)],
        values: vec![Some(-0.5), Some(0.5), None],
        wdl: [0.3, 0.3, 0.4],
        draws: vec![false; 3],
        mates: vec![None; 3],
        refuted: vec![false; 3],
    };
    let priors = [0.97, 0.015, 0.015];
    let policy: Vec<f32> = root.q_softmax_policy(&priors).iter().map(|e| e.1).collect();
    assert!((policy.iter().sum::<f32>() - 1.0).abs() < 1e-6);
    // Logits are sigma(q) alone, q rescaled from [-0.5, 0.5] to [0, 1]: b is worth 5.3 more than
    // a, and c, unvisited, sits at the prior-weighted mean of the visited values,
    // (-0.485 + 0.0075) / 0.985.
    let logit = |i: usize| policy[i].ln();
    assert!((logit(1) - logit(0) - 5.3).abs() < 1e-4);
    assert!((logit(2) - logit(0) - 5.3 * (-0.4775 / 0.985 + 0.5)).abs() < 1e-4);
    assert!(policy[1] > policy[2] && policy[2] > policy[0]);
    // The completed-Q policy of the same search keeps far more of a, for its prior.
    let completed = root.completed_q_policy(&priors);
    assert!(completed[0].1 > 10.0 * policy[0], "{completed:?}");

    // Where the search finds nothing to tell the moves apart, the target is uniform.
    let mut tree = Tree::new(Game::new(GameConfig::default()));
    search(&mut tree, &mut UniformEvaluator, 64, &SearchConfig::default()).unwrap();
    let root = tree.root();
    let skewed: Vec<f32> = (0..root.children.len()).map(|i| if i == 0 { 0.9 } else { 0.1 / 43.0 }).collect();
    let uniform = 1.0 / root.children.len() as f32;
    assert!(root.q_softmax_policy(&skewed).iter().all(|(_, p)| (p - uniform).abs() < 1e-6));
}

#[test]
fn the_searched_values_are_rescaled_so_that_small_differences_still_shape_the_target() {
    // A young network's values differ by hundredths; rescaled by their range, the best move
    // still gets e^5.3 times the worst's weight, as it would with a range of 2.
    let root = RootStats {
        children: vec![(mv("h2e2"), 3, 0.5), (mv("b2e2"), 1, 0.5)],
        values: vec![Some(0.02), Some(0.01)],
        wdl: [0.3, 0.4, 0.3],
        draws: vec![false; 2],
        mates: vec![None; 2],
        refuted: vec![false; 2],
    };
    let policy = root.q_softmax_policy(&[0.5, 0.5]);
    assert!(((policy[0].1 / policy[1].1).ln() - 5.3).abs() < 1e-3, "{policy:?}");
}

#[test]
fn a_live_config_switches_settings_between_games() {
    let no_resign = PlaySettings { resign: false, ..short_settings() };
    let first =
        SelfPlayConfig { threads: 1, games_per_thread: 1, settings_version: 1, ..short_config_with(no_resign.clone()) };
    let second =
        SelfPlayConfig { settings_version: 2, settings: PlaySettings { max_plies: 6, ..no_resign }, ..first.clone() };
    let live = xqz_mcts::LiveConfig::new(first);
    let mut played = Vec::new();
    xqz_mcts::self_play_live(&live, MaterialEvaluator, 3, &AtomicBool::new(false), |g| {
        played.push((g.settings_version, g.game.len()));
        // Announced while the first game ends: every later game plays under it.
        live.replace(second.clone());
    })
    .unwrap();
    assert_eq!(played[0].0, 1);
    assert!(played[0].1 > 6, "{played:?}");
    assert_eq!(&played[1..], &[(2, 6), (2, 6)], "{played:?}");
}

#[test]
fn a_closed_live_config_starts_no_game_and_finishes_those_in_progress() {
    let config = SelfPlayConfig {
        threads: 1,
        games_per_thread: 3,
        ..short_config_with(PlaySettings { resign: false, ..short_settings() })
    };
    let live = xqz_mcts::LiveConfig::new(config);
    let mut finished = Vec::new();
    let stats = xqz_mcts::self_play_live(&live, MaterialEvaluator, 100, &AtomicBool::new(false), |g| {
        finished.push(g.game.outcome().is_over());
        live.close();
    })
    .unwrap();
    // The three games under way when the first ended all finished; none started after it.
    assert_eq!((stats.games, finished), (3, vec![true; 3]));
}

/// A tree of `game` with its root expanded and nothing else searched.
fn expanded(game: Game, evaluator: &mut impl Evaluator) -> Tree {
    let mut tree = Tree::new(game);
    search(&mut tree, evaluator, 0, &SearchConfig::default()).unwrap();
    assert!(tree.root_expanded() && tree.playouts() == 0);
    tree
}

#[test]
fn sequential_halving_gives_each_phase_an_even_share_and_halves_the_field() {
    // 16 moves considered, 32 playouts, 4 phases: 16 moves once, the best 8 once more, the best
    // 4 twice more; the budget is spent before the fourth phase.
    let mut tree = expanded(Game::new(GameConfig::default()), &mut MaterialEvaluator);
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    tree.plan_gumbel(16, 32, Some(&mut rng));
    search(&mut tree, &mut MaterialEvaluator, 32, &SearchConfig::default()).unwrap();
    let mut visits: Vec<u32> = tree.root().children.iter().map(|c| c.1).filter(|&n| n > 0).collect();
    visits.sort_unstable();
    assert_eq!(visits, [&[1; 8][..], &[2; 4], &[4; 4]].concat());
    assert!(tree.gumbel_move().is_some());
    // The next move's search starts without a plan: PUCT at the root again.
    let mv = tree.gumbel_move().unwrap();
    tree.advance(mv);
    assert_eq!(tree.gumbel_move(), None);
}

#[test]
fn a_gumbel_search_plays_the_move_whose_searched_value_stands_out_whatever_its_noise() {
    // Red's rook takes the black rook on a8 for nothing (or loses its own); priors are uniform,
    // so only the searched values tell the capture from the rest, and with enough playouts they
    // outweigh any noise.
    let game = game("4k4/r8/9/9/9/9/9/9/R8/3K5 w - - 0 1", "");
    for seed in (0..8).map(Some).chain([None]) {
        let mut tree = expanded(game.clone(), &mut MaterialEvaluator);
        let legal = tree.root().children.len();
        let mut rng = seed.map(ChaCha8Rng::seed_from_u64);
        tree.plan_gumbel(legal, 16 * legal as u32, rng.as_mut());
        search(&mut tree, &mut MaterialEvaluator, 16 * legal as u32, &SearchConfig::default()).unwrap();
        assert_eq!(tree.gumbel_move(), Some(mv("a1a8")), "seed {seed:?}");
    }
}
