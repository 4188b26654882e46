//! The self-play driver: each thread plays many games at once and sends the leaves of all of them
//! to the evaluator in one batch (the lc0/KataGo pattern), on several threads.
//!
//! Per move: playout cap randomization (a fraction of moves get a full search with root noise and
//! become policy targets; the rest a cheap one), a temperature schedule, tree reuse, and
//! resignation when the searched value stays below a threshold; a fraction of games never resign
//! and report whether resigning would have been a false positive. Every game has its own seed, so
//! it replays exactly with the same evaluator ([`replay`]).

use std::ops::Deref;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant, SystemTime};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use xiangqi::game::Game;
use xiangqi::{Color, Move};

use crate::evaluator::{EvalError, Evaluator, Pending};
use crate::openings::OpeningSuite;
use crate::search::{checked_answers, collect_leaves, submit_leaves};
use crate::seed::game_seed;
use crate::settings::PlaySettings;
use crate::tree::{PendingLeaf, SearchConfig, Tree};

/// How self-play games are played: the coordinator's (or the command line's) [`PlaySettings`] as
/// they are, plus what belongs to this run alone (threads, seed, the opening suite, the settings
/// version). Built by [`PlaySettings::self_play_config`]; the driver reads the settings through
/// `Deref`, so a new setting needs no field here.
#[derive(Clone, Debug, PartialEq)]
pub struct SelfPlayConfig {
    /// The settings the games are played under.
    pub settings: PlaySettings,
    /// Search settings: the defaults with the settings' `mate_moves`.
    pub search: SearchConfig,
    /// The suite that [`PlaySettings::opening_share`] of the games start from
    /// ([`OpeningSuite::start`]); `None`: every game starts from the standard start.
    pub openings: Option<Arc<OpeningSuite>>,
    /// Keep the subtree of the played move for the next search.
    pub reuse_tree: bool,
    /// Games each thread plays at once.
    pub games_per_thread: usize,
    /// Threads.
    pub threads: usize,
    /// Seed of all games: game `i` plays with [`game_seed`]`(seed, i)`.
    pub seed: u64,
    /// The version of the coordinator's settings these come from, recorded in each game (0:
    /// local play).
    pub settings_version: u64,
}

impl Deref for SelfPlayConfig {
    type Target = PlaySettings;
    fn deref(&self) -> &PlaySettings {
        &self.settings
    }
}

// Here rather than beside the settings: the settings know nothing of the driver that plays by them.
impl PlaySettings {
    /// The self-play driver's config under these settings, on `threads` threads playing
    /// `games_per_thread` games each, seeded with `seed`.
    pub fn self_play_config(&self, threads: usize, games_per_thread: usize, seed: u64) -> SelfPlayConfig {
        SelfPlayConfig {
            settings: self.clone(),
            search: SearchConfig { mate_moves: self.mate_moves, ..SearchConfig::default() },
            openings: None,
            reuse_tree: true,
            games_per_thread: games_per_thread.max(1),
            threads: threads.max(1),
            seed,
            settings_version: 0,
        }
    }
}

impl Default for SelfPlayConfig {
    /// The default [`PlaySettings`] on one thread of 32 games, seed 0.
    fn default() -> SelfPlayConfig {
        PlaySettings::default().self_play_config(1, 32, 0)
    }
}

/// The search made before one move.
#[derive(Clone, Debug, PartialEq)]
pub struct PlyRecord {
    /// The policy target when `full_search` ([`PlaySettings::policy_target`]), over the
    /// legal moves.
    pub policy: Vec<(Move, f32)>,
    /// The search's win/draw/loss for the side to move.
    pub root_wdl: [f32; 3],
    /// Whether it was a full search.
    pub full_search: bool,
    /// Playouts at the root when the move was chosen (reused ones included).
    pub playouts: u32,
}

/// A resignation that was (or, in a game without resigning, would have been) made.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Resignation {
    /// The side that gave up.
    pub side: Color,
    /// The ply at which it did.
    pub ply: usize,
}

/// A finished self-play game.
#[derive(Clone, Debug)]
pub struct SelfPlayGame {
    /// Its number in the run.
    pub index: u64,
    /// Its seed.
    pub seed: u64,
    /// The game, ended by the rules or by a resignation.
    pub game: Game,
    /// One record per move.
    pub plies: Vec<PlyRecord>,
    /// Whether resigning was allowed in this game.
    pub resign_allowed: bool,
    /// The first resignation: made if allowed, else only noted.
    pub resignation: Option<Resignation>,
    /// When its first search began.
    pub started: SystemTime,
    /// The [`SelfPlayConfig::settings_version`] it was played under.
    pub settings_version: u64,
}

impl SelfPlayGame {
    /// In a game without resigning where a side would have resigned: whether that was wrong
    /// (the side did not lose). `None` otherwise.
    pub fn resign_false_positive(&self) -> Option<bool> {
        if self.resign_allowed {
            return None;
        }
        let r = self.resignation?;
        Some(self.game.outcome().winner() != Some(r.side.opponent()))
    }
}

/// Totals of a run.
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct SelfPlayStats {
    /// Games finished.
    pub games: u64,
    /// Moves of the finished games.
    pub moves: u64,
    /// Positions evaluated.
    pub evaluations: u64,
    /// Evaluator calls.
    pub batches: u64,
    /// Time the threads spent inside evaluator calls, summed over threads.
    pub evaluator_time: Duration,
    /// Wall time of the run.
    pub elapsed: Duration,
}

impl std::fmt::Display for SelfPlayStats {
    /// `G games, M moves in Ss: X moves/s, Y evaluations/s, mean batch B`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let secs = self.elapsed.as_secs_f64().max(1e-9);
        write!(
            f,
            "{} games, {} moves in {secs:.1}s: {:.1} moves/s, {:.0} evaluations/s, mean batch {:.1}",
            self.games,
            self.moves,
            self.moves as f64 / secs,
            self.evaluations as f64 / secs,
            self.evaluations as f64 / self.batches.max(1) as f64
        )
    }
}

impl SelfPlayStats {
    fn add(&mut self, other: &SelfPlayStats) {
        self.games += other.games;
        self.moves += other.moves;
        self.evaluations += other.evaluations;
        self.batches += other.batches;
        self.evaluator_time += other.evaluator_time;
    }
}

/// The config new games start under, replaceable while games are in progress: each game plays to
/// its end under the config it started with, so a worker switches settings between games. Closed,
/// it starts no more games while those in progress play on (a worker draining before it stops).
#[derive(Debug)]
pub struct LiveConfig {
    config: RwLock<Arc<SelfPlayConfig>>,
    closed: AtomicBool,
}

impl LiveConfig {
    /// Starts with `config`.
    pub fn new(config: SelfPlayConfig) -> LiveConfig {
        LiveConfig { config: RwLock::new(Arc::new(config)), closed: AtomicBool::new(false) }
    }

    /// The config a game starting now plays under.
    pub fn current(&self) -> Arc<SelfPlayConfig> {
        self.config.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Games starting from now on play under `config`.
    pub fn replace(&self, config: SelfPlayConfig) {
        *self.config.write().unwrap_or_else(|e| e.into_inner()) = Arc::new(config);
    }

    /// No game starts from now on; games in progress play to their end.
    pub fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
    }

    /// Whether [`LiveConfig::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.closed.load(Ordering::SeqCst)
    }
}

/// One game in progress.
struct Slot {
    config: Arc<SelfPlayConfig>,
    index: u64,
    seed: u64,
    rng: ChaCha8Rng,
    tree: Tree,
    /// The network's priors of the root's moves, kept before tempering and noise.
    priors: Vec<f32>,
    plies: Vec<PlyRecord>,
    target: u32,
    full: bool,
    root_pending: bool,
    resign_allowed: bool,
    streak: [u32; 2],
    resignation: Option<Resignation>,
    started: SystemTime,
}

impl Slot {
    fn new(config: Arc<SelfPlayConfig>, index: u64) -> Slot {
        let seed = game_seed(config.seed, index);
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let resign_allowed =
            config.resign_config().is_some_and(|r| !rng.random_bool(r.disabled_fraction.clamp(0.0, 1.0)));
        let start = config.openings.as_ref().and_then(|suite| suite.start(config.opening_share, seed));
        let game = start.map_or_else(
            || Game::new(config.game_config()),
            |start| Game::from_position(start.clone(), config.game_config()),
        );
        let tree = Tree::new(game);
        let mut slot = Slot {
            config,
            index,
            seed,
            rng,
            tree,
            priors: Vec::new(),
            plies: Vec::new(),
            target: 0,
            full: false,
            root_pending: false,
            resign_allowed,
            streak: [0; 2],
            resignation: None,
            started: SystemTime::now(),
        };
        slot.start_move();
        slot
    }

    fn start_move(&mut self) {
        let config = &self.config;
        self.full = self.rng.random_bool(config.full_search_probability.clamp(0.0, 1.0));
        self.target = if self.full { config.playouts } else { config.cheap_playouts }.max(1);
        self.root_pending = self.full || config.gumbel_considered > 0;
        // A root kept from the last move is ready now, before its first selections.
        self.prepare_root();
    }

    /// Once the root is expanded: the priors of a full search kept, tempered and noised, and
    /// the Gumbel plan made.
    fn prepare_root(&mut self) {
        if !self.root_pending || !self.tree.root_expanded() {
            return;
        }
        let config = &self.config;
        if self.full {
            self.priors = self.tree.root().children.iter().map(|c| c.2).collect();
            self.tree.temper_root_priors(config.root_policy_temperature);
            if config.dirichlet_fraction > 0.0 && config.gumbel_considered == 0 {
                self.tree.add_root_noise(config.dirichlet_alpha, config.dirichlet_fraction, &mut self.rng);
            }
        }
        if config.gumbel_considered > 0 {
            let budget = self.target.saturating_sub(self.tree.playouts());
            self.tree.plan_gumbel(config.gumbel_considered as usize, budget, Some(&mut self.rng));
        }
        self.root_pending = false;
    }

    /// After evaluations: the root prepared once it is expanded, then a move once the search is
    /// done. Returns the finished game, if this move ended it.
    fn advance(&mut self) -> Option<SelfPlayGame> {
        let config = self.config.clone();
        self.prepare_root();
        if !self.tree.root_expanded() || self.tree.playouts() < self.target {
            return None;
        }
        let root = self.tree.root();
        let ply = self.tree.game().len();
        let side = self.tree.game().position().turn();
        let temperature =
            if (ply as u32) < config.temperature_plies { config.temperature } else { config.late_temperature };
        let mv = match self.tree.gumbel_move() {
            Some(mv) => mv,
            None => root.sample_move(temperature, &mut self.rng).expect("an ongoing game has moves"),
        };
        let policy = if self.full { config.policy_target.of(&root, &self.priors) } else { root.policy() };
        self.plies.push(PlyRecord { policy, root_wdl: root.wdl, full_search: self.full, playouts: root.playouts() });
        if let Some(resign) = config.resign_config() {
            let streak = &mut self.streak[side.index()];
            *streak = if root.value() < resign.threshold { *streak + 1 } else { 0 };
            if *streak >= resign.consecutive && self.resignation.is_none() {
                self.resignation = Some(Resignation { side, ply });
                if self.resign_allowed {
                    let mut game = self.tree.game().clone();
                    game.resign(side).expect("an ongoing game");
                    // The resigning side's last search stays a sample; its move is not played.
                    self.plies.pop();
                    return Some(self.finish(game));
                }
            }
        }
        let mut next = self.tree.game().clone();
        next.push(mv).expect("searched moves are legal");
        if next.outcome().is_over() {
            return Some(self.finish(next));
        }
        if config.reuse_tree {
            self.tree.advance(mv);
        } else {
            self.tree = Tree::new(next);
        }
        self.start_move();
        None
    }

    fn finish(&mut self, game: Game) -> SelfPlayGame {
        SelfPlayGame {
            index: self.index,
            seed: self.seed,
            game,
            plies: std::mem::take(&mut self.plies),
            resign_allowed: self.resign_allowed,
            resignation: self.resignation,
            started: self.started,
            settings_version: self.config.settings_version,
        }
    }
}

/// Games of one thread that share evaluator batches, and the batch of theirs on its way.
#[derive(Default)]
struct Group {
    slots: Vec<Slot>,
    /// The leaves submitted, and the index in `slots` of each one's game.
    leaves: Vec<PendingLeaf>,
    owners: Vec<usize>,
    /// Their answers, and the config they were asked under.
    pending: Option<(Pending, Arc<SelfPlayConfig>)>,
}

impl Group {
    /// Expands the answers to the submitted leaves, if any, then moves where searches are done;
    /// hands each finished game to `on_game`.
    fn receive(&mut self, stats: &mut SelfPlayStats, on_game: &mut impl FnMut(SelfPlayGame)) -> Result<(), EvalError> {
        if let Some((pending, config)) = self.pending.take() {
            let start = Instant::now();
            let answers = pending.wait();
            stats.evaluator_time += start.elapsed();
            let evaluations = checked_answers(answers?, &self.leaves, &config.search)?;
            for ((leaf, evaluation), &owner) in self.leaves.drain(..).zip(&evaluations).zip(&self.owners) {
                self.slots[owner].tree.expand(leaf, evaluation);
            }
        }
        let mut i = 0;
        while i < self.slots.len() {
            match self.slots[i].advance() {
                Some(game) => {
                    stats.moves += game.plies.len() as u64;
                    stats.games += 1;
                    on_game(game);
                    self.slots.swap_remove(i);
                }
                None => i += 1,
            }
        }
        Ok(())
    }

    /// Collects the next leaves of every game and hands them to the evaluator.
    fn submit<E: Evaluator + ?Sized>(
        &mut self,
        evaluator: &mut E,
        config: Arc<SelfPlayConfig>,
        stats: &mut SelfPlayStats,
    ) {
        self.leaves.clear();
        self.owners.clear();
        for (i, slot) in self.slots.iter_mut().enumerate() {
            let before = self.leaves.len();
            collect_leaves(&mut slot.tree, &slot.config.search, slot.target, &mut self.leaves);
            self.owners.extend(std::iter::repeat_n(i, self.leaves.len() - before));
        }
        if !self.leaves.is_empty() {
            stats.batches += 1;
            stats.evaluations += self.leaves.len() as u64;
            self.pending = Some((submit_leaves(evaluator, &self.leaves), config));
        }
    }
}

/// Plays the games whose indices `next_index` hands out (until it returns `None` or `stop` is
/// set), `games_per_thread` of the current config at a time, on this thread, in as many groups
/// as the evaluator takes batches in flight ([`Evaluator::batches_in_flight`]).
fn play_games<E: Evaluator + ?Sized>(
    evaluator: &mut E,
    live: &LiveConfig,
    mut next_index: impl FnMut() -> Option<u64>,
    stop: &AtomicBool,
    mut on_game: impl FnMut(SelfPlayGame),
) -> Result<SelfPlayStats, EvalError> {
    let mut stats = SelfPlayStats::default();
    // While the evaluator works on some groups' leaves, the thread walks the others' trees.
    let n = evaluator.batches_in_flight().max(1);
    let mut groups: Vec<Group> = (0..n).map(|_| Group::default()).collect();
    loop {
        for (g, group) in groups.iter_mut().enumerate() {
            group.receive(&mut stats, &mut on_game)?;
            let config = live.current();
            let games = config.games_per_thread.max(1);
            // This group's share of the thread's games (the first groups take the remainder).
            let share = games / n + usize::from(g < games % n);
            while group.slots.len() < share && !stop.load(Ordering::Relaxed) && !live.is_closed() {
                match next_index() {
                    Some(index) => group.slots.push(Slot::new(config.clone(), index)),
                    None => break,
                }
            }
            if stop.load(Ordering::Relaxed) {
                return Ok(stats);
            }
            group.submit(evaluator, config, &mut stats);
        }
        if groups.iter().all(|g| g.slots.is_empty()) {
            return Ok(stats);
        }
    }
}

/// Plays `games` games on `config.threads` threads, each with its own clone of `evaluator`, and
/// hands each finished game to `on_game` (from any thread). Setting `stop` ends the run early
/// (games in progress are dropped).
///
/// ```
/// use std::sync::atomic::AtomicBool;
/// use xqz_mcts::{MaterialEvaluator, SelfPlayConfig, self_play};
///
/// use xqz_mcts::PlaySettings;
///
/// let settings = PlaySettings { playouts: 16, cheap_playouts: 8, max_plies: 10, ..Default::default() };
/// let config = settings.self_play_config(1, 2, 0);
/// let mut lengths = Vec::new();
/// let stats = self_play(&config, MaterialEvaluator, 3, &AtomicBool::new(false), |g| lengths.push(g.game.len()))?;
/// assert_eq!((stats.games, lengths.len()), (3, 3));
/// # Ok::<(), xqz_mcts::EvalError>(())
/// ```
pub fn self_play<E, F>(
    config: &SelfPlayConfig,
    evaluator: E,
    games: u64,
    stop: &AtomicBool,
    on_game: F,
) -> Result<SelfPlayStats, EvalError>
where
    E: Evaluator + Clone + Send,
    F: FnMut(SelfPlayGame) + Send,
{
    self_play_live(&LiveConfig::new(config.clone()), evaluator, games, stop, on_game)
}

/// [`self_play`] under a config that may be replaced while it runs: each game plays under the
/// config current when it started (threads are those of the config at the start).
pub fn self_play_live<E, F>(
    live: &LiveConfig,
    evaluator: E,
    games: u64,
    stop: &AtomicBool,
    on_game: F,
) -> Result<SelfPlayStats, EvalError>
where
    E: Evaluator + Clone + Send,
    F: FnMut(SelfPlayGame) + Send,
{
    let config = live.current();
    let start = Instant::now();
    let next = AtomicU64::new(0);
    let on_game = Mutex::new(on_game);
    let results: Vec<Result<SelfPlayStats, EvalError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..config.threads.max(1))
            .map(|_| {
                let mut evaluator = evaluator.clone();
                let (next, on_game) = (&next, &on_game);
                scope.spawn(move || {
                    let take = || {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        (i < games).then_some(i)
                    };
                    let deliver = |game| (on_game.lock().unwrap_or_else(|e| e.into_inner()))(game);
                    play_games(&mut evaluator, live, take, stop, deliver)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err(EvalError("self-play thread panicked".into()))))
            .collect()
    });
    let mut total = SelfPlayStats::default();
    for result in results {
        total.add(&result?);
    }
    total.elapsed = start.elapsed();
    Ok(total)
}

/// Plays game `index` of a run alone: the same game [`self_play`] plays with the same config and
/// a deterministic evaluator.
pub fn replay<E: Evaluator + ?Sized>(
    config: &SelfPlayConfig,
    evaluator: &mut E,
    index: u64,
) -> Result<SelfPlayGame, EvalError> {
    let mut once = Some(index);
    let mut out = None;
    let live = LiveConfig::new(config.clone());
    play_games(evaluator, &live, || once.take(), &AtomicBool::new(false), |g| out = Some(g))?;
    Ok(out.expect("the game finishes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_driver_config_follows_the_settings() {
        let settings = PlaySettings { mate_moves: 2, resign: false, max_plies: 0, ..Default::default() };
        let config = settings.self_play_config(2, 8, 5);
        assert_eq!((config.search.mate_moves, config.resign_config(), config.game_config().max_plies), (2, None, None));
        assert_eq!(config.settings, settings);
        assert_eq!((config.threads, config.games_per_thread, config.seed), (2, 8, 5));
        assert_eq!(SelfPlayConfig::default(), PlaySettings::default().self_play_config(1, 32, 0));
    }
}
