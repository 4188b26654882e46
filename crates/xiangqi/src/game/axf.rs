//! Chases under the Asian Xiangqi Federation (AXF) rules, for [`Ruleset::Wxf`], computed the way
//! Fairy-Stockfish (FSF) computes them (`Position::chased()` in its src/position.cpp), so that our
//! rulings match the FSF-based tools people play against. FSF's rules are a fast approximation of
//! the AXF book: where they differ, we follow FSF.
//!
//! [`Ruleset::Wxf`]: super::Ruleset::Wxf

use crate::attacks;
use crate::bitboard::Bitboard;
use crate::position::Position;
use crate::types::{Color, Move, Piece, PieceKind, Square};

const ORTHOGONAL: [(i32, i32); 4] = [(0, 1), (1, 0), (0, -1), (-1, 0)];
const DIAGONAL: [(i32, i32); 4] = [(1, 1), (1, -1), (-1, -1), (-1, 1)];

/// The enemy pieces that `mv`, a legal move in `before`, chases, AXF style as Fairy-Stockfish
/// rules it (squares after the move). The victims are the pieces of the side to move after `mv`.
///
/// - Kings and pawns that have not crossed the river are never chased.
/// - Direct attacks: what the moved piece attacks from its new point, unless it is a king or a
///   pawn. A rook or cannon does not chase along the line it moved on: FSF counts only new attacks
///   and, rather than compare with the attacks before the move, leaves that line out.
/// - Discovered attacks: what a piece of the mover attacks now and did not with the moved piece
///   on its old point (and the captured piece, if any, on its new one): a horse whose leg was
///   freed, an elephant whose eye was freed, a rook or cannon on a line through the old point (the
///   moved rook or cannon itself included), a cannon that gained a screen on the new point. These
///   use the pieces' whole reach, so an elephant reaches across the river here.
/// - A horse or cannon always chases a rook; an elephant or advisor always chases a rook, cannon or
///   horse.
/// - A piece of the attacker's own kind is not chased (both attack each other), unless it is
///   pinned; a horse is not chased by a horse it attacks back, pinned or not.
/// - Any other target is chased if it is unprotected: no defender once the attacker has left its
///   point, pinned defenders not counted, and a lone king defender not counted when the target
///   stands on a line from the enemy king (taking back would face the kings). "Pinned" is FSF's
///   approximation: the only piece between the king and an enemy rook, on an enemy horse's leg,
///   either of the two between the king and an enemy cannon, or the only piece of its side on the
///   file both kings share, whatever else stands between.
/// - A move that newly pins a piece chases what that piece protected, where the mover attacks it
///   with a piece that is not itself pinned.
/// - A move that sets up a discovered check (the mover's piece newly stands alone between the
///   enemy king and a rook, horse or cannon of the mover) chases what the blocking piece attacks,
///   except pieces next to the king that the king could take back safely.
/// - Checking moves chase too; whether the attacker could legally capture is never asked.
///
/// ```
/// use xiangqi::{Position, game::axf_chased};
/// // The red rook comes to attack the unprotected black horse: a chase.
/// let pos = Position::from_fen("3k5/9/9/9/4n4/9/9/9/9/R3K4 w - - 0 1").unwrap();
/// let chased: Vec<String> = axf_chased(&pos, "a0a5".parse().unwrap()).map(|s| s.to_string()).collect();
/// assert_eq!(chased, ["e5"]);
/// ```
pub fn axf_chased(before: &Position, mv: Move) -> Bitboard {
    let mut after = before.clone();
    let captured = after.play_unchecked(mv).is_some();
    let mut chase = Chase::new(&after);
    chase.direct(mv);
    chase.discovered(mv, captured);
    let before_blockers = king_blockers(before, chase.victim);
    chase.newly_pinned_protectors(before_blockers);
    chase.discovered_check_threats(before_blockers);
    chase.chased
}

/// One chase computation: the position after the move and the victims found so far.
struct Chase<'a> {
    pos: &'a Position,
    /// The side to move, whose pieces are chased.
    victim: Color,
    /// The side that just moved.
    mover: Color,
    /// FSF's blockers for the victim's king (either colour).
    blockers: Bitboard,
    /// The victim's pinned pieces: its blockers and the lone piece on the kings' shared file.
    pins: Bitboard,
    /// The victim's pieces found chased so far.
    chased: Bitboard,
}

impl<'a> Chase<'a> {
    /// Starts on `pos`, the position after the move.
    fn new(pos: &'a Position) -> Chase<'a> {
        let victim = pos.turn();
        let blockers = king_blockers(pos, victim);
        let pins = blockers | shared_file_pin(pos, victim);
        Chase { pos, victim, mover: !victim, blockers, pins, chased: Bitboard::EMPTY }
    }

    /// The pieces of `color` and `kind`.
    fn pieces(&self, color: Color, kind: PieceKind) -> Bitboard {
        self.pos.piece_bb(Piece::new(color, kind))
    }

    /// The kind of the piece on `sq`, which is occupied.
    fn kind_at(&self, sq: Square) -> PieceKind {
        self.pos.piece_at(sq).expect("a piece on the square").kind
    }

    /// The victim's pieces that can never be chased.
    fn unchaseable(&self) -> Bitboard {
        let pawns = self.pieces(self.victim, PieceKind::Pawn);
        let uncrossed: Bitboard = pawns.filter(|s| s.on_own_side(self.victim)).collect();
        self.pieces(self.victim, PieceKind::King) | uncrossed
    }

    /// The moved piece's attacks from its new point.
    fn direct(&mut self, mv: Move) {
        let kind = self.kind_at(mv.to());
        if matches!(kind, PieceKind::King | PieceKind::Pawn) {
            return;
        }
        let mut targets = attacks_from(self.pos, self.mover, kind, mv.to()) & self.pos.color_bb(self.victim);
        if matches!(kind, PieceKind::Rook | PieceKind::Cannon) {
            targets &= !line(mv.from(), mv.to());
        }
        self.add(mv.to(), kind, targets);
    }

    /// Attacks that the move opened or, for a cannon, gave a screen to.
    fn discovered(&mut self, mv: Move, captured: bool) {
        let (from, to) = (mv.from(), mv.to());
        let occupied = self.pos.occupied_bb();
        // The lines as they were: the moved piece on `from`, and `to` empty unless it was a capture.
        let before = occupied ^ square(from) ^ if captured { Bitboard::EMPTY } else { square(to) };
        let ours = |kind| self.pieces(self.mover, kind);
        let candidates = (neighbours(from, &ORTHOGONAL) & ours(PieceKind::Horse))
            | (neighbours(from, &DIAGONAL) & ours(PieceKind::Elephant))
            | (lines(from) & (ours(PieceKind::Rook) | ours(PieceKind::Cannon)))
            | (lines(to) & ours(PieceKind::Cannon));
        for s in candidates {
            let kind = self.kind_at(s);
            let opened = reach(self.mover, kind, s, occupied) & !reach(self.mover, kind, s, before);
            self.add(s, kind, opened & self.pos.color_bb(self.victim));
        }
    }

    /// Adds the targets of `attacks` (victim pieces attacked from `attacker`) that are chased.
    fn add(&mut self, attacker: Square, kind: PieceKind, attacks: Bitboard) {
        let targets = attacks & !self.unchaseable();
        self.chased |= targets & self.stronger(kind);
        for target in self.without_mutual(attacker, kind, targets) {
            if self.unprotected(attacker, target) {
                self.chased |= square(target);
            }
        }
    }

    /// The victim's pieces worth more than an attacker of `kind`, chased protected or not.
    fn stronger(&self, kind: PieceKind) -> Bitboard {
        let of = |k| self.pieces(self.victim, k);
        match kind {
            PieceKind::Horse | PieceKind::Cannon => of(PieceKind::Rook),
            PieceKind::Elephant | PieceKind::Advisor => {
                of(PieceKind::Rook) | of(PieceKind::Cannon) | of(PieceKind::Horse)
            }
            _ => Bitboard::EMPTY,
        }
    }

    /// `targets` without the pieces that attack the attacker back in the same way.
    fn without_mutual(&self, attacker: Square, kind: PieceKind, targets: Bitboard) -> Bitboard {
        let same = targets & self.pieces(self.victim, kind);
        let occupied = self.pos.occupied_bb();
        // A horse attacks back through a point diagonal to its target; with all of those empty
        // every attacked horse attacks back, else FSF asks each horse (and then ignores pins).
        if kind == PieceKind::Horse && !(neighbours(attacker, &DIAGONAL) & occupied).is_empty() {
            let back: Bitboard = same.filter(|&h| reach(self.victim, kind, h, occupied).contains(attacker)).collect();
            return targets & !back;
        }
        targets & !(same & !self.pins)
    }

    /// Whether the victim cannot take back on `target` once `attacker` has taken it.
    fn unprotected(&self, attacker: Square, target: Square) -> bool {
        let occupied = self.pos.occupied_bb() ^ square(attacker);
        let defenders = attackers_to(self.pos, target, occupied, self.victim) & !self.pins;
        let king = self.pieces(self.victim, PieceKind::King);
        // A king taking back on a line from the other king would face it (FSF does not look at
        // what stands between the target and the king's point).
        defenders.is_empty() || (defenders == king && slides(self.pos.king(self.mover), occupied).0.contains(target))
    }

    /// A newly pinned piece no longer protects: what it protected is chased where the mover
    /// attacks it with a piece that is not pinned itself.
    fn newly_pinned_protectors(&mut self, before_blockers: Bitboard) {
        let occupied = self.pos.occupied_bb();
        let free_attackers = !king_blockers(self.pos, self.mover);
        let new_pins = self.blockers & !before_blockers & self.pos.color_bb(self.victim);
        for pinned in new_pins {
            let protected = reach(self.victim, self.kind_at(pinned), pinned, occupied)
                & self.pos.color_bb(self.victim)
                & !self.unchaseable();
            for target in protected {
                if !(attackers_to(self.pos, target, occupied, self.mover) & free_attackers).is_empty() {
                    self.chased |= square(target);
                }
            }
        }
    }

    /// A mover's piece that newly blocks a line to the enemy king can take what it attacks with
    /// a discovered check: that is chased, unless the king can safely take back next to it.
    fn discovered_check_threats(&mut self, before_blockers: Bitboard) {
        let king = self.pos.king(self.victim);
        let king_reach = attacks_from(self.pos, self.victim, PieceKind::King, king);
        let discoverers = self.blockers & !before_blockers & self.pos.color_bb(self.mover);
        for s in discoverers {
            let attacked = attacks_from(self.pos, self.mover, self.kind_at(s), s) & self.pos.color_bb(self.victim);
            self.chased |= attacked & !king_reach;
            // The king takes back with the discoverer gone: is the point still attacked?
            let occupied = self.pos.occupied_bb() ^ square(s) ^ square(king);
            for target in attacked & king_reach {
                if !(attackers_to(self.pos, target, occupied, self.mover) & !square(s)).is_empty() {
                    self.chased |= square(target);
                }
            }
        }
    }
}

/// FSF's pins for the king of `color` (`blockers_for_king`): the pieces of either colour that
/// stand alone between it and an enemy rook that does not attack it yet, on the leg of an enemy
/// horse that would attack it, or among exactly two between it and an enemy cannon. Rooks and
/// horses that would attack the king do not block one another. (Elephants, also lame riders for
/// FSF, never come near the enemy king.)
fn king_blockers(pos: &Position, color: Color) -> Bitboard {
    let king = pos.king(color);
    let enemy = |kind| pos.piece_bb(Piece::new(!color, kind));
    let occupied = pos.occupied_bb();
    let (rook_view, cannon_view) = slides(king, occupied);
    let rooks = enemy(PieceKind::Rook) & lines(king) & !rook_view;
    let cannons = enemy(PieceKind::Cannon) & lines(king) & !cannon_view;
    let horse_points = Bitboard(attacks::horse_attackers(king.index(), 0));
    let horses = enemy(PieceKind::Horse) & horse_points & !Bitboard(attacks::horse_attackers(king.index(), occupied.0));
    let see_through = occupied & !(rooks | horses);
    let alone = |b: Bitboard| if b.count() == 1 { b } else { Bitboard::EMPTY };
    let by_rooks = rooks.map(|r| alone(between(king, r) & see_through));
    let by_horses = horses.map(|h| alone(neighbours(h, &ORTHOGONAL) & neighbours(king, &DIAGONAL) & see_through));
    let by_cannons = cannons.map(|c| between(king, c) & occupied).filter(|b| b.count() == 2);
    by_rooks.chain(by_horses).chain(by_cannons).fold(Bitboard::EMPTY, |all, b| all | b)
}

/// FSF's pin for the flying general: when both kings stand on one file, the only piece of
/// `color` on it (if it has only one there), whatever stands between.
fn shared_file_pin(pos: &Position, color: Color) -> Bitboard {
    let enemy_king = pos.king(!color);
    let on_file: Bitboard = pos.color_bb(color).filter(|s| s.file() == enemy_king.file()).collect();
    let own_king = square(pos.king(color));
    let others = on_file & !own_king;
    if !(on_file & own_king).is_empty() && !others.more_than_one() { others } else { Bitboard::EMPTY }
}

/// FSF's `attackers_to`: `color`'s pieces that attack `target` with the occupancy `occupied`,
/// counting a kind only where it may stand on `target` (kings and advisors in the palace,
/// elephants on their side).
fn attackers_to(pos: &Position, target: Square, occupied: Bitboard, color: Color) -> Bitboard {
    let mut found = Bitboard::EMPTY;
    for kind in PieceKind::ALL.into_iter().filter(|&k| may_stand(color, k, target)) {
        let points = match kind {
            PieceKind::Horse => Bitboard(attacks::horse_attackers(target.index(), occupied.0)),
            PieceKind::Pawn => Bitboard(attacks::PAWN_ATTACKERS[color.index()][target.index()]),
            // The other kinds attack symmetrically.
            _ => reach(!color, kind, target, occupied),
        };
        found |= points & pos.piece_bb(Piece::new(color, kind));
    }
    found
}

/// FSF's `Position::attacks_from`: what a piece of `color` and `kind` on `from` attacks on the
/// board as it stands, limited to where it may stand; a pawn that has not crossed attacks forward.
fn attacks_from(pos: &Position, color: Color, kind: PieceKind, from: Square) -> Bitboard {
    let uncrossed_pawn = kind == PieceKind::Pawn && from.on_own_side(color);
    reach(color, kind, from, pos.occupied_bb())
        .filter(|s| may_stand(color, kind, *s) && (!uncrossed_pawn || s.file() == from.file()))
        .collect()
}

/// FSF's `attacks_bb`: what a piece of `color` and `kind` on `from` attacks with the occupancy
/// `occupied`, wherever it may stand (elephants across the river, advisors and kings out of the
/// palace, pawns sideways before crossing).
fn reach(color: Color, kind: PieceKind, from: Square, occupied: Bitboard) -> Bitboard {
    match kind {
        PieceKind::Rook => slides(from, occupied).0,
        PieceKind::Cannon => slides(from, occupied).1,
        PieceKind::Horse => Bitboard(attacks::horse(from.index(), occupied.0)),
        PieceKind::Elephant => DIAGONAL
            .iter()
            .filter(|&&(df, dr)| step(from, df, dr).is_some_and(|eye| !occupied.contains(eye)))
            .filter_map(|&(df, dr)| step(from, 2 * df, 2 * dr))
            .collect(),
        PieceKind::Advisor => neighbours(from, &DIAGONAL),
        PieceKind::King => neighbours(from, &ORTHOGONAL),
        PieceKind::Pawn => {
            let forward = if color == Color::Red { 1 } else { -1 };
            neighbours(from, &[(0, forward), (1, 0), (-1, 0)])
        }
    }
}

/// Whether a piece of `color` and `kind` may stand on `s` (FSF's mobility regions).
fn may_stand(color: Color, kind: PieceKind, s: Square) -> bool {
    match kind {
        PieceKind::King | PieceKind::Advisor => s.in_palace(color),
        PieceKind::Elephant => s.on_own_side(color),
        _ => true,
    }
}

/// Rook attacks and cannon captures from `from` with any occupancy.
fn slides(from: Square, occupied: Bitboard) -> (Bitboard, Bitboard) {
    let transposed = occupied.fold(0u128, |t, s| t | 1 << attacks::TRANSPOSED[s.index()]);
    let (rook, cannon) = attacks::slides(from.index(), occupied.0, transposed);
    (Bitboard(rook), Bitboard(cannon))
}

/// The set of just `s`.
fn square(s: Square) -> Bitboard {
    Bitboard::from_square(s)
}

/// `s` moved by `df` files and `dr` ranks, if still on the board.
fn step(s: Square, df: i32, dr: i32) -> Option<Square> {
    Square::from_coords(i32::from(s.file().index()) + df, i32::from(s.rank().index()) + dr)
}

/// The points one step from `s` in the given directions.
fn neighbours(s: Square, directions: &[(i32, i32)]) -> Bitboard {
    directions.iter().filter_map(|&(df, dr)| step(s, df, dr)).collect()
}

/// The rank and file through `s`, without `s`.
fn lines(s: Square) -> Bitboard {
    Bitboard(attacks::LINES[s.index()])
}

/// The whole rank or file through `a` and `b`.
fn line(a: Square, b: Square) -> Bitboard {
    (lines(a) & lines(b)) | square(a) | square(b)
}

/// The points strictly between `a` and `b` on a rank or file.
fn between(a: Square, b: Square) -> Bitboard {
    Bitboard(attacks::BETWEEN[a.index()][b.index()])
}
