//! Legal move generation.
//!
//! Outside check, a move can only expose the king if it moves the king, moves a "blocker" (the
//! one piece between the king and an enemy rook or king, one of the two pieces between the
//! king and an enemy cannon, or a piece on the leg of a horse aimed at the king), or lands on an
//! empty point between the king and an enemy cannon that has no screen yet ("hollow" points,
//! which would become the screen). Every other move is legal without a test, which lets the
//! generator emit whole target sets at once; in check, every move is tested.

use crate::attacks;
use crate::bitboard::Bitboard;
use crate::position::Position;
use crate::types::{Color, Move, PieceKind, Square};

/// More than the most pseudo-legal moves any position allows (119).
const MAX_MOVES: usize = 128;

/// A list of moves on the stack.
///
/// ```
/// use xiangqi::Position;
/// let moves = Position::startpos().legal_moves();
/// assert!(moves.iter().any(|m| m.to_string() == "b2e2"));
/// ```
#[derive(Clone)]
pub struct MoveList {
    moves: [Move; MAX_MOVES],
    len: usize,
}

impl MoveList {
    /// An empty list.
    pub fn new() -> MoveList {
        MoveList {
            moves: [Move::new(Square::from_index_unchecked(0), Square::from_index_unchecked(0)); MAX_MOVES],
            len: 0,
        }
    }

    #[inline]
    fn push(&mut self, mv: Move) {
        self.moves[self.len] = mv;
        self.len += 1;
    }
}

impl Default for MoveList {
    fn default() -> MoveList {
        MoveList::new()
    }
}

impl std::ops::Deref for MoveList {
    type Target = [Move];
    #[inline]
    fn deref(&self) -> &[Move] {
        &self.moves[..self.len]
    }
}

impl std::fmt::Debug for MoveList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<'a> IntoIterator for &'a MoveList {
    type Item = &'a Move;
    type IntoIter = std::slice::Iter<'a, Move>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

/// Receives generated moves: a list collects them, a counter only counts them.
trait Sink {
    /// Every point in `targets` is a legal destination from `from`.
    fn add_set(&mut self, from: usize, targets: u128);
    /// One legal move.
    fn add(&mut self, from: usize, to: usize);
    /// Whether generation may stop early.
    #[inline(always)]
    fn done(&self) -> bool {
        false
    }
}

impl Sink for MoveList {
    #[inline]
    fn add_set(&mut self, from: usize, mut targets: u128) {
        let from = Square::from_index_unchecked(from as u8);
        while targets != 0 {
            let to = targets.trailing_zeros() as u8;
            targets &= targets - 1;
            self.push(Move::new(from, Square::from_index_unchecked(to)));
        }
    }

    #[inline]
    fn add(&mut self, from: usize, to: usize) {
        self.push(Move::new(Square::from_index_unchecked(from as u8), Square::from_index_unchecked(to as u8)));
    }
}

struct Counter(usize);

impl Sink for Counter {
    #[inline]
    fn add_set(&mut self, _from: usize, targets: u128) {
        self.0 += targets.count_ones() as usize;
    }

    #[inline]
    fn add(&mut self, _from: usize, _to: usize) {
        self.0 += 1;
    }
}

/// Stops at the first move.
struct Any(bool);

impl Sink for Any {
    #[inline]
    fn add_set(&mut self, _from: usize, targets: u128) {
        self.0 |= targets != 0;
    }

    #[inline]
    fn add(&mut self, _from: usize, _to: usize) {
        self.0 = true;
    }

    #[inline(always)]
    fn done(&self) -> bool {
        self.0
    }
}

const KINDS_BUT_KING: [PieceKind; 6] =
    [PieceKind::Rook, PieceKind::Cannon, PieceKind::Horse, PieceKind::Pawn, PieceKind::Elephant, PieceKind::Advisor];

impl Position {
    /// All legal moves.
    pub fn legal_moves(&self) -> MoveList {
        let mut list = MoveList::new();
        self.generate(&mut list);
        list
    }

    /// Replaces the contents of `list` with the legal moves (reuses its storage).
    pub fn legal_moves_into(&self, list: &mut MoveList) {
        list.len = 0;
        self.generate(list);
    }

    /// The number of legal moves, counted without listing them.
    pub fn count_legal_moves(&self) -> usize {
        let mut counter = Counter(0);
        self.generate(&mut counter);
        counter.0
    }

    /// Whether the side to move has any legal move (no move means it has lost).
    pub fn has_legal_moves(&self) -> bool {
        let mut any = Any(false);
        self.generate(&mut any);
        any.0
    }

    /// Whether `mv` is legal here.
    pub fn is_legal(&self, mv: Move) -> bool {
        let us = self.turn();
        let from = mv.from().index();
        let to = mv.to().index();
        let Some(piece) = self.piece_at(mv.from()) else { return false };
        if piece.color != us {
            return false;
        }
        let ours = self.by_color[us.index()];
        let occ = self.occupied();
        if self.pseudo_targets(piece.kind, from, us, occ) & !ours & 1 << to == 0 {
            return false;
        }
        if piece.kind == PieceKind::King {
            self.king_step_safe(from, to)
        } else {
            self.safe_after(self.king(us).index(), from, to)
        }
    }

    /// Points the piece on `from` could move to if its king's safety did not matter.
    pub(crate) fn pseudo_attacks(&self, from: Square) -> Bitboard {
        let Some(piece) = self.piece_at(from) else { return Bitboard::EMPTY };
        let targets = self.pseudo_targets(piece.kind, from.index(), piece.color, self.occupied());
        Bitboard(targets & !self.by_color[piece.color.index()])
    }

    /// Destinations of a piece of `kind` and colour `us` on `s`, own pieces not yet removed.
    #[inline(always)]
    fn pseudo_targets(&self, kind: PieceKind, s: usize, us: Color, occ: u128) -> u128 {
        match kind {
            PieceKind::Rook => attacks::rook(s, occ, self.occ_t),
            PieceKind::Cannon => {
                let (slide, jump) = attacks::slides(s, occ, self.occ_t);
                slide & !occ | jump & self.by_color[(!us).index()]
            }
            PieceKind::Horse => attacks::horse(s, occ),
            PieceKind::Elephant => attacks::elephant(s, occ),
            PieceKind::Advisor => attacks::ADVISOR_MOVES[s],
            PieceKind::Pawn => attacks::PAWN_MOVES[us.index()][s],
            PieceKind::King => attacks::KING_MOVES[s],
        }
    }

    /// Whether the king of the side to move is safe after a non-king move `from` -> `to`.
    #[inline(always)]
    fn safe_after(&self, king: usize, from: usize, to: usize) -> bool {
        let them = !self.turn();
        let occ = self.occupied() & !(1 << from) | 1 << to;
        let occ_t = self.occ_t & !(1 << attacks::TRANSPOSED[from]) | 1 << attacks::TRANSPOSED[to];
        let theirs = self.by_color[them.index()] & !(1 << to);
        self.attackers_masked(king, theirs, them, occ, occ_t) == 0
    }

    /// Whether the king of the side to move may step `from` -> `to`.
    #[inline(always)]
    fn king_step_safe(&self, from: usize, to: usize) -> bool {
        let them = !self.turn();
        let occ = self.occupied() & !(1 << from);
        let occ_t = self.occ_t & !(1 << attacks::TRANSPOSED[from]);
        let theirs = self.by_color[them.index()] & !(1 << to);
        self.attackers_masked(to, theirs, them, occ, occ_t) == 0
    }

    fn generate<S: Sink>(&self, sink: &mut S) {
        let us = self.turn();
        let them = !us;
        let ours = self.by_color[us.index()];
        let theirs = self.by_color[them.index()];
        let occ = ours | theirs;
        let king = self.king(us).index();
        let in_check = self.attackers_of(king, them, occ, self.occ_t) != 0;

        // Blockers and hollow points (see the module docs); in check every move is tested anyway.
        let mut blockers = if in_check { ours } else { 0 };
        let mut hollow = 0u128;
        if !in_check {
            let kinds = &self.by_kind;
            let cannons = kinds[PieceKind::Cannon.index()];
            let mut snipers = attacks::LINES[king]
                & theirs
                & (kinds[PieceKind::Rook.index()] | kinds[PieceKind::King.index()] | cannons);
            while snipers != 0 {
                let s = snipers.trailing_zeros() as usize;
                snipers &= snipers - 1;
                let between = attacks::BETWEEN[king][s];
                let inside = between & occ;
                if cannons >> s & 1 != 0 {
                    match inside.count_ones() {
                        0 => hollow |= between,
                        2 => blockers |= inside,
                        _ => {}
                    }
                } else if inside.count_ones() == 1 {
                    blockers |= inside;
                }
            }
            let horses = theirs & kinds[PieceKind::Horse.index()];
            for &(leg, sources) in &attacks::HORSE_ATTACKERS[king] {
                if sources & horses != 0 {
                    blockers |= leg & occ;
                }
            }
            blockers &= ours;
        }

        let free = !ours & !hollow;
        for kind in KINDS_BUT_KING {
            let mut pieces = ours & self.by_kind[kind.index()];
            while pieces != 0 {
                let s = pieces.trailing_zeros() as usize;
                pieces &= pieces - 1;
                let targets = self.pseudo_targets(kind, s, us, occ);
                if blockers >> s & 1 == 0 {
                    sink.add_set(s, targets & free);
                } else {
                    let mut targets = targets & !ours;
                    while targets != 0 {
                        let to = targets.trailing_zeros() as usize;
                        targets &= targets - 1;
                        if self.safe_after(king, s, to) {
                            sink.add(s, to);
                        }
                    }
                }
                if sink.done() {
                    return;
                }
            }
        }

        let mut steps = attacks::KING_MOVES[king] & !ours;
        while steps != 0 {
            let to = steps.trailing_zeros() as usize;
            steps &= steps - 1;
            if self.king_step_safe(king, to) {
                sink.add(king, to);
            }
        }
    }
}
