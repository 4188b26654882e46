//! What the search asks of a network: priors over a position's legal moves and a win/draw/loss
//! estimate, for many positions at once.

use xiangqi::Position;
use xiangqi::game::Game;

/// A network's answer for one position.
#[derive(Clone, Debug, PartialEq)]
pub struct Evaluation {
    /// Probabilities of `game.legal_moves()`, in that order, summing to 1.
    pub priors: Vec<f32>,
    /// Win, draw, loss probabilities for the side to move.
    pub wdl: [f32; 3],
}

/// An evaluator that failed; the search stops with it.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("evaluation failed: {0}")]
pub struct EvalError(pub String);

/// Evaluates positions in batches. The search hands over every leaf it wants evaluated at once;
/// an implementation answers them in order. Games are never over when asked.
pub trait Evaluator {
    /// One answer per game, in order.
    fn evaluate(&mut self, games: &[&Game]) -> Result<Vec<Evaluation>, EvalError>;

    /// Hands over positions without waiting for their answers, so that the caller can walk
    /// other trees while the network works ([`Pending::wait`] gives the answers). An evaluator
    /// that runs on the caller's thread answers at once, which is the default.
    ///
    /// ```
    /// use xiangqi::game::Game;
    /// use xqz_mcts::{Evaluator, UniformEvaluator};
    ///
    /// let game = Game::new(Default::default());
    /// let pending = UniformEvaluator.submit(&[&game, &game]);
    /// assert_eq!(pending.wait()?.len(), 2);
    /// # Ok::<(), xqz_mcts::EvalError>(())
    /// ```
    fn submit(&mut self, games: &[&Game]) -> Pending {
        Pending::ready(self.evaluate(games))
    }

    /// How many batches a caller should keep in flight: one more than the batches the evaluator
    /// works on at once, so that one is always ready for it while the caller fills the next.
    /// An evaluator that answers on the caller's thread has nothing to overlap (1, the default).
    fn batches_in_flight(&self) -> usize {
        1
    }
}

impl<E: Evaluator + ?Sized> Evaluator for &mut E {
    fn evaluate(&mut self, games: &[&Game]) -> Result<Vec<Evaluation>, EvalError> {
        (**self).evaluate(games)
    }

    fn submit(&mut self, games: &[&Game]) -> Pending {
        (**self).submit(games)
    }

    fn batches_in_flight(&self) -> usize {
        (**self).batches_in_flight()
    }
}

/// Answers that [`Evaluator::submit`] has asked for: there already, or on their way.
#[must_use = "the answers are lost unless waited for"]
pub struct Pending(PendingAnswers);

type Answers = Result<Vec<Evaluation>, EvalError>;

enum PendingAnswers {
    Ready(Answers),
    Later(Box<dyn FnOnce() -> Answers + Send>),
}

impl Pending {
    /// Answers already there.
    pub fn ready(answers: Result<Vec<Evaluation>, EvalError>) -> Pending {
        Pending(PendingAnswers::Ready(answers))
    }

    /// Answers that `wait` blocks for.
    pub fn later(wait: impl FnOnce() -> Result<Vec<Evaluation>, EvalError> + Send + 'static) -> Pending {
        Pending(PendingAnswers::Later(Box::new(wait)))
    }

    /// The answers, once they are there.
    pub fn wait(self) -> Result<Vec<Evaluation>, EvalError> {
        match self.0 {
            PendingAnswers::Ready(answers) => answers,
            PendingAnswers::Later(wait) => wait(),
        }
    }
}

impl std::fmt::Debug for Pending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self.0 {
            PendingAnswers::Ready(_) => "Pending(ready)",
            PendingAnswers::Later(_) => "Pending(later)",
        })
    }
}

/// Equal priors and a sure draw everywhere: the search then plays on the rules alone (mates,
/// stalemates, forbidden repetitions found in the tree). For tests and bootstrapping.
#[derive(Copy, Clone, Debug, Default)]
pub struct UniformEvaluator;

fn uniform(game: &Game) -> Vec<f32> {
    let n = game.legal_moves().len().max(1);
    vec![1.0 / n as f32; game.legal_moves().len()]
}

impl Evaluator for UniformEvaluator {
    fn evaluate(&mut self, games: &[&Game]) -> Result<Vec<Evaluation>, EvalError> {
        Ok(games.iter().map(|g| Evaluation { priors: uniform(g), wdl: [0.0, 1.0, 0.0] }).collect())
    }
}

/// Equal priors and a value from the material balance (rook 9, cannon 4.5, horse 4, advisor and
/// elephant 2, pawn 1, or 2 once across the river): a cheap stand-in for a trained network.
#[derive(Copy, Clone, Debug, Default)]
pub struct MaterialEvaluator;

impl MaterialEvaluator {
    /// Material of the side to move minus the opponent's, in pawns ([`xiangqi::Position::material`]).
    pub fn balance(pos: &Position) -> f32 {
        let us = pos.turn();
        (pos.material(us) as f32 - pos.material(us.opponent()) as f32) / 2.0
    }

    /// The [win, draw, loss] estimate for the side to move: a logistic on the balance, a rook up
    /// being about an 80% score, so that more material is always better (it never saturates the
    /// way a won game's result does).
    ///
    /// ```
    /// use xiangqi::Position;
    /// use xqz_mcts::MaterialEvaluator;
    ///
    /// let even = MaterialEvaluator::wdl(&Position::startpos());
    /// assert!((even[0] - even[2]).abs() < 1e-6);
    /// let rook_up: Position = "1nbakabn1/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABN1 w - - 0 1".parse()?;
    /// let [win, _, loss] = MaterialEvaluator::wdl(&rook_up);
    /// assert!(win > 0.75 && loss < 0.2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn wdl(pos: &Position) -> [f32; 3] {
        let score = 1.0 / (1.0 + (-Self::balance(pos) / 6.5).exp());
        let draw = 0.2 * (1.0 - (2.0 * score - 1.0).abs());
        [score - draw / 2.0, draw, 1.0 - score - draw / 2.0]
    }
}

impl Evaluator for MaterialEvaluator {
    fn evaluate(&mut self, games: &[&Game]) -> Result<Vec<Evaluation>, EvalError> {
        Ok(games.iter().map(|g| Evaluation { priors: uniform(g), wdl: Self::wdl(g.position()) }).collect())
    }
}
