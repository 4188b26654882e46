//! Small `Copy` value types: colours, pieces, files, ranks, squares and moves.

use std::fmt;

/// A side: Red moves first and sits on ranks 0-4, Black on ranks 5-9.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Color {
    /// The side that moves first (upper-case letters in FEN).
    Red = 0,
    /// The second player (lower-case letters in FEN).
    Black = 1,
}

impl Color {
    /// Both colours, Red first.
    pub const ALL: [Color; 2] = [Color::Red, Color::Black];

    /// The other side.
    #[inline]
    #[must_use]
    pub const fn opponent(self) -> Color {
        match self {
            Color::Red => Color::Black,
            Color::Black => Color::Red,
        }
    }

    /// 0 for Red, 1 for Black.
    #[inline]
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The FEN side-to-move letter: `w` for Red, `b` for Black.
    pub const fn fen_char(self) -> char {
        match self {
            Color::Red => 'w',
            Color::Black => 'b',
        }
    }

    /// Lower-case English name, as used in JSON and logs.
    pub const fn name(self) -> &'static str {
        match self {
            Color::Red => "red",
            Color::Black => "black",
        }
    }
}

impl std::ops::Not for Color {
    type Output = Color;
    #[inline]
    fn not(self) -> Color {
        self.opponent()
    }
}

impl fmt::Display for Color {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The seven kinds of piece.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PieceKind {
    /// 帅/将, confined to the palace.
    King = 0,
    /// 仕/士, diagonal steps inside the palace.
    Advisor = 1,
    /// 相/象, two diagonal steps, never across the river.
    Elephant = 2,
    /// 马, the horse (knight), blocked at its leg.
    Horse = 3,
    /// 车, the rook (chariot).
    Rook = 4,
    /// 炮, the cannon, captures by jumping one screen.
    Cannon = 5,
    /// 兵/卒, the pawn (soldier).
    Pawn = 6,
}

impl PieceKind {
    /// All kinds in index order.
    pub const ALL: [PieceKind; 7] = [
        PieceKind::King,
        PieceKind::Advisor,
        PieceKind::Elephant,
        PieceKind::Horse,
        PieceKind::Rook,
        PieceKind::Cannon,
        PieceKind::Pawn,
    ];

    /// Index 0..7 in the order of [`PieceKind::ALL`].
    #[inline]
    pub const fn index(self) -> usize {
        self as usize
    }

    /// Upper-case FEN letter (`K A B N R C P`).
    pub const fn upper_char(self) -> char {
        match self {
            PieceKind::King => 'K',
            PieceKind::Advisor => 'A',
            PieceKind::Elephant => 'B',
            PieceKind::Horse => 'N',
            PieceKind::Rook => 'R',
            PieceKind::Cannon => 'C',
            PieceKind::Pawn => 'P',
        }
    }

    /// Parses a FEN letter of either case; `H` and `E` are accepted for horse and elephant.
    pub const fn from_char(c: char) -> Option<PieceKind> {
        Some(match c.to_ascii_uppercase() {
            'K' => PieceKind::King,
            'A' => PieceKind::Advisor,
            'B' | 'E' => PieceKind::Elephant,
            'N' | 'H' => PieceKind::Horse,
            'R' => PieceKind::Rook,
            'C' => PieceKind::Cannon,
            'P' => PieceKind::Pawn,
            _ => return None,
        })
    }

    /// How many of this kind each side starts with (and can ever have: there are no promotions).
    pub const fn max_count(self) -> u32 {
        match self {
            PieceKind::King => 1,
            PieceKind::Pawn => 5,
            _ => 2,
        }
    }
}

/// A coloured piece.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Piece {
    /// Whose piece it is.
    pub color: Color,
    /// What it is.
    pub kind: PieceKind,
}

impl Piece {
    /// Builds a piece.
    #[inline]
    pub const fn new(color: Color, kind: PieceKind) -> Piece {
        Piece { color, kind }
    }

    /// The FEN letter: upper case for Red, lower case for Black.
    pub const fn fen_char(self) -> char {
        let c = self.kind.upper_char();
        match self.color {
            Color::Red => c,
            Color::Black => c.to_ascii_lowercase(),
        }
    }

    /// Parses a FEN letter (`h`/`e` accepted for horse/elephant).
    pub const fn from_fen_char(c: char) -> Option<Piece> {
        match PieceKind::from_char(c) {
            Some(kind) => Some(Piece { color: if c.is_ascii_uppercase() { Color::Red } else { Color::Black }, kind }),
            None => None,
        }
    }

    /// Dense index 0..14 (colour-major), used for hashing and encodings.
    #[inline]
    pub const fn index(self) -> usize {
        self.color.index() * 7 + self.kind.index()
    }

    /// The piece with dense index 0..14 ([`Piece::index`]), if in range.
    #[inline]
    pub const fn from_index(index: usize) -> Option<Piece> {
        if index >= 14 {
            return None;
        }
        let color = if index < 7 { Color::Red } else { Color::Black };
        Some(Piece { color, kind: PieceKind::ALL[index % 7] })
    }
}

/// A file (column) `a`..`i`, counted from Red's left.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct File(u8);

impl File {
    /// Number of files.
    pub const COUNT: usize = 9;

    /// The file with index 0..9, if in range.
    #[inline]
    pub const fn new(index: u8) -> Option<File> {
        if index < 9 { Some(File(index)) } else { None }
    }

    /// 0 for `a` .. 8 for `i`.
    #[inline]
    pub const fn index(self) -> u8 {
        self.0
    }

    /// The file letter `a`..`i`.
    pub const fn char(self) -> char {
        (b'a' + self.0) as char
    }

    /// Parses a file letter `a`..`i` (either case).
    pub const fn from_char(c: char) -> Option<File> {
        let c = c.to_ascii_lowercase();
        if c >= 'a' && c <= 'i' { Some(File(c as u8 - b'a')) } else { None }
    }

    /// The file seen in a left-right mirror.
    #[must_use]
    pub const fn mirror(self) -> File {
        File(8 - self.0)
    }
}

/// A rank (row) 0..9, counted from Red's back rank.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Rank(u8);

impl Rank {
    /// Number of ranks.
    pub const COUNT: usize = 10;

    /// The rank with index 0..10, if in range.
    #[inline]
    pub const fn new(index: u8) -> Option<Rank> {
        if index < 10 { Some(Rank(index)) } else { None }
    }

    /// 0 (Red's back rank) .. 9 (Black's back rank).
    #[inline]
    pub const fn index(self) -> u8 {
        self.0
    }

    /// The rank digit `0`..`9`.
    pub const fn char(self) -> char {
        (b'0' + self.0) as char
    }

    /// The rank as seen from `color`'s side: 0 is that side's back rank.
    pub const fn relative_to(self, color: Color) -> u8 {
        match color {
            Color::Red => self.0,
            Color::Black => 9 - self.0,
        }
    }
}

/// One of the 90 points, indexed `rank * 9 + file`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Square(u8);

impl Square {
    /// Number of points on the board.
    pub const COUNT: usize = 90;

    /// The square at `file`, `rank`.
    #[inline]
    pub const fn new(file: File, rank: Rank) -> Square {
        Square(rank.0 * 9 + file.0)
    }

    /// The square with index 0..90, if in range.
    #[inline]
    pub const fn from_index(index: u8) -> Option<Square> {
        if index < 90 { Some(Square(index)) } else { None }
    }

    /// Square with an index known to be in range (internal fast path).
    #[inline]
    pub(crate) const fn from_index_unchecked(index: u8) -> Square {
        debug_assert!(index < 90);
        Square(index)
    }

    /// The square at (file, rank) given as signed numbers, if on the board.
    #[inline]
    pub const fn from_coords(file: i32, rank: i32) -> Option<Square> {
        if file >= 0 && file < 9 && rank >= 0 && rank < 10 { Some(Square((rank * 9 + file) as u8)) } else { None }
    }

    /// 0..90.
    #[inline]
    pub const fn index(self) -> usize {
        self.0 as usize
    }

    /// The square's file.
    #[inline]
    pub const fn file(self) -> File {
        File(self.0 % 9)
    }

    /// The square's rank.
    #[inline]
    pub const fn rank(self) -> Rank {
        Rank(self.0 / 9)
    }

    /// The square in a left-right mirror.
    #[inline]
    #[must_use]
    pub const fn mirror(self) -> Square {
        Square::new(self.file().mirror(), self.rank())
    }

    /// The square seen from the other side (rotated 180 degrees).
    #[inline]
    #[must_use]
    pub const fn rotate(self) -> Square {
        Square(89 - self.0)
    }

    /// Flips the rank only (9 - rank), the view used to encode positions for Black.
    #[inline]
    #[must_use]
    pub const fn flip_rank(self) -> Square {
        Square::new(self.file(), Rank(9 - self.0 / 9))
    }

    /// Whether the point is on `color`'s half of the board (before the river from its side).
    #[inline]
    pub const fn on_own_side(self, color: Color) -> bool {
        match color {
            Color::Red => self.0 < 45,
            Color::Black => self.0 >= 45,
        }
    }

    /// Whether the point lies in `color`'s palace.
    #[inline]
    pub const fn in_palace(self, color: Color) -> bool {
        let f = self.0 % 9;
        let r = self.0 / 9;
        let r = match color {
            Color::Red => r,
            Color::Black => 9 - r,
        };
        f >= 3 && f <= 5 && r <= 2
    }

    /// Iterates over all 90 squares in index order.
    pub fn all() -> impl Iterator<Item = Square> {
        (0..90u8).map(Square)
    }
}

impl fmt::Display for Square {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.file().char(), self.rank().char())
    }
}

/// A move from one point to another. It carries no piece, so it is only meaningful with a position.
///
/// ```
/// use xiangqi::{Move, Position};
/// let pos = Position::startpos();
/// let mv: Move = "h2e2".parse().unwrap();
/// assert!(pos.is_legal(mv));
/// assert_eq!(mv.to_string(), "h2e2");
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Move(u16);

impl Move {
    /// The move from `from` to `to`.
    #[inline]
    pub const fn new(from: Square, to: Square) -> Move {
        Move(from.0 as u16 | (to.0 as u16) << 7)
    }

    /// Origin point.
    #[inline]
    pub const fn from(self) -> Square {
        Square((self.0 & 0x7f) as u8)
    }

    /// Destination point.
    #[inline]
    pub const fn to(self) -> Square {
        Square((self.0 >> 7) as u8)
    }

    /// The move in a left-right mirror.
    #[inline]
    #[must_use]
    pub const fn mirror(self) -> Move {
        Move::new(self.from().mirror(), self.to().mirror())
    }

    /// The move with both ranks flipped (9 - rank), matching [`Square::flip_rank`].
    #[inline]
    #[must_use]
    pub const fn flip_rank(self) -> Move {
        Move::new(self.from().flip_rank(), self.to().flip_rank())
    }

    /// A compact 14-bit code (`from | to << 7`), stable across versions.
    #[inline]
    pub const fn to_u16(self) -> u16 {
        self.0
    }

    /// Decodes [`Move::to_u16`]; `None` if a square is off the board.
    pub const fn from_u16(code: u16) -> Option<Move> {
        let from = code & 0x7f;
        let to = (code >> 7) & 0x7f;
        if from < 90 && to < 90 && code >> 14 == 0 { Some(Move(code)) } else { None }
    }
}
