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

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::io::{self, BufRead, Write};
use std::sync::mpsc::{self, Receiver};
use std::time::{Duration, Instant};

use xiangqi::game::{Game, GameConfig};
use xiangqi::{Move, Position};
use xqz_mcts::{Evaluator, Line, SearchConfig, Tree, UniformEvaluator, search_until};

/// Builds the evaluator for the current options (the model file, device and threads); called
/// when the engine starts searching or answers `isready` after one of those changed.
pub type Loader = Box<dyn FnMut(&Options) -> Result<Box<dyn Evaluator>, String>>;

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
    game: Game,
}

/// What `go` asked for.
#[derive(Clone, Debug, Default, PartialEq)]
struct GoLimits {
    nodes: Option<u64>,
    depth: Option<u32>,
    movetime: Option<u64>,
    time: [Option<u64>; 2],
    inc: [Option<u64>; 2],
    movestogo: Option<u64>,
    infinite: bool,
}

/// The session's input: lines from a reader thread, and lines put back while searching.
struct Input {
    rx: Receiver<String>,
    pending: VecDeque<String>,
}

fn emit(out: &mut impl Write, line: &str) -> io::Result<()> {
    writeln!(out, "{line}")?;
    out.flush()
}

impl Engine {
    /// An engine called `name` (in `id name`) that gets its evaluator from `loader`.
    pub fn new(name: &str, loader: Loader) -> Engine {
        Engine {
            name: name.to_string(),
            loader,
            options: Options::default(),
            evaluator: None,
            game: Game::new(GameConfig::default()),
        }
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
        let tokens: Vec<&str> = line.split_whitespace().collect();
        let Some((&command, args)) = tokens.split_first() else {
            return Ok(true);
        };
        match command {
            "uci" => {
                emit(out, &format!("id name {}", self.name))?;
                emit(out, "id author the xqzero authors")?;
                for option in option_lines(&self.options) {
                    emit(out, &option)?;
                }
                emit(out, "uciok")?;
            }
            "isready" => {
                self.ensure_loaded(out)?;
                emit(out, "readyok")?;
            }
            "setoption" => {
                if let Err(message) = self.set_option(args) {
                    emit(out, &format!("info string error: {message}"))?;
                }
            }
            "ucinewgame" => self.game = Game::new(GameConfig::default()),
            "position" => match parse_position(args) {
                Ok(game) => self.game = game,
                Err(message) => emit(out, &format!("info string error: {message}; position unchanged"))?,
            },
            "go" => return self.go(args, input, out),
            "d" => emit(out, &format!("info string fen {} plies {}", self.game.position(), self.game.len()))?,
            "stop" | "ponderhit" => {}
            "quit" => return Ok(false),
            _ => emit(out, &format!("info string error: unknown command {line:?}"))?,
        }
        Ok(true)
    }

    fn set_option(&mut self, args: &[&str]) -> Result<(), String> {
        let text = args.join(" ");
        let rest = text.strip_prefix("name ").ok_or("expected setoption name <id> [value <x>]")?;
        let (name, value) = match rest.split_once(" value ") {
            Some((name, value)) => (name.trim(), value.trim()),
            None => (rest.trim(), ""),
        };
        let number = |min: u32, max: u32| -> Result<u32, String> {
            value
                .parse::<u32>()
                .ok()
                .filter(|v| (min..=max).contains(v))
                .ok_or_else(|| format!("option {name} takes a whole number from {min} to {max}, not {value:?}"))
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
            "uci_showwdl" => {
                options.show_wdl = match value {
                    "true" => true,
                    "false" => false,
                    _ => return Err(format!("option UCI_ShowWDL is true or false, not {value:?}")),
                }
            }
            _ => return Err(format!("no option {name:?}")),
        }
        Ok(())
    }

    /// Loads the evaluator if the options changed; a failure is reported and the engine then
    /// searches on the rules alone (uniform priors) until it loads.
    fn ensure_loaded(&mut self, out: &mut impl Write) -> io::Result<()> {
        if self.evaluator.is_none() {
            match (self.loader)(&self.options) {
                Ok(evaluator) => self.evaluator = Some(evaluator),
                Err(message) => emit(
                    out,
                    &format!("info string error: no model loaded ({message}); searching with uniform priors"),
                )?,
            }
        }
        Ok(())
    }

    fn go(&mut self, args: &[&str], input: &mut Input, out: &mut impl Write) -> io::Result<bool> {
        let limits = match parse_go(args) {
            Ok(limits) => limits,
            Err(message) => {
                emit(out, &format!("info string error: {message}; searching with the default limit"))?;
                GoLimits::default()
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
            emit(out, "info string the side to move has no legal move")?;
            emit(out, "bestmove (none)")?;
            return Ok(true);
        }
        let start = Instant::now();
        let budget = playout_budget(&limits, self.options.playouts);
        let deadline = time_budget(&limits, game.position().turn().index(), self.options.move_overhead)
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
                    match line.split_whitespace().next() {
                        Some("stop") => stopped = true,
                        Some("quit") => (stopped, quit) = (true, true),
                        Some("isready") => failure = emit(out, "readyok").err().or(failure.take()),
                        _ => input.pending.push_back(line),
                    }
                }
                if last_info.elapsed() >= INFO_EVERY {
                    last_info = Instant::now();
                    for line in info_lines(tree, start.elapsed(), options) {
                        failure = emit(out, &line).err().or(failure.take());
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
            emit(out, &format!("info string error: {e}; this move comes from the rules alone"))?;
        }
        // `go infinite` answers only after `stop`, even if the playouts run out first.
        while limits.infinite && !stopped {
            let Ok(line) = input.rx.recv() else { break };
            match line.split_whitespace().next() {
                Some("stop") => stopped = true,
                Some("quit") => (stopped, quit) = (true, true),
                Some("isready") => emit(out, "readyok")?,
                _ => input.pending.push_back(line),
            }
        }
        for line in info_lines(&tree, start.elapsed(), &self.options) {
            emit(out, &line)?;
        }
        let lines = tree.lines();
        let best = choose(&game, tree.root().best_move(), &lines);
        let ponder = lines.iter().find(|l| l.moves[0] == best).and_then(|l| l.moves.get(1));
        match ponder {
            Some(reply) => emit(out, &format!("bestmove {best} ponder {reply}"))?,
            None => emit(out, &format!("bestmove {best}"))?,
        }
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

/// The `info` lines of the current search: one per reported principal variation.
fn info_lines(tree: &Tree, elapsed: Duration, options: &Options) -> Vec<String> {
    let lines = tree.lines();
    let nodes = tree.root().playouts();
    let seldepth = lines.iter().filter(|l| l.visits > 0).map(|l| l.moves.len()).max().unwrap_or(0);
    let nps = (f64::from(nodes) / elapsed.as_secs_f64().max(1e-3)) as u64;
    let mut out = Vec::new();
    for (k, line) in lines.iter().filter(|l| l.visits > 0).take(options.multipv as usize).enumerate() {
        let score = match line.mate {
            Some(moves) if moves > 0 => format!("mate {moves}"),
            // A move that loses by a rule on the spot has no mating move to count.
            Some(moves) => format!("mate -{}", moves.unsigned_abs().max(1)),
            None => format!("cp {}", centipawns(line.wdl)),
        };
        let mut text = format!("info depth {} seldepth {seldepth} multipv {} score {score}", line.moves.len(), k + 1);
        if options.show_wdl {
            let permille = line.wdl.map(|p| (p * 1000.0).round() as u32);
            let _ = write!(text, " wdl {} {} {}", permille[0], permille[1], permille[2]);
        }
        let _ = write!(text, " nodes {nodes} nps {nps} time {} pv", elapsed.as_millis());
        for mv in &line.moves {
            let _ = write!(text, " {mv}");
        }
        out.push(text);
    }
    out
}

/// Reads `position (startpos | fen <fen>) [moves <m>...]`.
fn parse_position(args: &[&str]) -> Result<Game, String> {
    let (position, rest) = match args.split_first() {
        Some((&"startpos", rest)) => (Position::startpos(), rest),
        Some((&"fen", rest)) => {
            let end = rest.iter().position(|&t| t == "moves").unwrap_or(rest.len());
            let fen = rest[..end].join(" ");
            let position = Position::from_fen(&fen).map_err(|e| format!("bad FEN {fen:?}: {e}"))?;
            (position, &rest[end..])
        }
        _ => return Err("expected position startpos|fen <fen> [moves ...]".into()),
    };
    let moves = match rest.split_first() {
        None => &[][..],
        Some((&"moves", moves)) => moves,
        Some((other, _)) => return Err(format!("expected moves after the position, not {other:?}")),
    };
    let mut game = Game::from_position(position, GameConfig::default());
    for (ply, text) in moves.iter().enumerate() {
        let mv: Move = text.parse().map_err(|e| format!("move {} ({text}): {e}", ply + 1))?;
        if game.outcome().is_over() && game.legal_moves().contains(&mv) {
            // The GUI plays on past a ruling of ours (it may judge repetitions otherwise).
            game = Game::from_position(game.position().clone(), game.config());
        }
        game.push(mv).map_err(|e| format!("move {} ({text}) in {}: {e}", ply + 1, game.position()))?;
    }
    Ok(game)
}

/// Reads the arguments of `go`.
fn parse_go(args: &[&str]) -> Result<GoLimits, String> {
    let mut limits = GoLimits::default();
    let mut tokens = args.iter();
    while let Some(&token) = tokens.next() {
        let mut value = || -> Result<u64, String> {
            let text = tokens.next().ok_or_else(|| format!("go {token} needs a number"))?;
            // Some GUIs send a negative clock when time runs out: read it as 0.
            text.parse::<i64>().map(|v| v.max(0) as u64).map_err(|_| format!("go {token} needs a number, not {text:?}"))
        };
        match token {
            "nodes" => limits.nodes = Some(value()?),
            "depth" => limits.depth = Some(value()?.min(30) as u32),
            "movetime" => limits.movetime = Some(value()?),
            "wtime" => limits.time[0] = Some(value()?),
            "btime" => limits.time[1] = Some(value()?),
            "winc" => limits.inc[0] = Some(value()?),
            "binc" => limits.inc[1] = Some(value()?),
            "movestogo" => limits.movestogo = Some(value()?.max(1)),
            "infinite" => limits.infinite = true,
            "ponder" => {}
            "mate" | "searchmoves" => return Err(format!("go {token} is not supported")),
            other => return Err(format!("unknown go argument {other:?}")),
        }
    }
    Ok(limits)
}

/// The playouts one search may run.
fn playout_budget(limits: &GoLimits, default: u32) -> u32 {
    let by_nodes = limits.nodes.map(|n| n.clamp(1, u64::from(MAX_PLAYOUTS)) as u32);
    let by_depth = limits.depth.map(|d| 1u32 << d.min(30));
    let clocked = limits.infinite || limits.movetime.is_some() || limits.time.iter().any(Option::is_some);
    match (by_nodes, by_depth) {
        (Some(n), Some(d)) => n.min(d),
        (Some(n), None) => n,
        (None, Some(d)) => d,
        (None, None) if clocked => MAX_PLAYOUTS,
        (None, None) => default.max(1),
    }
}

/// How long one search may take, if the clock limits it; `side` is 0 for Red, 1 for Black.
fn time_budget(limits: &GoLimits, side: usize, overhead: u32) -> Option<Duration> {
    let overhead = u64::from(overhead);
    let by_movetime = limits.movetime.map(|t| t.saturating_sub(overhead));
    let by_clock = limits.time[side].map(|left| {
        let share = left / limits.movestogo.unwrap_or(30) + limits.inc[side].unwrap_or(0) * 3 / 4;
        share.min(left.saturating_sub(overhead))
    });
    let millis = match (by_movetime, by_clock) {
        (Some(a), Some(b)) => a.min(b),
        (a, b) => a.or(b)?,
    };
    // At least a millisecond: the root is evaluated whatever the clock says.
    Some(Duration::from_millis(millis.max(1)))
}

/// The `option` lines of the `uci` reply, with `options` as defaults.
fn option_lines(options: &Options) -> Vec<String> {
    vec![
        format!(
            "option name ModelFile type string default {}",
            if options.model.is_empty() { "<empty>" } else { &options.model }
        ),
        format!("option name Device type string default {}", options.device),
        format!("option name Threads type spin default {} min 1 max 256", options.threads),
        format!("option name Playouts type spin default {} min 1 max {MAX_PLAYOUTS}", options.playouts),
        format!("option name BatchSize type spin default {} min 1 max 1024", options.batch_size),
        format!("option name MultiPV type spin default {} min 1 max 500", options.multipv),
        format!("option name UCI_ShowWDL type check default {}", options.show_wdl),
        format!("option name Move Overhead type spin default {} min 0 max 60000", options.move_overhead),
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
