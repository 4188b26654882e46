//! Growing a book by search, in the manner of KataGo's `genbook`: the position that matters most
//! is searched, its best moves go into the book with their searched values, visits and priors,
//! and the positions they lead to become candidates in turn.
//!
//! ```
//! use xqz_book::{Book, GrowConfig, Grower};
//! use xqz_mcts::MaterialEvaluator;
//!
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("book.sqlite");
//! let config = GrowConfig { playouts: 32, ..GrowConfig::default() };
//! let mut grower = Grower::open(&path, config)?; // a missing book starts empty
//! for _ in 0..3 {
//!     grower.step(&mut MaterialEvaluator)?.expect("a position to search");
//! }
//! assert_eq!(grower.searched()?, 3);
//! let entry = Book::open(&path)?.probe(&xiangqi::Position::startpos())?.unwrap();
//! assert!(entry.moves.iter().all(|m| m.value.is_some() && m.visits.is_some() && m.prior.is_some()));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Which position next
//!
//! In a searched position the book plays its stored moves in proportion to their visits:
//! `pi(m) = visits(m) / visits of the position's stored moves`. A position's *reach* is the
//! probability of the likeliest line of such choices from the start position (the product of
//! `pi` along it, maximised over lines, so transpositions and repetitions need no special care).
//! Each stored move of a searched position that leads to a position not yet searched makes that
//! position a candidate with priority
//!
//! `reach(parent) * pi(m) * sqrt(1 - q^2) / sqrt(1 + n)`
//!
//! where `q` is the move's searched value and `n` its visits: how likely the book is to play into
//! the position, times the standard error of the value it has for it (a result of +1 or -1 with
//! mean `q` has variance `1 - q^2`). A line the book seldom plays, or whose value is settled (a win
//! or a loss, or many visits), waits. The highest priority is searched next; the start position
//! comes first while it is unsearched. The walk is best-first by reach, and since a priority
//! never exceeds its parent's reach, it stops once the next reach is below the best priority
//! found: a step reads only the likeliest part of the book. Positions beyond
//! [`GrowConfig::max_ply`] plies along their likeliest line, and those where the game is over,
//! are never candidates.
//!
//! # What a search adds
//!
//! A candidate is searched from scratch for [`GrowConfig::playouts`] playouts, as a position
//! without history (the book stores positions, not lines). The move the search would play, then
//! the most visited moves: the first [`GrowConfig::min_moves`] in all whatever their share, and
//! further ones with at least [`GrowConfig::min_share`] of the visits, up to
//! [`GrowConfig::max_moves`] in all, are written with their value (for the side to move, in
//! [-1, 1]), visits and the network's prior; moves the book already had from games get their
//! search statistics too, so that `pi` covers them. A new move has no games (`games` = 0) and
//! `min_ply` the ply of the likeliest line. A new position gets the ECCO name of that line.
//!
//! Values are backed up the line, as genbook backs them up: once a position is searched, the move
//! that led to it along the likeliest line takes minus the best value among the position's moves
//! (a minimax over what the book has searched), and so on up the line while a value changes. A
//! move into an unsearched position keeps its own search's value. Other lines into the same
//! position (transpositions) are not revisited: they take the backed-up value when a later search
//! below them backs up through them.
//!
//! Each step is one transaction: the book file is the whole state, so growing stops anywhere and
//! a later [`Grower`] resumes where it stopped, from a grown book or one built from games alike.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, HashMap};
use std::path::Path;

use rusqlite::params;
use xiangqi::game::{Game, GameConfig};
use xiangqi::{Move, Position};
use xqz_mcts::{Evaluator, RootStats, SearchConfig, Tree, search};

use crate::book::{Access, Book, Entry, Slot};
use crate::builder::{BookBuilder, BuildConfig};
use crate::canon::zobrist;
use crate::ecco::{Classifier, Opening};
use crate::error::{BookError, Result};

/// The least variance a value is taken to have: a proven result still orders its lines by reach.
const MIN_VARIANCE: f64 = 1e-4;

/// How a book grows.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct GrowConfig {
    /// Playouts of each position's search.
    pub playouts: u32,
    /// Most moves written per searched position.
    pub max_moves: usize,
    /// Moves written per searched position whatever their share of the visits (if visited at
    /// all, and at most `max_moves`): a network sure of one move would otherwise leave the book
    /// one line wide, with alternatives it never values.
    pub min_moves: usize,
    /// Fewest visits, as a share of the search's, for a move besides the best to be written.
    pub min_share: f64,
    /// Deepest ply of a position searched.
    pub max_ply: u32,
    /// The search's settings.
    pub search: SearchConfig,
}

impl Default for GrowConfig {
    fn default() -> GrowConfig {
        GrowConfig {
            playouts: 400,
            max_moves: 4,
            min_moves: 3,
            min_share: 0.1,
            max_ply: 30,
            search: SearchConfig::default(),
        }
    }
}

impl GrowConfig {
    fn validate(&self) -> Result<()> {
        let bad = |message: String| Err(BookError::InvalidConfig { message });
        if self.playouts == 0 {
            return bad("playouts must be at least 1".into());
        }
        if self.max_moves == 0 {
            return bad("max_moves must be at least 1".into());
        }
        if !(0.0..=1.0).contains(&self.min_share) {
            return bad(format!("min_share {} must be 0 to 1", self.min_share));
        }
        Ok(())
    }
}

/// A position that [`Grower::step`] searched.
#[derive(Clone, Debug, PartialEq)]
pub struct Grown {
    /// The likeliest line to it from the start position.
    pub line: Vec<Move>,
    /// Its priority when it was chosen.
    pub priority: f64,
    /// The search's value of the position for the side to move, in [-1, 1].
    pub value: f64,
    /// Moves written (new, or given search statistics).
    pub moves: usize,
}

/// Grows a book file in place, one searched position per [`Grower::step`].
pub struct Grower {
    book: Book,
    config: GrowConfig,
}

/// A position reached in the best-first walk.
struct Reached {
    pos: Position,
    reach: f64,
    ply: u32,
    parent: Option<(usize, Move)>,
    entry: Option<Entry>,
}

/// A heap entry: the walk takes the highest reach first, ties to the earlier position.
#[derive(PartialEq)]
struct Next(f64, usize);

impl Eq for Next {}

impl Ord for Next {
    fn cmp(&self, other: &Next) -> Ordering {
        self.0.total_cmp(&other.0).then(other.1.cmp(&self.1))
    }
}

impl PartialOrd for Next {
    fn partial_cmp(&self, other: &Next) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Whether a search has filled the position's moves.
fn searched(entry: &Entry) -> bool {
    entry.moves.iter().any(|m| m.visits.is_some())
}

impl Grower {
    /// Opens the book at `path` for growing, creating an empty one if there is none.
    pub fn open(path: &Path, config: GrowConfig) -> Result<Grower> {
        config.validate()?;
        if !path.exists() {
            BookBuilder::new(BuildConfig::default()).write(path, false)?;
        }
        Ok(Grower { book: Book::open_with_key(path, zobrist, Access::Write)?, config })
    }

    /// Positions of the book that a search has filled.
    pub fn searched(&self) -> Result<u64> {
        self.book
            .connection()
            .query_row("SELECT COUNT(DISTINCT position_id) FROM moves WHERE visits IS NOT NULL", [], |row| {
                row.get::<_, i64>(0)
            })
            .map(|n| n as u64)
            .map_err(|e| self.book.sqlite(e))
    }

    /// Searches the position with the highest priority with `evaluator` and writes what it found;
    /// `None` once no position is left to search (every line reached `max_ply` or ended).
    pub fn step<E: Evaluator + ?Sized>(&mut self, evaluator: &mut E) -> Result<Option<Grown>> {
        let Some((line, priority)) = self.next()? else { return Ok(None) };
        let mut path = vec![Position::startpos()];
        let mut classifier = Classifier::new();
        for &mv in &line {
            let mut next = path[path.len() - 1].clone();
            classifier.push(&next, mv);
            next.play_unchecked(mv);
            path.push(next);
        }
        let pos = &path[line.len()];
        let mut tree = Tree::new(Game::from_position(pos.clone(), GameConfig::default()));
        search(&mut tree, evaluator, self.config.playouts, &self.config.search)
            .map_err(|source| BookError::Search { fen: pos.to_string(), source })?;
        let root = tree.root();
        let moves = self.write(&path, &line, &root, classifier.opening())?;
        Ok(Some(Grown { line, priority, value: f64::from(root.value()), moves }))
    }

    /// The line to the candidate with the highest priority, and that priority.
    fn next(&self) -> Result<Option<(Vec<Move>, f64)>> {
        let start = Position::startpos();
        let root = match self.book.probe(&start)? {
            Some(entry) if searched(&entry) => entry,
            _ => return Ok(Some((Vec::new(), 1.0))),
        };
        let mut nodes = vec![Reached { pos: start, reach: 1.0, ply: 0, parent: None, entry: None }];
        let mut index: HashMap<String, usize> = HashMap::from([(root.fen.clone(), 0)]);
        nodes[0].entry = Some(root);
        let mut heap = BinaryHeap::from([Next(1.0, 0)]);
        // (priority, parent node, move)
        let mut best: Option<(f64, usize, Move)> = None;
        while let Some(Next(reach, i)) = heap.pop() {
            if best.is_some_and(|b| b.0 >= reach) {
                break;
            }
            // A stale heap entry: the position was taken already, by a likelier line.
            let Some(entry) = nodes[i].entry.take() else { continue };
            let total: u64 = entry.moves.iter().filter_map(|m| m.visits).sum();
            for m in entry.moves.iter().filter(|m| m.visits.is_some_and(|n| n > 0)) {
                let visits = m.visits.unwrap_or(0);
                let child_reach = reach * visits as f64 / total as f64;
                let ply = nodes[i].ply + 1;
                let mut child = nodes[i].pos.clone();
                child.play(m.mv).map_err(|e| BookError::NotABook {
                    path: self.book.path().to_path_buf(),
                    message: format!("stored move {} in {}: {e}", m.mv, entry.fen),
                })?;
                match self.book.probe(&child)? {
                    Some(child_entry) if searched(&child_entry) => {
                        let reached = Reached {
                            pos: child,
                            reach: child_reach,
                            ply,
                            parent: Some((i, m.mv)),
                            entry: Some(child_entry),
                        };
                        let j = match index.get(&reached.entry.as_ref().expect("set").fen) {
                            // Taken already, or reached by a likelier line.
                            Some(&j) if nodes[j].entry.is_none() || nodes[j].reach >= child_reach => continue,
                            Some(&j) => {
                                nodes[j] = reached;
                                j
                            }
                            None => {
                                index.insert(reached.entry.as_ref().expect("set").fen.clone(), nodes.len());
                                nodes.push(reached);
                                nodes.len() - 1
                            }
                        };
                        heap.push(Next(child_reach, j));
                    }
                    _ => {
                        let q = m.value.unwrap_or(0.0).clamp(-1.0, 1.0);
                        let priority = child_reach * ((1.0 - q * q).max(MIN_VARIANCE) / (1.0 + visits as f64)).sqrt();
                        if ply <= self.config.max_ply
                            && best.is_none_or(|b| priority > b.0)
                            && !Game::from_position(child, GameConfig::default()).outcome().is_over()
                        {
                            best = Some((priority, i, m.mv));
                        }
                    }
                }
            }
        }
        Ok(best.map(|(priority, parent, mv)| {
            let mut line = vec![mv];
            let mut at = parent;
            while let Some((up, mv)) = nodes[at].parent {
                line.push(mv);
                at = up;
            }
            line.reverse();
            (line, priority)
        }))
    }

    /// Writes a search of the last position of `path` (the positions along `line` from the start)
    /// and backs its value up the line, in one transaction; returns the moves written.
    fn write(&self, path: &[Position], line: &[Move], root: &RootStats, opening: Option<&Opening>) -> Result<usize> {
        let (pos, ply) = (&path[line.len()], line.len() as u32);
        let (canonical, key) = self.book.locate(pos);
        // (book move, visits, visits * value, prior): in a symmetric position a move and its
        // mirror are one row, so their statistics add up.
        let mut stats: Vec<(Move, u64, f64, f64)> = Vec::new();
        for (&(mv, visits, prior), value) in root.children.iter().zip(&root.values) {
            let mv = canonical.move_to_book(mv);
            let weighted = f64::from(value.unwrap_or(0.0)) * f64::from(visits);
            match stats.iter_mut().find(|s| s.0 == mv) {
                Some(s) => {
                    s.1 += u64::from(visits);
                    s.2 += weighted;
                    s.3 += f64::from(prior);
                }
                None => stats.push((mv, u64::from(visits), weighted, f64::from(prior))),
            }
        }
        let best = root.best_move().map(|mv| canonical.move_to_book(mv));
        stats.sort_by(|a, b| (Some(b.0) == best).cmp(&(Some(a.0) == best)).then(b.1.cmp(&a.1)));
        let threshold = (self.config.min_share * f64::from(root.playouts())).max(1.0);
        let chosen: Vec<Move> = stats
            .iter()
            .enumerate()
            .filter(|&(i, s)| i == 0 || (i < self.config.min_moves && s.1 > 0) || s.1 as f64 >= threshold)
            .take(self.config.max_moves)
            .map(|(_, s)| s.0)
            .collect();

        let sqlite = |e| self.book.sqlite(e);
        let tx = self.book.connection().unchecked_transaction().map_err(sqlite)?;
        let fen = canonical.fen();
        let id = match self.book.slot(key, &fen)? {
            Slot::Found(id) => id,
            Slot::Free(id) => {
                tx.execute(
                    "INSERT INTO positions (id, fen, games, ecco, opening) VALUES (?1, ?2, 0, ?3, ?4)",
                    params![id, fen, opening.map(|o| o.code), opening.map(|o| o.name)],
                )
                .map_err(sqlite)?;
                id
            }
        };
        let stored: Vec<String> = tx
            .prepare_cached("SELECT move FROM moves WHERE position_id = ?1")
            .and_then(|mut s| s.query_map([id], |row| row.get(0))?.collect())
            .map_err(sqlite)?;
        let mut written = 0;
        {
            let mut upsert = tx
                .prepare_cached(
                    "INSERT INTO moves (position_id, move, games, wins, draws, losses, avg_plies, min_ply, value, \
                     visits, prior) VALUES (?1, ?2, 0, 0, 0, 0, 0, ?3, ?4, ?5, ?6) ON CONFLICT (position_id, move) \
                     DO UPDATE SET value = excluded.value, visits = excluded.visits, prior = excluded.prior, \
                     min_ply = MIN(min_ply, excluded.min_ply)",
                )
                .map_err(sqlite)?;
            for &(mv, visits, weighted, prior) in &stats {
                let text = mv.to_string();
                if !chosen.contains(&mv) && !stored.contains(&text) {
                    continue;
                }
                let value = (visits > 0).then(|| weighted / visits as f64);
                upsert.execute(params![id, text, ply, value, visits as i64, prior]).map_err(sqlite)?;
                written += 1;
            }
        }
        self.back_up(path, line)?;
        tx.commit().map_err(sqlite)?;
        Ok(written)
    }

    /// Sets the value of each move of `line` to minus the best value of the position it leads to,
    /// from the last move up, until a value no longer changes.
    fn back_up(&self, path: &[Position], line: &[Move]) -> Result<()> {
        let sqlite = |e| self.book.sqlite(e);
        for (i, &mv) in line.iter().enumerate().rev() {
            let Some(child) = self.book.probe(&path[i + 1])? else { return Ok(()) };
            let Some(best) = child.moves.iter().filter_map(|m| m.value).max_by(f64::total_cmp) else { return Ok(()) };
            let (canonical, key) = self.book.locate(&path[i]);
            let Slot::Found(id) = self.book.slot(key, &canonical.fen())? else { return Ok(()) };
            let changed = self
                .book
                .connection()
                .prepare_cached(
                    "UPDATE moves SET value = ?1 WHERE position_id = ?3 AND move = ?2 AND (value IS NULL OR value != ?1)",
                )
                .and_then(|mut s| s.execute(params![-best, canonical.move_to_book(mv).to_string(), id]))
                .map_err(sqlite)?;
            if changed == 0 {
                return Ok(());
            }
        }
        Ok(())
    }
}
