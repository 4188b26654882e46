//! Searching one tree to a number of playouts, in evaluator batches of up to
//! `leaves_per_batch` leaves, as many of them in flight as the evaluator asks for.

use std::collections::VecDeque;

use crate::evaluator::{EvalError, Evaluation, Evaluator, Pending};
use crate::tree::{PendingLeaf, SearchConfig, Selection, Tree, temper};

/// Collects up to `limit` leaves of `tree` to evaluate (fewer on a collision); terminal
/// selections are backed up on the way and count toward `target` playouts.
pub(crate) fn collect_leaves(tree: &mut Tree, config: &SearchConfig, target: u32, out: &mut Vec<PendingLeaf>) {
    let limit = if tree.root_expanded() { config.leaves_per_batch.max(1) } else { 1 };
    let mut collected = 0;
    while collected < limit && tree.playouts_started() < target.max(u32::from(!tree.root_expanded())) {
        match tree.select(config) {
            Selection::Evaluate(leaf) => {
                out.push(*leaf);
                collected += 1;
            }
            Selection::Terminal => {}
            Selection::Collision => break,
        }
    }
}

/// Hands leaves to the evaluator without waiting for the answers.
pub(crate) fn submit_leaves<E: Evaluator + ?Sized>(evaluator: &mut E, leaves: &[PendingLeaf]) -> Pending {
    let games: Vec<_> = leaves.iter().map(|l| &l.game).collect();
    evaluator.submit(&games)
}

/// The evaluator's answers for `leaves`, checked to fit them, with their priors tempered by the
/// config's policy temperature.
pub(crate) fn checked_answers(
    mut evaluations: Vec<Evaluation>,
    leaves: &[PendingLeaf],
    config: &SearchConfig,
) -> Result<Vec<Evaluation>, EvalError> {
    if evaluations.len() != leaves.len() {
        return Err(EvalError(format!("{} answers for {} positions", evaluations.len(), leaves.len())));
    }
    for (leaf, e) in leaves.iter().zip(&evaluations) {
        let legal = leaf.game.legal_moves().len();
        if e.priors.len() != legal || e.wdl.iter().chain(&e.priors).any(|v| !v.is_finite()) {
            return Err(EvalError(format!(
                "answer with {} priors (expected {legal}) or non-finite values for {}",
                e.priors.len(),
                leaf.game.position()
            )));
        }
    }
    for e in &mut evaluations {
        temper(&mut e.priors, config.policy_temperature);
    }
    Ok(evaluations)
}

/// Runs playouts until the root's moves hold `playouts` visits in all (reused visits count).
///
/// ```
/// use xiangqi::game::Game;
/// use xqz_mcts::{SearchConfig, Tree, UniformEvaluator, search};
///
/// let mut tree = Tree::new(Game::new(Default::default()));
/// search(&mut tree, &mut UniformEvaluator, 200, &SearchConfig::default())?;
/// assert_eq!(tree.root().playouts(), 200);
/// # Ok::<(), xqz_mcts::EvalError>(())
/// ```
pub fn search<E: Evaluator + ?Sized>(
    tree: &mut Tree,
    evaluator: &mut E,
    playouts: u32,
    config: &SearchConfig,
) -> Result<(), EvalError> {
    search_until(tree, evaluator, playouts, config, |_| false)
}

/// Runs playouts like [`search`], up to `playouts`, but asks `stop` between evaluator calls
/// whether to end early (a clock, a `stop` command); the root is always evaluated first, so a
/// stopped search still has a move to offer.
///
/// ```
/// use xiangqi::game::Game;
/// use xqz_mcts::{SearchConfig, Tree, UniformEvaluator, search_until};
///
/// let mut tree = Tree::new(Game::new(Default::default()));
/// search_until(&mut tree, &mut UniformEvaluator, 10_000, &SearchConfig::default(), |t| t.playouts() >= 50)?;
/// assert!((50..60).contains(&tree.root().playouts()));
/// # Ok::<(), xqz_mcts::EvalError>(())
/// ```
pub fn search_until<E: Evaluator + ?Sized>(
    tree: &mut Tree,
    evaluator: &mut E,
    playouts: u32,
    config: &SearchConfig,
    mut stop: impl FnMut(&Tree) -> bool,
) -> Result<(), EvalError> {
    // Batches handed to the evaluator and not yet back, oldest first: while the evaluator works
    // on them the tree is walked for the next (their leaves hold virtual losses meanwhile), so
    // an evaluator that works off the caller's thread is never left waiting for the tree.
    let in_flight = evaluator.batches_in_flight().max(1);
    let mut batches: VecDeque<(Vec<PendingLeaf>, Pending)> = VecDeque::with_capacity(in_flight);
    loop {
        let wanted = !tree.root_expanded() || (tree.playouts() < playouts && !stop(tree));
        // Until the root is expanded nothing else can be selected.
        while wanted && batches.len() < in_flight && (tree.root_expanded() || batches.is_empty()) {
            let mut leaves = Vec::new();
            collect_leaves(tree, config, playouts, &mut leaves);
            if leaves.is_empty() {
                break;
            }
            let pending = submit_leaves(evaluator, &leaves);
            batches.push_back((leaves, pending));
        }
        let Some((leaves, pending)) = batches.pop_front() else {
            if wanted {
                // Only terminal selections this time round (they were backed up): go on.
                continue;
            }
            return Ok(());
        };
        let evaluations = checked_answers(pending.wait()?, &leaves, config)?;
        for (leaf, evaluation) in leaves.into_iter().zip(&evaluations) {
            tree.expand(leaf, evaluation);
        }
    }
}
