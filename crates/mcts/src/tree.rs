//! The search tree: PUCT selection with first-play urgency and virtual loss, expansion from an
//! evaluator's answer, backup, terminal nodes judged by [`Game`], nodes whose side to move mates
//! at once or by a few checks settled as losses without an evaluation, proven wins and losses
//! carried up the tree (an MCTS solver), reuse of a subtree after a move, and Gumbel MuZero's root
//! search with sequential halving ([`Tree::plan_gumbel`]).
//!
//! Values are stored from the point of view of the player who made the move into a node, so a
//! parent picks the child with the best value for itself. Nodes are never shared between paths
//! (no transposition table): a node's game history is its path, so repetition rulings made in the
//! tree stay right for it (the same position reached by another path is another node).

use rand::Rng;
use rand_distr::{Distribution, Gamma};
use xiangqi::Move;
use xiangqi::game::{Game, Outcome};

use crate::evaluator::Evaluation;
use crate::mate;

/// How the search weighs moves.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct SearchConfig {
    /// Exploration constant of PUCT.
    pub c_puct: f32,
    /// First-play urgency: an unvisited child is valued at the parent's value minus this times
    /// the square root of the prior mass already visited.
    pub fpu_reduction: f32,
    /// The same at the root (where noise makes priors less trustworthy).
    pub fpu_reduction_root: f32,
    /// An absolute first-play value for the root's unvisited moves instead of the reduction
    /// (lc0's `FpuStrategyAtRoot=absolute`): 1.0 tries every root move once before any twice
    /// (unless one is about won), so a move the policy overlooks, such as a capture, still gets
    /// its value looked at.
    pub root_fpu: Option<f32>,
    /// Softmax temperature of the network's priors at every node (lc0's `PolicySoftmaxTemp`;
    /// 1 leaves them as they are). Above 1 it flattens a policy that has learnt to like a few
    /// quiet moves, so that few playouts still look at the captures and mates it overlooks.
    pub policy_temperature: f32,
    /// Rules on a position's first repetition as if it went on to the third (as chess engines
    /// score a repetition in the search as a draw): a side that is ahead then stops going round
    /// in circles, which with few playouts it only notices once the repetition is final.
    pub rule_first_repetition: bool,
    /// Leaves one search collects per evaluator call, kept apart by virtual loss.
    pub leaves_per_batch: usize,
    /// The longest forced mate by checks (in moves of the side that mates, see the `mate`
    /// module) looked for at each new leaf, which is then a proven loss for the side that moved
    /// into it; the root looks one move further for its own mates, which are then played.
    /// 1 looks for mates in one only; 0 is taken as 1.
    pub mate_moves: u32,
    /// Plies before the natural move limit from which a leaf's evaluation is drawn toward a
    /// draw: its win and loss shrink linearly to nothing at the limit, as Stockfish scales its
    /// evaluation by the fifty-move counter. A side that is ahead then prefers a capture, which
    /// restarts the count, to shuffling into the draw that a network trained on short self-play
    /// games has not learnt to see coming. 0 turns it off.
    pub natural_limit_ramp: u32,
}

impl Default for SearchConfig {
    fn default() -> SearchConfig {
        SearchConfig {
            c_puct: 1.5,
            fpu_reduction: 0.25,
            fpu_reduction_root: 0.0,
            root_fpu: None,
            policy_temperature: 1.0,
            rule_first_repetition: false,
            leaves_per_batch: 4,
            mate_moves: 3,
            natural_limit_ramp: 40,
        }
    }
}

#[derive(Copy, Clone, Debug, PartialEq)]
enum State {
    /// Not evaluated yet.
    Leaf,
    /// Selected and waiting for its evaluation.
    Pending,
    /// Has children.
    Expanded,
    /// The game is over here: the value for the player who moved into it, and the draw share.
    Terminal { value: f32, draw: f32 },
    /// The position occurred before and the search rules on it as if repeated to the end (see
    /// [`SearchConfig::rule_first_repetition`]); the game itself goes on. Values as for
    /// `Terminal`.
    Repeated { value: f32, draw: f32 },
    /// A proven loss for the player who moved into it: the side to move here wins by force in
    /// at most `moves` of its moves (1: on the spot). Found at a leaf by the mate search (see
    /// [`SearchConfig::mate_moves`]), without an evaluation, or above one of its children that
    /// is a proven win for the side to move here.
    Refuted { moves: u32 },
    /// A proven win for the player who moved into it, in at most `moves` of that player's moves
    /// counting the move into it: every reply is a proven loss, or, at the root, the move starts
    /// a forced mate by checks.
    Won { moves: u32 },
}

impl State {
    /// The exact value for the player who moved into the node, and the draw share, if known.
    fn exact(self) -> Option<(f32, f32)> {
        match self {
            State::Terminal { value, draw } | State::Repeated { value, draw } => Some((value, draw)),
            State::Refuted { .. } => Some((-1.0, 0.0)),
            State::Won { .. } => Some((1.0, 0.0)),
            State::Leaf | State::Pending | State::Expanded => None,
        }
    }

    /// The length of a proven win for the player who moved into the node, in that player's moves
    /// counting the move into it.
    fn win_in(self) -> Option<u32> {
        match self {
            State::Won { moves } => Some(moves),
            State::Terminal { value, .. } | State::Repeated { value, .. } if value >= 1.0 => Some(1),
            _ => None,
        }
    }

    /// The length of a proven loss for the player who moved into the node, in moves of the
    /// winner from here (0: the game is already lost).
    fn loss_in(self) -> Option<u32> {
        match self {
            State::Refuted { moves } => Some(moves),
            State::Terminal { value, .. } | State::Repeated { value, .. } if value <= -1.0 => Some(0),
            _ => None,
        }
    }
}

#[derive(Clone, Debug)]
struct Node {
    mv: Move,
    prior: f32,
    visits: u32,
    in_flight: u32,
    /// Sum of (win - loss) for the player who moved into this node.
    value_sum: f32,
    /// Sum of draw probabilities.
    draw_sum: f32,
    first_child: u32,
    children: u16,
    state: State,
}

impl Node {
    fn new(mv: Move, prior: f32) -> Node {
        Node {
            mv,
            prior,
            visits: 0,
            in_flight: 0,
            value_sum: 0.0,
            draw_sum: 0.0,
            first_child: 0,
            children: 0,
            state: State::Leaf,
        }
    }
}

/// A leaf the search wants evaluated: the path to it and its game.
#[derive(Clone, Debug)]
pub struct PendingLeaf {
    path: Vec<u32>,
    /// The share of the evaluation's win and loss that the leaf keeps (see
    /// [`SearchConfig::natural_limit_ramp`]).
    decisive: f32,
    /// The game at the leaf (ongoing).
    pub game: Game,
}

/// What one selection found.
#[derive(Debug)]
pub enum Selection {
    /// A leaf to evaluate; hand it back to [`Tree::expand`] with its evaluation.
    Evaluate(Box<PendingLeaf>),
    /// A finished game in the tree; already backed up.
    Terminal,
    /// The selection ran into a leaf already waiting for its evaluation: nothing to do until
    /// the pending evaluations come back.
    Collision,
}

/// The root's statistics after a search.
#[derive(Clone, Debug, PartialEq)]
pub struct RootStats {
    /// The root's legal moves, their visits and priors.
    pub children: Vec<(Move, u32, f32)>,
    /// Each root move's mean value (win - loss) for the side to move at the root, in the order
    /// of `children`; `None` if it was never visited.
    pub values: Vec<Option<f32>>,
    /// The root position's win/draw/loss for the side to move, from the search.
    pub wdl: [f32; 3],
    /// Whether each root move (in the order of `children`) ends the game in a draw on the spot,
    /// or repeats a position that the search rules a draw.
    pub draws: Vec<bool>,
    /// For each root move (in the order of `children`), the length of the win it forces, in
    /// moves of the side to move (1: it wins on the spot; at most this many where the proof was
    /// carried up the tree), if the search proved one.
    pub mates: Vec<Option<u32>>,
    /// Whether each root move (in the order of `children`) is a proven loss: the opponent then
    /// wins on the spot or mates by force.
    pub refuted: Vec<bool>,
}

impl RootStats {
    /// Visits summed over the root's moves.
    pub fn playouts(&self) -> u32 {
        self.children.iter().map(|c| c.1).sum()
    }

    /// Visit fractions of the root's moves: the policy target.
    pub fn policy(&self) -> Vec<(Move, f32)> {
        let total = self.playouts().max(1) as f32;
        self.children.iter().map(|&(mv, n, _)| (mv, n as f32 / total)).collect()
    }

    /// Gumbel MuZero's improved policy (Danihelka et al. 2022): `softmax(log prior + sigma(q))`
    /// with `sigma(q) = (50 + max visits) * 0.1 * q`, where an unvisited move's `q` is the
    /// prior-weighted mean of the visited ones and the completed `q`s are rescaled to [0, 1] by
    /// their minimum and maximum. Unlike visit fractions, which with few
    /// playouts mostly echo the priors, it moves probability only as far as the search's values
    /// differ, so training on it cannot sharpen the policy by itself. `priors` are the network's,
    /// one per root move (before root noise).
    ///
    /// # Panics
    /// If `priors` has not one entry per root move.
    pub fn completed_q_policy(&self, priors: &[f32]) -> Vec<(Move, f32)> {
        self.softmax_of_completed_q(priors, true)
    }

    /// `softmax(sigma(q))`: the completed-Q policy without the log prior, so the searched values
    /// alone (the priors only complete the unvisited moves' `q` and choose what was visited).
    /// A policy trained on it learns what the search found, not what the network already liked:
    /// with few playouts the completed-Q policy is mostly the prior, and a young network's
    /// preferences, random or learnt from that echo, are kept however the search rates them.
    ///
    /// # Panics
    /// If `priors` has not one entry per root move.
    pub fn q_softmax_policy(&self, priors: &[f32]) -> Vec<(Move, f32)> {
        self.softmax_of_completed_q(priors, false)
    }

    fn softmax_of_completed_q(&self, priors: &[f32], with_prior: bool) -> Vec<(Move, f32)> {
        let sigma = self.sigma_completed_q(priors);
        let logits: Vec<f32> =
            priors.iter().zip(&sigma).map(|(&p, &s)| if with_prior { p.max(1e-8).ln() + s } else { s }).collect();
        let top = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let weights: Vec<f32> = logits.iter().map(|l| (l - top).exp()).collect();
        let total: f32 = weights.iter().sum();
        self.children.iter().zip(weights).map(|(c, w)| (c.0, w / total)).collect()
    }

    /// Gumbel MuZero's `sigma(completed q)` of each root move: its searched value, or for an
    /// unvisited move the prior-weighted mean of the visited ones, rescaled to [0, 1] by the
    /// lowest and highest of them and scaled by `(50 + max visits) * 0.1`.
    ///
    /// # Panics
    /// If `priors` has not one entry per root move.
    fn sigma_completed_q(&self, priors: &[f32]) -> Vec<f32> {
        const C_VISIT: f32 = 50.0;
        const C_SCALE: f32 = 0.1;
        assert_eq!(priors.len(), self.children.len(), "one prior per root move");
        let (mut mass, mut weighted) = (0.0, 0.0);
        for (&p, q) in priors.iter().zip(&self.values) {
            if let Some(q) = q {
                mass += p;
                weighted += p * q;
            }
        }
        let unvisited = if mass > 0.0 { weighted / mass } else { self.value() };
        let max_visits = self.children.iter().map(|c| c.1).max().unwrap_or(0) as f32;
        let scale = (C_VISIT + max_visits) * C_SCALE;
        let completed: Vec<f32> = self.values.iter().map(|q| q.unwrap_or(unvisited)).collect();
        // Rescaled to [0, 1] by the lowest and highest completed value, as Gumbel MuZero does:
        // a young network's values differ by hundredths, and unscaled they would move the
        // target by as little, leaving it near uniform whatever the search found.
        let (low, high) = completed.iter().fold((f32::INFINITY, f32::NEG_INFINITY), |(l, h), &q| (l.min(q), h.max(q)));
        let spread = (high - low).max(1e-6);
        completed.iter().map(|&q| scale * (q - low) / spread).collect()
    }

    /// The move to play: the quickest forced win if the search found one; else the most visited
    /// move that is not a proven loss (ties to the higher prior), except that if it draws on the
    /// spot, it gives way to the most visited such move the search values above a draw. With few
    /// playouts the visits mostly follow the priors, so without this a network whose policy
    /// likes quiet moves repeats into a draw that its own search rates worse than playing on,
    /// plays a move its search has just refuted with one visit, or spreads its playouts over the
    /// root's moves and plays another instead of the mate it found. The converse (taking a draw
    /// over a most visited move valued below one) is left to the visits: a draw ends the game for
    /// good, and a weak network's values would take it on noise.
    pub fn best_move(&self) -> Option<Move> {
        // Full ties go to the last move, as in [`Tree::lines`].
        let most_visited = |among: &dyn Fn(usize) -> bool| {
            (0..self.children.len()).filter(|&i| among(i)).max_by(|&a, &b| {
                let (a, b) = (&self.children[a], &self.children[b]);
                a.1.cmp(&b.1).then(a.2.total_cmp(&b.2))
            })
        };
        if let Some(quickest) = self.mates.iter().flatten().min()
            && let Some(win) = most_visited(&|i| self.mates.get(i) == Some(&Some(*quickest)))
        {
            return Some(self.children[win].0);
        }
        let open = |i: usize| !self.is_refuted(i);
        let draws = |i: usize| self.draws.get(i) == Some(&true);
        let best = most_visited(&open).or_else(|| most_visited(&|_| true))?;
        let chosen = if draws(best) {
            most_visited(&|i| open(i) && !draws(i) && self.values[i].is_some_and(|v| v > 0.0)).unwrap_or(best)
        } else {
            best
        };
        Some(self.children[chosen].0)
    }

    /// Whether the root move at index `i` is a proven loss while another is not.
    fn is_refuted(&self, i: usize) -> bool {
        self.refuted.get(i) == Some(&true) && self.refuted.contains(&false)
    }

    /// Picks a move with probability proportional to visits^(1/temperature), leaving out proven
    /// losses while another move is not one; the best move when the temperature is 0 or a move
    /// forces a win.
    pub fn sample_move<R: Rng>(&self, temperature: f32, rng: &mut R) -> Option<Move> {
        if temperature <= 0.0 || self.playouts() == 0 || self.mates.iter().any(Option::is_some) {
            return self.best_move();
        }
        let max = self.children.iter().map(|c| c.1).max()? as f64;
        let weights: Vec<f64> = (0..self.children.len())
            .map(|i| {
                if self.is_refuted(i) {
                    0.0
                } else {
                    (self.children[i].1 as f64 / max).powf(1.0 / f64::from(temperature))
                }
            })
            .collect();
        let total: f64 = weights.iter().sum();
        let mut x = rng.random::<f64>() * total;
        for (child, w) in self.children.iter().zip(&weights) {
            if x < *w {
                return Some(child.0);
            }
            x -= w;
        }
        self.best_move()
    }

    /// The side to move's expected score in [-1, 1] (win - loss).
    pub fn value(&self) -> f32 {
        self.wdl[0] - self.wdl[2]
    }
}

/// A root move as the search sees it: its visits, its value and the line it expects.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    /// The root move, then the most visited reply, and so on while the tree goes on.
    pub moves: Vec<Move>,
    /// Visits of the root move.
    pub visits: u32,
    /// The root move's prior.
    pub prior: f32,
    /// Win, draw, loss for the side to move at the root after this move (all 0 if unvisited).
    pub wdl: [f32; 3],
    /// Whether the root move ends the game (its value is then exact).
    pub ends_game: bool,
    /// What the search proved of the root move: `Some(n)` if it wins within `n` moves of the
    /// side to move (1: on the spot), `Some(-n)` if the opponent then wins within `n` of its
    /// moves (`Some(0)`: the move itself loses by a rule).
    pub mate: Option<i32>,
}

/// A search tree rooted at a game's current position.
#[derive(Clone, Debug)]
pub struct Tree {
    nodes: Vec<Node>,
    game: Game,
    /// [`SearchConfig::mate_moves`] of the last selection, for the root's own mates when the
    /// root is expanded or replaced by [`Tree::advance`] (which get no config).
    mate_moves: u32,
    /// The root search's sequential halving, while a Gumbel search runs ([`Tree::plan_gumbel`]).
    gumbel: Option<GumbelPlan>,
}

/// Sequential halving over the root's moves (Danihelka et al. 2022, "Policy improvement by
/// planning with Gumbel"): the `considered` moves with the highest Gumbel noise plus log prior
/// are searched in `log2(considered)` phases; each phase gives every move still in the running
/// the same share of the playouts and then keeps the better half by noise + log prior +
/// `sigma(completed q)`. Below the root the search is PUCT as before.
#[derive(Clone, Debug)]
struct GumbelPlan {
    /// The root moves still in the running: their node and their Gumbel noise plus log prior.
    survivors: Vec<(usize, f32)>,
    /// Visits of each root move (by its index among the root's children) when the plan was made:
    /// visits reused from an earlier search do not count toward a phase.
    base: Vec<u32>,
    /// New playouts the plan spreads.
    budget: u32,
    /// Phases in all: `ceil(log2(considered))`, at least 1.
    phases: u32,
    /// New visits each survivor is to have by the end of the current phase.
    target: u32,
}

impl GumbelPlan {
    /// New visits each of `survivors` moves gets in one phase: an even share of the budget's
    /// part for the phase, at least one.
    fn allotment(&self, survivors: usize) -> u32 {
        (self.budget / (self.phases * survivors as u32).max(1)).max(1)
    }
}

/// Raises `priors` to the power `1 / temperature` and normalises them again (left as they are if
/// that cannot be done).
pub(crate) fn temper(priors: &mut [f32], temperature: f32) {
    if temperature == 1.0 {
        return;
    }
    let tempered: Vec<f64> = priors.iter().map(|&p| f64::from(p).powf(1.0 / f64::from(temperature))).collect();
    let total: f64 = tempered.iter().sum();
    if total <= 0.0 || !total.is_finite() {
        return;
    }
    for (p, t) in priors.iter_mut().zip(tempered) {
        *p = (t / total) as f32;
    }
}

/// The length of a win that the side to move forces within `moves` of its moves (see
/// [`forced_win`]), for the first move found that forces one.
fn wins_by_force(game: &Game, moves: u32) -> Option<u32> {
    let mut seen = game.hashes_since_capture().collect();
    game.legal_moves().iter().find_map(|&mv| forced_win(game, mv, moves, &mut seen))
}

/// The length of the quickest win that the legal move `mv` forces in `game`, in moves of its
/// side (1: on the spot, by the game's rules), looking for mates by checks of up to `moves`
/// moves that end within the game's length cap and repeat no position; `seen` holds
/// [`Game::hashes_since_capture`].
fn forced_win(game: &Game, mv: Move, moves: u32, seen: &mut Vec<u64>) -> Option<u32> {
    let pos = game.position();
    let mut after = pos.clone();
    after.play_unchecked(mv);
    if !after.has_legal_moves() {
        // The position says the opponent is left without a move; the game, with its other
        // rules, has the last word, but is only consulted for those rare moves.
        return (game.clone().push_unchecked(mv).winner() == Some(pos.turn())).then_some(1);
    }
    let plies_left = game.config().max_plies.map_or(u32::MAX, |cap| cap.saturating_sub(game.len() as u32));
    // A mate in n moves takes 2n - 1 plies.
    let moves = moves.min(plies_left.saturating_add(1) / 2);
    (2..=moves).find(|&n| mate::mates_after_check(&after, n, seen))
}

/// The share of a leaf's win and loss that [`SearchConfig::natural_limit_ramp`] keeps: all of it
/// until the ramp's last plies before the natural move limit, then linearly less.
fn decisive_share(game: &Game, ramp: u32) -> f32 {
    let left = game.natural_plies_left();
    if left >= ramp { 1.0 } else { left as f32 / ramp as f32 }
}

/// The value of an outcome for the player who made the last move of `game`, and the draw share.
fn outcome_value(game: &Game, outcome: Outcome) -> (f32, f32) {
    let mover = game.position().turn().opponent();
    match outcome {
        Outcome::Win { winner, .. } if winner == mover => (1.0, 0.0),
        Outcome::Win { .. } => (-1.0, 0.0),
        _ => (0.0, 1.0),
    }
}

impl Tree {
    /// A fresh tree for `game`'s current position.
    ///
    /// # Panics
    /// If the game is over.
    pub fn new(game: Game) -> Tree {
        assert!(!game.outcome().is_over(), "no search in a finished game");
        Tree {
            nodes: vec![Node::new(Move::from_u16(0).expect("move code 0"), 1.0)],
            game,
            mate_moves: SearchConfig::default().mate_moves,
            gumbel: None,
        }
    }

    /// The game at the root.
    pub fn game(&self) -> &Game {
        &self.game
    }

    /// Visits summed over the root's moves (playouts so far, reused ones included).
    pub fn playouts(&self) -> u32 {
        self.children(0).map(|i| self.nodes[i].visits).sum()
    }

    /// Playouts plus selections still waiting for their evaluation.
    pub fn playouts_started(&self) -> u32 {
        self.children(0).map(|i| self.nodes[i].visits + self.nodes[i].in_flight).sum::<u32>()
            + u32::from(self.nodes[0].state == State::Pending)
    }

    /// Nodes in the tree.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether the tree is only its root.
    pub fn is_empty(&self) -> bool {
        self.nodes.len() <= 1
    }

    /// Whether the root has been evaluated.
    pub fn root_expanded(&self) -> bool {
        self.nodes[0].state == State::Expanded
    }

    /// The children of an expanded node, whether or not it was proven since (empty for others).
    fn children(&self, node: usize) -> std::ops::Range<usize> {
        let n = &self.nodes[node];
        n.first_child as usize..n.first_child as usize + n.children as usize
    }

    /// Raises the root's priors to the power `1 / temperature` and normalises them again.
    ///
    /// # Panics
    /// If the root is not expanded yet, or the temperature is not positive.
    pub fn temper_root_priors(&mut self, temperature: f32) {
        assert!(self.root_expanded(), "tempering needs an expanded root");
        assert!(temperature > 0.0 && temperature.is_finite(), "temperature {temperature} must be positive");
        let range = self.children(0);
        let mut priors: Vec<f32> = range.clone().map(|i| self.nodes[i].prior).collect();
        temper(&mut priors, temperature);
        for (i, p) in range.zip(priors) {
            self.nodes[i].prior = p;
        }
    }

    /// Mixes Dirichlet(alpha) noise into the root's priors with weight `fraction`.
    ///
    /// # Panics
    /// If the root is not expanded yet.
    pub fn add_root_noise<R: Rng>(&mut self, alpha: f32, fraction: f32, rng: &mut R) {
        assert!(self.root_expanded(), "noise goes on an expanded root");
        let range = self.children(0);
        let gamma = Gamma::new(f64::from(alpha), 1.0).expect("positive alpha");
        let samples: Vec<f64> = range.clone().map(|_| gamma.sample(rng)).collect();
        let total: f64 = samples.iter().sum();
        if total <= 0.0 {
            return;
        }
        for (i, s) in range.zip(samples) {
            let node = &mut self.nodes[i];
            node.prior = (1.0 - fraction) * node.prior + fraction * (s / total) as f32;
        }
    }

    /// Starts a Gumbel root search (see [`GumbelPlan`]) of `budget` more playouts over the
    /// `considered` root moves with the highest `g + log prior`, where `g` is Gumbel(0, 1) noise
    /// drawn from `rng`, or 0 for every move without one (a search that is to play its best, not
    /// explore). Until [`Tree::advance`], the root's selections follow the plan and
    /// [`Tree::gumbel_move`] names the move to play.
    ///
    /// ```
    /// use rand::SeedableRng;
    /// use xiangqi::game::Game;
    /// use xqz_mcts::{SearchConfig, Tree, UniformEvaluator, search};
    ///
    /// let mut tree = Tree::new(Game::new(Default::default()));
    /// search(&mut tree, &mut UniformEvaluator, 0, &SearchConfig::default())?; // the root alone
    /// let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    /// tree.plan_gumbel(8, 16, Some(&mut rng));
    /// search(&mut tree, &mut UniformEvaluator, 16, &SearchConfig::default())?;
    /// // 8 moves once each, then 4 twice, then 2 with what is left: at most 8 moves visited.
    /// assert!(tree.root().children.iter().filter(|c| c.1 > 0).count() <= 8);
    /// assert!(tree.gumbel_move().is_some());
    /// # Ok::<(), xqz_mcts::EvalError>(())
    /// ```
    ///
    /// # Panics
    /// If the root is not expanded yet, or `considered` is 0.
    pub fn plan_gumbel<R: Rng>(&mut self, considered: usize, budget: u32, rng: Option<&mut R>) {
        assert!(self.root_expanded(), "a Gumbel search plans over an expanded root");
        assert!(considered > 0, "a Gumbel search considers at least one move");
        let range = self.children(0);
        let mut scored: Vec<(usize, f32)> = match rng {
            Some(rng) => range
                .clone()
                .map(|i| {
                    // Gumbel(0, 1) by inversion; the open interval keeps both logarithms finite.
                    let u: f32 = rng.random_range(f32::EPSILON..1.0);
                    (i, -(-u.ln()).ln() + self.nodes[i].prior.max(1e-8).ln())
                })
                .collect(),
            None => range.clone().map(|i| (i, self.nodes[i].prior.max(1e-8).ln())).collect(),
        };
        scored.sort_by(|a, b| b.1.total_cmp(&a.1));
        scored.truncate(considered);
        let phases = (scored.len() as f32).log2().ceil().max(1.0) as u32;
        let mut plan = GumbelPlan {
            base: range.map(|i| self.nodes[i].visits).collect(),
            budget,
            phases,
            target: 0,
            survivors: scored,
        };
        plan.target = plan.allotment(plan.survivors.len());
        self.gumbel = Some(plan);
    }

    /// The root move to search next under the Gumbel plan: the survivor with the fewest new
    /// visits below the phase's target; at the end of a phase, the better half goes on. `None`
    /// while the phase's last selections wait for their evaluations.
    fn gumbel_child(&mut self) -> Option<usize> {
        let first = self.nodes[0].first_child as usize;
        loop {
            let plan = self.gumbel.as_ref().expect("a Gumbel plan");
            let started = |i: usize| self.nodes[i].visits + self.nodes[i].in_flight - plan.base[i - first];
            if plan.survivors.len() == 1 {
                return Some(plan.survivors[0].0);
            }
            if let Some(&(next, _)) =
                plan.survivors.iter().filter(|&&(i, _)| started(i) < plan.target).min_by_key(|&&(i, _)| started(i))
            {
                return Some(next);
            }
            if plan.survivors.iter().any(|&(i, _)| self.nodes[i].in_flight > 0) {
                return None;
            }
            let sigma = Tree::root_sigma(&self.root());
            let plan = self.gumbel.as_mut().expect("a Gumbel plan");
            plan.survivors.sort_by(|a, b| (b.1 + sigma[b.0 - first]).total_cmp(&(a.1 + sigma[a.0 - first])));
            plan.survivors.truncate(plan.survivors.len().div_ceil(2));
            plan.target += plan.allotment(plan.survivors.len());
        }
    }

    /// `sigma(completed q)` of each root move of `root` (the tree's root statistics), by its index
    /// among the root's children.
    fn root_sigma(root: &RootStats) -> Vec<f32> {
        let priors: Vec<f32> = root.children.iter().map(|c| c.2).collect();
        root.sigma_completed_q(&priors)
    }

    /// The move a Gumbel search plays ([`Tree::plan_gumbel`]), if one was planned: the quickest
    /// forced win if the search proved one, else the survivor with the highest noise + log prior
    /// + `sigma(completed q)` that is not a proven loss (unless all are).
    pub fn gumbel_move(&self) -> Option<Move> {
        let plan = self.gumbel.as_ref()?;
        let root = self.root();
        if root.mates.iter().any(Option::is_some) {
            return root.best_move();
        }
        let first = self.nodes[0].first_child as usize;
        let sigma = Tree::root_sigma(&root);
        let score = |&(i, g): &(usize, f32)| g + sigma[i - first];
        let open = plan.survivors.iter().filter(|&&(i, _)| self.nodes[i].state.loss_in().is_none());
        let best = open.max_by(|a, b| score(a).total_cmp(&score(b)));
        best.or_else(|| plan.survivors.iter().max_by(|a, b| score(a).total_cmp(&score(b))))
            .map(|&(i, _)| self.nodes[i].mv)
    }

    /// Walks from the root to a leaf by PUCT, adding virtual loss on the way.
    pub fn select(&mut self, config: &SearchConfig) -> Selection {
        self.mate_moves = config.mate_moves.max(1);
        let mut path = vec![0u32];
        let mut node = 0usize;
        let mut moves = Vec::new();
        loop {
            match self.nodes[node].state {
                State::Leaf => break,
                State::Pending => {
                    self.revert(&path);
                    return Selection::Collision;
                }
                state @ (State::Terminal { .. }
                | State::Repeated { .. }
                | State::Refuted { .. }
                | State::Won { .. }) => {
                    return self.settle(&path, state);
                }
                State::Expanded => {
                    let child = if node == 0 && self.gumbel.is_some() {
                        match self.gumbel_child() {
                            Some(child) => child,
                            // Every move of the phase is waiting for its evaluation; the
                            // halving needs their values.
                            None => return Selection::Collision,
                        }
                    } else {
                        self.best_child(node, config)
                    };
                    self.nodes[child].in_flight += 1;
                    moves.push(self.nodes[child].mv);
                    path.push(child as u32);
                    node = child;
                }
            }
        }
        let mut game = self.game.clone();
        for mv in moves {
            game.push_unchecked(mv);
        }
        if game.outcome().is_over() {
            let (value, draw) = outcome_value(&game, game.outcome());
            return self.settle(&path, State::Terminal { value, draw });
        }
        // The root is searched whatever came before it.
        if node != 0
            && config.rule_first_repetition
            && let Some(ruling) = game.ruling_if_repeated()
        {
            let (value, draw) = outcome_value(&game, ruling);
            return self.settle(&path, State::Repeated { value, draw });
        }
        // A mating reply is found here rather than left to the search below, where a network that
        // gives it a tiny prior would not visit it, and that values material, not a king's
        // safety: without this, a move that allows mate looks as good as the network's value of
        // the position after it.
        if node != 0
            && let Some(moves) = wins_by_force(&game, self.mate_moves)
        {
            return self.settle(&path, State::Refuted { moves });
        }
        self.nodes[node].state = State::Pending;
        let decisive = decisive_share(&game, config.natural_limit_ramp);
        Selection::Evaluate(Box::new(PendingLeaf { path, game, decisive }))
    }

    /// Gives the node at the end of `path` a state whose value is known, backs that value up and
    /// proves what it decides above it.
    fn settle(&mut self, path: &[u32], state: State) -> Selection {
        let (value, draw) = state.exact().expect("a settled state");
        self.nodes[*path.last().expect("a path has its root") as usize].state = state;
        self.backup(path, value, draw, true);
        self.prove(path);
        Selection::Terminal
    }

    /// Carries a proof at the end of `path` up the path (the MCTS-solver rule of Winands et al.
    /// 2008): a node with a child that wins for the side to move there is lost for the player who
    /// moved into it, and one whose children all lose is won. The root's own moves are proven
    /// this way but never the root, which is searched whatever is known about it. Without this,
    /// few playouts see a win only where a leaf meets one, and a quiet move that leaves every
    /// reply mated by checks looks no better than the network's value of it.
    fn prove(&mut self, path: &[u32]) {
        for pair in path.windows(2).rev() {
            let (parent, child) = (pair[0] as usize, pair[1] as usize);
            if parent == 0 || self.nodes[parent].state != State::Expanded {
                return;
            }
            let child = self.nodes[child].state;
            let proven = if let Some(moves) = child.win_in() {
                State::Refuted { moves }
            } else if child.loss_in().is_some()
                && let Some(longest) = self
                    .children(parent)
                    .try_fold(0, |longest, c| self.nodes[c].state.loss_in().map(|moves| longest.max(moves)))
            {
                State::Won { moves: longest + 1 }
            } else {
                return;
            };
            self.nodes[parent].state = proven;
        }
    }

    fn best_child(&self, node: usize, config: &SearchConfig) -> usize {
        let parent = &self.nodes[node];
        let range = self.children(node);
        let parent_n = (parent.visits + parent.in_flight).max(1) as f32;
        // The parent's value for the side to move there is the opposite of its stored value.
        let parent_q = if parent.visits > 0 { -parent.value_sum / parent.visits as f32 } else { 0.0 };
        let visited_mass: f32 = range
            .clone()
            .filter(|&i| self.nodes[i].visits + self.nodes[i].in_flight > 0)
            .map(|i| self.nodes[i].prior)
            .sum();
        let fpu = match (node, config.root_fpu) {
            (0, Some(absolute)) => absolute,
            (0, None) => parent_q - config.fpu_reduction_root * visited_mass.sqrt(),
            _ => parent_q - config.fpu_reduction * visited_mass.sqrt(),
        };
        let explore = config.c_puct * parent_n.sqrt();
        // A move that loses on the spot is taken only when every move does (an MCTS-solver rule):
        // its exact -1 drags the parent's value, and so the first-play urgency of the moves not
        // tried yet, down with it, so that with a confident prior PUCT would keep choosing it.
        let mut best = (f32::NEG_INFINITY, range.start);
        let mut best_losing = (f32::NEG_INFINITY, range.start);
        for i in range {
            let child = &self.nodes[i];
            let n = child.visits + child.in_flight;
            let exact = child.state.exact();
            let q = match exact {
                Some((value, _)) => value,
                None if n == 0 => fpu,
                // Each selection still in flight counts as a loss (virtual loss).
                None => (child.value_sum - child.in_flight as f32) / n as f32,
            };
            let score = q + explore * child.prior / (1 + n) as f32;
            let slot = if exact.is_some_and(|(value, _)| value <= -1.0) { &mut best_losing } else { &mut best };
            if score > slot.0 {
                *slot = (score, i);
            }
        }
        if best.0 > f32::NEG_INFINITY { best.1 } else { best_losing.1 }
    }

    /// Removes the virtual loss of an abandoned selection.
    fn revert(&mut self, path: &[u32]) {
        for &i in &path[1..] {
            self.nodes[i as usize].in_flight -= 1;
        }
    }

    /// Adds a result to every node of the path; `value` is for the player who moved into the
    /// last node.
    fn backup(&mut self, path: &[u32], value: f32, draw: f32, in_flight: bool) {
        let mut value = value;
        for (depth, &i) in path.iter().enumerate().rev() {
            let node = &mut self.nodes[i as usize];
            node.visits += 1;
            node.value_sum += value;
            node.draw_sum += draw;
            if in_flight && depth > 0 {
                node.in_flight -= 1;
            }
            value = -value;
        }
    }

    /// Expands a leaf with its evaluation and backs its value up.
    ///
    /// # Panics
    /// If the priors do not match the leaf's legal moves.
    pub fn expand(&mut self, leaf: PendingLeaf, evaluation: &Evaluation) {
        let legal = leaf.game.legal_moves();
        assert_eq!(evaluation.priors.len(), legal.len(), "one prior per legal move");
        let node = *leaf.path.last().expect("a path has its root") as usize;
        let first = self.nodes.len() as u32;
        self.nodes.extend(legal.iter().zip(&evaluation.priors).map(|(&mv, &p)| Node::new(mv, p)));
        let n = &mut self.nodes[node];
        n.first_child = first;
        n.children = legal.len() as u16;
        n.state = State::Expanded;
        if node == 0 {
            self.mark_root_mates();
        }
        let [win, draw, loss] = evaluation.wdl;
        let keep = leaf.decisive;
        // The evaluation is for the side to move at the leaf; the node keeps its mover's view.
        self.backup(&leaf.path, (loss - win) * keep, draw + (win + loss) * (1.0 - keep), true);
    }

    /// Settles the root's moves that force a win (see [`SearchConfig::mate_moves`]; the root
    /// looks one move further than the leaves) as won, when a root is expanded or kept by
    /// [`Tree::advance`]: with few playouts spread over many moves, a mate with a small prior
    /// would otherwise go unseen (and [`RootStats::best_move`] plays the quickest one it knows).
    fn mark_root_mates(&mut self) {
        let mut seen = self.game.hashes_since_capture().collect();
        for i in self.children(0) {
            if self.nodes[i].state.exact().is_some() {
                continue;
            }
            self.nodes[i].state = match forced_win(&self.game, self.nodes[i].mv, self.mate_moves + 1, &mut seen) {
                Some(1) => State::Terminal { value: 1.0, draw: 0.0 },
                Some(moves) => State::Won { moves },
                None => continue,
            };
        }
    }

    /// The root's statistics.
    pub fn root(&self) -> RootStats {
        let children =
            self.children(0).map(|i| (self.nodes[i].mv, self.nodes[i].visits, self.nodes[i].prior)).collect();
        let values = self
            .children(0)
            .map(|i| {
                let node = &self.nodes[i];
                (node.visits > 0).then(|| node.value_sum / node.visits as f32)
            })
            .collect();
        let root = &self.nodes[0];
        let n = root.visits.max(1) as f32;
        let (value, draw) = (-root.value_sum / n, root.draw_sum / n);
        let win = ((1.0 + value - draw) / 2.0).clamp(0.0, 1.0);
        let loss = ((1.0 - value - draw) / 2.0).clamp(0.0, 1.0);
        let draws = self
            .children(0)
            .map(|i| {
                matches!(self.nodes[i].state, State::Terminal { draw, .. } | State::Repeated { draw, .. } if draw >= 1.0)
            })
            .collect();
        let mates = self.children(0).map(|i| self.nodes[i].state.win_in()).collect();
        let refuted = self.children(0).map(|i| self.nodes[i].state.loss_in().is_some()).collect();
        RootStats { children, values, wdl: [win, draw.clamp(0.0, 1.0), loss], draws, mates, refuted }
    }

    /// The root's moves, most visited first (ties to the higher prior, then to the later move),
    /// each with its principal variation: the root's best line first.
    pub fn lines(&self) -> Vec<Line> {
        let mut lines: Vec<Line> = self
            .children(0)
            .map(|i| {
                let node = &self.nodes[i];
                let mut moves = vec![node.mv];
                let mut at = i;
                while let Some(next) = self.children(at).filter(|&c| self.nodes[c].visits > 0).max_by(|&a, &b| {
                    let (a, b) = (&self.nodes[a], &self.nodes[b]);
                    a.visits.cmp(&b.visits).then(a.prior.total_cmp(&b.prior))
                }) {
                    moves.push(self.nodes[next].mv);
                    at = next;
                }
                let wdl = if node.visits == 0 {
                    [0.0; 3]
                } else {
                    let n = node.visits as f32;
                    let (value, draw) = (node.value_sum / n, node.draw_sum / n);
                    [
                        ((1.0 + value - draw) / 2.0).clamp(0.0, 1.0),
                        draw.clamp(0.0, 1.0),
                        ((1.0 - value - draw) / 2.0).clamp(0.0, 1.0),
                    ]
                };
                Line {
                    moves,
                    visits: node.visits,
                    prior: node.prior,
                    wdl,
                    ends_game: matches!(node.state, State::Terminal { .. }),
                    mate: node.state.win_in().map(|n| n as i32).or_else(|| node.state.loss_in().map(|n| -(n as i32))),
                }
            })
            .collect();
        // Full ties in the order RootStats::best_move breaks them: the last move first.
        lines.reverse();
        lines.sort_by(|a, b| b.visits.cmp(&a.visits).then(b.prior.total_cmp(&a.prior)));
        lines
    }

    /// Plays `mv` at the root and keeps its subtree (a fresh root if it was never expanded).
    ///
    /// # Panics
    /// If `mv` is illegal, or ends the game.
    pub fn advance(&mut self, mv: Move) {
        self.gumbel = None;
        let child = self.children(0).find(|&i| self.nodes[i].mv == mv);
        let mut game = self.game.clone();
        game.push(mv).expect("a legal move");
        assert!(!game.outcome().is_over(), "no search after the end");
        match child.filter(|&i| self.nodes[i].children > 0) {
            Some(i) => {
                let mut nodes = Vec::with_capacity(self.nodes.len());
                let mut root = self.nodes[i].clone();
                root.in_flight = 0;
                // A proven node keeps its children; as the new root it is searched again.
                root.state = State::Expanded;
                nodes.push(root);
                // Copy the subtree breadth-first, renumbering children blocks.
                let mut queue = vec![(i, 0usize)];
                while let Some((old, new)) = queue.pop() {
                    let range = self.children(old);
                    if range.is_empty() {
                        continue;
                    }
                    let first = nodes.len();
                    for (k, c) in range.enumerate() {
                        let mut node = self.nodes[c].clone();
                        node.in_flight = 0;
                        if node.state == State::Pending {
                            node.state = State::Leaf;
                        }
                        nodes.push(node);
                        queue.push((c, first + k));
                    }
                    nodes[new].first_child = first as u32;
                }
                self.nodes = nodes;
                self.game = game;
                self.mark_root_mates();
            }
            // A fresh root gets its mates at its expansion.
            None => {
                self.nodes = vec![Node::new(mv, 1.0)];
                self.game = game;
            }
        }
    }
}
