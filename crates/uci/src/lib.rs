//! xqzero's UCI engine: the dialect Pikafish speaks (Xiangqi FEN, coordinate moves with ranks
//! 0-9), searching with [`xqz_mcts`] over whatever evaluator a [`Loader`] provides, so a
//! checkpoint plays in GUIs and in matches.
//!
//! ```
//! use std::io::Cursor;
//! use xqz_mcts::{Evaluator, MaterialEvaluator};
//! use xqz_uci::{Engine, Options};
//!
//! let engine = Engine::new("example", Box::new(|_: &Options| Ok(Box::new(MaterialEvaluator) as Box<dyn Evaluator>)));
//! let input = Cursor::new("uci\nisready\nposition startpos moves h2e2\ngo nodes 64\n");
//! let mut output = Vec::new();
//! engine.run(input, &mut output)?;
//! let text = String::from_utf8(output).unwrap();
//! assert!(text.contains("uciok") && text.contains("readyok"));
//! assert!(text.lines().last().unwrap().starts_with("bestmove "));
//! # Ok::<(), std::io::Error>(())
//! ```
//!
//! Scores: the search's win/draw/loss (W, D, L) gives an expected score `s = W + D/2` for the
//! side to move, reported as `score cp 400 * log10(s / (1 - s))` — the Elo formula, so 100 cp is
//! an expected score of 64% — clamped to ±1200; a move that mates (or wins by a rule at once) is
//! `score mate 1`, one that the search proved to win within N moves `score mate N`, and one
//! proved to lose to a win of N moves `score mate -N`. `UCI_ShowWDL` adds `wdl W D L` in per
//! mille.
//!
//! Limits of `go`: `nodes N` is N playouts; `depth D` is at most 2^D playouts (depth 10 is about
//! a thousand); `movetime`, and `wtime`/`btime`/`winc`/`binc`/`movestogo` (a share of the
//! remaining time: time / movestogo (30 if not given) + 3/4 of the increment, less the move
//! overhead), stop the search by the clock; `infinite` searches until `stop`; with no limit the
//! `Playouts` option applies. The tightest limit wins.
//!
//! The messages themselves are read and written by [`protocol`], which the arena's client for
//! external engines shares.

pub mod protocol;

use std::collections::VecDeque;
use std::io::{self, BufRead, Write};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use thiserror::Error;
use xiangqi::game::{Game, GameConfig, GameError};
use xiangqi::{Move, Position};
use xqz_mcts::{Evaluator, Line, SearchConfig, Tree, UniformEvaluator, search_until};

use crate::protocol::{Command, CommandError, Go, Info, OptionKind, OptionSpec, Ranks, Response, Score, Start};

/// The dialect the engine speaks: ranks 0-9, as Pikafish.
const RANKS: Ranks = Ranks::FromZero;

/// Builds the evaluator for the current options (the model file, device and threads); called
/// when the engine starts searching or answers `isready` after one of those changed.
pub type Loader = Box<dyn FnMut(&Options) -> Result<Box<dyn Evaluator>, String>>;

/// A book move the engine plays instead of searching, and what to say of it in `info string`.
#[derive(Clone, Debug, PartialEq)]
pub struct BookChoice {
    /// The move, which must be legal in the position probed.
    pub mv: Move,
    /// A note for the GUI (the games behind the move, the opening's name).
    pub note: String,
}

/// Why a book could not be opened or probed: the book's own error, whichever crate reads the book
/// (the engine only reports it to the GUI).
pub type BookError = Box<dyn std::error::Error + Send + Sync>;

/// A book opened by a [`BookLoader`]: the move it plays in a position, if it has one.
pub type BookProbe = Box<dyn FnMut(&Position) -> Result<Option<BookChoice>, BookError>>;

/// Opens the book file the `BookFile` option names.
pub type BookLoader = Box<dyn FnMut(&str) -> Result<BookProbe, BookError>>;

/// The engine's UCI options.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// `ModelFile`: the checkpoint (its `.json` metadata file).
    pub model: String,
    /// `Device`: cpu, cuda, cuda:N or auto.
    pub device: String,
    /// `Threads`: CPU threads of the network.
    pub threads: u32,
    /// `Playouts`: the search's playouts when `go` sets no limit.
    pub playouts: u32,
    /// `BatchSize`: leaves the search hands the network at once.
    pub batch_size: u32,
    /// `MultiPV`: lines reported in `info`.
    pub multipv: u32,
    /// `UCI_ShowWDL`: add win/draw/loss per mille to `info`.
    pub show_wdl: bool,
    /// `Move Overhead`: milliseconds kept back from the clock for the GUI and the pipes.
    pub move_overhead: u32,
    /// `OwnBook`: play from the book while the position is in it.
    pub own_book: bool,
    /// `BookFile`: the book (empty: none).
    pub book_file: String,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            model: String::new(),
            device: "auto".into(),
            threads: 1,
            playouts: 800,
            batch_size: 8,
            multipv: 1,
            show_wdl: false,
            move_overhead: 30,
            own_book: true,
            book_file: String::new(),
        }
    }
}

/// The longest a search waits before its first progress report.
const INFO_EVERY: Duration = Duration::from_secs(1);

/// Centipawns reported for an expected score of 0 or 1 (which would be infinite).
const CP_LIMIT: f64 = 1200.0;

/// Most playouts of one search (so `go infinite` stays within the tree's counters).
const MAX_PLAYOUTS: u32 = 1 << 30;

/// Reports the score of the side to move in centipawns, as the module documentation defines.
pub fn centipawns(wdl: [f32; 3]) -> i32 {
    let s = (f64::from(wdl[0]) + f64::from(wdl[1]) / 2.0).clamp(0.0, 1.0);
    if s <= 0.0 {
        return -CP_LIMIT as i32;
    }
    if s >= 1.0 {
        return CP_LIMIT as i32;
    }
    (400.0 * (s / (1.0 - s)).log10()).clamp(-CP_LIMIT, CP_LIMIT).round() as i32
}

/// A UCI engine over one [`Loader`]; [`Engine::run`] serves a session.
pub struct Engine {
    name: String,
    loader: Loader,
    options: Options,
    evaluator: Option<Box<dyn Evaluator>>,
    book_loader: Option<BookLoader>,
    book: Option<BookProbe>,
    game: Game,
}

/// Why the engine refuses a well-formed command.
#[derive(Debug, Error)]
enum Refusal {
    /// `setoption` of an option the engine does not have.
    #[error("no option {0:?}")]
    NoOption(String),
    /// A spin option's value that is not a whole number in its range.
    #[error("option {name} takes a whole number from {min} to {max}, not {value:?}")]
    Number {
        /// The option.
        name: String,
        /// Its least value.
        min: u32,
        /// Its greatest value.
        max: u32,
        /// The value given.
        value: String,
    },
    /// A `UCI_Variant` other than the one this engine plays.
    #[error("UCI_Variant {0:?} is not played here (only xiangqi)")]
    Variant(String),
    /// A check option's value that is not `true` or `false`.
    #[error("option {name} is true or false, not {value:?}")]
    Check {
        /// The option.
        name: &'static str,
        /// The value given.
        value: String,
    },
    /// A move of `position` that is not legal where it is played.
    #[error("move {number} ({mv}) in {fen}: {source}")]
    IllegalMove {
        /// Its number in the list, from 1.
        number: usize,
        /// The move.
        mv: Move,
        /// The position it was played in.
        fen: String,
        /// Why it cannot be played.
        source: GameError,
    },
    /// A `go` argument the search has no use for.
    #[error("go {0} is not supported")]
    Unsupported(&'static str),
}

/// The session's input: lines from a reader thread, and lines put back while searching.
struct Input {
    rx: Receiver<String>,
    pending: VecDeque<String>,
}

/// Writes one response line.
fn emit(out: &mut impl Write, response: &Response) -> io::Result<()> {
    writeln!(out, "{}", response.format(RANKS))?;
    out.flush()
}

/// Writes `info string error: MESSAGE`.
fn emit_error(out: &mut impl Write, message: impl std::fmt::Display) -> io::Result<()> {
    emit(out, &Response::info_string(format!("error: {message}")))
}

impl Engine {
    /// An engine called `name` (in `id name`) that gets its evaluator from `loader`.
    pub fn new(name: &str, loader: Loader) -> Engine {
        Engine {
            name: name.to_string(),
            loader,
            options: Options::default(),
            evaluator: None,
            book_loader: None,
            book: None,
            game: Game::new(GameConfig::default()),
        }
    }

    /// The same engine able to play from books, which `loader` opens (the `BookFile` option).
    pub fn with_books(mut self, loader: BookLoader) -> Engine {
        self.book_loader = Some(loader);
        self
    }

    /// The same engine with other starting options (from the command line, say).
    pub fn with_options(mut self, options: Options) -> Engine {
        self.options = options;
        self
    }

    /// Serves one UCI session: reads commands from `input` until `quit` or its end, writes
    /// replies to `output`. Bad input gets an `info string` and the session goes on.
    ///
    /// # Errors
    /// Only a failure to write `output`.
    pub fn run<R: BufRead + Send + 'static, W: Write>(mut self, mut input: R, mut output: W) -> io::Result<()> {
        let (tx, rx) = mpsc::channel();
        // A reader thread, so that a search can see `stop` while it runs.
        std::thread::spawn(move || {
            let mut buf = Vec::new();
            loop {
                buf.clear();
                match input.read_until(b'\n', &mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        if tx.send(String::from_utf8_lossy(&buf).trim().to_string()).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        let mut input = Input { rx, pending: VecDeque::new() };
        loop {
            let line = match input.pending.pop_front() {
                Some(line) => line,
                None => match input.rx.recv() {
                    Ok(line) => line,
                    Err(_) => return Ok(()),
                },
            };
            if !self.command(&line, &mut input, &mut output)? {
                return Ok(());
            }
        }
    }

    /// Handles one command line; false after `quit`.
    fn command(&mut self, line: &str, input: &mut Input, out: &mut impl Write) -> io::Result<bool> {
        let command = match Command::parse(line, RANKS) {
            Ok(command) => command,
            Err(CommandError::Empty) => return Ok(true),
            Err(CommandError::Position(e)) => {
                emit_error(out, format_args!("{e}; position unchanged"))?;
                return Ok(true);
            }
            Err(CommandError::Go(e)) => {
                emit_error(out, format_args!("{e}; searching with the default limit"))?;
                return self.go(&Go::default(), input, out);
            }
            Err(e) => {
                emit_error(out, e)?;
                return Ok(true);
            }
        };
        match command {
            Command::Uci => {
                emit(out, &Response::IdName(self.name.clone()))?;
                emit(out, &Response::IdAuthor("the xqzero authors".to_string()))?;
                for option in option_specs(&self.options) {
                    emit(out, &Response::Option(option))?;
                }
                emit(out, &Response::UciOk)?;
            }
            Command::IsReady => {
                self.ensure_loaded(out)?;
                emit(out, &Response::ReadyOk)?;
            }
            Command::SetOption { name, value } => {
                if let Err(e) = self.set_option(&name, value.as_deref().unwrap_or("")) {
                    emit_error(out, e)?;
                }
            }
            Command::UciNewGame => self.game = Game::new(GameConfig::default()),
            Command::Position { start, moves } => match game_after(start, &moves) {
                Ok(game) => self.game = game,
                Err(e) => emit_error(out, format_args!("{e}; position unchanged"))?,
            },
            Command::Go(go) => return self.go(&go, input, out),
            Command::Display => {
                emit(out, &Response::info_string(format!("fen {} plies {}", self.game.position(), self.game.len())))?
            }
            Command::Stop | Command::PonderHit => {}
            Command::Quit => return Ok(false),
        }
        Ok(true)
    }

    fn set_option(&mut self, name: &str, value: &str) -> Result<(), Refusal> {
        let number = |min: u32, max: u32| -> Result<u32, Refusal> {
            value.parse::<u32>().ok().filter(|v| (min..=max).contains(v)).ok_or_else(|| Refusal::Number {
                name: name.to_string(),
                min,
                max,
                value: value.to_string(),
            })
        };
        let options = &mut self.options;
        match name.to_ascii_lowercase().as_str() {
            "modelfile" => {
                options.model = value.to_string();
                self.evaluator = None;
            }
            "device" => {
                options.device = value.to_string();
                self.evaluator = None;
            }
            "threads" => {
                options.threads = number(1, 256)?;
                self.evaluator = None;
            }
            "playouts" => options.playouts = number(1, MAX_PLAYOUTS)?,
            "batchsize" => options.batch_size = number(1, 1024)?,
            "multipv" => options.multipv = number(1, 500)?,
            "move overhead" => options.move_overhead = number(0, 60_000)?,
            "bookfile" => {
                options.book_file = value.to_string();
                self.book = None;
            }
            "ownbook" => {
                options.own_book = match value {
                    "true" => true,
                    "false" => false,
                    _ => return Err(Refusal::Check { name: "OwnBook", value: value.to_string() }),
                }
            }
            // Xiangqi GUIs that drive variant engines announce the variant; there is one here.
            "uci_variant" if value.eq_ignore_ascii_case(VARIANT) => {}
            "uci_variant" => return Err(Refusal::Variant(value.to_string())),
            "uci_showwdl" => {
                options.show_wdl = match value {
                    "true" => true,
                    "false" => false,
                    _ => return Err(Refusal::Check { name: "UCI_ShowWDL", value: value.to_string() }),
                }
            }
            _ => return Err(Refusal::NoOption(name.to_string())),
        }
        Ok(())
    }

    /// The book's move in `game`, when `OwnBook` is on, a `BookFile` is set and the book has a
    /// legal move there. A book that cannot be opened or read is reported and not used.
    fn book_move(&mut self, game: &Game, out: &mut impl Write) -> io::Result<Option<BookChoice>> {
        if !self.options.own_book || self.options.book_file.is_empty() {
            return Ok(None);
        }
        if self.book.is_none() {
            let Some(loader) = self.book_loader.as_mut() else {
                emit_error(out, "this engine has no book support; BookFile ignored")?;
                return Ok(None);
            };
            match loader(&self.options.book_file) {
                Ok(book) => self.book = Some(book),
                Err(message) => {
                    emit_error(out, format_args!("book {}: {message}", self.options.book_file))?;
                    self.options.book_file.clear();
                    return Ok(None);
                }
            }
        }
        let Some(book) = self.book.as_mut() else { return Ok(None) };
        match book(game.position()) {
            Ok(Some(choice)) if game.legal_moves().contains(&choice.mv) => Ok(Some(choice)),
            Ok(Some(choice)) => {
                emit_error(out, format_args!("the book's move {} is not legal here; searching", choice.mv))?;
                Ok(None)
            }
            Ok(None) => Ok(None),
            Err(message) => {
                emit_error(out, format_args!("book: {message}; searching"))?;
                Ok(None)
            }
        }
    }

    /// Loads the evaluator if the options changed; a failure is reported and the engine then
    /// searches on the rules alone (uniform priors) until it loads.
    fn ensure_loaded(&mut self, out: &mut impl Write) -> io::Result<()> {
        if self.evaluator.is_none() {
            match (self.loader)(&self.options) {
                Ok(evaluator) => self.evaluator = Some(evaluator),
                Err(message) => {
                    emit_error(out, format_args!("no model loaded ({message}); searching with uniform priors"))?;
                }
            }
        }
        Ok(())
    }

    fn go(&mut self, go: &Go, input: &mut Input, out: &mut impl Write) -> io::Result<bool> {
        let default = Go::default();
        let limits = match supported(go) {
            Ok(()) => go,
            Err(e) => {
                emit_error(out, format_args!("{e}; searching with the default limit"))?;
                &default
            }
        };
        self.ensure_loaded(out)?;
        // A game the rules have ended (a repetition ruling the GUI does not apply, say) is
        // searched afresh from its position.
        let game = if self.game.outcome().is_over() {
            Game::from_position(self.game.position().clone(), self.game.config())
        } else {
            self.game.clone()
        };
        if game.outcome().is_over() {
            emit(out, &Response::info_string("the side to move has no legal move"))?;
            emit(out, &Response::BestMove { best: None, ponder: None })?;
            return Ok(true);
        }
        // An analysis (`go infinite`) searches; a game move comes from the book while it can.
        if !limits.infinite
            && let Some(choice) = self.book_move(&game, out)?
        {
            emit(out, &Response::info_string(format!("book move {}: {}", choice.mv, choice.note)))?;
            emit(out, &Response::BestMove { best: Some(choice.mv), ponder: None })?;
            return Ok(true);
        }
        let start = Instant::now();
        let budget = playout_budget(limits, self.options.playouts);
        let deadline = time_budget(limits, game.position().turn().index(), self.options.move_overhead)
            .map(|budget| start + budget);
        let config = SearchConfig { leaves_per_batch: self.options.batch_size as usize, ..SearchConfig::default() };
        let mut tree = Tree::new(game.clone());
        let (mut stopped, mut quit) = (false, false);
        let mut last_info = start;
        let mut failure = None;
        let mut evaluator_error = None;
        {
            let options = &self.options;
            let mut poll = |tree: &Tree| {
                while let Ok(line) = input.rx.try_recv() {
                    match Command::parse(&line, RANKS) {
                        Ok(Command::Stop) => stopped = true,
                        Ok(Command::Quit) => (stopped, quit) = (true, true),
                        Ok(Command::IsReady) => failure = emit(out, &Response::ReadyOk).err().or(failure.take()),
                        _ => input.pending.push_back(line),
                    }
                }
                if last_info.elapsed() >= INFO_EVERY {
                    last_info = Instant::now();
                    for info in infos(tree, start.elapsed(), options) {
                        failure = emit(out, &Response::Info(info)).err().or(failure.take());
                    }
                }
                stopped || deadline.is_some_and(|d| Instant::now() >= d)
            };
            let result = match self.evaluator.as_mut() {
                Some(evaluator) => search_until(&mut tree, evaluator.as_mut(), budget, &config, &mut poll),
                None => search_until(&mut tree, &mut UniformEvaluator, budget, &config, &mut poll),
            };
            if let Err(e) = &result {
                tree = Tree::new(game.clone());
                search_until(&mut tree, &mut UniformEvaluator, budget.min(200), &config, &mut poll)
                    .expect("uniform priors never fail");
                evaluator_error = Some(e.to_string());
            }
        }
        if let Some(e) = failure {
            return Err(e);
        }
        if let Some(e) = evaluator_error {
            emit_error(out, format_args!("{e}; this move comes from the rules alone"))?;
        }
        // `go infinite` answers only after `stop`, even if the playouts run out first.
        while limits.infinite && !stopped {
            let Ok(line) = input.rx.recv() else { break };
            match Command::parse(&line, RANKS) {
                Ok(Command::Stop) => stopped = true,
                Ok(Command::Quit) => (stopped, quit) = (true, true),
                Ok(Command::IsReady) => emit(out, &Response::ReadyOk)?,
                _ => input.pending.push_back(line),
            }
        }
        for info in infos(&tree, start.elapsed(), &self.options) {
            emit(out, &Response::Info(info))?;
        }
        let lines = tree.lines();
        let best = choose(&game, tree.root().best_move(), &lines);
        let ponder = lines.iter().find(|l| l.moves[0] == best).and_then(|l| l.moves.get(1)).copied();
        emit(out, &Response::BestMove { best: Some(best), ponder })?;
        Ok(!quit)
    }
}

/// The search's choice ([`RootStats::best_move`](xqz_mcts::RootStats::best_move)) if it does not
/// lose at once (by a repetition ruling, say); else the most visited move that does not, if any
/// does not; the most visited otherwise.
fn choose(game: &Game, best: Option<Move>, lines: &[Line]) -> Move {
    let us = game.position().turn();
    let loses = |mv: Move| {
        let mut after = game.clone();
        after.push_unchecked(mv).winner() == Some(us.opponent())
    };
    best.into_iter().chain(lines.iter().map(|l| l.moves[0])).find(|&mv| !loses(mv)).unwrap_or(lines[0].moves[0])
}

/// The `info` of the current search: one per reported principal variation.
fn infos(tree: &Tree, elapsed: Duration, options: &Options) -> Vec<Info> {
    let lines = tree.lines();
    let nodes = tree.root().playouts();
    let seldepth = lines.iter().filter(|l| l.visits > 0).map(|l| l.moves.len()).max().unwrap_or(0);
    let nps = (f64::from(nodes) / elapsed.as_secs_f64().max(1e-3)) as u64;
    let mut out = Vec::new();
    for (k, line) in lines.iter().filter(|l| l.visits > 0).take(options.multipv as usize).enumerate() {
        let score = match line.mate {
            Some(moves) if moves > 0 => Score::Mate(moves),
            // A move that loses by a rule on the spot has no mating move to count.
            Some(moves) => Score::Mate(-moves.abs().max(1)),
            None => Score::Cp(centipawns(line.wdl)),
        };
        out.push(Info {
            depth: Some(line.moves.len() as u32),
            seldepth: Some(seldepth as u32),
            multipv: Some(k as u32 + 1),
            score: Some(score),
            wdl: options.show_wdl.then(|| line.wdl.map(|p| (p * 1000.0).round() as u32)),
            nodes: Some(u64::from(nodes)),
            nps: Some(nps),
            time: Some(elapsed.as_millis() as u64),
            pv: line.moves.clone(),
            ..Info::default()
        });
    }
    out
}

/// The game of a `position` command: `moves` played from `start`.
fn game_after(start: Start, moves: &[Move]) -> Result<Game, Refusal> {
    let position = match start {
        Start::StartPos => Position::startpos(),
        Start::Fen(position) => *position,
    };
    let mut game = Game::from_position(position, GameConfig::default());
    for (k, &mv) in moves.iter().enumerate() {
        if game.outcome().is_over() && game.legal_moves().contains(&mv) {
            // The GUI plays on past a ruling of ours (it may judge repetitions otherwise).
            game = Game::from_position(game.position().clone(), game.config());
        }
        game.push(mv).map_err(|source| Refusal::IllegalMove {
            number: k + 1,
            mv,
            fen: game.position().to_string(),
            source,
        })?;
    }
    Ok(game)
}

/// Whether the search can honour every argument of `go`.
fn supported(go: &Go) -> Result<(), Refusal> {
    if go.mate.is_some() {
        return Err(Refusal::Unsupported("mate"));
    }
    if !go.searchmoves.is_empty() {
        return Err(Refusal::Unsupported("searchmoves"));
    }
    Ok(())
}

/// The playouts one search may run.
fn playout_budget(limits: &Go, default: u32) -> u32 {
    let by_nodes = limits.nodes.map(|n| n.clamp(1, u64::from(MAX_PLAYOUTS)) as u32);
    let by_depth = limits.depth.map(|d| 1u32 << d.min(30));
    let clocked = limits.infinite || limits.movetime.is_some() || limits.wtime.is_some() || limits.btime.is_some();
    match (by_nodes, by_depth) {
        (Some(n), Some(d)) => n.min(d),
        (Some(n), None) => n,
        (None, Some(d)) => d,
        (None, None) if clocked => MAX_PLAYOUTS,
        (None, None) => default.max(1),
    }
}

/// How long one search may take, if the clock limits it; `side` is 0 for Red, 1 for Black.
fn time_budget(limits: &Go, side: usize, overhead: u32) -> Option<Duration> {
    let overhead = u64::from(overhead);
    let by_movetime = limits.movetime.map(|t| t.saturating_sub(overhead));
    let (time, inc) = if side == 0 { (limits.wtime, limits.winc) } else { (limits.btime, limits.binc) };
    let by_clock = time.map(|left| {
        // `movestogo 0` would divide by zero: read it as 1, the move before the time control.
        let share = left / limits.movestogo.unwrap_or(30).max(1) + inc.unwrap_or(0).saturating_mul(3) / 4;
        share.min(left.saturating_sub(overhead))
    });
    let millis = match (by_movetime, by_clock) {
        (Some(a), Some(b)) => a.min(b),
        (a, b) => a.or(b)?,
    };
    // At least a millisecond: the root is evaluated whatever the clock says.
    Some(Duration::from_millis(millis.max(1)))
}

/// The one variant this engine plays, as `UCI_Variant` names it (Fairy-Stockfish's name).
const VARIANT: &str = "xiangqi";

/// The options of the `uci` reply, with `options` as defaults.
fn option_specs(options: &Options) -> Vec<OptionSpec> {
    let spin = |name: &str, default: u32, min: u32, max: u32| OptionSpec {
        name: name.to_string(),
        kind: OptionKind::Spin { default: default.into(), min: min.into(), max: max.into() },
    };
    let string = |name: &str, default: &str| OptionSpec {
        name: name.to_string(),
        kind: OptionKind::String { default: default.to_string() },
    };
    vec![
        OptionSpec {
            name: "UCI_Variant".to_string(),
            kind: OptionKind::Combo { default: VARIANT.to_string(), vars: vec![VARIANT.to_string()] },
        },
        // `<empty>` is how UCI engines write an empty string default.
        string("ModelFile", if options.model.is_empty() { "<empty>" } else { &options.model }),
        string("Device", &options.device),
        spin("Threads", options.threads, 1, 256),
        spin("Playouts", options.playouts, 1, MAX_PLAYOUTS),
        spin("BatchSize", options.batch_size, 1, 1024),
        spin("MultiPV", options.multipv, 1, 500),
        OptionSpec { name: "UCI_ShowWDL".to_string(), kind: OptionKind::Check { default: options.show_wdl } },
        spin("Move Overhead", options.move_overhead, 0, 60_000),
        OptionSpec { name: "OwnBook".to_string(), kind: OptionKind::Check { default: options.own_book } },
        string("BookFile", if options.book_file.is_empty() { "<empty>" } else { &options.book_file }),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn centipawns_follow_the_elo_formula() {
        assert_eq!(centipawns([0.0, 1.0, 0.0]), 0);
        // s = 0.64: 400 * log10(0.64 / 0.36) = 99.95.
        assert_eq!(centipawns([0.64, 0.0, 0.36]), 100);
        // s = 0.5 + 0.28 / 2 = 0.64 as well: draws count half.
        assert_eq!(centipawns([0.5, 0.28, 0.22]), 100);
        assert_eq!(centipawns([0.36, 0.0, 0.64]), -100);
        assert_eq!(centipawns([1.0, 0.0, 0.0]), 1200);
        assert_eq!(centipawns([0.0, 0.0, 1.0]), -1200);
    }

    /// The arguments of `go ARGS`.
    fn parse_go(args: &[&str]) -> Result<Go, CommandError> {
        match Command::parse(&format!("go {}", args.join(" ")), RANKS)? {
            Command::Go(go) => Ok(go),
            other => panic!("{other:?}"),
        }
    }

    /// The game of `position ARGS`.
    fn parse_position(args: &[&str]) -> Result<Game, String> {
        match Command::parse(&format!("position {}", args.join(" ")), RANKS).map_err(|e| e.to_string())? {
            Command::Position { start, moves } => game_after(start, &moves).map_err(|e| e.to_string()),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_clock_gives_a_share_of_the_remaining_time() {
        let limits = parse_go(&["wtime", "60000", "btime", "30000", "winc", "1000", "binc", "0"]).unwrap();
        // Red: 60000 / 30 + 3/4 * 1000 = 2750 ms; Black: 30000 / 30 = 1000 ms.
        assert_eq!(time_budget(&limits, 0, 30), Some(Duration::from_millis(2750)));
        assert_eq!(time_budget(&limits, 1, 30), Some(Duration::from_millis(1000)));
        let limits = parse_go(&["btime", "100", "movestogo", "1", "movetime", "5000"]).unwrap();
        // The last move before the time control: all but the overhead, and movetime cannot
        // extend it.
        assert_eq!(time_budget(&limits, 1, 30), Some(Duration::from_millis(70)));
        assert_eq!(time_budget(&parse_go(&["nodes", "5"]).unwrap(), 0, 30), None);
        assert_eq!(playout_budget(&parse_go(&["nodes", "5"]).unwrap(), 800), 5);
        assert_eq!(playout_budget(&parse_go(&["depth", "4", "nodes", "100"]).unwrap(), 800), 16);
        assert_eq!(playout_budget(&parse_go(&[]).unwrap(), 800), 800);
        assert_eq!(playout_budget(&parse_go(&["movetime", "100"]).unwrap(), 800), MAX_PLAYOUTS);
        assert!(parse_go(&["nodes"]).is_err());
        assert!(parse_go(&["nodes", "x"]).is_err());
        assert!(parse_go(&["sideways"]).is_err());
        assert!(matches!(supported(&parse_go(&["mate", "3"]).unwrap()), Err(Refusal::Unsupported("mate"))));
        // `movestogo 0` is the move before the time control, not a division by zero.
        assert_eq!(
            time_budget(&parse_go(&["wtime", "1000", "movestogo", "0"]).unwrap(), 0, 30),
            Some(Duration::from_millis(970))
        );
    }

    #[test]
    fn positions_parse_with_fen_and_moves() {
        let game = parse_position(&["startpos", "moves", "h2e2", "h9g7"]).unwrap();
        assert_eq!(game.len(), 2);
        let fen = "3k5/9/9/9/9/9/9/9/R8/4K4 w - - 0 1";
        let mut args: Vec<&str> = vec!["fen"];
        args.extend(fen.split(' '));
        args.extend(["moves", "a1a2"]);
        let game = parse_position(&args).unwrap();
        assert_eq!(game.start().to_string(), Position::from_fen(fen).unwrap().to_string());
        assert_eq!(game.len(), 1);
        assert!(parse_position(&["startpos", "moves", "h2h8"]).unwrap_err().contains("move 1"));
        assert!(parse_position(&["fen", "garbage"]).is_err());
        assert!(parse_position(&["startpos", "h2e2"]).is_err());
        assert!(parse_position(&[]).is_err());
    }
}
