//! A worker's Prometheus metrics (`xqz worker --metrics ADDR`, served by [`xqz_metrics::Server`]).
//! Rates are the scraper's to take: moves/s is `rate(xqz_worker_moves_total[1m])`, the mean
//! evaluator batch `rate(xqz_worker_evaluations_total[1m]) / rate(xqz_worker_evaluator_calls_total[1m])`.
//!
//! ```
//! use xqz_metrics::Registry;
//! use xqz_worker::WorkerMetrics;
//!
//! let mut registry = Registry::default();
//! let metrics = WorkerMetrics::register(&mut registry);
//! metrics.game_finished(120);
//! assert!(xqz_metrics::render(&registry).contains("xqz_worker_moves_total 120\n"));
//! ```

use xiangqi::game::Game;
use xqz_mcts::{EvalError, Evaluation, Evaluator, Pending};
use xqz_metrics::{Counter, Gauge, Registry, register};

/// Counters of a worker's self-play and uploads; clones share them. The default is a set that
/// no registry exposes (for a worker run without `--metrics`).
#[derive(Clone, Debug, Default)]
pub struct WorkerMetrics {
    games: Counter,
    moves: Counter,
    evaluations: Counter,
    evaluator_calls: Counter,
    games_uploaded: Counter,
    batches_rejected: Counter,
    model_version: Gauge,
}

impl WorkerMetrics {
    /// A set whose series (`xqz_worker_*`) `registry` exposes.
    pub fn register(registry: &mut Registry) -> WorkerMetrics {
        let r = registry;
        WorkerMetrics {
            games: register(r, "xqz_worker_games", "Self-play games finished."),
            moves: register(r, "xqz_worker_moves", "Moves of the finished games."),
            evaluations: register(r, "xqz_worker_evaluations", "Positions the searches evaluated."),
            evaluator_calls: register(r, "xqz_worker_evaluator_calls", "Evaluator calls (batches of positions)."),
            games_uploaded: register(r, "xqz_worker_games_uploaded", "Games the coordinator acknowledged."),
            batches_rejected: register(
                r,
                "xqz_worker_batches_rejected",
                "Batches the coordinator refused (set aside).",
            ),
            model_version: register(r, "xqz_worker_model_version", "Version of the model the worker plays with."),
        }
    }

    /// Counts a finished game of `moves` moves.
    pub fn game_finished(&self, moves: usize) {
        self.games.inc();
        self.moves.inc_by(moves as u64);
    }

    pub(crate) fn uploaded(&self, games: u64) {
        self.games_uploaded.inc_by(games);
    }

    pub(crate) fn rejected(&self) {
        self.batches_rejected.inc();
    }

    pub(crate) fn playing(&self, model_version: u64) {
        self.model_version.set(i64::try_from(model_version).unwrap_or(i64::MAX));
    }

    /// `evaluator`, counting its calls and the positions they evaluate.
    pub(crate) fn counting<E>(&self, evaluator: E) -> Counted<E> {
        Counted { inner: evaluator, metrics: self.clone() }
    }
}

/// An evaluator whose work [`WorkerMetrics`] counts.
#[derive(Clone)]
pub(crate) struct Counted<E> {
    inner: E,
    metrics: WorkerMetrics,
}

impl<E: Evaluator> Evaluator for Counted<E> {
    fn evaluate(&mut self, games: &[&Game]) -> Result<Vec<Evaluation>, EvalError> {
        self.submit(games).wait()
    }

    fn submit(&mut self, games: &[&Game]) -> Pending {
        self.metrics.evaluator_calls.inc();
        self.metrics.evaluations.inc_by(games.len() as u64);
        self.inner.submit(games)
    }

    fn batches_in_flight(&self) -> usize {
        self.inner.batches_in_flight()
    }
}
