//! Opening suites: positions that a share of self-play games start from
//! ([`PlaySettings::opening_share`](crate::PlaySettings::opening_share)) and that match games
//! start from (`xqz eval match --openings`). The coordinator loads one, hands it to its workers
//! with its [`id`](OpeningSuite::id), and accepts exactly its positions as starts besides the
//! standard one.
//!
//! ```
//! use xqz_mcts::OpeningSuite;
//!
//! let text = "# two openings\n\
//!     rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C2C4/9/RNBAKABNR b - - 1 1 ; ecco B00\n\
//!     rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKAB1R w - - 0 1\n";
//! let suite = OpeningSuite::parse(text)?;
//! assert_eq!(suite.len(), 2);
//! assert!(suite.contains(&suite.positions()[1]));
//! // Whether game 7 starts from the suite, and from which position, follows from its seed alone.
//! assert_eq!(suite.start(0.5, 7), suite.start(0.5, 7));
//! assert_eq!(suite.start(0.0, 7), None);
//! assert!(OpeningSuite::parse("rnbakabnr/9 w").unwrap_err().to_string().starts_with("line 1:"));
//! # Ok::<(), xqz_mcts::SuiteError>(())
//! ```

use std::collections::HashSet;
use std::fmt;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use xiangqi::Position;
use xiangqi::game::{Game, GameConfig};

use crate::seed::game_seed;

/// A suite that cannot be used, naming the line (of a file) or entry (of a message) at fault.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SuiteError {
    /// A line or entry that is not a position a game can start from.
    #[error("line {line}: {message}")]
    Position {
        /// Its number, from 1.
        line: usize,
        /// What is wrong with it.
        message: String,
    },
    /// No position at all.
    #[error("the suite has no positions")]
    Empty,
    /// More positions than [`OpeningSuite::MAX_POSITIONS`].
    #[error("the suite has more than {max} positions")]
    TooLarge {
        /// The limit.
        max: usize,
    },
}

/// The seed stream a game's start is drawn from, apart from the game's own random choices (so
/// that a suite changes nothing else in a game).
const START_STREAM: u64 = 0x5354_4152_5453;

/// A list of start positions, at most [`OpeningSuite::MAX_POSITIONS`]; see the module docs.
#[derive(Clone)]
pub struct OpeningSuite {
    positions: Vec<Position>,
    /// The positions' FENs (as [`Position`] writes them), for [`OpeningSuite::contains`].
    fens: HashSet<String>,
    id: u64,
}

impl OpeningSuite {
    /// The most positions a suite may hold: bounds its memory and the registration answer that
    /// carries it to workers (about 100 bytes a position).
    pub const MAX_POSITIONS: usize = 100_000;

    /// Reads a suite: one FEN per line (EPD-style: anything after a `;` is ignored), blank lines
    /// and `#` comments skipped.
    ///
    /// # Errors
    /// The first line that is not a position with a game to play, with its number; no
    /// positions; too many.
    pub fn parse(text: &str) -> Result<OpeningSuite, SuiteError> {
        let lines = text
            .lines()
            .enumerate()
            .map(|(n, line)| (n + 1, line.split(';').next().unwrap_or("").trim()))
            .filter(|(_, fen)| !fen.is_empty() && !fen.starts_with('#'));
        OpeningSuite::from_numbered(lines)
    }

    /// A suite of `fens`, in order (entry `i` reported as line `i + 1`), as a coordinator sends it.
    ///
    /// # Errors
    /// As [`OpeningSuite::parse`].
    pub fn from_fens<'a>(fens: impl IntoIterator<Item = &'a str>) -> Result<OpeningSuite, SuiteError> {
        OpeningSuite::from_numbered(fens.into_iter().enumerate().map(|(i, fen)| (i + 1, fen)))
    }

    fn from_numbered<'a>(lines: impl Iterator<Item = (usize, &'a str)>) -> Result<OpeningSuite, SuiteError> {
        let mut positions = Vec::new();
        for (line, fen) in lines {
            if positions.len() == OpeningSuite::MAX_POSITIONS {
                return Err(SuiteError::TooLarge { max: OpeningSuite::MAX_POSITIONS });
            }
            let position =
                Position::from_fen(fen).map_err(|e| SuiteError::Position { line, message: e.to_string() })?;
            if Game::from_position(position.clone(), GameConfig::default()).outcome().is_over() {
                return Err(SuiteError::Position { line, message: format!("the game is already over in {fen}") });
            }
            positions.push(position);
        }
        if positions.is_empty() {
            return Err(SuiteError::Empty);
        }
        let fens: Vec<String> = positions.iter().map(Position::to_string).collect();
        // FNV-1a over the FENs in order: the same file gives the same id on every host.
        let id = fens
            .iter()
            .flat_map(|fen| fen.bytes().chain([b'\n']))
            .fold(0xcbf2_9ce4_8422_2325u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
        Ok(OpeningSuite { positions, fens: fens.into_iter().collect(), id })
    }

    /// The positions, in the order read.
    pub fn positions(&self) -> &[Position] {
        &self.positions
    }

    /// How many positions (duplicates counted).
    pub fn len(&self) -> usize {
        self.positions.len()
    }

    /// Whether the suite is empty (never, once built).
    pub fn is_empty(&self) -> bool {
        self.positions.is_empty()
    }

    /// A hash of the positions in order, which a coordinator and its workers compare.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Whether `position` is one of the suite's (by its FEN, move counters included).
    pub fn contains(&self, position: &Position) -> bool {
        self.fens.contains(&position.to_string())
    }

    /// Where the game seeded with `seed` starts: with probability `share` a position of the
    /// suite (`None`: the standard start), drawn from the seed alone.
    pub fn start(&self, share: f64, seed: u64) -> Option<&Position> {
        if share <= 0.0 {
            return None;
        }
        let mut rng = ChaCha8Rng::seed_from_u64(game_seed(seed, START_STREAM));
        rng.random_bool(share.min(1.0)).then(|| &self.positions[rng.random_range(0..self.positions.len())])
    }
}

impl PartialEq for OpeningSuite {
    fn eq(&self, other: &OpeningSuite) -> bool {
        self.id == other.id && self.positions == other.positions
    }
}

impl fmt::Debug for OpeningSuite {
    /// The id and size only: a suite may hold 100,000 positions.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpeningSuite").field("id", &format_args!("{:016x}", self.id)).field("len", &self.len()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C2C4/9/RNBAKABNR b - - 1 1";
    const B: &str = "rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKAB1R w - - 0 1";

    #[test]
    fn lines_are_read_as_epd_and_bad_ones_named() {
        let suite = OpeningSuite::parse(&format!("# c\n\n{A} ; ecco B00 ; games 4\n{B}\n")).unwrap();
        assert_eq!(suite.positions().iter().map(Position::to_string).collect::<Vec<_>>(), [A, B]);
        let error = OpeningSuite::parse(&format!("{A}\n\nnot a fen\n")).unwrap_err();
        assert!(matches!(&error, SuiteError::Position { line: 3, .. }), "{error}");
        let mated = "3k5/3R5/9/9/9/9/9/9/9/3RK4 b - - 0 1";
        assert!(OpeningSuite::parse(mated).unwrap_err().to_string().contains("already over"));
        assert_eq!(OpeningSuite::parse("# only a comment\n").unwrap_err(), SuiteError::Empty);
        let too_many = format!("{A}\n").repeat(OpeningSuite::MAX_POSITIONS + 1);
        assert_eq!(
            OpeningSuite::parse(&too_many).unwrap_err(),
            SuiteError::TooLarge { max: OpeningSuite::MAX_POSITIONS }
        );
    }

    #[test]
    fn the_id_follows_the_positions_and_the_fens_round_trip() {
        let suite = OpeningSuite::parse(&format!("{A}\n{B}")).unwrap();
        let again = OpeningSuite::from_fens(
            suite.positions().iter().map(Position::to_string).collect::<Vec<_>>().iter().map(String::as_str),
        )
        .unwrap();
        assert_eq!((again.id(), &again), (suite.id(), &suite));
        assert_ne!(OpeningSuite::parse(&format!("{B}\n{A}")).unwrap().id(), suite.id());
        assert!(suite.contains(&Position::from_fen(B).unwrap()));
        assert!(!suite.contains(&Position::from_fen(xiangqi::START_FEN).unwrap()));
    }

    #[test]
    fn the_share_of_games_that_start_from_the_suite_follows_the_setting() {
        let suite = OpeningSuite::parse(&format!("{A}\n{B}")).unwrap();
        let from_suite = |share: f64| (0..2000).filter(|&seed| suite.start(share, seed).is_some()).count();
        assert_eq!((from_suite(0.0), from_suite(1.0)), (0, 2000));
        assert!((850..1150).contains(&from_suite(0.5)), "{}", from_suite(0.5));
        let firsts = (0..2000).filter(|&seed| suite.start(1.0, seed) == Some(&suite.positions()[0])).count();
        assert!((850..1150).contains(&firsts), "{firsts}");
    }
}
