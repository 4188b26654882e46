//! Reading PGN: Xiangqi games as PGN tools write them (the reader of what [`pgn`](super::pgn())
//! writes, and of the files of other programs).
//!
//! ```
//! use xiangqi::notation::{PgnReader, PgnResult};
//!
//! let text = "[Game \"Chinese Chess\"]\n[Result \"1-0\"]\n\n1. 炮二平五 {中炮} 马8进7 (1... 炮8平5) 2. 马二进三 $1 1-0\n";
//! let mut games = PgnReader::new(text.as_bytes());
//! let game = games.next().unwrap()?; // parsed, without a position
//! assert_eq!(game.tag("Result"), Some("1-0"));
//! let resolved = game.resolve()?; // the moves resolved against the start position
//! let moves: Vec<String> = resolved.moves.iter().map(|m| m.to_string()).collect();
//! assert_eq!(moves, ["h2e2", "h9g7", "h0g2"]);
//! assert_eq!(resolved.result, PgnResult::RedWin);
//! assert!(games.next().is_none());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # What is read
//!
//! A game is a tag section (`[Name "value"]` lines, `\"` and `\\` escaped) and movetext; the next
//! tag line after movetext starts the next game. Movetext holds move numbers (`1.`, `1...`,
//! attached as in `1.h2e2` too), moves, `{comments}` (across lines), `;` comments (to the end of
//! the line), variations `( ... )` (nested, skipped), NAGs `$n`, `!`/`?` suffixes and the result
//! `1-0`, `0-1`, `1/2-1/2` or `*`. Lines starting with `%` are skipped.
//!
//! Moves are in one notation per game: ICCS coordinates (`h2e2`, `H2-E2`), WXF (`C2.5`) or Chinese
//! (`炮二平五`). The `[Format]` tag (`ICCS`, `WXF`, `Chinese`) says which; without it the first
//! move decides (coordinates if it reads as coordinates, Chinese if it is not ASCII, WXF
//! otherwise). `[FEN]` gives a start other than the standard one. The result is the movetext's
//! terminator, or the `[Result]` tag where the movetext has none; the two must agree.
//!
//! # Bounded memory
//!
//! [`PgnReader`] reads its input line by line and holds one game at a time: a game longer than
//! its limit ([`MAX_GAME_BYTES`] by default) is an error ([`PgnErrorKind::TooLarge`]) and the
//! reader skips to the next game, so any one broken game costs only itself. Every error names the
//! line it was found on; after an error in a game, the next call reads the next game.

use std::io::{self, BufRead};

use thiserror::Error;

use super::{Chinese, MoveNotation, ParseChineseError, ParseMoveError, ParseWxfError, ResolveError, Wxf};
use crate::position::{IllegalMoveError, ParseFenError, Position};
use crate::types::Move;

/// The most bytes of one game (tags, movetext and comments) a [`PgnReader`] holds by default.
pub const MAX_GAME_BYTES: usize = 1 << 20;

/// A PGN game's result.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum PgnResult {
    /// `1-0`.
    RedWin,
    /// `0-1`.
    BlackWin,
    /// `1/2-1/2`.
    Draw,
    /// `*`, or no result given: unfinished or unknown.
    Unknown,
}

impl PgnResult {
    /// The result written as PGN writes it, if `text` is one.
    pub fn from_pgn(text: &str) -> Option<PgnResult> {
        Some(match text {
            "1-0" => PgnResult::RedWin,
            "0-1" => PgnResult::BlackWin,
            "1/2-1/2" => PgnResult::Draw,
            "*" => PgnResult::Unknown,
            _ => return None,
        })
    }
}

/// A move read without a position, in the notation it was written in.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Notated {
    /// Coordinates (ICCS): the move itself.
    Coord(Move),
    /// WXF.
    Wxf(Wxf),
    /// Chinese.
    Chinese(Chinese),
}

/// A move of a [`PgnGame`]: its text, the line it is on, and what it says.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PgnMove {
    /// The text as written (without move number or `!`/`?` suffix).
    pub text: String,
    /// Its line in the input (1 = first).
    pub line: usize,
    /// The move it describes.
    pub notated: Notated,
}

/// A game as read, before its moves are resolved against a position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PgnGame {
    /// The line of the game's first tag or move.
    pub line: usize,
    /// The tags in order, values unescaped.
    pub tags: Vec<(String, String)>,
    /// The notation of its moves (`None` for a game without moves).
    pub notation: Option<MoveNotation>,
    /// The moves of the main line.
    pub moves: Vec<PgnMove>,
    /// The result (the terminator, or else the `[Result]` tag).
    pub result: PgnResult,
}

/// A game resolved: its start and legal moves.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResolvedGame {
    /// The start position (`[FEN]`, or the standard start).
    pub start: Position,
    /// The moves, each legal in turn.
    pub moves: Vec<Move>,
    /// The result.
    pub result: PgnResult,
}

/// What is wrong with a game of a PGN input, or with reading it.
#[derive(Debug, Error)]
#[error("line {line}: {kind}")]
pub struct PgnError {
    /// The line it was found on (1 = first).
    pub line: usize,
    /// What is wrong.
    pub kind: PgnErrorKind,
}

/// The kinds of [`PgnError`].
#[derive(Debug, Error)]
pub enum PgnErrorKind {
    /// Reading the input failed; the reader stops.
    #[error("reading failed: {0}")]
    Io(#[source] io::Error),
    /// The game is longer than the reader's limit.
    #[error("the game is larger than {limit} bytes, the limit of one game")]
    TooLarge {
        /// The limit in bytes.
        limit: usize,
    },
    /// The game's text is not UTF-8.
    #[error("the text is not UTF-8 (convert GBK files first, e.g. with iconv -f gbk -t utf-8)")]
    NotUtf8,
    /// A tag line does not read as `[Name "value"]`.
    #[error("bad tag {0:?} (expected [Name \"value\"])")]
    BadTag(String),
    /// The `[Game]` tag names another game.
    #[error("[Game {0:?}] is not Chinese Chess")]
    OtherGame(String),
    /// The `[Format]` tag names no notation this reader knows.
    #[error("unknown notation [Format {0:?}] (expected ICCS, WXF or Chinese)")]
    UnknownFormat(String),
    /// The `[Result]` tag is not a PGN result.
    #[error("bad [Result {0:?}] (expected 1-0, 0-1, 1/2-1/2 or *)")]
    BadResult(String),
    /// The `[Result]` tag and the movetext's terminator differ.
    #[error("the result {terminator} contradicts [Result {tag:?}]")]
    ResultMismatch {
        /// The tag's value.
        tag: String,
        /// The movetext's terminator.
        terminator: String,
    },
    /// The `[FEN]` tag is not a legal position.
    #[error("bad [FEN {fen:?}]: {source}")]
    BadFen {
        /// The tag's value.
        fen: String,
        /// Why.
        source: ParseFenError,
    },
    /// A `{comment}` or variation is not closed before the game ends.
    #[error("a {0} is not closed before the end of the game")]
    Unclosed(&'static str),
    /// A `)` or `}` that closes nothing.
    #[error("{0:?} closes nothing")]
    Unbalanced(char),
    /// A move after the result.
    #[error("move {0:?} after the result")]
    AfterResult(String),
    /// The first move reads in none of the notations.
    #[error("move {0:?} is not in ICCS, WXF or Chinese notation")]
    UnknownNotation(String),
    /// A move does not read in the game's notation.
    #[error("move {text:?}: {source}")]
    BadMove {
        /// The text.
        text: String,
        /// Why it does not read.
        source: BadMoveText,
    },
    /// A move does not denote a legal move where it is played.
    #[error("ply {ply}, move {text:?}: {source}")]
    Unresolved {
        /// Its index in the game (0 = first move).
        ply: usize,
        /// The text.
        text: String,
        /// Why.
        source: Unresolved,
    },
}

/// Why a move's text does not read in the game's notation.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum BadMoveText {
    /// Not coordinates.
    #[error(transparent)]
    Coord(#[from] ParseMoveError),
    /// Not WXF.
    #[error(transparent)]
    Wxf(#[from] ParseWxfError),
    /// Not Chinese.
    #[error(transparent)]
    Chinese(#[from] ParseChineseError),
}

/// Why a move read does not play in its position.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum Unresolved {
    /// A WXF or Chinese description that fits no single legal move.
    #[error(transparent)]
    Describe(#[from] ResolveError),
    /// Coordinates of an illegal move.
    #[error(transparent)]
    Illegal(#[from] IllegalMoveError),
}

impl PgnGame {
    /// The value of the first tag `name`.
    pub fn tag(&self, name: &str) -> Option<&str> {
        self.tags.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    /// Resolves the moves from the start (`[FEN]` or the standard start); the first move that is
    /// not legal where it is played is the error, with its line and text.
    pub fn resolve(&self) -> Result<ResolvedGame, PgnError> {
        let start = match self.tag("FEN") {
            Some(fen) => Position::from_fen(fen).map_err(|source| PgnError {
                line: self.line,
                kind: PgnErrorKind::BadFen { fen: fen.to_string(), source },
            })?,
            None => Position::startpos(),
        };
        let mut pos = start.clone();
        let mut moves = Vec::with_capacity(self.moves.len());
        for (ply, m) in self.moves.iter().enumerate() {
            let played = match m.notated {
                Notated::Coord(mv) => pos.play(mv).map(|()| mv).map_err(Unresolved::from),
                Notated::Wxf(wxf) => wxf.resolve(&pos).map_err(Unresolved::from),
                Notated::Chinese(chinese) => chinese.resolve(&pos).map_err(Unresolved::from),
            };
            let mv = played.map_err(|source| PgnError {
                line: m.line,
                kind: PgnErrorKind::Unresolved { ply, text: m.text.clone(), source },
            })?;
            if !matches!(m.notated, Notated::Coord(_)) {
                // Resolved moves are legal.
                pos.play_unchecked(mv);
            }
            moves.push(mv);
        }
        Ok(ResolvedGame { start, moves, result: self.result })
    }
}

/// Reads the games of a PGN input one at a time, in bounded memory.
pub struct PgnReader<R> {
    input: R,
    max_game_bytes: usize,
    /// Lines read so far.
    line: usize,
    /// Where the game boundaries are, fed every byte read.
    scan: Scan,
    /// A tag line read that starts the next game.
    pending: Option<Line>,
    /// Set once reading failed: the input is not read further.
    failed: bool,
}

/// One line of input, at most the game limit plus one byte of it kept.
struct Line {
    number: usize,
    bytes: Vec<u8>,
    truncated: bool,
    /// Whether it is a tag line (its first character `[`, outside a comment).
    tag: bool,
}

/// What tells games apart, followed over every byte (kept or not): whether the current game has
/// movetext yet, and whether a `{comment}` is open, so that a `[` in a comment starts no game.
#[derive(Default)]
struct Scan {
    movetext: bool,
    in_comment: bool,
    /// Only white space so far on this line.
    at_start: bool,
    /// The rest of the line is a tag, a `%` line or a `;` comment.
    skip_line: bool,
    tag: bool,
}

impl Scan {
    fn start_line(&mut self) {
        self.at_start = true;
        self.skip_line = false;
        self.tag = false;
    }

    fn feed(&mut self, b: u8) {
        let space = b.is_ascii_whitespace();
        if self.skip_line {
            return;
        }
        if self.in_comment {
            self.in_comment = b != b'}';
        } else {
            match b {
                b'[' | b'%' if self.at_start => {
                    self.skip_line = true;
                    self.tag = b == b'[';
                }
                b'{' => self.in_comment = true,
                b';' => self.skip_line = true,
                _ if space => {}
                _ => self.movetext = true,
            }
        }
        self.at_start &= space;
    }
}

impl<R: BufRead> PgnReader<R> {
    /// A reader of `input` with the default game limit, [`MAX_GAME_BYTES`].
    pub fn new(input: R) -> PgnReader<R> {
        PgnReader::with_limit(input, MAX_GAME_BYTES)
    }

    /// A reader of `input` that refuses games longer than `max_game_bytes`.
    pub fn with_limit(input: R, max_game_bytes: usize) -> PgnReader<R> {
        PgnReader { input, max_game_bytes, line: 0, scan: Scan::default(), pending: None, failed: false }
    }

    /// The next line, without its end, keeping at most `max_game_bytes + 1` of its bytes.
    fn read_line(&mut self) -> io::Result<Option<Line>> {
        const BOM: &[u8] = "\u{feff}".as_bytes();
        let mut bytes = Vec::new();
        let mut truncated = false;
        let mut any = false;
        self.scan.start_line();
        loop {
            let buf = match self.input.fill_buf() {
                Ok(buf) => buf,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            };
            if buf.is_empty() {
                break;
            }
            if self.line == 0 && !any && buf.starts_with(BOM) {
                self.input.consume(BOM.len());
                continue;
            }
            any = true;
            let (chunk, done) = match buf.iter().position(|&b| b == b'\n') {
                Some(i) => (&buf[..i], Some(i + 1)),
                None => (buf, None),
            };
            chunk.iter().for_each(|&b| self.scan.feed(b));
            let room = (self.max_game_bytes + 1).saturating_sub(bytes.len());
            truncated |= chunk.len() > room;
            bytes.extend_from_slice(&chunk[..chunk.len().min(room)]);
            let used = done.unwrap_or(buf.len());
            self.input.consume(used);
            if done.is_some() {
                break;
            }
        }
        if !any {
            return Ok(None);
        }
        self.line += 1;
        if bytes.last() == Some(&b'\r') {
            bytes.pop();
        }
        Ok(Some(Line { number: self.line, bytes, truncated, tag: self.scan.tag }))
    }

    /// The next game's text and its first line, or the error that makes it unreadable.
    fn next_text(&mut self) -> Option<Result<(usize, String), PgnError>> {
        let mut text = Vec::new();
        let mut first = None;
        let mut too_large = false;
        self.scan.movetext = false;
        loop {
            let line = match self.pending.take() {
                Some(line) => line,
                None => match self.read_line() {
                    Ok(Some(line)) => line,
                    Ok(None) => break,
                    Err(e) => {
                        self.failed = true;
                        return Some(Err(PgnError { line: self.line + 1, kind: PgnErrorKind::Io(e) }));
                    }
                },
            };
            if line.tag && self.scan.movetext {
                self.pending = Some(line);
                break;
            }
            if first.is_none() && line.bytes.trim_ascii().is_empty() {
                continue;
            }
            first.get_or_insert(line.number);
            too_large |= line.truncated || text.len() + line.bytes.len() + 1 > self.max_game_bytes;
            if too_large {
                text = Vec::new();
            } else {
                text.extend_from_slice(&line.bytes);
                text.push(b'\n');
            }
        }
        let first = first?;
        if too_large {
            return Some(Err(PgnError { line: first, kind: PgnErrorKind::TooLarge { limit: self.max_game_bytes } }));
        }
        Some(match String::from_utf8(text) {
            Ok(text) => Ok((first, text)),
            Err(e) => {
                let newlines = e.as_bytes()[..e.utf8_error().valid_up_to()].iter().filter(|&&b| b == b'\n').count();
                Err(PgnError { line: first + newlines, kind: PgnErrorKind::NotUtf8 })
            }
        })
    }
}

impl<R: BufRead> Iterator for PgnReader<R> {
    type Item = Result<PgnGame, PgnError>;

    fn next(&mut self) -> Option<Result<PgnGame, PgnError>> {
        if self.failed {
            return None;
        }
        Some(self.next_text()?.and_then(|(line, text)| parse_game(&text, line)))
    }
}

/// A tag line's name and unescaped value.
fn parse_tag(line: &str) -> Option<(String, String)> {
    let inner = line.strip_prefix('[')?.strip_suffix(']')?.trim();
    let (name, rest) = inner.split_at(inner.find(|c: char| c.is_whitespace() || c == '"')?);
    let body = rest.trim_start().strip_prefix('"')?.strip_suffix('"')?;
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return None;
    }
    let mut value = String::with_capacity(body.len());
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => value.push(chars.next()?),
            '"' => return None,
            c => value.push(c),
        }
    }
    Some((name.to_string(), value))
}

/// The notation of a `[Format]` tag value.
fn format_notation(value: &str) -> Option<MoveNotation> {
    match value.to_ascii_lowercase().as_str() {
        "iccs" => Some(MoveNotation::Iccs),
        "wxf" => Some(MoveNotation::Wxf),
        "chinese" => Some(MoveNotation::Chinese),
        _ => None,
    }
}

/// The notation a game's first move is written in, when no `[Format]` says.
fn detect(text: &str) -> Option<MoveNotation> {
    if text.parse::<Move>().is_ok() {
        Some(MoveNotation::Iccs)
    } else if !text.is_ascii() {
        Some(MoveNotation::Chinese)
    } else if text.parse::<Wxf>().is_ok() {
        Some(MoveNotation::Wxf)
    } else {
        None
    }
}

fn read_move(text: &str, notation: MoveNotation) -> Result<Notated, BadMoveText> {
    Ok(match notation {
        MoveNotation::Iccs => Notated::Coord(text.parse()?),
        MoveNotation::Wxf => Notated::Wxf(text.parse()?),
        MoveNotation::Chinese => Notated::Chinese(text.parse()?),
    })
}

/// A token's move text with any move number in front (`1.h2e2`) and `!`/`?` suffix taken off;
/// empty for a bare move number (`1.`, `1...`, `...`).
fn move_text(token: &str) -> &str {
    let digits = token.len() - token.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let after_number = token[digits..].trim_start_matches(['.', '…']);
    // `33.4` is a WXF pawn move, not move 33: a move number is followed by a move or nothing,
    // and no move starts with a digit after one.
    let rest = if after_number.len() < token.len() - digits && !after_number.starts_with(|c: char| c.is_ascii_digit()) {
        after_number
    } else {
        token
    };
    rest.trim_end_matches(['!', '?'])
}

/// Parses one game's text, whose first line is `first` of the input.
fn parse_game(text: &str, first: usize) -> Result<PgnGame, PgnError> {
    let mut game =
        PgnGame { line: first, tags: Vec::new(), notation: None, moves: Vec::new(), result: PgnResult::Unknown };
    let mut format = None;
    let mut terminator: Option<(usize, &str)> = None;
    let mut comment_line = None;
    let mut depth_line = Vec::new();
    let mut movetext = false;
    for (i, raw) in text.lines().enumerate() {
        let number = first + i;
        let err = |kind| PgnError { line: number, kind };
        let line = raw.trim();
        if comment_line.is_none() && !movetext && line.starts_with('[') {
            let (name, value) = parse_tag(line).ok_or_else(|| err(PgnErrorKind::BadTag(line.to_string())))?;
            match name.as_str() {
                "Game" if !matches!(value.to_ascii_lowercase().as_str(), "chinese chess" | "xiangqi") => {
                    return Err(err(PgnErrorKind::OtherGame(value)));
                }
                "Format" => {
                    format =
                        Some(format_notation(&value).ok_or_else(|| err(PgnErrorKind::UnknownFormat(value.clone())))?)
                }
                "Result" if PgnResult::from_pgn(&value).is_none() => return Err(err(PgnErrorKind::BadResult(value))),
                _ => {}
            }
            game.tags.push((name, value));
            continue;
        }
        if comment_line.is_none() && line.starts_with('%') {
            continue;
        }
        let mut rest = line;
        while !rest.is_empty() {
            if comment_line.is_some() {
                match rest.find('}') {
                    Some(end) => {
                        comment_line = None;
                        rest = &rest[end + 1..];
                    }
                    None => break,
                }
                continue;
            }
            rest = rest.trim_start();
            let Some(c) = rest.chars().next() else { break };
            match c {
                '{' => {
                    comment_line = Some(number);
                    rest = &rest[1..];
                    continue;
                }
                ';' => break,
                '(' => {
                    depth_line.push(number);
                    rest = &rest[1..];
                    continue;
                }
                ')' => {
                    depth_line.pop().ok_or_else(|| err(PgnErrorKind::Unbalanced(')')))?;
                    rest = &rest[1..];
                    continue;
                }
                '}' => return Err(err(PgnErrorKind::Unbalanced('}'))),
                _ => {}
            }
            let end = rest.find(|c: char| c.is_whitespace() || "{};()".contains(c)).unwrap_or(rest.len());
            let token = &rest[..end];
            rest = &rest[end..];
            movetext = true;
            if !depth_line.is_empty() || token.starts_with('$') {
                continue;
            }
            if PgnResult::from_pgn(token).is_some() {
                terminator = Some((number, token));
                continue;
            }
            let text = move_text(token);
            if text.is_empty() {
                continue;
            }
            if terminator.is_some() {
                return Err(err(PgnErrorKind::AfterResult(text.to_string())));
            }
            let notation = match game.notation.or(format) {
                Some(notation) => notation,
                None => detect(text).ok_or_else(|| err(PgnErrorKind::UnknownNotation(text.to_string())))?,
            };
            game.notation = Some(notation);
            let notated = read_move(text, notation)
                .map_err(|source| err(PgnErrorKind::BadMove { text: text.to_string(), source }))?;
            game.moves.push(PgnMove { text: text.to_string(), line: number, notated });
        }
    }
    if let Some(line) = comment_line {
        return Err(PgnError { line, kind: PgnErrorKind::Unclosed("{comment}") });
    }
    if let Some(&line) = depth_line.first() {
        return Err(PgnError { line, kind: PgnErrorKind::Unclosed("variation") });
    }
    let tag = game.tag("Result").map(str::to_string);
    game.result = match (terminator, tag) {
        (Some((line, t)), Some(tag)) if t != tag => {
            return Err(PgnError { line, kind: PgnErrorKind::ResultMismatch { tag, terminator: t.to_string() } });
        }
        (Some((_, t)), _) => PgnResult::from_pgn(t).expect("a result token"),
        (None, Some(tag)) => PgnResult::from_pgn(&tag).expect("checked with the tags"),
        (None, None) => PgnResult::Unknown,
    };
    Ok(game)
}
