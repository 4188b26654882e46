//! The UCI protocol as typed messages, both ways: [`Command`]s (GUI to engine) and [`Response`]s
//! (engine to GUI), each with a parser (`parse`: a line to a message, or an error naming what is
//! wrong) and a formatter (`format`: a message to its line). Our engine ([`crate::Engine`]) and
//! the arena's client for external engines both speak through this module, so the two sides of
//! a match read and write the protocol the same way.
//!
//! ```
//! use xqz_uci::protocol::{Command, Go, Ranks, Response};
//!
//! let go = Command::parse("go wtime 60000 btime 58000 movestogo 20", Ranks::FromZero)?;
//! assert_eq!(go, Command::Go(Go { wtime: Some(60_000), btime: Some(58_000), movestogo: Some(20), ..Go::default() }));
//! // Fairy-Stockfish numbers the ranks 1-10: its h3e3 is our h2e2.
//! let best = Response::parse("bestmove h3e3 ponder h10g8", Ranks::FromOne)?;
//! assert_eq!(best.format(Ranks::FromZero), "bestmove h2e2 ponder h9g7");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Moves are written in one of two dialects ([`Ranks`]): Pikafish and `xqz uci` number the
//! ranks 0-9 like [`xiangqi::Move`], Fairy-Stockfish's `xiangqi` variant 1-10; every message
//! that holds moves is parsed and formatted in a given dialect.
//!
//! Leniency, as the UCI specification asks of both sides: surrounding whitespace and runs of
//! spaces are ignored, words after a command or response that takes no arguments are ignored,
//! and so are unknown words of an `info` line and its moves that do not read in the dialect
//! (the PV is cut there). Anything else a known word is given that it cannot take is an error.

use std::fmt::{self, Write as _};

use thiserror::Error;
use xiangqi::{File, Move, ParseFenError, Position, Rank, Square};

/// How an engine numbers the ranks in its moves (files are `a`-`i` in both).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum Ranks {
    /// Ranks 0-9 as in [`xiangqi::Move`]: `h2e2` (Pikafish, `xqz uci`).
    #[default]
    FromZero,
    /// Ranks 1-10: `h3e3`, `a10a9` (Fairy-Stockfish's `xiangqi` variant).
    FromOne,
}

/// The letters an engine's FEN gives horses and elephants: most xiangqi engines write `n` and
/// `b` as chess does (ours, Fairy-Stockfish, Pikafish); Sjaak II writes `h` and `e` and refuses
/// the others.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum FenLetters {
    /// `n` and `b` (`rnbakabnr/...`).
    #[default]
    KnightBishop,
    /// `h` and `e` (`rheakaehr/...`).
    HorseElephant,
}

impl FenLetters {
    /// `position` as a FEN in these letters.
    ///
    /// ```
    /// use xqz_uci::protocol::FenLetters;
    /// let start = xiangqi::Position::startpos();
    /// assert_eq!(
    ///     FenLetters::HorseElephant.fen(&start),
    ///     "rheakaehr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RHEAKAEHR w - - 0 1"
    /// );
    /// ```
    pub fn fen(self, position: &Position) -> String {
        let fen = position.to_string();
        match self {
            FenLetters::KnightBishop => fen,
            FenLetters::HorseElephant => {
                // Only the board field: the side to move is written `b` too.
                let (board, rest) = fen.split_once(' ').unwrap_or((&fen, ""));
                let board: String = board
                    .chars()
                    .map(|c| match c {
                        'n' => 'h',
                        'N' => 'H',
                        'b' => 'e',
                        'B' => 'E',
                        other => other,
                    })
                    .collect();
                format!("{board} {rest}")
            }
        }
    }
}

impl fmt::Display for Ranks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Ranks::FromZero => "ranks 0-9",
            Ranks::FromOne => "ranks 1-10",
        })
    }
}

impl Ranks {
    /// The number a rank is written as.
    fn number(self, rank: Rank) -> u8 {
        match self {
            Ranks::FromZero => rank.index(),
            Ranks::FromOne => rank.index() + 1,
        }
    }
}

/// A move text that is not a move in the given dialect.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("bad move {text:?} (expected two points like h2e2, files a-i, {ranks})")]
pub struct ParseMoveError {
    /// The text.
    pub text: String,
    /// The dialect it was read in.
    pub ranks: Ranks,
}

/// Writes `mv` in an engine's dialect: `h2e2` with [`Ranks::FromZero`], `h3e3` with
/// [`Ranks::FromOne`].
pub fn format_move(mv: Move, ranks: Ranks) -> String {
    let square = |sq: Square| format!("{}{}", sq.file().char(), ranks.number(sq.rank()));
    square(mv.from()) + &square(mv.to())
}

/// Reads a move in an engine's dialect (lowercase files; with [`Ranks::FromOne`] a rank is `1` to
/// `10`). It is only checked to name two points, not to be legal anywhere.
pub fn parse_move(text: &str, ranks: Ranks) -> Result<Move, ParseMoveError> {
    let err = || ParseMoveError { text: text.to_string(), ranks };
    let (from, rest) = parse_square(text.as_bytes(), ranks).ok_or_else(err)?;
    let (to, rest) = parse_square(rest, ranks).ok_or_else(err)?;
    if !rest.is_empty() {
        return Err(err());
    }
    Ok(Move::new(from, to))
}

/// One point at the start of `text` and the text after it.
fn parse_square(text: &[u8], ranks: Ranks) -> Option<(Square, &[u8])> {
    let (&letter, rest) = text.split_first()?;
    if !(b'a'..=b'i').contains(&letter) {
        return None;
    }
    let file = File::new(letter - b'a')?;
    let (index, rest) = match (ranks, rest) {
        (Ranks::FromZero, [d @ b'0'..=b'9', rest @ ..]) => (d - b'0', rest),
        (Ranks::FromOne, [b'1', b'0', rest @ ..]) => (9, rest),
        (Ranks::FromOne, [d @ b'1'..=b'9', rest @ ..]) => (d - b'1', rest),
        _ => return None,
    };
    Some((Square::new(file, Rank::new(index)?), rest))
}

/// The first word of `text` and the text after it (not trimmed), or `None` if there is none.
fn split_word(text: &str) -> Option<(&str, &str)> {
    let text = text.trim_start();
    if text.is_empty() {
        return None;
    }
    let end = text.find(char::is_whitespace).unwrap_or(text.len());
    Some(text.split_at(end))
}

/// Reads a count; a negative one is read as 0, as some GUIs send a negative clock when their
/// time runs out.
fn parse_count(text: &str) -> Option<u64> {
    text.parse::<u64>().ok().or_else(|| text.parse::<i64>().ok().map(|v| v.max(0) as u64))
}

/// Appends ` key value` for a set field.
fn push_field(line: &mut String, key: &str, value: Option<impl fmt::Display>) {
    if let Some(value) = value {
        let _ = write!(line, " {key} {value}");
    }
}

/// Appends ` ` and each move in `ranks`, space-separated.
fn push_moves(line: &mut String, moves: &[Move], ranks: Ranks) {
    for &mv in moves {
        line.push(' ');
        line.push_str(&format_move(mv, ranks));
    }
}

/// A command from the GUI to the engine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// `uci`: identify yourself and list your options, then `uciok`.
    Uci,
    /// `isready`: answer `readyok` once ready.
    IsReady,
    /// `setoption name NAME [value VALUE]`.
    SetOption {
        /// The option's name (it may contain spaces, not the word `value`).
        name: String,
        /// The value, if one is given (`value` at the end of the line gives an empty one).
        value: Option<String>,
    },
    /// `ucinewgame`: the next position is from another game.
    UciNewGame,
    /// `position (startpos | fen FEN) [moves M...]`.
    Position {
        /// The position the moves start from.
        start: Start,
        /// The moves played from it.
        moves: Vec<Move>,
    },
    /// `go ...`: search the current position.
    Go(Go),
    /// `stop`: end the search and answer `bestmove`.
    Stop,
    /// `ponderhit`: the opponent played the move pondered on.
    PonderHit,
    /// `quit`: end the session.
    Quit,
    /// `d`: show the position (Stockfish's extension).
    Display,
}

/// Where a `position` command starts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Start {
    /// `startpos`: the standard starting position.
    StartPos,
    /// `fen FEN`: a position given by its FEN (boxed, as a position is large).
    Fen(Box<Position>),
}

/// The arguments of `go`; counts are milliseconds for the clock fields, plain numbers otherwise.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Go {
    /// `searchmoves M...`: search only these root moves (empty: all).
    pub searchmoves: Vec<Move>,
    /// `ponder`: search in the opponent's time.
    pub ponder: bool,
    /// `wtime MS`: Red's clock.
    pub wtime: Option<u64>,
    /// `btime MS`: Black's clock.
    pub btime: Option<u64>,
    /// `winc MS`: Red's increment.
    pub winc: Option<u64>,
    /// `binc MS`: Black's increment.
    pub binc: Option<u64>,
    /// `movestogo N`: moves to the next time control.
    pub movestogo: Option<u64>,
    /// `depth N`.
    pub depth: Option<u64>,
    /// `nodes N`.
    pub nodes: Option<u64>,
    /// `mate N`: search for a mate in N moves.
    pub mate: Option<u64>,
    /// `movetime MS`.
    pub movetime: Option<u64>,
    /// `infinite`: search until `stop`.
    pub infinite: bool,
}

/// The words of `go` that take a count, in the order [`Command::format`] writes them.
const GO_COUNTS: [&str; 9] = ["wtime", "btime", "winc", "binc", "movestogo", "depth", "nodes", "mate", "movetime"];

impl Go {
    /// The field of a count word of [`GO_COUNTS`].
    fn count_mut(&mut self, key: &str) -> Option<&mut Option<u64>> {
        Some(match key {
            "wtime" => &mut self.wtime,
            "btime" => &mut self.btime,
            "winc" => &mut self.winc,
            "binc" => &mut self.binc,
            "movestogo" => &mut self.movestogo,
            "depth" => &mut self.depth,
            "nodes" => &mut self.nodes,
            "mate" => &mut self.mate,
            "movetime" => &mut self.movetime,
            _ => return None,
        })
    }

    /// The counts in [`GO_COUNTS`] order.
    fn counts(&self) -> [Option<u64>; 9] {
        [self.wtime, self.btime, self.winc, self.binc, self.movestogo, self.depth, self.nodes, self.mate, self.movetime]
    }

    /// Whether `word` is one of `go`'s own words (which ends a `searchmoves` list).
    fn is_keyword(word: &str) -> bool {
        GO_COUNTS.contains(&word) || matches!(word, "searchmoves" | "ponder" | "infinite")
    }
}

/// Why a line is not a command.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum CommandError {
    /// The line is empty or all whitespace.
    #[error("empty command line")]
    Empty,
    /// The first word is no command (the whole line, trimmed).
    #[error("unknown command {0:?}")]
    Unknown(String),
    /// A `setoption` command without a name.
    #[error("expected setoption name <id> [value <x>]")]
    SetOption,
    /// A malformed `position` command.
    #[error(transparent)]
    Position(#[from] PositionError),
    /// A malformed `go` command.
    #[error(transparent)]
    Go(#[from] GoError),
}

/// What is wrong with a `position` command.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum PositionError {
    /// Neither `startpos` nor `fen` follows `position`.
    #[error("expected position startpos|fen <fen> [moves ...]")]
    NoStart,
    /// The FEN is not a legal position.
    #[error("bad FEN {fen:?}: {source}")]
    Fen {
        /// The FEN as given.
        fen: String,
        /// Why it is not a position.
        source: ParseFenError,
    },
    /// Something other than `moves` follows the position.
    #[error("expected moves after the position, not {0:?}")]
    NotMoves(String),
    /// A move of the list is not a move.
    #[error("move {number}: {source}")]
    Move {
        /// Its number in the list, from 1.
        number: usize,
        /// Why it is not a move.
        source: ParseMoveError,
    },
}

/// What is wrong with a `go` command.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum GoError {
    /// A count word ends the line.
    #[error("go {0} needs a number")]
    MissingNumber(String),
    /// A count word is followed by something else.
    #[error("go {key} needs a number, not {value:?}")]
    BadNumber {
        /// The word.
        key: String,
        /// What followed it.
        value: String,
    },
    /// A word of `searchmoves` is not a move.
    #[error("go searchmoves: {0}")]
    SearchMove(ParseMoveError),
    /// A word that `go` does not take.
    #[error("unknown go argument {0:?}")]
    Unknown(String),
}

impl Command {
    /// Reads a command line (its moves in `ranks`).
    pub fn parse(line: &str, ranks: Ranks) -> Result<Command, CommandError> {
        let line = line.trim();
        let mut words = line.split_whitespace();
        let Some(first) = words.next() else {
            return Err(CommandError::Empty);
        };
        Ok(match first {
            "uci" => Command::Uci,
            "isready" => Command::IsReady,
            "setoption" => parse_setoption(words)?,
            "ucinewgame" => Command::UciNewGame,
            "position" => parse_position(&words.collect::<Vec<_>>(), ranks)?,
            "go" => Command::Go(parse_go(&words.collect::<Vec<_>>(), ranks)?),
            "stop" => Command::Stop,
            "ponderhit" => Command::PonderHit,
            "quit" => Command::Quit,
            "d" => Command::Display,
            _ => return Err(CommandError::Unknown(line.to_string())),
        })
    }

    /// Writes the command line (without its line end; moves in `ranks`, a FEN in our letters).
    pub fn format(&self, ranks: Ranks) -> String {
        self.format_with(ranks, FenLetters::default())
    }

    /// [`Command::format`] for an engine whose FEN writes horses and elephants in `letters`.
    pub fn format_with(&self, ranks: Ranks, letters: FenLetters) -> String {
        match self {
            Command::Uci => "uci".to_string(),
            Command::IsReady => "isready".to_string(),
            Command::SetOption { name, value } => {
                let mut line = format!("setoption name {name}");
                push_field(&mut line, "value", value.as_deref());
                line
            }
            Command::UciNewGame => "ucinewgame".to_string(),
            Command::Position { start, moves } => {
                let mut line = match start {
                    Start::StartPos => "position startpos".to_string(),
                    Start::Fen(position) => format!("position fen {}", letters.fen(position)),
                };
                if !moves.is_empty() {
                    line.push_str(" moves");
                    push_moves(&mut line, moves, ranks);
                }
                line
            }
            Command::Go(go) => {
                let mut line = "go".to_string();
                if !go.searchmoves.is_empty() {
                    line.push_str(" searchmoves");
                    push_moves(&mut line, &go.searchmoves, ranks);
                }
                if go.ponder {
                    line.push_str(" ponder");
                }
                for (key, value) in GO_COUNTS.iter().zip(go.counts()) {
                    push_field(&mut line, key, value);
                }
                if go.infinite {
                    line.push_str(" infinite");
                }
                line
            }
            Command::Stop => "stop".to_string(),
            Command::PonderHit => "ponderhit".to_string(),
            Command::Quit => "quit".to_string(),
            Command::Display => "d".to_string(),
        }
    }
}

/// Reads the words after `setoption`: the name runs to the word `value`, the value to the end
/// (both re-joined with single spaces).
fn parse_setoption<'a>(mut words: impl Iterator<Item = &'a str>) -> Result<Command, CommandError> {
    if words.next() != Some("name") {
        return Err(CommandError::SetOption);
    }
    let words: Vec<&str> = words.collect();
    let (name, value) = match words.iter().position(|&w| w == "value") {
        Some(at) => (&words[..at], Some(words[at + 1..].join(" "))),
        None => (&words[..], None),
    };
    if name.is_empty() {
        return Err(CommandError::SetOption);
    }
    Ok(Command::SetOption { name: name.join(" "), value })
}

/// Reads the words after `position`.
fn parse_position(words: &[&str], ranks: Ranks) -> Result<Command, PositionError> {
    let (start, rest) = match words.split_first() {
        Some((&"startpos", rest)) => (Start::StartPos, rest),
        Some((&"fen", rest)) => {
            let end = rest.iter().position(|&w| w == "moves").unwrap_or(rest.len());
            let fen = rest[..end].join(" ");
            let position = Position::from_fen(&fen).map_err(|source| PositionError::Fen { fen, source })?;
            (Start::Fen(Box::new(position)), &rest[end..])
        }
        _ => return Err(PositionError::NoStart),
    };
    let moves = match rest.split_first() {
        None => &[][..],
        Some((&"moves", moves)) => moves,
        Some((other, _)) => return Err(PositionError::NotMoves(other.to_string())),
    };
    let moves = moves
        .iter()
        .enumerate()
        .map(|(k, text)| parse_move(text, ranks).map_err(|source| PositionError::Move { number: k + 1, source }))
        .collect::<Result<_, _>>()?;
    Ok(Command::Position { start, moves })
}

/// Reads the words after `go`.
fn parse_go(words: &[&str], ranks: Ranks) -> Result<Go, GoError> {
    let mut go = Go::default();
    let mut k = 0;
    while let Some(&word) = words.get(k) {
        k += 1;
        match word {
            "searchmoves" => {
                while let Some(&text) = words.get(k).filter(|w| !Go::is_keyword(w)) {
                    go.searchmoves.push(parse_move(text, ranks).map_err(GoError::SearchMove)?);
                    k += 1;
                }
            }
            "ponder" => go.ponder = true,
            "infinite" => go.infinite = true,
            _ => {
                let Some(field) = go.count_mut(word) else {
                    return Err(GoError::Unknown(word.to_string()));
                };
                let text = words.get(k).ok_or_else(|| GoError::MissingNumber(word.to_string()))?;
                *field = Some(
                    parse_count(text)
                        .ok_or_else(|| GoError::BadNumber { key: word.to_string(), value: text.to_string() })?,
                );
                k += 1;
            }
        }
    }
    Ok(go)
}

/// A message from the engine to the GUI.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Response {
    /// `id name NAME`.
    IdName(String),
    /// `id author AUTHOR`.
    IdAuthor(String),
    /// `uciok`: the end of the answer to `uci`.
    UciOk,
    /// `readyok`: the answer to `isready`.
    ReadyOk,
    /// `option name NAME type ...`: one option the engine offers.
    Option(OptionSpec),
    /// `info ...`: search progress, or free text.
    Info(Info),
    /// `bestmove (MOVE | (none)) [ponder MOVE]`: the end of a search.
    BestMove {
        /// The move chosen; `None` when there is no legal move (`(none)`, or `0000` as some
        /// engines write it).
        best: Option<Move>,
        /// The reply expected, if the engine names one.
        ponder: Option<Move>,
    },
}

/// An option the engine offers (`option name NAME type KIND ...`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OptionSpec {
    /// Its name (it may contain spaces, not the word `type`).
    pub name: String,
    /// Its type with its default and range or choices.
    pub kind: OptionKind,
}

/// The type of an option.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OptionKind {
    /// `type check default true|false`.
    Check {
        /// The default.
        default: bool,
    },
    /// `type spin default N min N max N`.
    Spin {
        /// The default.
        default: i64,
        /// The least value.
        min: i64,
        /// The greatest value.
        max: i64,
    },
    /// `type combo default X var A var B ...`.
    Combo {
        /// The default.
        default: String,
        /// The choices.
        vars: Vec<String>,
    },
    /// `type button`.
    Button,
    /// `type string default TEXT` (the text runs to the end of the line; `<empty>` by convention
    /// for none).
    String {
        /// The default.
        default: String,
    },
}

/// A score from the side to move's point of view, as UCI reports it.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Score {
    /// Centipawns (`score cp N`).
    Cp(i32),
    /// Mate in N moves, negative when the side to move gets mated (`score mate N`).
    Mate(i32),
}

/// Whether a score is only a bound (`lowerbound`, `upperbound` after it).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Bound {
    /// `lowerbound`: the score is at least this.
    Lower,
    /// `upperbound`: the score is at most this.
    Upper,
}

/// The fields of an `info` line; each is optional. [`Response::format`] writes them in the order
/// of the struct, `string` last as it runs to the end of the line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Info {
    /// `depth N`.
    pub depth: Option<u32>,
    /// `seldepth N`.
    pub seldepth: Option<u32>,
    /// `multipv N`: which principal variation this line reports, from 1.
    pub multipv: Option<u32>,
    /// `score cp N` or `score mate N`.
    pub score: Option<Score>,
    /// `lowerbound` or `upperbound`, only written after a score.
    pub bound: Option<Bound>,
    /// `wdl W D L`: win, draw and loss in per mille.
    pub wdl: Option<[u32; 3]>,
    /// `nodes N`.
    pub nodes: Option<u64>,
    /// `nps N`.
    pub nps: Option<u64>,
    /// `hashfull N`: per mille of the hash table in use.
    pub hashfull: Option<u32>,
    /// `tbhits N`.
    pub tbhits: Option<u64>,
    /// `time MS`: the search's time so far.
    pub time: Option<u64>,
    /// `currmove M`: the root move being searched (left out if it does not read as a move).
    pub currmove: Option<Move>,
    /// `currmovenumber N`.
    pub currmovenumber: Option<u32>,
    /// `pv M...`: the principal variation; it runs to `string` or the end of the line, and is cut
    /// at the first word that does not read as a move.
    pub pv: Vec<Move>,
    /// `string TEXT`: free text to the end of the line.
    pub string: Option<String>,
}

impl Info {
    /// An `info string TEXT` line.
    pub fn string(text: impl Into<String>) -> Info {
        Info { string: Some(text.into()), ..Info::default() }
    }
}

/// Why a line is not a response.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum ResponseError {
    /// The line is empty or all whitespace.
    #[error("empty response line")]
    Empty,
    /// The first words are no response (the whole line, trimmed).
    #[error("unknown response {0:?}")]
    Unknown(String),
    /// A word that needs a value ends the line.
    #[error("{0} needs a value")]
    MissingValue(String),
    /// A word that takes a number is followed by something else.
    #[error("{key} needs a number, not {value:?}")]
    BadNumber {
        /// The word.
        key: String,
        /// What followed it.
        value: String,
    },
    /// A score that is neither `cp` nor `mate`.
    #[error("score is cp or mate, not {0:?}")]
    ScoreKind(String),
    /// A word that takes moves is followed by something that is not one.
    #[error("{key}: {source}")]
    Move {
        /// The word (`bestmove` or `ponder`).
        key: String,
        /// Why it is not a move.
        source: ParseMoveError,
    },
    /// An `option` line without `name NAME type`.
    #[error("expected option name <id> type <t> ...")]
    OptionName,
    /// An option type that UCI does not have.
    #[error("unknown option type {0:?}")]
    OptionType(String),
    /// A check option whose default is not `true` or `false`.
    #[error("a check option's default is true or false, not {0:?}")]
    CheckDefault(String),
}

impl Response {
    /// Reads a response line (its moves in `ranks`).
    pub fn parse(line: &str, ranks: Ranks) -> Result<Response, ResponseError> {
        let line = line.trim();
        let unknown = || ResponseError::Unknown(line.to_string());
        let Some((first, rest)) = split_word(line) else {
            return Err(ResponseError::Empty);
        };
        Ok(match first {
            "id" => match split_word(rest) {
                Some(("name", rest)) => Response::IdName(rest.trim().to_string()),
                Some(("author", rest)) => Response::IdAuthor(rest.trim().to_string()),
                _ => return Err(unknown()),
            },
            "uciok" => Response::UciOk,
            "readyok" => Response::ReadyOk,
            "option" => Response::Option(parse_option(rest)?),
            "info" => Response::Info(parse_info(rest, ranks)?),
            "bestmove" => {
                let mut words = rest.split_whitespace();
                let best = words.next().ok_or_else(|| ResponseError::MissingValue("bestmove".to_string()))?;
                let best = parse_optional_move("bestmove", best, ranks)?;
                let ponder = match (words.next(), words.next()) {
                    (Some("ponder"), Some(text)) => parse_optional_move("ponder", text, ranks)?,
                    (Some("ponder"), None) => return Err(ResponseError::MissingValue("ponder".to_string())),
                    _ => None,
                };
                Response::BestMove { best, ponder }
            }
            _ => return Err(unknown()),
        })
    }

    /// Writes the response line (without its line end; moves in `ranks`).
    pub fn format(&self, ranks: Ranks) -> String {
        match self {
            Response::IdName(name) => format!("id name {name}"),
            Response::IdAuthor(author) => format!("id author {author}"),
            Response::UciOk => "uciok".to_string(),
            Response::ReadyOk => "readyok".to_string(),
            Response::Option(spec) => format_option(spec),
            Response::Info(info) => format_info(info, ranks),
            Response::BestMove { best, ponder } => {
                let mut line = "bestmove ".to_string();
                line.push_str(&best.map_or_else(|| "(none)".to_string(), |mv| format_move(mv, ranks)));
                push_field(&mut line, "ponder", ponder.map(|mv| format_move(mv, ranks)));
                line
            }
        }
    }

    /// An `info string TEXT` response.
    pub fn info_string(text: impl Into<String>) -> Response {
        Response::Info(Info::string(text))
    }
}

/// A move of `bestmove` or `ponder`; `(none)` and `0000` are no move.
fn parse_optional_move(key: &str, text: &str, ranks: Ranks) -> Result<Option<Move>, ResponseError> {
    if text == "(none)" || text == "0000" {
        return Ok(None);
    }
    parse_move(text, ranks).map(Some).map_err(|source| ResponseError::Move { key: key.to_string(), source })
}

/// Reads a number for `key`.
fn parse_number<T: std::str::FromStr>(key: &str, text: Option<&str>) -> Result<T, ResponseError> {
    let text = text.ok_or_else(|| ResponseError::MissingValue(key.to_string()))?;
    text.parse().map_err(|_| ResponseError::BadNumber { key: key.to_string(), value: text.to_string() })
}

/// Reads the text after `info`.
fn parse_info(mut rest: &str, ranks: Ranks) -> Result<Info, ResponseError> {
    let mut info = Info::default();
    while let Some((key, after)) = split_word(rest) {
        rest = after;
        // Takes the next word of the line.
        let mut word = || {
            let (word, after) = split_word(rest)?;
            rest = after;
            Some(word)
        };
        match key {
            "depth" => info.depth = Some(parse_number(key, word())?),
            "seldepth" => info.seldepth = Some(parse_number(key, word())?),
            "multipv" => info.multipv = Some(parse_number(key, word())?),
            "score" => {
                let kind = word().ok_or_else(|| ResponseError::MissingValue(key.to_string()))?;
                info.score = Some(match kind {
                    "cp" => Score::Cp(parse_number("score cp", word())?),
                    "mate" => Score::Mate(parse_number("score mate", word())?),
                    _ => return Err(ResponseError::ScoreKind(kind.to_string())),
                });
            }
            "lowerbound" => info.bound = Some(Bound::Lower),
            "upperbound" => info.bound = Some(Bound::Upper),
            "wdl" => {
                info.wdl = Some([parse_number(key, word())?, parse_number(key, word())?, parse_number(key, word())?])
            }
            "nodes" => info.nodes = Some(parse_number(key, word())?),
            "nps" => info.nps = Some(parse_number(key, word())?),
            "hashfull" => info.hashfull = Some(parse_number(key, word())?),
            "tbhits" => info.tbhits = Some(parse_number(key, word())?),
            "time" => info.time = Some(parse_number(key, word())?),
            // Moves of an `info` line are advisory: one that does not read in the dialect (an
            // engine configured with the wrong one, say) leaves the move out rather than losing
            // the line's score and depth.
            "currmove" => {
                let text = word().ok_or_else(|| ResponseError::MissingValue(key.to_string()))?;
                info.currmove = parse_move(text, ranks).ok();
            }
            "currmovenumber" => info.currmovenumber = Some(parse_number(key, word())?),
            "pv" => {
                info.pv.clear();
                let mut readable = true;
                while let Some((text, after)) = split_word(rest).filter(|&(w, _)| w != "string") {
                    rest = after;
                    match parse_move(text, ranks) {
                        Ok(mv) if readable => info.pv.push(mv),
                        _ => readable = false,
                    }
                }
            }
            "string" => {
                info.string = Some(rest.trim().to_string());
                break;
            }
            // Unknown words (`cpuload`, `sbhits`, `refutation`, an engine's own) are skipped, as
            // UCI asks; the words after them then pass as unknown ones too.
            _ => {}
        }
    }
    Ok(info)
}

/// Writes an `info` line.
fn format_info(info: &Info, ranks: Ranks) -> String {
    let mut line = "info".to_string();
    push_field(&mut line, "depth", info.depth);
    push_field(&mut line, "seldepth", info.seldepth);
    push_field(&mut line, "multipv", info.multipv);
    if let Some(score) = info.score {
        match score {
            Score::Cp(cp) => push_field(&mut line, "score cp", Some(cp)),
            Score::Mate(moves) => push_field(&mut line, "score mate", Some(moves)),
        }
        match info.bound {
            Some(Bound::Lower) => line.push_str(" lowerbound"),
            Some(Bound::Upper) => line.push_str(" upperbound"),
            None => {}
        }
    }
    push_field(&mut line, "wdl", info.wdl.map(|[w, d, l]| format!("{w} {d} {l}")));
    push_field(&mut line, "nodes", info.nodes);
    push_field(&mut line, "nps", info.nps);
    push_field(&mut line, "hashfull", info.hashfull);
    push_field(&mut line, "tbhits", info.tbhits);
    push_field(&mut line, "time", info.time);
    push_field(&mut line, "currmove", info.currmove.map(|mv| format_move(mv, ranks)));
    push_field(&mut line, "currmovenumber", info.currmovenumber);
    if !info.pv.is_empty() {
        line.push_str(" pv");
        push_moves(&mut line, &info.pv, ranks);
    }
    push_field(&mut line, "string", info.string.as_deref());
    line
}

/// Reads the text after `option`.
fn parse_option(rest: &str) -> Result<OptionSpec, ResponseError> {
    let words: Vec<&str> = rest.split_whitespace().collect();
    let (Some(&"name"), Some(type_at)) = (words.first(), words.iter().position(|&w| w == "type")) else {
        return Err(ResponseError::OptionName);
    };
    let name = words[1..type_at].join(" ");
    let kind = *words.get(type_at + 1).ok_or(ResponseError::OptionName)?;
    if name.is_empty() {
        return Err(ResponseError::OptionName);
    }
    let args = &words[type_at + 2..];
    // The words after `key` up to the next of `stops` (or the end).
    let value = |key: &str, stops: &[&str]| -> Option<String> {
        let at = args.iter().position(|&w| w == key)?;
        let tail = &args[at + 1..];
        let end = tail.iter().position(|w| stops.contains(w)).unwrap_or(tail.len());
        Some(tail[..end].join(" "))
    };
    let number = |key: &str| -> Result<i64, ResponseError> {
        let text =
            value(key, &["default", "min", "max"]).ok_or_else(|| ResponseError::MissingValue(key.to_string()))?;
        parse_number(key, Some(text.as_str()))
    };
    let kind = match kind {
        "check" => {
            let text = value("default", &[]).ok_or_else(|| ResponseError::MissingValue("default".to_string()))?;
            OptionKind::Check {
                default: match text.as_str() {
                    "true" => true,
                    "false" => false,
                    _ => return Err(ResponseError::CheckDefault(text)),
                },
            }
        }
        "spin" => OptionKind::Spin { default: number("default")?, min: number("min")?, max: number("max")? },
        "combo" => {
            let default = value("default", &["var"]).unwrap_or_default();
            let vars = args.iter().enumerate().filter(|&(_, &w)| w == "var").map(|(at, _)| {
                let tail = &args[at + 1..];
                tail[..tail.iter().position(|&w| w == "var").unwrap_or(tail.len())].join(" ")
            });
            OptionKind::Combo { default, vars: vars.collect() }
        }
        "button" => OptionKind::Button,
        // The default runs to the end of the line (its words re-joined with single spaces).
        "string" => OptionKind::String { default: value("default", &[]).unwrap_or_default() },
        other => return Err(ResponseError::OptionType(other.to_string())),
    };
    Ok(OptionSpec { name, kind })
}

/// Writes an `option` line.
fn format_option(spec: &OptionSpec) -> String {
    let mut line = format!("option name {} type ", spec.name);
    match &spec.kind {
        OptionKind::Check { default } => {
            let _ = write!(line, "check default {default}");
        }
        OptionKind::Spin { default, min, max } => {
            let _ = write!(line, "spin default {default} min {min} max {max}");
        }
        OptionKind::Combo { default, vars } => {
            let _ = write!(line, "combo default {default}");
            for var in vars {
                let _ = write!(line, " var {var}");
            }
        }
        OptionKind::Button => line.push_str("button"),
        OptionKind::String { default } => {
            let _ = write!(line, "string default {default}");
        }
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn mv(text: &str) -> Move {
        text.parse().unwrap()
    }

    #[test]
    fn fairy_stockfish_ranks_start_at_one() {
        for (ours, theirs) in
            [("h2e2", "h3e3"), ("a9a8", "a10a9"), ("b2b9", "b3b10"), ("e0e1", "e1e2"), ("i9i0", "i10i1")]
        {
            assert_eq!(format_move(mv(ours), Ranks::FromOne), theirs);
            assert_eq!(parse_move(theirs, Ranks::FromOne), Ok(mv(ours)));
            assert_eq!(format_move(mv(ours), Ranks::FromZero), ours);
            assert_eq!(parse_move(ours, Ranks::FromZero), Ok(mv(ours)));
        }
    }

    #[test]
    fn every_square_pair_round_trips_in_both_dialects() {
        for from in Square::all() {
            for to in Square::all() {
                let m = Move::new(from, to);
                assert_eq!(format_move(m, Ranks::FromZero), m.to_string());
                for ranks in [Ranks::FromZero, Ranks::FromOne] {
                    assert_eq!(parse_move(&format_move(m, ranks), ranks), Ok(m), "{m} in {ranks}");
                }
            }
        }
    }

    #[test]
    fn legal_moves_of_positions_round_trip() {
        let mut pos = Position::startpos();
        for text in ["h2e2", "h9g7", "h0g2", "i9h9", "i0h0", "b9c7", "e2e6", "a6a5"] {
            for &m in &pos.legal_moves() {
                let one = format_move(m, Ranks::FromOne);
                let tens = [m.from(), m.to()].iter().filter(|sq| sq.rank().index() == 9).count();
                assert_eq!(one.len(), 4 + tens, "{one}");
                assert_eq!(parse_move(&one, Ranks::FromOne), Ok(m));
                assert_eq!(parse_move(&m.to_string(), Ranks::FromZero), Ok(m));
            }
            pos.play(mv(text)).unwrap();
        }
    }

    #[test]
    fn malformed_moves_are_rejected() {
        for text in
            ["", "a", "a1", "a1a", "a0a1", "a1a0", "a11a1", "a01a2", "j1a1", "A1A2", "a1a2 ", "a1-a2", "a10a10x"]
        {
            let err = parse_move(text, Ranks::FromOne).unwrap_err();
            assert_eq!(err, ParseMoveError { text: text.to_string(), ranks: Ranks::FromOne });
        }
        for text in ["", "a10a9", "a9a10", "j0a0", "h2e", "h2e2e", "H2E2", "h2-e2", "(none)", "0000"] {
            assert!(parse_move(text, Ranks::FromZero).is_err(), "{text}");
        }
        assert_eq!(parse_move("a10a10", Ranks::FromOne), Ok(mv("a9a9")));
        assert!(parse_move("a9a8", Ranks::FromZero).is_ok());
    }

    #[test]
    fn commands_parse() {
        let z = Ranks::FromZero;
        assert_eq!(Command::parse("  uci  ", z), Ok(Command::Uci));
        assert_eq!(Command::parse("stop now", z), Ok(Command::Stop));
        assert_eq!(
            Command::parse("setoption name Move  Overhead value 100", z),
            Ok(Command::SetOption { name: "Move Overhead".into(), value: Some("100".into()) })
        );
        assert_eq!(
            Command::parse("setoption name ModelFile value /a b/value c.json", z),
            Ok(Command::SetOption { name: "ModelFile".into(), value: Some("/a b/value c.json".into()) })
        );
        assert_eq!(
            Command::parse("setoption name Clear Hash", z),
            Ok(Command::SetOption { name: "Clear Hash".into(), value: None })
        );
        assert_eq!(
            Command::parse("setoption name Hash value", z),
            Ok(Command::SetOption { name: "Hash".into(), value: Some(String::new()) })
        );
        let fen = "3k5/9/9/9/9/9/9/9/R8/4K4 w - - 0 1";
        assert_eq!(
            Command::parse(&format!("position fen {fen} moves a1a2"), z),
            Ok(Command::Position {
                start: Start::Fen(Box::new(Position::from_fen(fen).unwrap())),
                moves: vec![mv("a1a2")]
            })
        );
        assert_eq!(
            Command::parse("position startpos moves h3e3 h10g8", Ranks::FromOne),
            Ok(Command::Position { start: Start::StartPos, moves: vec![mv("h2e2"), mv("h9g7")] })
        );
        assert_eq!(
            Command::parse("go searchmoves h2e2 b2e2 ponder wtime -5 movestogo 3 infinite", z),
            Ok(Command::Go(Go {
                searchmoves: vec![mv("h2e2"), mv("b2e2")],
                ponder: true,
                wtime: Some(0),
                movestogo: Some(3),
                infinite: true,
                ..Go::default()
            }))
        );
    }

    #[test]
    fn bad_commands_name_what_is_wrong() {
        let z = Ranks::FromZero;
        let err = |line: &str| Command::parse(line, z).unwrap_err();
        assert_eq!(err(" \t "), CommandError::Empty);
        assert_eq!(err("joho debug on"), CommandError::Unknown("joho debug on".into()));
        assert_eq!(err("setoption"), CommandError::SetOption);
        assert_eq!(err("setoption name value 3"), CommandError::SetOption);
        assert_eq!(err("position"), CommandError::Position(PositionError::NoStart));
        assert_eq!(err("position moves h2e2"), CommandError::Position(PositionError::NoStart));
        assert!(
            matches!(err("position fen garbage"), CommandError::Position(PositionError::Fen { fen, .. }) if fen == "garbage")
        );
        assert_eq!(err("position startpos h2e2"), CommandError::Position(PositionError::NotMoves("h2e2".into())));
        assert_eq!(
            err("position startpos moves h2e2 h2e10"),
            CommandError::Position(PositionError::Move {
                number: 2,
                source: ParseMoveError { text: "h2e10".into(), ranks: z }
            })
        );
        assert_eq!(err("go nodes"), CommandError::Go(GoError::MissingNumber("nodes".into())));
        assert_eq!(err("go nodes x"), CommandError::Go(GoError::BadNumber { key: "nodes".into(), value: "x".into() }));
        assert_eq!(err("go sideways"), CommandError::Go(GoError::Unknown("sideways".into())));
        assert!(matches!(err("go searchmoves h2e2 x"), CommandError::Go(GoError::SearchMove(_))));
        assert_eq!(err("go nodes x").to_string(), "go nodes needs a number, not \"x\"");
    }

    #[test]
    fn responses_of_real_engines_parse() {
        let one = Ranks::FromOne;
        // Fairy-Stockfish 11.1's lines.
        assert_eq!(
            Response::parse("id name Fairy-Stockfish 11.1 LB", one),
            Ok(Response::IdName("Fairy-Stockfish 11.1 LB".into()))
        );
        let Ok(Response::Option(variant)) =
            Response::parse("option name UCI_Variant type combo default chess var 3check var xiangqi var janggi", one)
        else {
            panic!()
        };
        assert_eq!(
            variant,
            OptionSpec {
                name: "UCI_Variant".into(),
                kind: OptionKind::Combo {
                    default: "chess".into(),
                    vars: vec!["3check".into(), "xiangqi".into(), "janggi".into()]
                }
            }
        );
        assert_eq!(
            Response::parse("option name Debug Log File type string default ", one),
            Ok(Response::Option(OptionSpec {
                name: "Debug Log File".into(),
                kind: OptionKind::String { default: String::new() }
            }))
        );
        assert_eq!(
            Response::parse("option name Skill Level type spin default 20 min -20 max 20", one),
            Ok(Response::Option(OptionSpec {
                name: "Skill Level".into(),
                kind: OptionKind::Spin { default: 20, min: -20, max: 20 }
            }))
        );
        assert_eq!(
            Response::parse("option name Clear Hash type button", one),
            Ok(Response::Option(OptionSpec { name: "Clear Hash".into(), kind: OptionKind::Button }))
        );
        let line = "info depth 7 seldepth 9 multipv 1 score cp -35 lowerbound nodes 2842 nps 123565 hashfull 3 tbhits 0 time 23 pv h3e3 h10g8";
        assert_eq!(
            Response::parse(line, one),
            Ok(Response::Info(Info {
                depth: Some(7),
                seldepth: Some(9),
                multipv: Some(1),
                score: Some(Score::Cp(-35)),
                bound: Some(Bound::Lower),
                nodes: Some(2842),
                nps: Some(123_565),
                hashfull: Some(3),
                tbhits: Some(0),
                time: Some(23),
                pv: vec![mv("h2e2"), mv("h9g7")],
                ..Info::default()
            }))
        );
        // Unknown words are skipped.
        assert_eq!(
            Response::parse("info depth 2 cpuload 500 sbhits 0", one),
            Ok(Response::Info(Info { depth: Some(2), ..Info::default() }))
        );
        assert_eq!(Response::parse("info string NNUE  evaluation", one), Ok(Response::info_string("NNUE  evaluation")));
        assert_eq!(Response::parse("bestmove (none)", one), Ok(Response::BestMove { best: None, ponder: None }));
        assert_eq!(Response::parse("bestmove 0000", one), Ok(Response::BestMove { best: None, ponder: None }));
        assert_eq!(
            Response::parse("bestmove a10a9 ponder i1i2", one),
            Ok(Response::BestMove { best: Some(mv("a9a8")), ponder: Some(mv("i0i1")) })
        );
    }

    #[test]
    fn bad_responses_name_what_is_wrong() {
        let z = Ranks::FromZero;
        let err = |line: &str| Response::parse(line, z).unwrap_err();
        assert_eq!(err(""), ResponseError::Empty);
        assert_eq!(err("Fake engine, ready"), ResponseError::Unknown("Fake engine, ready".into()));
        assert_eq!(err("id nickname x"), ResponseError::Unknown("id nickname x".into()));
        assert_eq!(err("bestmove"), ResponseError::MissingValue("bestmove".into()));
        assert_eq!(
            err("bestmove h2-e2"),
            ResponseError::Move { key: "bestmove".into(), source: ParseMoveError { text: "h2-e2".into(), ranks: z } }
        );
        assert!(matches!(err("bestmove h2e2 ponder a10a9"), ResponseError::Move { key, .. } if key == "ponder"));
        assert_eq!(err("info depth x"), ResponseError::BadNumber { key: "depth".into(), value: "x".into() });
        assert_eq!(err("info nodes"), ResponseError::MissingValue("nodes".into()));
        assert_eq!(err("info score pawns 3"), ResponseError::ScoreKind("pawns".into()));
        // The moves of an info line are advisory: the line keeps its other values.
        assert_eq!(
            Response::parse("info depth 3 currmove a10a9 pv h2e2 a10a9 h9g7 nodes 1", z),
            Ok(Response::Info(Info { depth: Some(3), pv: vec![mv("h2e2")], ..Info::default() }))
        );
        assert_eq!(err("option type spin"), ResponseError::OptionName);
        assert_eq!(err("option name type spin"), ResponseError::OptionName);
        assert_eq!(err("option name X type slider"), ResponseError::OptionType("slider".into()));
        assert_eq!(err("option name X type check default maybe"), ResponseError::CheckDefault("maybe".into()));
        assert_eq!(err("option name X type spin default 1 max 3"), ResponseError::MissingValue("min".into()));
    }

    fn ranks() -> impl Strategy<Value = Ranks> {
        prop_oneof![Just(Ranks::FromZero), Just(Ranks::FromOne)]
    }

    fn a_move() -> impl Strategy<Value = Move> {
        (0u8..9, 0u8..10, 0u8..9, 0u8..10).prop_map(|(f1, r1, f2, r2)| {
            let square = |f, r| Square::new(File::new(f).unwrap(), Rank::new(r).unwrap());
            Move::new(square(f1, r1), square(f2, r2))
        })
    }

    /// A position reached by legal moves from the start (choices taken modulo the legal moves).
    fn a_position() -> impl Strategy<Value = Position> {
        prop::collection::vec(any::<u16>(), 0..40).prop_map(|choices| {
            let mut position = Position::startpos();
            for choice in choices {
                let legal = position.legal_moves();
                if legal.is_empty() {
                    break;
                }
                position.play(legal[usize::from(choice) % legal.len()]).unwrap();
            }
            position
        })
    }

    /// A word that is no keyword of the messages it goes into.
    fn a_word() -> impl Strategy<Value = String> {
        "[A-Za-z0-9_./<>-]{1,8}".prop_filter("a keyword", |w| {
            !["name", "value", "type", "default", "min", "max", "var"].contains(&w.as_str())
        })
    }

    /// Words joined by single spaces (at least `min` of them).
    fn words(min: usize) -> impl Strategy<Value = String> {
        prop::collection::vec(a_word(), min..4).prop_map(|w| w.join(" "))
    }

    fn a_count() -> impl Strategy<Value = Option<u64>> {
        prop::option::of(any::<u64>())
    }

    fn a_go() -> impl Strategy<Value = Go> {
        (prop::collection::vec(a_move(), 0..3), any::<bool>(), prop::array::uniform9(a_count()), any::<bool>())
            .prop_map(|(searchmoves, ponder, counts, infinite)| {
                let mut go = Go { searchmoves, ponder, infinite, ..Go::default() };
                for (key, value) in GO_COUNTS.iter().zip(counts) {
                    *go.count_mut(key).unwrap() = value;
                }
                go
            })
    }

    fn a_command() -> impl Strategy<Value = Command> {
        prop_oneof![
            Just(Command::Uci),
            Just(Command::IsReady),
            Just(Command::UciNewGame),
            Just(Command::Stop),
            Just(Command::PonderHit),
            Just(Command::Quit),
            Just(Command::Display),
            (words(1), prop::option::of(words(0))).prop_map(|(name, value)| Command::SetOption { name, value }),
            (prop::option::of(a_position()), prop::collection::vec(a_move(), 0..6)).prop_map(|(fen, moves)| {
                Command::Position { start: fen.map_or(Start::StartPos, |p| Start::Fen(Box::new(p))), moves }
            }),
            a_go().prop_map(Command::Go),
        ]
    }

    fn a_score() -> impl Strategy<Value = Score> {
        prop_oneof![any::<i32>().prop_map(Score::Cp), any::<i32>().prop_map(Score::Mate)]
    }

    fn an_info() -> impl Strategy<Value = Info> {
        let head = (
            prop::option::of(any::<u32>()),
            prop::option::of(any::<u32>()),
            prop::option::of(any::<u32>()),
            prop::option::of((a_score(), prop::option::of(prop_oneof![Just(Bound::Lower), Just(Bound::Upper)]))),
            prop::option::of(any::<[u32; 3]>()),
            a_count(),
            a_count(),
        );
        let tail = (
            prop::option::of(any::<u32>()),
            a_count(),
            a_count(),
            prop::option::of(a_move()),
            prop::option::of(any::<u32>()),
            prop::collection::vec(a_move(), 0..5),
            prop::option::of(words(0)),
        );
        (head, tail).prop_map(
            |(
                (depth, seldepth, multipv, score, wdl, nodes, nps),
                (hashfull, tbhits, time, currmove, currmovenumber, pv, string),
            )| Info {
                depth,
                seldepth,
                multipv,
                score: score.map(|(s, _)| s),
                bound: score.and_then(|(_, b)| b),
                wdl,
                nodes,
                nps,
                hashfull,
                tbhits,
                time,
                currmove,
                currmovenumber,
                pv,
                string,
            },
        )
    }

    fn an_option() -> impl Strategy<Value = OptionSpec> {
        let kind = prop_oneof![
            any::<bool>().prop_map(|default| OptionKind::Check { default }),
            (any::<i64>(), any::<i64>(), any::<i64>()).prop_map(|(default, min, max)| OptionKind::Spin {
                default,
                min,
                max
            }),
            (a_word(), prop::collection::vec(words(1), 0..4))
                .prop_map(|(default, vars)| OptionKind::Combo { default, vars }),
            Just(OptionKind::Button),
            words(0).prop_map(|default| OptionKind::String { default }),
        ];
        (words(1), kind).prop_map(|(name, kind)| OptionSpec { name, kind })
    }

    fn a_response() -> impl Strategy<Value = Response> {
        prop_oneof![
            words(0).prop_map(Response::IdName),
            words(0).prop_map(Response::IdAuthor),
            Just(Response::UciOk),
            Just(Response::ReadyOk),
            an_option().prop_map(Response::Option),
            an_info().prop_map(Response::Info),
            (prop::option::of(a_move()), prop::option::of(a_move()))
                .prop_map(|(best, ponder)| Response::BestMove { best, ponder }),
        ]
    }

    proptest! {
        #[test]
        fn commands_round_trip(command in a_command(), ranks in ranks()) {
            let line = command.format(ranks);
            prop_assert_eq!(Command::parse(&line, ranks), Ok(command), "{}", line);
        }

        #[test]
        fn responses_round_trip(response in a_response(), ranks in ranks()) {
            let line = response.format(ranks);
            prop_assert_eq!(Response::parse(&line, ranks), Ok(response), "{}", line);
        }

        #[test]
        fn any_line_parses_or_fails_without_panicking(line in "[ -~]{0,60}", ranks in ranks()) {
            let _ = Command::parse(&line, ranks);
            let _ = Response::parse(&line, ranks);
        }
    }
}
