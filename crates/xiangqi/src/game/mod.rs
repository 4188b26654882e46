//! Games and their adjudication: checkmate, stalemate, the repetition rules (棋例), the natural
//! move limit, dead draws and a self-play length cap.
//!
//! ```
//! use xiangqi::game::{Game, Outcome};
//! let mut game = Game::new(Default::default());
//! for mv in ["h2e2", "h9g7"] {
//!     game.push_str(mv)?;
//! }
//! assert_eq!(game.outcome(), Outcome::Ongoing);
//! # Ok::<(), xiangqi::game::GameError>(())
//! ```

mod axf;
mod classify;
mod ruling;

use std::fmt;
use std::str::FromStr;

use thiserror::Error;

use crate::bitboard::Bitboard;
use crate::movegen::MoveList;
use crate::position::Position;
use crate::types::{Color, Move, PieceKind};

pub use axf::axf_chased;
pub use classify::{MoveNature, Natures, classify_move, classify_move_in_game};

/// Which set of competition rules adjudicates a game.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum Ruleset {
    /// The Chinese Xiangqi Association's 2011 competition rules (the default).
    #[default]
    Chinese2011,
    /// The earlier (1999) edition of the Chinese rules (中國象棋競賽規則, in traditional
    /// characters; the book many older game records were played under). It differs from 2011
    /// where both sides make forbidden moves: a draw whatever the moves (its 26.3), where 2011's
    /// 26.9 makes the side that chases a rook or an unprotected piece, or threatens mate, vary.
    /// It has no nine-round rule (2011's 23.4), a pawn's chases count once both sides attack
    /// perpetually (27.2), a draw is ruled at once (24.2), and the side that must vary loses
    /// after one more cycle (24.3) rather than two rounds (2011's 23.5).
    Chinese1999,
    /// The Asian / World Xiangqi Federation rules as Fairy-Stockfish implements them.
    Wxf,
    /// Perpetual check loses; every other repetition is a draw.
    Simple,
}

impl Ruleset {
    /// Every ruleset, the default first.
    pub const ALL: [Ruleset; 4] = [Ruleset::Chinese2011, Ruleset::Chinese1999, Ruleset::Wxf, Ruleset::Simple];

    /// The name used on the command line and in stored games.
    ///
    /// ```
    /// use xiangqi::game::Ruleset;
    /// for ruleset in Ruleset::ALL {
    ///     assert_eq!(ruleset.name().parse::<Ruleset>(), Ok(ruleset));
    /// }
    /// ```
    pub const fn name(self) -> &'static str {
        match self {
            Ruleset::Chinese2011 => "chinese2011",
            Ruleset::Chinese1999 => "chinese1999",
            Ruleset::Wxf => "wxf",
            Ruleset::Simple => "simple",
        }
    }

    /// Plies without capture after which the game is drawn under this ruleset by default.
    pub const fn default_natural_limit(self) -> u32 {
        match self {
            Ruleset::Wxf => 100,
            _ => 120,
        }
    }
}

impl fmt::Display for Ruleset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// An unknown ruleset name.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
#[error("unknown ruleset {0:?} (expected chinese2011, chinese1999, wxf or simple)")]
pub struct ParseRulesetError(pub String);

impl FromStr for Ruleset {
    type Err = ParseRulesetError;
    fn from_str(s: &str) -> Result<Ruleset, ParseRulesetError> {
        Ruleset::ALL.into_iter().find(|r| r.name() == s).ok_or_else(|| ParseRulesetError(s.to_string()))
    }
}

/// How a game is adjudicated.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct GameConfig {
    /// The repetition rules.
    pub ruleset: Ruleset,
    /// Plies without a capture that end the game in a draw (自然限着); `None` uses the ruleset's.
    pub natural_limit: Option<u32>,
    /// A hard cap on the game length in plies, for self-play; reaching it is a draw.
    pub max_plies: Option<u32>,
    /// For self-play: a game that reaches the natural move limit or `max_plies` while one side
    /// leads by at least this many pawns of material ([`Position::material`]) is won by that
    /// side ([`Reason::MaterialAdjudication`]) instead of drawn. `None` keeps the rules' draws.
    pub material_adjudication: Option<u32>,
    /// For self-play: a repetition the rules call a draw ([`Reason::AllowedRepetition`],
    /// [`Reason::MutualForbidden`]) is lost by the side whose move completed it
    /// ([`Reason::RepetitionAdjudication`]). Repetitions lost by a forbidden side (perpetual
    /// check, chase) are ruled as the rules say. `false` keeps the draws.
    pub repeater_loses: bool,
}

impl Default for GameConfig {
    fn default() -> GameConfig {
        GameConfig {
            ruleset: Ruleset::Chinese2011,
            natural_limit: None,
            max_plies: None,
            material_adjudication: None,
            repeater_loses: false,
        }
    }
}

/// Why a game ended.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Reason {
    /// The side to move is in check and has no legal move.
    Checkmate,
    /// The side to move is not in check and has no legal move (a loss in Xiangqi).
    Stalemate,
    /// One side checked perpetually.
    PerpetualCheck,
    /// One side chased perpetually.
    PerpetualChase,
    /// One side threatened mate perpetually.
    PerpetualMateThreat,
    /// One side mixed checks, mate threats and chases (一将一捉 and the like).
    MixedForbidden,
    /// A repetition in which neither side's moves are forbidden (2011: 25.2; 1999: 26.2).
    AllowedRepetition,
    /// A repetition in which both sides' moves are forbidden and neither must vary, or both
    /// must (2011: 26.9; 1999: 26.3, 27.2): a draw, though neither side's moves are allowed.
    MutualForbidden,
    /// Too many plies without a capture.
    NaturalMoveLimit,
    /// Neither side has material left to win with.
    NoPossibleWin,
    /// The configured maximum game length was reached.
    MaxLength,
    /// A length limit was reached with one side ahead by the configured material margin
    /// ([`GameConfig::material_adjudication`], self-play only).
    MaterialAdjudication,
    /// A repetition the rules call a draw, lost by the side that completed it
    /// ([`GameConfig::repeater_loses`], self-play only).
    RepetitionAdjudication,
    /// A side resigned ([`Game::resign`]).
    Resignation,
}

impl Reason {
    /// The machine-readable name (`perpetual_check`, ...).
    pub const fn name(self) -> &'static str {
        match self {
            Reason::Checkmate => "checkmate",
            Reason::Stalemate => "stalemate",
            Reason::PerpetualCheck => "perpetual_check",
            Reason::PerpetualChase => "perpetual_chase",
            Reason::PerpetualMateThreat => "perpetual_mate_threat",
            Reason::MixedForbidden => "mixed_forbidden",
            Reason::AllowedRepetition => "allowed_repetition",
            Reason::MutualForbidden => "mutual_forbidden",
            Reason::NaturalMoveLimit => "natural_move_limit",
            Reason::NoPossibleWin => "no_possible_win",
            Reason::MaxLength => "max_length",
            Reason::MaterialAdjudication => "material_adjudication",
            Reason::RepetitionAdjudication => "repetition_adjudication",
            Reason::Resignation => "resignation",
        }
    }
}

impl fmt::Display for Reason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A finished game's ruling: what decided it, under which rules and which article.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Verdict {
    /// The rule that ended the game.
    pub reason: Reason,
    /// The ruleset that decided it.
    pub ruleset: Ruleset,
    /// The article of the 2011 rules that applies, e.g. `25.1`, or of the ruleset's own book
    /// (the 1999 rules' numbers for [`Ruleset::Chinese1999`]).
    pub article: &'static str,
}

/// The state of a game.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// The game goes on.
    Ongoing,
    /// `winner` has won.
    Win {
        /// The winning side.
        winner: Color,
        /// Why.
        verdict: Verdict,
    },
    /// A draw.
    Draw {
        /// Why.
        verdict: Verdict,
    },
}

impl Outcome {
    /// Whether the game has ended.
    pub fn is_over(self) -> bool {
        self != Outcome::Ongoing
    }

    /// The winner, if any.
    pub fn winner(self) -> Option<Color> {
        match self {
            Outcome::Win { winner, .. } => Some(winner),
            _ => None,
        }
    }

    /// The ruling, if the game ended.
    pub fn verdict(self) -> Option<Verdict> {
        match self {
            Outcome::Ongoing => None,
            Outcome::Win { verdict, .. } | Outcome::Draw { verdict } => Some(verdict),
        }
    }

    /// One line of JSON: `{"status":"win","winner":"red","reason":"checkmate","article":"4.1.1","ruleset":"chinese2011"}`.
    pub fn to_json(self) -> String {
        match self {
            Outcome::Ongoing => {
                r#"{"status":"ongoing","winner":null,"reason":null,"article":null,"ruleset":null}"#.to_string()
            }
            Outcome::Win { winner, verdict } => format!(
                r#"{{"status":"win","winner":"{}","reason":"{}","article":"{}","ruleset":"{}"}}"#,
                winner, verdict.reason, verdict.article, verdict.ruleset
            ),
            Outcome::Draw { verdict } => format!(
                r#"{{"status":"draw","winner":null,"reason":"{}","article":"{}","ruleset":"{}"}}"#,
                verdict.reason, verdict.article, verdict.ruleset
            ),
        }
    }
}

/// Why a move could not be added to a game.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum GameError {
    /// The move is not legal in the current position.
    #[error("illegal move {mv} at ply {ply}")]
    Illegal {
        /// The move.
        mv: Move,
        /// Its index in the game (0 = first move).
        ply: usize,
    },
    /// A resignation after the end of the game.
    #[error("resignation at ply {ply} comes after the end of the game ({outcome})")]
    AlreadyOver {
        /// Plies played.
        ply: usize,
        /// The ruling that ended the game, as JSON.
        outcome: String,
    },
    /// The game has already ended.
    #[error("move {mv} at ply {ply} comes after the end of the game ({outcome})")]
    GameOver {
        /// The move.
        mv: Move,
        /// Its index in the game.
        ply: usize,
        /// The ruling that ended the game, as JSON.
        outcome: String,
    },
    /// The text is not a coordinate move.
    #[error("bad move text {text:?} at ply {ply}")]
    BadMoveText {
        /// The text.
        text: String,
        /// Its index in the game.
        ply: usize,
    },
}

/// One played move and the hash of the position it led to.
#[derive(Copy, Clone, Debug)]
struct Ply {
    mv: Move,
    /// Hash of the position after the move.
    hash: u64,
    /// Whether the mover's last nine moves, this one the newest, were forbidden over a tour
    /// (see [`Game::tours_forbidden`]; 2011 only): worked out once, when the move is played, as
    /// the nine-round rule looks at each side's moves again while the other side moves.
    toured: bool,
}

/// A game: a start position, its moves and its adjudication under a [`GameConfig`].
#[derive(Clone, Debug)]
pub struct Game {
    config: GameConfig,
    start: Position,
    /// The position after the last capture (or the start): repetitions never reach past it.
    anchor: Position,
    /// Ply index of `anchor`.
    anchor_ply: usize,
    /// Checks given by Red and by Black since `anchor`.
    checks_since_anchor: [u32; 2],
    pos: Position,
    plies: Vec<Ply>,
    /// Legal moves in `pos`, generated once per ply for adjudication and callers alike.
    legal: MoveList,
    outcome: Outcome,
}

impl Game {
    /// A game from the start position.
    pub fn new(config: GameConfig) -> Game {
        Game::from_position(Position::startpos(), config)
    }

    /// A game from any legal position.
    pub fn from_position(start: Position, config: GameConfig) -> Game {
        let mut game = Game {
            config,
            anchor: start.clone(),
            anchor_ply: 0,
            checks_since_anchor: [0; 2],
            pos: start.clone(),
            start,
            plies: Vec::new(),
            legal: MoveList::new(),
            outcome: Outcome::Ongoing,
        };
        game.legal = game.pos.legal_moves();
        game.outcome = game.judge();
        game
    }

    /// The adjudication settings.
    pub fn config(&self) -> GameConfig {
        self.config
    }

    /// The start position.
    pub fn start(&self) -> &Position {
        &self.start
    }

    /// The current position.
    pub fn position(&self) -> &Position {
        &self.pos
    }

    /// The legal moves in the current position (empty when the game is over by mate or stalemate;
    /// after other endings they are listed but [`Game::push`] refuses them).
    pub fn legal_moves(&self) -> &MoveList {
        &self.legal
    }

    /// The moves played so far.
    pub fn moves(&self) -> impl ExactSizeIterator<Item = Move> + '_ {
        self.plies.iter().map(|p| p.mv)
    }

    /// Number of plies played.
    pub fn len(&self) -> usize {
        self.plies.len()
    }

    /// Whether no move was played yet.
    pub fn is_empty(&self) -> bool {
        self.plies.is_empty()
    }

    /// How many times the current position occurred before in this game, since the last capture
    /// (0 for a new position): the repetition count that a network input or a UI shows.
    ///
    /// ```
    /// use xiangqi::game::Game;
    /// let mut game = Game::new(Default::default());
    /// for mv in ["h2e2", "h9g7", "e2h2", "g7h9"] {
    ///     game.push_str(mv)?;
    /// }
    /// assert_eq!(game.repetitions(), 1);
    /// # Ok::<(), xiangqi::game::GameError>(())
    /// ```
    pub fn repetitions(&self) -> u32 {
        let current = self.pos.hash();
        (self.anchor_ply..self.plies.len()).rev().skip(1).step_by(2).filter(|&i| self.hash_at(i) == current).count()
            as u32
    }

    /// The hashes of the positions since the last capture, oldest first and the current one
    /// last: the positions that a repetition can return to.
    ///
    /// ```
    /// use xiangqi::game::Game;
    /// let mut game = Game::new(Default::default());
    /// game.push_str("h2e2")?;
    /// let hashes: Vec<u64> = game.hashes_since_capture().collect();
    /// assert_eq!(hashes, [game.start().hash(), game.position().hash()]);
    /// # Ok::<(), xiangqi::game::GameError>(())
    /// ```
    pub fn hashes_since_capture(&self) -> impl Iterator<Item = u64> + '_ {
        (self.anchor_ply..=self.plies.len()).map(|i| self.hash_at(i))
    }

    /// The current state: ongoing, or how the game ended.
    pub fn outcome(&self) -> Outcome {
        self.outcome
    }

    /// Ends the game with `loser` resigning; refused (game unchanged) if it has already ended.
    ///
    /// ```
    /// use xiangqi::Color;
    /// use xiangqi::game::Game;
    /// let mut game = Game::new(Default::default());
    /// let outcome = game.resign(Color::Red)?;
    /// assert_eq!(outcome.winner(), Some(Color::Black));
    /// assert!(game.push_str("h2e2").is_err());
    /// # Ok::<(), xiangqi::game::GameError>(())
    /// ```
    pub fn resign(&mut self, loser: Color) -> Result<Outcome, GameError> {
        if self.outcome.is_over() {
            return Err(GameError::AlreadyOver { ply: self.plies.len(), outcome: self.outcome.to_json() });
        }
        self.outcome =
            Outcome::Win { winner: loser.opponent(), verdict: self.verdict(Reason::Resignation, "resignation") };
        Ok(self.outcome)
    }

    /// Plays a move; rejects an illegal move or a move after the end, leaving the game unchanged.
    pub fn push(&mut self, mv: Move) -> Result<Outcome, GameError> {
        let ply = self.plies.len();
        if self.outcome.is_over() {
            return Err(GameError::GameOver { mv, ply, outcome: self.outcome.to_json() });
        }
        if !self.legal.contains(&mv) {
            return Err(GameError::Illegal { mv, ply });
        }
        Ok(self.push_unchecked(mv))
    }

    /// Plays a move known to be legal (from this game's position's move generator) in a game
    /// that is not over: the fast path for search and self-play.
    pub fn push_unchecked(&mut self, mv: Move) -> Outcome {
        debug_assert!(!self.outcome.is_over() && self.legal.contains(&mv));
        let mover = self.pos.turn();
        let capture = self.pos.play_unchecked(mv).is_some();
        self.plies.push(Ply { mv, hash: self.pos.hash(), toured: false });
        if capture {
            self.anchor = self.pos.clone();
            self.anchor_ply = self.plies.len();
            self.checks_since_anchor = [0; 2];
        } else {
            if self.pos.is_check() {
                self.checks_since_anchor[mover.index()] += 1;
            }
            let last = self.plies.len() - 1;
            self.plies[last].toured = self.config.ruleset == Ruleset::Chinese2011 && self.tours_forbidden(last);
        }
        self.pos.legal_moves_into(&mut self.legal);
        self.outcome = self.judge();
        self.outcome
    }

    /// Parses a coordinate move (`h2e2`) and plays it.
    pub fn push_str(&mut self, text: &str) -> Result<Outcome, GameError> {
        let mv = text.parse().map_err(|_| GameError::BadMoveText { text: text.to_string(), ply: self.plies.len() })?;
        self.push(mv)
    }

    fn verdict(&self, reason: Reason, article: &'static str) -> Verdict {
        Verdict { reason, ruleset: self.config.ruleset, article }
    }

    /// Adjudicates the current position.
    fn judge(&self) -> Outcome {
        let pos = &self.pos;
        if self.legal.is_empty() {
            // The 1999 book lists facing kings (4.1.2) between mate and stalemate.
            let stalemate = if self.config.ruleset == Ruleset::Chinese1999 { "4.1.3" } else { "4.1.2" };
            let (reason, article) =
                if pos.is_check() { (Reason::Checkmate, "4.1.1") } else { (Reason::Stalemate, stalemate) };
            return Outcome::Win { winner: !pos.turn(), verdict: self.verdict(reason, article) };
        }
        // Fairy-Stockfish applies the natural move rule before the repetition rules.
        let natural_first = self.config.ruleset == Ruleset::Wxf;
        if natural_first && self.natural_limit_reached() {
            return self.natural_limit_draw();
        }
        if let Some(Ruling::Given(outcome)) = self.judge_repetition() {
            return self.repetition_end(outcome);
        }
        if !natural_first && self.natural_limit_reached() {
            return self.natural_limit_draw();
        }
        if no_possible_win(pos) {
            let article = if self.config.ruleset == Ruleset::Chinese1999 { "4.2.1" } else { "4.2.2" };
            return Outcome::Draw { verdict: self.verdict(Reason::NoPossibleWin, article) };
        }
        if self.config.max_plies.is_some_and(|max| self.plies.len() >= max as usize) {
            return self.length_end(Outcome::Draw { verdict: self.verdict(Reason::MaxLength, "self-play length cap") });
        }
        Outcome::Ongoing
    }

    /// The draw by the natural move limit.
    fn natural_limit_draw(&self) -> Outcome {
        let article = match self.config.ruleset {
            Ruleset::Chinese2011 | Ruleset::Chinese1999 => "4.2.4",
            Ruleset::Wxf | Ruleset::Simple => "natural-move-limit",
        };
        self.length_end(Outcome::Draw { verdict: self.verdict(Reason::NaturalMoveLimit, article) })
    }

    /// `draw`, a length limit's, unless material adjudication gives the game to a side.
    fn length_end(&self, draw: Outcome) -> Outcome {
        let Some(margin) = self.config.material_adjudication else { return draw };
        let [red, black] = [Color::Red, Color::Black].map(|c| i64::from(self.pos.material(c)));
        let lead = red - black;
        if lead == 0 || lead.unsigned_abs() < 2 * u64::from(margin) {
            return draw;
        }
        let winner = if lead > 0 { Color::Red } else { Color::Black };
        Outcome::Win { winner, verdict: self.verdict(Reason::MaterialAdjudication, "self-play material adjudication") }
    }

    /// A repetition's ruling, unless self-play gives a drawn repetition to the side that did not
    /// complete it.
    fn repetition_end(&self, ruling: Outcome) -> Outcome {
        let drawn = matches!(ruling, Outcome::Draw { .. });
        if !(drawn && self.config.repeater_loses) {
            return ruling;
        }
        let verdict = self.verdict(Reason::RepetitionAdjudication, "self-play repetition adjudication");
        Outcome::Win { winner: self.pos.turn(), verdict }
    }

    /// Whether the plies since the last capture reach the natural move limit.
    fn natural_limit_reached(&self) -> bool {
        self.natural_plies_left() == 0
    }

    /// Plies that may still be played without a capture before the natural move limit draws the
    /// game (0 once it has). Under the Chinese rules at most 10 checks of the side that claims
    /// count (2011: 22.2; 1999: 23.3); either side may claim, so the side with fewer checks
    /// decides. Under WXF checks beyond the tenth of the side that checked most do not count (see
    /// [`Game::axf_check_discount`]).
    ///
    /// ```
    /// use xiangqi::game::Game;
    /// let mut game = Game::new(Default::default());
    /// assert_eq!(game.natural_plies_left(), 120);
    /// game.push_str("h2e2")?;
    /// assert_eq!(game.natural_plies_left(), 119);
    /// # Ok::<(), xiangqi::game::GameError>(())
    /// ```
    pub fn natural_plies_left(&self) -> u32 {
        let limit = self.config.natural_limit.unwrap_or(self.config.ruleset.default_natural_limit()) as usize;
        // A position set up with a running clock counts its earlier plies too.
        let before = if self.anchor_ply == 0 { self.start.halfmove_clock() as usize } else { 0 };
        let mut counted = before + self.plies.len() - self.anchor_ply;
        match self.config.ruleset {
            Ruleset::Chinese2011 | Ruleset::Chinese1999 => {
                let fewest_checks = self.checks_since_anchor.iter().min().copied().unwrap_or(0) as usize;
                counted -= fewest_checks.saturating_sub(10);
            }
            Ruleset::Wxf => counted = counted.saturating_sub(self.axf_check_discount()),
            Ruleset::Simple => {}
        }
        limit.saturating_sub(counted) as u32
    }

    /// Plies the AXF natural move rule leaves out, as Fairy-Stockfish counts them: once the game
    /// has 20 plies (from its set-up position on), two for each check beyond the tenth of the side
    /// that gave more checks since the last capture.
    fn axf_check_discount(&self) -> usize {
        if self.plies.len() < 20 {
            return 0;
        }
        let mut checks = self.checks_since_anchor;
        // FSF's count also takes in the anchor position when an odd number of plies followed it.
        if (self.plies.len() - self.anchor_ply) % 2 == 1 && self.anchor.is_check() {
            checks[(!self.anchor.turn()).index()] += 1;
        }
        2 * (checks.into_iter().max().unwrap_or(0) as usize).saturating_sub(10)
    }

    /// Rules on a pending position (待判局面, 23.1): the third occurrence of the current position
    /// (same side to move) since the last capture, ruled on the cycle of moves between its first
    /// occurrence and now; or, under the 2011 rules, nine rounds of forbidden moves, ruled on
    /// those rounds (23.4, see [`Game::nine_rounds`]). Either way the ruling is given at once for
    /// a perpetual check and under the WXF and simple rules; under the Chinese rules the side
    /// that must vary has rounds to do so first (see [`Game::moves_to_vary`]), and the ruling is
    /// pending while they last and every ply keeps the position pending. The two ways run on one
    /// clock: where both hold with the same winner, the earlier start counts.
    fn judge_repetition(&self) -> Option<Ruling> {
        let n = self.plies.len();
        let threefold = self.cycle_start(3).map(|first| {
            let ruling = self.rule_since(first);
            (ruling, self.moves_to_vary(ruling, n - first), self.pending_since())
        });
        // A threefold ruling given at once leaves nothing for the nine rounds to add.
        let nine = if threefold.is_some_and(|(_, due, _)| due == 0) { None } else { self.nine_rounds() };
        let (ruling, due, since) = match (threefold, nine) {
            (Some((ruling, due, since)), Some((nine, nine_since))) if nine.winner() == ruling.winner() => {
                (ruling, due, since.min(nine_since))
            }
            (Some(threefold), _) => threefold,
            (None, Some((ruling, since))) => (ruling, self.moves_to_vary(ruling, 2 * NINE_ROUNDS), since),
            (None, None) => return None,
        };
        if due == 0 {
            return Some(Ruling::Given(ruling));
        }
        let played = n - since;
        let last_mover = !self.pos.turn();
        let given = match ruling {
            // A draw waits for both sides' rounds.
            Outcome::Draw { .. } | Outcome::Ongoing => played >= 2 * due,
            Outcome::Win { winner, .. } => {
                let loser_moves = (played + usize::from(!winner == last_mover)) / 2;
                loser_moves >= due
            }
        };
        Some(if given { Ruling::Given(ruling) } else { Ruling::Pending(ruling) })
    }

    /// How many moves the side a repetition ruling names (for a draw: each side) has, from the
    /// pending position on (待判局面, the third occurrence), to vary before the ruling is given.
    /// 2011: a perpetual check loses at once (23.5.1), every other ruling waits two rounds
    /// (23.5.2). 1999: a perpetual check loses and a draw is ruled at once (24.1, 24.2); the
    /// forbidden side that must vary loses if it repeats one more cycle (24.3), `two_cycles`
    /// being the plies of the two cycles the ruling weighed.
    fn moves_to_vary(&self, ruling: Outcome, two_cycles: usize) -> usize {
        let Some(verdict) = ruling.verdict() else { return 0 };
        if verdict.reason == Reason::PerpetualCheck {
            return 0;
        }
        match (self.config.ruleset, ruling) {
            (Ruleset::Chinese2011, _) => 2,
            (Ruleset::Chinese1999, Outcome::Win { .. }) => two_cycles / 4,
            _ => 0,
        }
    }

    /// Where the repetition going on now began to be ruled on: the ply count of the earliest
    /// position from which on every position occurred at least three times since the last
    /// capture (the pending position of 23.5; the current one when the repetition has just
    /// reached it). A side that varies makes a position that has not, and a later repetition
    /// counts its rounds afresh.
    fn pending_since(&self) -> usize {
        let first_counted = self.first_counted();
        let mut since = self.plies.len();
        while since > first_counted && self.occurrences_up_to(since - 1) >= 3 {
            since -= 1;
        }
        since
    }

    /// How often the position after `ply_index` plies occurred up to then, counted from
    /// [`Game::first_counted`].
    fn occurrences_up_to(&self, ply_index: usize) -> usize {
        let hash = self.hash_at(ply_index);
        let first_counted = self.first_counted();
        (first_counted..=ply_index).rev().step_by(2).filter(|&i| self.hash_at(i) == hash).count()
    }

    /// The first position a repetition may count: the position right after a capture is not an
    /// occurrence, since a cycle's first move counts unless it is a capture (23.2). Fairy-
    /// Stockfish, which the WXF rules follow, counts it.
    fn first_counted(&self) -> usize {
        let after_capture_counts = self.config.ruleset == Ruleset::Wxf;
        if self.anchor_ply == 0 || after_capture_counts { self.anchor_ply } else { self.anchor_ply + 1 }
    }

    /// The repetition ruling that a game in its rounds to vary (23.5) will be given if neither
    /// side varies; `None` when no repetition is pending.
    ///
    /// ```
    /// use xiangqi::game::{Game, Outcome};
    /// let mut game = Game::new(Default::default());
    /// let cycle = ["h2e2", "h9g7", "e2h2", "g7h9"];
    /// for mv in cycle.iter().chain(&cycle) {
    ///     game.push_str(mv)?;
    /// }
    /// // The start position's third occurrence: both sides may still vary for two rounds.
    /// assert!(matches!(game.pending_ruling(), Some(Outcome::Draw { .. })));
    /// assert!(!game.outcome().is_over());
    /// for mv in cycle {
    ///     game.push_str(mv)?;
    /// }
    /// assert!(matches!(game.outcome(), Outcome::Draw { .. }));
    /// assert_eq!(game.pending_ruling(), None);
    /// # Ok::<(), xiangqi::game::GameError>(())
    /// ```
    pub fn pending_ruling(&self) -> Option<Outcome> {
        if self.outcome.is_over() {
            return None;
        }
        match self.judge_repetition()? {
            Ruling::Pending(ruling) => Some(ruling),
            Ruling::Given(_) => None,
        }
    }

    /// If the current position occurred before since the last capture (same side to move), the
    /// ruling the game would make if the moves since then were repeated until the position's
    /// third occurrence. A search that treats a first repetition as final (as chess engines do)
    /// needs it: a perpetual check stays a loss there rather than a draw.
    ///
    /// ```
    /// use xiangqi::game::{Game, Outcome};
    /// let mut game = Game::new(Default::default());
    /// for mv in ["h2e2", "h9g7", "e2h2"] {
    ///     game.push_str(mv)?;
    /// }
    /// assert_eq!(game.ruling_if_repeated(), None);
    /// game.push_str("g7h9")?;
    /// let outcome = game.ruling_if_repeated().expect("the start position is back");
    /// assert!(matches!(outcome, Outcome::Draw { .. }));
    /// assert!(!game.outcome().is_over(), "the game itself goes on");
    /// # Ok::<(), xiangqi::game::GameError>(())
    /// ```
    pub fn ruling_if_repeated(&self) -> Option<Outcome> {
        self.judge_cycles(2).map(|ruling| self.repetition_end(ruling))
    }

    /// Rules on the moves since the `occurrences`-th last occurrence of the current position, if
    /// it occurred that often since the last capture.
    fn judge_cycles(&self, occurrences: usize) -> Option<Outcome> {
        self.cycle_start(occurrences).map(|first| self.rule_since(first))
    }

    /// The ply count of the `occurrences`-th last occurrence of the current position, if it
    /// occurred that often since the last capture: the positions from there on and the moves
    /// between them form the repeated cycles.
    fn cycle_start(&self, occurrences: usize) -> Option<usize> {
        let n = self.plies.len();
        let current = self.pos.hash();
        let first_counted = self.first_counted();
        let mut found = 1;
        let mut first = n;
        let mut i = n;
        while i >= first_counted + 2 {
            i -= 2;
            if self.hash_at(i) == current {
                found += 1;
                first = i;
                if found == occurrences {
                    break;
                }
            }
        }
        (found >= occurrences).then_some(first)
    }

    /// Rules on the moves from the position after `first` plies to now (see [`Span`]).
    fn rule_since(&self, first: usize) -> Outcome {
        self.rule_span(first, self.plies.len())
    }

    /// Rules on the moves from the position after `first` plies to the one after `end`.
    fn rule_span(&self, first: usize, end: usize) -> Outcome {
        let span = self.span(first, end);
        ruling::rule(self.config.ruleset, span.positions(), span.moves(), span.entry())
    }

    /// The positions from the one after `first` plies to the one before the `end`-th ply and the
    /// moves played from them, with the move that reached the first of them.
    fn span(&self, first: usize, end: usize) -> Span {
        let from = first.saturating_sub(1);
        let mut positions = Vec::with_capacity(end - from);
        let mut pos = self.position_at(from);
        for ply in &self.plies[from..end] {
            positions.push(pos.clone());
            pos.play_unchecked(ply.mv);
        }
        let moves = self.plies[from..end].iter().map(|p| p.mv).collect();
        Span { positions, moves, with_entry: from < first }
    }

    /// 23.4, the nine-round rule (2011 only): a side that has made nothing but forbidden moves
    /// (checks, mate threats, chases) for nine rounds over three or more points makes a pending
    /// position, though no position occurred three times, and is ruled "by the provisions for
    /// pending positions" (按待判局面的有关规定进行裁决): on the last nine rounds of both sides,
    /// with the rounds to vary of 23.5. Returns that ruling and the ply count from which on the
    /// rule has held with it at every ply (looked for no further back than the rounds to vary
    /// reach), or `None` when it does not hold now. A move that is no longer forbidden, or that
    /// leaves the tour, ends the wait, as does a move of the other side that changes the ruling
    /// (it varied); nine new rounds are needed to come back.
    fn nine_rounds(&self) -> Option<(Outcome, usize)> {
        if self.config.ruleset != Ruleset::Chinese2011 {
            return None;
        }
        let n = self.plies.len();
        let ruling = self.nine_rounds_at(n)?;
        let reach = 2 * self.moves_to_vary(ruling, 2 * NINE_ROUNDS);
        let mut since = n;
        while n - since < reach && self.nine_rounds_at(since - 1) == Some(ruling) {
            since -= 1;
        }
        Some((ruling, since))
    }

    /// The 23.4 ruling on the position after `end` plies: when the last nine moves of either side
    /// up to there were forbidden and toured three or more points (see [`Game::tours_forbidden`]),
    /// the ruling on the last nine rounds, citing 23.4. The side that did not make the last move
    /// is looked at too: the other side's move leaves its rounds as they were, and a pending
    /// position pending.
    fn nine_rounds_at(&self, end: usize) -> Option<Outcome> {
        // A flag from before the last capture looked at moves the capture put out of reach.
        let toured = |last: Option<usize>| {
            last.is_some_and(|last| last + 2 >= self.anchor_ply + 2 * NINE_ROUNDS && self.plies[last].toured)
        };
        if !toured(end.checked_sub(1)) && !toured(end.checked_sub(2)) {
            return None;
        }
        let first = end.saturating_sub(2 * NINE_ROUNDS).max(self.anchor_ply);
        Some(with_article(self.rule_span(first, end), "23.4"))
    }

    /// Whether the side that made the ply with index `last` made nine moves up to it since the
    /// last capture (the first ply of a game set up by FEN among them), all forbidden (classified
    /// newest first, stopping at the first idle one), over a tour: the points they left and the
    /// points they reached are the same set, of three or more points. A side that makes progress
    /// (a run of checks towards mate, a chase that follows the piece to new points) tours
    /// nothing and is not caught; the rule's "moves without purpose" (无积极意义的允许着法) are not
    /// judged. The tour is a few bit operations; the moves are classified only when it holds.
    fn tours_forbidden(&self, last: usize) -> bool {
        let Some(first) = (last + 2).checked_sub(2 * NINE_ROUNDS).filter(|&first| first >= self.anchor_ply) else {
            return false;
        };
        let (mut left, mut reached) = (Bitboard::EMPTY, Bitboard::EMPTY);
        for ply in self.plies[first..=last].iter().step_by(2) {
            left |= Bitboard::from_square(ply.mv.from());
            reached |= Bitboard::from_square(ply.mv.to());
        }
        if left != reached || left.count() < 3 {
            return false;
        }
        let span = self.span(first, last + 1);
        ruling::forbidden_throughout(span.positions(), span.moves(), span.entry())
    }

    /// The position after `ply_index` plies, replayed from the anchor or, before it, the start.
    fn position_at(&self, ply_index: usize) -> Position {
        let (mut pos, from) =
            if ply_index >= self.anchor_ply { (self.anchor.clone(), self.anchor_ply) } else { (self.start.clone(), 0) };
        for ply in &self.plies[from..ply_index] {
            pos.play_unchecked(ply.mv);
        }
        pos
    }

    fn hash_at(&self, ply_index: usize) -> u64 {
        if ply_index == 0 { self.start.hash() } else { self.plies[ply_index - 1].hash }
    }
}

/// The rounds of the nine-round rule (23.4).
const NINE_ROUNDS: usize = 9;

/// A repetition's ruling: given, or pending while the side it names may still vary (23.5).
enum Ruling {
    Given(Outcome),
    Pending(Outcome),
}

/// Moves a ruling weighs, the positions they were played in, and the move before them (the WXF
/// ruling weighs it too; 26.5 reads the first move in its light).
struct Span {
    /// The positions, the entry's first where there is one.
    positions: Vec<Position>,
    /// The moves played from `positions`.
    moves: Vec<Move>,
    /// Whether the first position and move are the entry.
    with_entry: bool,
}

impl Span {
    fn positions(&self) -> &[Position] {
        &self.positions[usize::from(self.with_entry)..]
    }

    fn moves(&self) -> &[Move] {
        &self.moves[usize::from(self.with_entry)..]
    }

    fn entry(&self) -> Option<(&Position, Move)> {
        self.with_entry.then(|| (&self.positions[0], self.moves[0]))
    }
}

/// `outcome`, a ruling, citing `article` instead.
fn with_article(outcome: Outcome, article: &'static str) -> Outcome {
    match outcome {
        Outcome::Ongoing => Outcome::Ongoing,
        Outcome::Win { winner, verdict } => Outcome::Win { winner, verdict: Verdict { article, ..verdict } },
        Outcome::Draw { verdict } => Outcome::Draw { verdict: Verdict { article, ..verdict } },
    }
}

/// Neither side has a piece that can cross the river to attack (only kings, advisors and
/// elephants remain), so neither can ever win.
fn no_possible_win(pos: &Position) -> bool {
    [PieceKind::Rook, PieceKind::Horse, PieceKind::Cannon, PieceKind::Pawn].iter().all(|&k| pos.by_kind[k.index()] == 0)
}
