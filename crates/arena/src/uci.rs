//! External engines over UCI: Fairy-Stockfish, Pikafish or `xqz uci`, driven through pipes.
//!
//! ```no_run
//! use xiangqi::game::Game;
//! use xqz_arena::uci::{EngineConfig, Limit, UciEngine};
//!
//! let config = EngineConfig::parse("fairy-stockfish:/usr/games/fairy-stockfish;Hash=16")?;
//! let mut engine = UciEngine::spawn(&config)?;
//! let mut game = Game::new(Default::default());
//! engine.new_game()?;
//! let reply = engine.go(&game, &Limit::depth(5))?; // legal in the game's position, checked
//! println!("{} plays {} (score {:?}, depth {:?})", engine.name(), reply.best, reply.score, reply.depth);
//! game.push(reply.best)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! The engine runs as a child process with piped stdin and stdout (stderr discarded). A reader
//! thread forwards its output lines into a channel, so every wait for an answer has a deadline:
//! a silent or hung engine gives [`EngineError::Timeout`], never a hang.
//!
//! Engines differ in how they write moves: Pikafish and `xqz uci` number the ranks 0-9 like
//! [`xiangqi::Move`] (`h2e2`, [`Ranks::FromZero`]), while Fairy-Stockfish in its `xiangqi`
//! variant numbers them 1-10 (`h3e3`, `a10a9`, [`Ranks::FromOne`]) and silently ignores the rest
//! of a `position ... moves` list at the first move it cannot play, so a wrong dialect shows up as
//! [`EngineError::IllegalMove`] replies, not as an error from the engine.
//!
//! The protocol itself (commands written, responses read, the two dialects) is
//! [`xqz_uci::protocol`], which our own engine speaks through as well.

use std::io::{self, BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread;
use std::time::{Duration, Instant};

use thiserror::Error;
use xiangqi::game::Game;
use xiangqi::{Move, START_FEN};
use xqz_uci::protocol::{Command, Go, Info, OptionKind, Response, ResponseError, Start};
pub use xqz_uci::protocol::{FenLetters, ParseMoveError, Ranks, Score, format_move, parse_move};

/// The per-reply timeout of [`EngineConfig::new`] and [`EngineConfig::fairy_stockfish`].
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// How long [`UciEngine`]'s drop waits for the engine to obey `quit` before killing it.
const QUIT_GRACE: Duration = Duration::from_secs(1);

/// How long an error waits for an engine that closed its output to report its exit status.
const EXIT_STATUS_WAIT: Duration = Duration::from_millis(200);

/// How to start and set up an engine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineConfig {
    /// The program and its arguments.
    pub command: Vec<String>,
    /// `setoption name NAME value VALUE` pairs sent after `uciok`, in order, before the variant.
    pub options: Vec<(String, String)>,
    /// How the engine numbers ranks in its moves.
    pub ranks: Ranks,
    /// How the engine's FEN writes horses and elephants.
    pub fen_letters: FenLetters,
    /// If set, sent as `setoption name UCI_Variant value ...` after the options; the engine must
    /// list it among its `UCI_Variant` choices.
    pub variant: Option<String>,
    /// How long each answer may take (for `go`, on top of the limit's `movetime`); a depth or
    /// nodes search must fit in it.
    pub timeout: Duration,
}

/// An engine spec that [`EngineConfig::parse`] does not accept.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error(
    "bad engine spec {spec:?}: {reason} (expected KIND:PROGRAM [ARGS...][;OPTION=VALUE...], KIND fairy-stockfish, sjaakii or uci)"
)]
pub struct ParseSpecError {
    /// The spec.
    pub spec: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl EngineConfig {
    /// A plain UCI engine in the 0-9 dialect (Pikafish, `xqz uci`): no variant, no options,
    /// [`DEFAULT_TIMEOUT`].
    pub fn new(command: Vec<String>) -> EngineConfig {
        EngineConfig {
            command,
            options: Vec::new(),
            ranks: Ranks::FromZero,
            fen_letters: FenLetters::KnightBishop,
            variant: None,
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// Fairy-Stockfish at `path`, playing the `xiangqi` variant in its 1-10 dialect.
    pub fn fairy_stockfish(path: impl Into<String>) -> EngineConfig {
        EngineConfig {
            ranks: Ranks::FromOne,
            variant: Some("xiangqi".to_string()),
            ..EngineConfig::new(vec![path.into()])
        }
    }

    /// Sjaak II (Debian's `sjaakii`) at `path`, playing its `xiangqi` variant: ranks 1-10 as
    /// Fairy-Stockfish, horses and elephants written `h` and `e` in its FEN.
    pub fn sjaakii(path: impl Into<String>) -> EngineConfig {
        EngineConfig { fen_letters: FenLetters::HorseElephant, ..EngineConfig::fairy_stockfish(path) }
    }

    /// The `KIND`s of [`EngineConfig::parse`].
    pub const KINDS: [&'static str; 4] = ["fairy-stockfish", "fsf", "sjaakii", "uci"];

    /// Whether `spec` starts with one of the [`KINDS`](Self::KINDS) (`uci:...`): an engine
    /// spec, for a caller that takes players of other kinds too.
    pub fn names_an_engine(spec: &str) -> bool {
        spec.split_once(':').is_some_and(|(kind, _)| EngineConfig::KINDS.contains(&kind.trim()))
    }

    /// Reads a user-facing spec `KIND:PROGRAM [ARGS...][;OPTION=VALUE...]`.
    ///
    /// `KIND` is `fairy-stockfish` (or `fsf`: [`EngineConfig::fairy_stockfish`]), `sjaakii`
    /// ([`EngineConfig::sjaakii`]) or `uci` ([`EngineConfig::new`]: Pikafish, `xqz uci`). The command is split at whitespace; each
    /// `;`-separated `OPTION=VALUE` after it becomes a `setoption` (names may contain spaces,
    /// both sides are trimmed).
    ///
    /// ```
    /// use xqz_arena::uci::{EngineConfig, Ranks};
    /// let fsf = EngineConfig::parse("fairy-stockfish:/usr/games/fairy-stockfish;Skill Level=3")?;
    /// assert_eq!(fsf.command, ["/usr/games/fairy-stockfish"]);
    /// assert_eq!(fsf.options, [("Skill Level".to_string(), "3".to_string())]);
    /// assert_eq!((fsf.ranks, fsf.variant.as_deref()), (Ranks::FromOne, Some("xiangqi")));
    /// let pika = EngineConfig::parse("uci:pikafish")?;
    /// assert_eq!((pika.ranks, pika.variant), (Ranks::FromZero, None));
    /// # Ok::<(), xqz_arena::uci::ParseSpecError>(())
    /// ```
    pub fn parse(spec: &str) -> Result<EngineConfig, ParseSpecError> {
        let err = |reason| ParseSpecError { spec: spec.to_string(), reason };
        let (kind, rest) = spec.split_once(':').ok_or_else(|| err("no KIND: prefix"))?;
        let mut parts = rest.split(';');
        let command: Vec<String> = parts.next().unwrap_or("").split_whitespace().map(str::to_string).collect();
        if command.is_empty() {
            return Err(err("no program"));
        }
        let mut config = match kind.trim() {
            "fairy-stockfish" | "fsf" => EngineConfig { command, ..EngineConfig::fairy_stockfish(String::new()) },
            "sjaakii" => EngineConfig { command, ..EngineConfig::sjaakii(String::new()) },
            "uci" => EngineConfig::new(command),
            _ => return Err(err("unknown KIND")),
        };
        for option in parts {
            let (name, value) = option.split_once('=').ok_or_else(|| err("an option without ="))?;
            let name = name.trim();
            if name.is_empty() {
                return Err(err("an option without a name"));
            }
            config.options.push((name.to_string(), value.trim().to_string()));
        }
        Ok(config)
    }
}

/// How long a search may run; at least one field must be set, and the engine stops at the first
/// one reached (all of them are sent on one `go` line).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub struct Limit {
    /// `go nodes N`.
    pub nodes: Option<u64>,
    /// `go depth N`.
    pub depth: Option<u32>,
    /// `go movetime MS` (whole milliseconds, at least 1); it also extends the reply's timeout.
    pub movetime: Option<Duration>,
}

impl std::fmt::Display for Limit {
    /// `depth 1`, `nodes 500`, `movetime 100ms`, joined by spaces; `no limit` if empty.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut parts = Vec::new();
        if let Some(depth) = self.depth {
            parts.push(format!("depth {depth}"));
        }
        if let Some(nodes) = self.nodes {
            parts.push(format!("nodes {nodes}"));
        }
        if let Some(time) = self.movetime {
            parts.push(format!("movetime {}ms", time.as_millis()));
        }
        if parts.is_empty() { f.write_str("no limit") } else { f.write_str(&parts.join(" ")) }
    }
}

impl Limit {
    /// A search of `nodes` nodes.
    pub fn nodes(nodes: u64) -> Limit {
        Limit { nodes: Some(nodes), ..Limit::default() }
    }

    /// A search to `depth` plies.
    pub fn depth(depth: u32) -> Limit {
        Limit { depth: Some(depth), ..Limit::default() }
    }

    /// A search of `time`.
    pub fn movetime(time: Duration) -> Limit {
        Limit { movetime: Some(time), ..Limit::default() }
    }

    /// Whether no field is set.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_none() && self.depth.is_none() && self.movetime.is_none()
    }

    /// The `go` command.
    fn command(&self) -> Command {
        Command::Go(Go {
            depth: self.depth.map(u64::from),
            nodes: self.nodes,
            movetime: self.movetime.map(|time| u64::try_from(time.as_millis()).unwrap_or(u64::MAX).max(1)),
            ..Go::default()
        })
    }
}

/// An engine's answer to `go`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    /// The move, legal in the game's current position.
    pub best: Move,
    /// The last score reported on an `info` line (of the first PV), if any.
    pub score: Option<Score>,
    /// The last depth reported, if any.
    pub depth: Option<u32>,
    /// The last node count reported, if any.
    pub nodes: Option<u64>,
}

/// One line of an analysis ([`UciEngine::analyse`]): the line's first move and its score.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PvLine {
    /// The first move of the line, legal in the analysed position.
    pub first: Move,
    /// Its score, from the side to move.
    pub score: Score,
}

/// What can go wrong with an engine. After `Timeout`, `Exited`, `Io` or `Protocol` the engine is
/// in an unknown state and should be dropped; after `IllegalMove` and `NoMove` it is idle again.
#[derive(Debug, Error)]
pub enum EngineError {
    /// The program could not be started.
    #[error("cannot start engine `{command}`: {source}")]
    Spawn {
        /// The command line.
        command: String,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// Reading from or writing to the engine failed.
    #[error("engine I/O failed while {during}: {source}")]
    Io {
        /// What was being done.
        during: String,
        /// Why.
        #[source]
        source: io::Error,
    },
    /// The engine did not answer in time.
    #[error("engine did not answer within {after:?}: no {waiting_for}")]
    Timeout {
        /// The answer awaited (`uciok`, `readyok`, `bestmove`).
        waiting_for: String,
        /// The time waited.
        after: Duration,
    },
    /// The engine closed its output (it exited or crashed) or its input.
    #[error("engine exited while {during} ({status})")]
    Exited {
        /// What was being done.
        during: String,
        /// Its exit status if known, e.g. `exit status: 1`.
        status: String,
    },
    /// The engine's `bestmove` is not a legal move of the position it was given.
    #[error("engine answered bestmove {text:?}, which is not a legal move in {fen}")]
    IllegalMove {
        /// The move as the engine wrote it.
        text: String,
        /// The position it was asked about.
        fen: String,
    },
    /// The engine said something that breaks the protocol, or lacks a feature asked for.
    #[error("engine protocol error: {0}")]
    Protocol(String),
    /// The engine answered `bestmove (none)` or `0000`: it finds no legal move.
    #[error("engine has no move (bestmove (none) or 0000)")]
    NoMove,
}

/// A line of the engine's output, or the error that ended the reading.
type Line = io::Result<String>;

/// A running UCI engine; dropping it sends `quit` and kills the process if it has not exited
/// within about a second.
#[derive(Debug)]
pub struct UciEngine {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<Line>,
    config: EngineConfig,
    name: String,
}

impl UciEngine {
    /// Starts the engine and sets it up: `uci` up to `uciok` (taking its name from `id name`),
    /// the options, the variant (which the engine must offer), then `isready` up to `readyok`.
    pub fn spawn(config: &EngineConfig) -> Result<UciEngine, EngineError> {
        let command_line = config.command.join(" ");
        let spawn_error = |source| EngineError::Spawn { command: command_line.clone(), source };
        let (program, args) =
            config.command.split_first().ok_or_else(|| spawn_error(io::Error::other("empty command")))?;
        let mut child = std::process::Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(spawn_error)?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().expect("stdout is piped");
        let (tx, lines) = mpsc::channel();
        let reader = thread::Builder::new().name("uci-reader".to_string()).spawn(move || read_lines(stdout, tx));
        let mut engine = UciEngine { child, stdin, lines, config: config.clone(), name: program.clone() };
        // The thread ends when the engine's output does; it is never joined, as a grandchild
        // could keep the pipe open after the engine is killed.
        reader.map_err(|source| EngineError::Io { during: "starting the reader thread".to_string(), source })?;
        engine.handshake()?;
        Ok(engine)
    }

    /// The name from `id name`, else the program.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The configuration it was started with.
    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    /// Tells the engine that a new game starts: `ucinewgame`, then `isready` up to `readyok`.
    pub fn new_game(&mut self) -> Result<(), EngineError> {
        self.send(&Command::UciNewGame)?;
        self.sync()
    }

    /// Asks for a move in `game`'s current position, sent as `position fen <start> moves ...`
    /// (`position startpos moves ...` from the standard start) in the engine's dialect; the reply
    /// is checked to be legal there.
    ///
    /// The wait for `bestmove` lasts the limit's `movetime` plus [`EngineConfig::timeout`].
    ///
    /// # Panics
    /// If `limit` is empty.
    pub fn go(&mut self, game: &Game, limit: &Limit) -> Result<Reply, EngineError> {
        let mut reported = Reported::default();
        let best = self.search(game, limit, |info| reported.update(info))?;
        Ok(Reply { best, score: reported.score, depth: reported.depth, nodes: reported.nodes })
    }

    /// The engine's best `lines` moves in `game`'s current position with their scores (from the
    /// side to move), best first: a search with `MultiPV` set to `lines` (and back to 1 after).
    /// A move whose last report was only a bound, or that the engine never reported, is left
    /// out (as is a line whose first move is not legal in the position), so fewer lines than
    /// asked may come back.
    ///
    /// ```no_run
    /// # use xiangqi::game::Game;
    /// # use xqz_arena::uci::{EngineConfig, Limit, UciEngine};
    /// let mut engine = UciEngine::spawn(&EngineConfig::fairy_stockfish("/usr/games/fairy-stockfish"))?;
    /// for line in engine.analyse(&Game::new(Default::default()), &Limit::depth(8), 4)? {
    ///     println!("{} {:?}", line.first, line.score);
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    ///
    /// # Panics
    /// If `limit` is empty or `lines` is 0.
    pub fn analyse(&mut self, game: &Game, limit: &Limit, lines: u32) -> Result<Vec<PvLine>, EngineError> {
        assert!(lines > 0, "an analysis needs at least one line");
        self.send(&Command::SetOption { name: "MultiPV".to_string(), value: Some(lines.to_string()) })?;
        let mut latest: Vec<Option<PvLine>> = vec![None; lines as usize];
        let searched = self.search(game, limit, |info| {
            let k = info.multipv.unwrap_or(1) as usize;
            let Some(&first) = info.pv.first() else { return };
            let Some(slot) = latest.get_mut(k.wrapping_sub(1)) else { return };
            *slot = match (info.score, info.bound) {
                (Some(score), None) => Some(PvLine { first, score }),
                _ => None,
            };
        });
        self.send(&Command::SetOption { name: "MultiPV".to_string(), value: Some("1".to_string()) })?;
        searched?;
        // A line whose first move is not legal there is the engine's mistake, not an analysis.
        let legal = game.legal_moves();
        Ok(latest.into_iter().flatten().filter(|line| legal.contains(&line.first)).collect())
    }

    /// Sends the position and `go`, hands every `info` line to `on_info`, and returns the
    /// `bestmove`, checked to be legal in `game`.
    fn search(&mut self, game: &Game, limit: &Limit, mut on_info: impl FnMut(&Info)) -> Result<Move, EngineError> {
        assert!(!limit.is_empty(), "a search limit needs nodes, depth or movetime");
        // A game from the standard start is sent as `startpos`, as GUIs send it, so that an
        // engine whose FEN letters we do not know still understands it.
        let start = if game.start().to_string() == START_FEN {
            Start::StartPos
        } else {
            Start::Fen(Box::new(game.start().clone()))
        };
        self.send(&Command::Position { start, moves: game.moves().collect() })?;
        self.send(&limit.command())?;
        let deadline = deadline_after(limit.movetime.unwrap_or_default().saturating_add(self.config.timeout));
        let illegal = |text: String| EngineError::IllegalMove { text, fen: game.position().to_string() };
        loop {
            let line = self.next_line("bestmove", deadline)?;
            match Response::parse(&line, self.config.ranks) {
                Ok(Response::Info(info)) => on_info(&info),
                Ok(Response::BestMove { best: None, .. }) => return Err(EngineError::NoMove),
                Ok(Response::BestMove { best: Some(best), .. }) if game.legal_moves().contains(&best) => {
                    return Ok(best);
                }
                Ok(Response::BestMove { best: Some(best), .. }) => {
                    return Err(illegal(format_move(best, self.config.ranks)));
                }
                Err(ResponseError::Move { key, source }) if key == "bestmove" => return Err(illegal(source.text)),
                // Any other `bestmove` line that does not parse (no move, a bad ponder move) still
                // ends the search, so it cannot be skipped like the lines below.
                Err(e) if line.split_whitespace().next() == Some("bestmove") => {
                    return Err(EngineError::Protocol(format!("{e} in {line:?}")));
                }
                // Other lines (an `info` line that does not parse among them) carry nothing the
                // search needs.
                _ => {}
            }
        }
    }

    /// `uci` ... `uciok`, options, variant, `isready` ... `readyok`.
    fn handshake(&mut self) -> Result<(), EngineError> {
        self.send(&Command::Uci)?;
        let deadline = deadline_after(self.config.timeout);
        let mut variants: Option<Vec<String>> = None;
        loop {
            let line = self.next_line("uciok", deadline)?;
            // Lines that do not parse (a banner, an option of a type UCI lacks) are skipped.
            match Response::parse(&line, self.config.ranks) {
                Ok(Response::UciOk) => break,
                Ok(Response::IdName(name)) => self.name = name,
                Ok(Response::Option(option)) if option.name == "UCI_Variant" => {
                    variants = Some(match option.kind {
                        OptionKind::Combo { vars, .. } => vars,
                        _ => Vec::new(),
                    });
                }
                _ => {}
            }
        }
        for (name, value) in self.config.options.clone() {
            self.send(&Command::SetOption { name, value: Some(value) })?;
        }
        if let Some(variant) = self.config.variant.clone() {
            match variants {
                Some(offered) if offered.contains(&variant) => {}
                Some(_) => {
                    return Err(EngineError::Protocol(format!("the engine does not offer UCI_Variant {variant}")));
                }
                None => {
                    return Err(EngineError::Protocol(format!(
                        "the engine has no UCI_Variant option, so it cannot play variant {variant}"
                    )));
                }
            }
            self.send(&Command::SetOption { name: "UCI_Variant".to_string(), value: Some(variant) })?;
        }
        self.sync()
    }

    /// `isready`, then waits for `readyok`.
    fn sync(&mut self) -> Result<(), EngineError> {
        self.send(&Command::IsReady)?;
        let deadline = deadline_after(self.config.timeout);
        while Response::parse(&self.next_line("readyok", deadline)?, self.config.ranks) != Ok(Response::ReadyOk) {}
        Ok(())
    }

    /// Writes one command line.
    fn send(&mut self, command: &Command) -> Result<(), EngineError> {
        let command = command.format_with(self.config.ranks, self.config.fen_letters);
        let during = || format!("sending {command:?}");
        let Some(stdin) = self.stdin.as_mut() else {
            return Err(EngineError::Protocol("the engine's input is closed".to_string()));
        };
        let written = stdin.write_all(format!("{command}\n").as_bytes()).and_then(|()| stdin.flush());
        match written {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {
                Err(EngineError::Exited { during: during(), status: self.exit_status() })
            }
            Err(source) => Err(EngineError::Io { during: during(), source }),
        }
    }

    /// The next output line, waiting until `deadline` at the latest.
    fn next_line(&mut self, waiting_for: &str, deadline: Instant) -> Result<String, EngineError> {
        let started = Instant::now();
        match self.lines.recv_timeout(deadline.saturating_duration_since(started)) {
            Ok(Ok(line)) => Ok(line),
            Ok(Err(source)) => Err(EngineError::Io { during: format!("waiting for {waiting_for}"), source }),
            Err(RecvTimeoutError::Timeout) => {
                Err(EngineError::Timeout { waiting_for: waiting_for.to_string(), after: started.elapsed() })
            }
            Err(RecvTimeoutError::Disconnected) => {
                Err(EngineError::Exited { during: format!("waiting for {waiting_for}"), status: self.exit_status() })
            }
        }
    }

    /// The exit status, if the engine exits within [`EXIT_STATUS_WAIT`].
    fn exit_status(&mut self) -> String {
        let deadline = Instant::now() + EXIT_STATUS_WAIT;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return status.to_string(),
                Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(5)),
                Ok(None) => return "still running".to_string(),
                Err(e) => return format!("status unknown: {e}"),
            }
        }
    }
}

impl Drop for UciEngine {
    fn drop(&mut self) {
        if let Some(mut stdin) = self.stdin.take() {
            let _ = stdin.write_all(b"quit\n").and_then(|()| stdin.flush());
        }
        let deadline = Instant::now() + QUIT_GRACE;
        loop {
            match self.child.try_wait() {
                Ok(Some(_)) => return,
                Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(5)),
                _ => break,
            }
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The instant `wait` from now, or a century from now if that is beyond what an [`Instant`] holds.
fn deadline_after(wait: Duration) -> Instant {
    let now = Instant::now();
    now.checked_add(wait).or_else(|| now.checked_add(Duration::from_secs(100 * 365 * 86_400))).unwrap_or(now)
}

/// Forwards the engine's output lines (lossily decoded, line ends removed) until it ends.
fn read_lines(stdout: ChildStdout, tx: Sender<Line>) {
    let mut reader = BufReader::new(stdout);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        let line = match reader.read_until(b'\n', &mut buf) {
            Ok(0) => return,
            Ok(_) => Ok(String::from_utf8_lossy(&buf).trim_end_matches(['\n', '\r']).to_string()),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => Err(e),
        };
        let failed = line.is_err();
        if tx.send(line).is_err() || failed {
            return;
        }
    }
}

/// What the `info` lines of one search reported last.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
struct Reported {
    score: Option<Score>,
    depth: Option<u32>,
    nodes: Option<u64>,
}

impl Reported {
    /// Takes the values of an `info` line; lines of a second or later PV are ignored.
    fn update(&mut self, info: &Info) {
        if info.multipv.is_some_and(|k| k != 1) {
            return;
        }
        self.score = info.score.or(self.score);
        self.depth = info.depth.or(self.depth);
        self.nodes = info.nodes.or(self.nodes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_limit_names_itself_as_go_does() {
        assert_eq!(Limit::depth(1).to_string(), "depth 1");
        let both = Limit { nodes: Some(500), movetime: Some(Duration::from_millis(100)), ..Limit::default() };
        assert_eq!(both.to_string(), "nodes 500 movetime 100ms");
        assert_eq!(Limit::default().to_string(), "no limit");
    }

    #[test]
    fn info_lines_keep_the_last_values_of_the_first_pv() {
        // The values reported after each line.
        let mut reported = Reported::default();
        let mut update = |line: &str| match Response::parse(line, Ranks::FromOne) {
            Ok(Response::Info(info)) => {
                reported.update(&info);
                reported
            }
            other => panic!("{line}: {other:?}"),
        };
        assert_eq!(
            update(
                "info depth 5 seldepth 6 multipv 1 score cp 117 nodes 2842 nps 123565 tbhits 0 time 23 pv h1g3 b8c8"
            ),
            Reported { score: Some(Score::Cp(117)), depth: Some(5), nodes: Some(2842) }
        );
        update("info multipv 2 depth 9 score cp 3 nodes 99999");
        update("info string depth 40 score cp 1 nodes 7");
        assert_eq!(
            update("info depth 6 currmove h2e2 currmovenumber 1"),
            Reported { score: Some(Score::Cp(117)), depth: Some(6), nodes: Some(2842) }
        );
        assert_eq!(
            update("info depth 7 seldepth 9 score mate -3 upperbound nodes 5000 pv a10a9"),
            Reported { score: Some(Score::Mate(-3)), depth: Some(7), nodes: Some(5000) }
        );
        let mut mated = Reported::default();
        mated.update(&Info { depth: Some(0), score: Some(Score::Mate(0)), ..Info::default() });
        assert_eq!(mated, Reported { score: Some(Score::Mate(0)), depth: Some(0), nodes: None });
    }

    #[test]
    fn limits_make_go_commands() {
        let go = |limit: Limit| limit.command().format(Ranks::FromOne);
        assert_eq!(go(Limit::depth(3)), "go depth 3");
        assert_eq!(go(Limit::nodes(500)), "go nodes 500");
        assert_eq!(go(Limit::movetime(Duration::from_micros(10))), "go movetime 1");
        assert_eq!(go(Limit::movetime(Duration::MAX)), format!("go movetime {}", u64::MAX));
        let all = Limit { nodes: Some(9), depth: Some(2), movetime: Some(Duration::from_millis(250)) };
        assert_eq!(go(all), "go depth 2 nodes 9 movetime 250");
        assert!(Limit::default().is_empty() && !all.is_empty());
    }

    #[test]
    fn specs_parse() {
        let fsf = EngineConfig::parse("fsf: /opt/fsf/bin/fairy-stockfish --x ; Hash = 64;Skill Level=3").unwrap();
        assert_eq!(fsf.command, ["/opt/fsf/bin/fairy-stockfish", "--x"]);
        assert_eq!(fsf.options, [("Hash".to_string(), "64".to_string()), ("Skill Level".to_string(), "3".to_string())]);
        assert_eq!(
            fsf,
            EngineConfig {
                command: fsf.command.clone(),
                options: fsf.options.clone(),
                ..EngineConfig::fairy_stockfish("")
            }
        );
        let xqz = EngineConfig::parse("uci:xqz uci --model m.safetensors").unwrap();
        assert_eq!(xqz, EngineConfig::new(vec!["xqz".into(), "uci".into(), "--model".into(), "m.safetensors".into()]));
        for (spec, reason) in [
            ("/usr/games/fairy-stockfish", "no KIND: prefix"),
            ("stockfish:/usr/games/stockfish", "unknown KIND"),
            ("uci:", "no program"),
            ("uci: ;Hash=1", "no program"),
            ("uci:pikafish;Hash", "an option without ="),
            ("uci:pikafish;=1", "an option without a name"),
        ] {
            assert_eq!(EngineConfig::parse(spec), Err(ParseSpecError { spec: spec.to_string(), reason }));
        }
    }
}
