//! Checked positions: validation, making moves, hashing, mirroring.

use std::fmt;

use thiserror::Error;

use crate::attacks;
use crate::bitboard::Bitboard;
use crate::setup::{FenError, START_FEN, Setup, write_fen};
use crate::types::{Color, Move, Piece, PieceKind, Square};
use crate::zobrist;

/// A legal position: a board that can arise in a game, with the side to move.
///
/// ```
/// use xiangqi::Position;
/// let pos = Position::startpos();
/// assert_eq!(pos.legal_moves().len(), 44);
/// assert_eq!(pos.to_string(), xiangqi::START_FEN);
/// ```
#[derive(Clone, Debug)]
pub struct Position {
    /// 0 for empty, else `1 + Piece::index()`.
    board: [u8; 90],
    pub(crate) by_color: [u128; 2],
    pub(crate) by_kind: [u128; 7],
    /// Occupancy in file-major order (see `attacks::TRANSPOSED`).
    pub(crate) occ_t: u128,
    turn: Color,
    halfmove_clock: u32,
    fullmoves: u32,
    hash: u64,
}

/// Why a [`Setup`] is not a legal position.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum PositionError {
    /// A side has no king.
    #[error("{0} has no king")]
    MissingKing(Color),
    /// A side has more pieces of a kind than the game ever gives it.
    #[error("{} has {count} pieces '{}', at most {} allowed", piece.color, piece.fen_char(), piece.kind.max_count())]
    TooMany {
        /// The piece that occurs too often.
        piece: Piece,
        /// How often it occurs.
        count: u32,
    },
    /// A king stands outside its palace.
    #[error("{color} king on {square} is outside its palace")]
    KingOutsidePalace {
        /// Whose king.
        color: Color,
        /// Where it stands.
        square: Square,
    },
    /// An advisor stands on a point no advisor can reach.
    #[error("{color} advisor on {square} is on a point advisors cannot reach")]
    InvalidAdvisorSquare {
        /// Whose advisor.
        color: Color,
        /// Where it stands.
        square: Square,
    },
    /// An elephant stands on a point no elephant can reach.
    #[error("{color} elephant on {square} is on a point elephants cannot reach")]
    InvalidElephantSquare {
        /// Whose elephant.
        color: Color,
        /// Where it stands.
        square: Square,
    },
    /// A pawn stands behind its start rank, or off its file before crossing the river.
    #[error("{color} pawn on {square} is on a point pawns cannot reach")]
    InvalidPawnSquare {
        /// Whose pawn.
        color: Color,
        /// Where it stands.
        square: Square,
    },
    /// The two kings face each other on an open file.
    #[error("the kings face each other on an open file")]
    KingsFacing,
    /// The side that just moved left its own king in check.
    #[error("{0} is not to move but is in check")]
    OpponentInCheck(Color),
}

/// Why a FEN string does not give a legal position.
#[derive(Clone, Debug, PartialEq, Eq, Error)]
pub enum ParseFenError {
    /// The text is not a well-formed FEN.
    #[error(transparent)]
    Fen(#[from] FenError),
    /// The FEN is well-formed but the position breaks the rules.
    #[error(transparent)]
    Position(#[from] PositionError),
}

/// A move that is not legal in the position it was played in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Error)]
#[error("illegal move {mv} in this position")]
pub struct IllegalMoveError {
    /// The rejected move.
    pub mv: Move,
}

const fn advisor_ok(sq: Square, color: Color) -> bool {
    let f = sq.file().index();
    let r = sq.rank().relative_to(color);
    matches!((f, r), (3, 0) | (5, 0) | (4, 1) | (3, 2) | (5, 2))
}

const fn elephant_ok(sq: Square, color: Color) -> bool {
    let f = sq.file().index();
    let r = sq.rank().relative_to(color);
    matches!((f, r), (2, 0) | (6, 0) | (0, 2) | (4, 2) | (8, 2) | (2, 4) | (6, 4))
}

const fn pawn_ok(sq: Square, color: Color) -> bool {
    let f = sq.file().index();
    let r = sq.rank().relative_to(color);
    r >= 5 || ((r == 3 || r == 4) && f.is_multiple_of(2))
}

impl Position {
    /// The standard start position.
    pub fn startpos() -> Position {
        Position::from_fen(START_FEN).expect("the start position is valid")
    }

    /// Parses and validates a FEN.
    ///
    /// ```
    /// use xiangqi::{ParseFenError, Position, PositionError, Color};
    /// let err = Position::from_fen("4k4/9/9/9/9/9/9/9/9/9 w").unwrap_err();
    /// assert_eq!(err, ParseFenError::Position(PositionError::MissingKing(Color::Red)));
    /// ```
    pub fn from_fen(fen: &str) -> Result<Position, ParseFenError> {
        Ok(Position::from_setup(&Setup::from_fen(fen)?)?)
    }

    /// Validates a setup.
    pub fn from_setup(setup: &Setup) -> Result<Position, PositionError> {
        let mut counts = [0u32; 14];
        for (i, piece) in setup.board.iter().enumerate() {
            let Some(piece) = *piece else { continue };
            let sq = Square::from_index_unchecked(i as u8);
            counts[piece.index()] += 1;
            let color = piece.color;
            let ok = match piece.kind {
                PieceKind::King => sq.in_palace(color),
                PieceKind::Advisor => advisor_ok(sq, color),
                PieceKind::Elephant => elephant_ok(sq, color),
                PieceKind::Pawn => pawn_ok(sq, color),
                _ => true,
            };
            if !ok {
                return Err(match piece.kind {
                    PieceKind::King => PositionError::KingOutsidePalace { color, square: sq },
                    PieceKind::Advisor => PositionError::InvalidAdvisorSquare { color, square: sq },
                    PieceKind::Elephant => PositionError::InvalidElephantSquare { color, square: sq },
                    _ => PositionError::InvalidPawnSquare { color, square: sq },
                });
            }
        }
        for color in Color::ALL {
            for kind in PieceKind::ALL {
                let piece = Piece::new(color, kind);
                let count = counts[piece.index()];
                if kind == PieceKind::King && count == 0 {
                    return Err(PositionError::MissingKing(color));
                }
                if count > kind.max_count() {
                    return Err(PositionError::TooMany { piece, count });
                }
            }
        }
        let mut pos = Position {
            board: [0; 90],
            by_color: [0; 2],
            by_kind: [0; 7],
            occ_t: 0,
            turn: setup.turn,
            halfmove_clock: setup.halfmove_clock,
            fullmoves: setup.fullmoves,
            hash: 0,
        };
        for (i, piece) in setup.board.iter().enumerate() {
            if let Some(piece) = *piece {
                pos.put(piece, i);
            }
        }
        pos.hash = pos.compute_hash();
        let red_king = pos.king(Color::Red);
        let black_king = pos.king(Color::Black);
        if red_king.file() == black_king.file()
            && attacks::BETWEEN[red_king.index()][black_king.index()] & pos.occupied() == 0
        {
            return Err(PositionError::KingsFacing);
        }
        let them = !pos.turn;
        if pos.attackers_of(pos.king(them).index(), pos.turn, pos.occupied(), pos.occ_t) != 0 {
            return Err(PositionError::OpponentInCheck(them));
        }
        Ok(pos)
    }

    /// The position as an unchecked setup.
    pub fn to_setup(&self) -> Setup {
        let mut board = [None; 90];
        for sq in Square::all() {
            board[sq.index()] = self.piece_at(sq);
        }
        Setup { board, turn: self.turn, halfmove_clock: self.halfmove_clock, fullmoves: self.fullmoves }
    }

    #[inline]
    fn put(&mut self, piece: Piece, s: usize) {
        self.board[s] = piece.index() as u8 + 1;
        self.by_color[piece.color.index()] |= 1 << s;
        self.by_kind[piece.kind.index()] |= 1 << s;
        self.occ_t |= 1 << attacks::TRANSPOSED[s];
    }

    fn compute_hash(&self) -> u64 {
        let mut h = if self.turn == Color::Black { zobrist::BLACK_TO_MOVE } else { 0 };
        for (s, &code) in self.board.iter().enumerate() {
            if code != 0 {
                h ^= zobrist::PIECE_SQUARE[code as usize - 1][s];
            }
        }
        h
    }

    /// The piece on `sq`, if any.
    #[inline]
    pub fn piece_at(&self, sq: Square) -> Option<Piece> {
        piece_from_code(self.board[sq.index()])
    }

    /// The side to move.
    #[inline]
    pub fn turn(&self) -> Color {
        self.turn
    }

    /// Plies since the last capture (the FEN halfmove clock).
    #[inline]
    pub fn halfmove_clock(&self) -> u32 {
        self.halfmove_clock
    }

    /// The FEN move number.
    #[inline]
    pub fn fullmoves(&self) -> u32 {
        self.fullmoves
    }

    /// Zobrist hash of pieces and side to move (not of the counters).
    #[inline]
    pub fn hash(&self) -> u64 {
        self.hash
    }

    /// All occupied points.
    #[inline]
    pub fn occupied_bb(&self) -> Bitboard {
        Bitboard(self.occupied())
    }

    /// The points holding `color`'s pieces.
    #[inline]
    pub fn color_bb(&self, color: Color) -> Bitboard {
        Bitboard(self.by_color[color.index()])
    }

    /// The points holding pieces of `piece`'s colour and kind.
    #[inline]
    pub fn piece_bb(&self, piece: Piece) -> Bitboard {
        Bitboard(self.by_color[piece.color.index()] & self.by_kind[piece.kind.index()])
    }

    /// `color`'s material in half-pawns: rook 18, cannon 9, horse 8, advisor and elephant 4, pawn 2
    /// on its own side of the river and 4 across it (the king counts nothing).
    ///
    /// ```
    /// use xiangqi::{Color, Position};
    /// let pos = Position::startpos();
    /// assert_eq!(pos.material(Color::Red), 2 * 18 + 2 * 9 + 2 * 8 + 4 * 4 + 5 * 2);
    /// ```
    pub fn material(&self, color: Color) -> u32 {
        let count = |kind: PieceKind| self.pieces(color, kind).count_ones();
        let own_side =
            Bitboard(self.pieces(color, PieceKind::Pawn)).into_iter().filter(|sq| sq.on_own_side(color)).count() as u32;
        18 * count(PieceKind::Rook)
            + 9 * count(PieceKind::Cannon)
            + 8 * count(PieceKind::Horse)
            + 4 * (count(PieceKind::Advisor) + count(PieceKind::Elephant))
            + 4 * count(PieceKind::Pawn)
            - 2 * own_side
    }

    #[inline]
    pub(crate) fn occupied(&self) -> u128 {
        self.by_color[0] | self.by_color[1]
    }

    #[inline]
    pub(crate) fn pieces(&self, color: Color, kind: PieceKind) -> u128 {
        self.by_color[color.index()] & self.by_kind[kind.index()]
    }

    /// Where `color`'s king stands.
    #[inline]
    pub fn king(&self, color: Color) -> Square {
        Square::from_index_unchecked(self.pieces(color, PieceKind::King).trailing_zeros() as u8)
    }

    /// Pieces of `by` that attack square `s` with the given occupancy. Used for king safety only:
    /// the enemy king counts along an open file (flying general); advisors and elephants never
    /// reach a king, so they are not looked at.
    #[inline(always)]
    pub(crate) fn attackers_of(&self, s: usize, by: Color, occ: u128, occ_t: u128) -> u128 {
        self.attackers_masked(s, self.by_color[by.index()], by, occ, occ_t)
    }

    /// As [`Self::attackers_of`], with `theirs` the attacking side's pieces (a captured one removed).
    #[inline(always)]
    pub(crate) fn attackers_masked(&self, s: usize, theirs: u128, by: Color, occ: u128, occ_t: u128) -> u128 {
        let k = &self.by_kind;
        let (rook, cannon) = attacks::slides(s, occ, occ_t);
        (rook & (k[PieceKind::Rook.index()] | k[PieceKind::King.index()])
            | cannon & k[PieceKind::Cannon.index()]
            | attacks::horse_attackers(s, occ) & k[PieceKind::Horse.index()]
            | attacks::PAWN_ATTACKERS[by.index()][s] & k[PieceKind::Pawn.index()])
            & theirs
    }

    /// Pieces giving check to the side to move.
    #[inline]
    pub fn checkers(&self) -> Bitboard {
        Bitboard(self.attackers_of(self.king(self.turn).index(), !self.turn, self.occupied(), self.occ_t))
    }

    /// Whether the side to move is in check.
    #[inline]
    pub fn is_check(&self) -> bool {
        !self.checkers().is_empty()
    }

    /// Whether the side to move is checkmated (in check with no legal move): a loss.
    pub fn is_checkmate(&self) -> bool {
        self.is_check() && !self.has_legal_moves()
    }

    /// Whether the side to move is stalemated (not in check, no legal move): also a loss.
    pub fn is_stalemate(&self) -> bool {
        !self.is_check() && !self.has_legal_moves()
    }

    /// Plays a move after checking that it is legal; a rejected move leaves the position unchanged.
    ///
    /// ```
    /// use xiangqi::Position;
    /// let mut pos = Position::startpos();
    /// pos.play("h2e2".parse().unwrap()).unwrap();
    /// assert!(pos.play("a0a5".parse().unwrap()).is_err());
    /// ```
    pub fn play(&mut self, mv: Move) -> Result<(), IllegalMoveError> {
        if !self.is_legal(mv) {
            return Err(IllegalMoveError { mv });
        }
        self.play_unchecked(mv);
        Ok(())
    }

    /// Plays a move known to be legal (from this position's move generator). Returns the captured
    /// piece. Playing an illegal move leaves a position that breaks the type's invariants.
    #[inline]
    pub fn play_unchecked(&mut self, mv: Move) -> Option<Piece> {
        let from = mv.from().index();
        let to = mv.to().index();
        let code = self.board[from];
        debug_assert!(code != 0, "no piece on {}", mv.from());
        let piece = piece_from_code(code).expect("a piece on the origin point");
        let captured = piece_from_code(self.board[to]);
        let from_bit = 1u128 << from;
        let to_bit = 1u128 << to;
        if let Some(cap) = captured {
            self.by_color[cap.color.index()] ^= to_bit;
            self.by_kind[cap.kind.index()] ^= to_bit;
            self.hash ^= zobrist::PIECE_SQUARE[cap.index()][to];
            self.halfmove_clock = 0;
        } else {
            self.occ_t ^= 1 << attacks::TRANSPOSED[to];
            self.halfmove_clock = self.halfmove_clock.saturating_add(1);
        }
        self.occ_t ^= 1 << attacks::TRANSPOSED[from];
        self.by_color[piece.color.index()] ^= from_bit | to_bit;
        self.by_kind[piece.kind.index()] ^= from_bit | to_bit;
        self.board[to] = code;
        self.board[from] = 0;
        let keys = &zobrist::PIECE_SQUARE[code as usize - 1];
        self.hash ^= keys[from] ^ keys[to] ^ zobrist::BLACK_TO_MOVE;
        if self.turn == Color::Black {
            self.fullmoves = self.fullmoves.saturating_add(1);
        }
        self.turn = !self.turn;
        captured
    }

    /// Sets the side to move, keeping the hash in step (for threat analysis by the game module).
    pub(crate) fn set_turn(&mut self, color: Color) {
        if color != self.turn {
            self.hash ^= zobrist::BLACK_TO_MOVE;
            self.turn = color;
        }
    }

    /// The position mirrored left-right (files a<->i); the side to move is unchanged.
    ///
    /// ```
    /// use xiangqi::Position;
    /// let pos = Position::startpos();
    /// assert_eq!(pos.mirror().hash(), pos.hash());
    /// ```
    #[must_use]
    pub fn mirror(&self) -> Position {
        let mut setup = self.to_setup();
        for sq in Square::all() {
            setup.board[sq.mirror().index()] = self.piece_at(sq);
        }
        Position::from_setup(&setup).expect("a mirrored legal position is legal")
    }

    /// Whether the hash matches one recomputed from scratch (for tests of incremental updates).
    pub fn hash_is_consistent(&self) -> bool {
        self.hash == self.compute_hash()
    }
}

#[inline]
fn piece_from_code(code: u8) -> Option<Piece> {
    (code as usize).checked_sub(1).and_then(Piece::from_index)
}

impl PartialEq for Position {
    /// Same pieces, side to move and counters.
    fn eq(&self, other: &Position) -> bool {
        self.board == other.board
            && self.turn == other.turn
            && self.halfmove_clock == other.halfmove_clock
            && self.fullmoves == other.fullmoves
    }
}

impl Eq for Position {}

impl fmt::Display for Position {
    /// Writes the canonical FEN.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_fen(f, |sq| self.piece_at(sq), self.turn, self.halfmove_clock, self.fullmoves)
    }
}

impl std::str::FromStr for Position {
    type Err = ParseFenError;
    fn from_str(s: &str) -> Result<Position, ParseFenError> {
        Position::from_fen(s)
    }
}

impl Default for Position {
    fn default() -> Position {
        Position::startpos()
    }
}
