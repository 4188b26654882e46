//! The nature of a move for repetition judgement (article 24): check, mate threat, chase or idle.

use crate::bitboard::Bitboard;
use crate::position::Position;
use crate::types::{Color, Move, Piece, PieceKind, Square};

/// The heaviest nature of a move (26.6: the heaviest counts).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MoveNature {
    /// 闲: anything else, including offers, sacrifices, blocks and follows.
    Idle,
    /// 捉: threatens to win material.
    Chase,
    /// 杀: threatens mate by a check or a series of checks.
    MateThreat,
    /// 将: attacks the enemy king.
    Check,
}

/// Everything the repetition rules need to know about one move.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Natures {
    /// The move gives check.
    pub check: bool,
    /// The move threatens mate by checks (only looked for when it is not a check).
    pub mate_threat: bool,
    /// Enemy pieces the move newly threatens to win (squares after the move).
    pub chased: Bitboard,
    /// Of `chased`, the rooks.
    pub chased_rooks: Bitboard,
    /// Of `chased`, the pieces with no real protection (no protector, or only false ones).
    pub chased_unprotected: Bitboard,
    /// Of `chased`, the pieces chased only jointly (联合捉子, 24): every capture that wins them
    /// needs another of the chaser's pieces (a cannon's own screen, a second attacker).
    pub jointly_chased: Bitboard,
    /// Pieces a pawn newly attacks with gain: allowed, so not in `chased` (26.1), but the 1999
    /// rules count them once both sides attack perpetually (its 27.2).
    pub pawn_chased: Bitboard,
}

impl Natures {
    /// The heaviest nature.
    pub fn heaviest(&self) -> MoveNature {
        if self.check {
            MoveNature::Check
        } else if self.mate_threat {
            MoveNature::MateThreat
        } else if !self.chased.is_empty() {
            MoveNature::Chase
        } else {
            MoveNature::Idle
        }
    }
}

/// Material values for gain tests, in half-horses: rook = 2 horses = 2 cannons (24), advisor =
/// elephant; a crossed pawn is worth an advisor, so trading it for any piece is no gain; an
/// uncrossed pawn is worth nothing to capture (26.8).
fn value(pos: &Position, sq: Square) -> i32 {
    let Some(piece) = pos.piece_at(sq) else { return 0 };
    match piece.kind {
        PieceKind::Rook => 4,
        PieceKind::Horse | PieceKind::Cannon => 2,
        PieceKind::Advisor | PieceKind::Elephant => 1,
        PieceKind::Pawn => i32::from(!sq.on_own_side(piece.color)),
        PieceKind::King => 1000,
    }
}

/// Material the side to move wins by `capture` followed by the best sequence of recaptures on
/// that point (each side may stop; each recaptures with its least valuable legal capturer, so
/// pinned protectors and recaptures that would face the kings do not count).
fn capture_gain(pos: &Position, capture: Move) -> i32 {
    let won = value(pos, capture.to());
    let mut next = pos.clone();
    next.play_unchecked(capture);
    won - best_recapture(&next, capture.to())
}

fn best_recapture(pos: &Position, sq: Square) -> i32 {
    let cheapest = pos.legal_moves().iter().copied().filter(|m| m.to() == sq).min_by_key(|m| value(pos, m.from()));
    cheapest.map_or(0, |m| capture_gain(pos, m).max(0))
}

/// Captures with material gain available to the side to move: (attacker, target) pairs.
fn gainful_captures(pos: &Position) -> Vec<(Square, Square)> {
    let theirs = pos.color_bb(!pos.turn());
    pos.legal_moves()
        .iter()
        .filter(|m| theirs.contains(m.to()) && pos.piece_at(m.to()).is_some_and(|p| p.kind != PieceKind::King))
        .filter(|&&m| capture_gain(pos, m) > 0)
        .map(|m| (m.from(), m.to()))
        .collect()
}

/// Enemy pieces the side to move wins through a check (24: "从下一着开始运用将军...得子"): after
/// the check, whatever the reply, a capture of the piece gains material overall, counting what
/// the check took and what the reply took back. Looked at one check deep; winning material
/// with a king or a pawn that way is idle (26.1, 26.8) and not counted. Returns the won pieces
/// and, of those, the ones that no reply leaves protected (无根子).
fn won_through_check(pos: &Position) -> (Bitboard, Bitboard) {
    let us = pos.turn();
    let mut won = Bitboard::EMPTY;
    let mut won_unprotected = Bitboard::EMPTY;
    for &check in pos.legal_moves().iter() {
        let mut after = pos.clone();
        after.play_unchecked(check);
        if !after.is_check() {
            continue;
        }
        let taken = value(pos, check.to());
        let replies = after.legal_moves();
        // A check without replies is mate: a mate threat, not a chase.
        let (mut common, mut common_unprotected) =
            if replies.is_empty() { (Bitboard::EMPTY, Bitboard::EMPTY) } else { (Bitboard::FULL, Bitboard::FULL) };
        for &reply in replies.iter() {
            let lost = value(&after, reply.to());
            let mut next = after.clone();
            next.play_unchecked(reply);
            let (mut here, mut here_unprotected) = (Bitboard::EMPTY, Bitboard::EMPTY);
            for &m in next.legal_moves().iter() {
                let attacker = next.piece_at(m.from()).map(|p| p.kind);
                let target = next.piece_at(m.to());
                if target.is_some_and(|t| t.color != us && t.kind != PieceKind::King)
                    && !matches!(attacker, Some(PieceKind::King | PieceKind::Pawn))
                    && taken - lost + capture_gain(&next, m) > 0
                {
                    here |= Bitboard::from_square(m.to());
                    if !is_protected(&next, m.from(), m.to()) {
                        here_unprotected |= Bitboard::from_square(m.to());
                    }
                }
            }
            common &= here;
            common_unprotected &= here_unprotected;
            if common.is_empty() {
                break;
            }
        }
        won |= common;
        won_unprotected |= common & common_unprotected;
    }
    // Only pieces standing now: a square that a reply would fill is no piece being chased.
    let standing = pos.color_bb(!us);
    (won & standing, won_unprotected & standing)
}

/// Whether the side to move can mate with a check, or with a check answered by any reply and
/// then a mating check (the "series of checks" of 24, looked at two checks deep).
fn mates_by_checks(pos: &Position, checks_left: u32) -> bool {
    pos.legal_moves().iter().any(|&m| {
        let mut after = pos.clone();
        after.play_unchecked(m);
        if !after.is_check() {
            return false;
        }
        let replies = after.legal_moves();
        if replies.is_empty() {
            return true;
        }
        checks_left > 1
            && replies.iter().all(|&r| {
                let mut next = after.clone();
                next.play_unchecked(r);
                mates_by_checks(&next, checks_left - 1)
            })
    })
}

/// Classifies `mv`, a legal move in `before`, by article 24 and the general rules of 26.
///
/// A chase is a capture with gain that the move creates: by the moved piece, or by another piece
/// it uncovers or joins (24, 26.2), or through a check that wins the piece whatever the reply.
/// Captures that were already possible before the move, by the same piece, do not count (the
/// rook that still attacks the same advisor after sliding is idle); in check, attacks that
/// already won material though the check kept them from being played. Chases by the king or a pawn
/// are allowed (26.1) and left out, unless they are the other pieces' chases that the king's or
/// pawn's move uncovered, or captures that win only together with another piece (26.2). A king
/// move that answers check never chases or threatens mate (26.3). A defending side's lone
/// attacking piece chases no advisor or elephant (26.4). An exchange offer that the other side
/// cannot take without being mated or losing material chases the piece offered to (26.10);
/// otherwise it is idle (兑), like a rook and horse (cannon) in contact with a protected horse
/// (cannon) that can take the horse (cannon) without losing a root (26.11). [`classify_move_in_game`]
/// also knows the move before (26.5).
///
/// ```
/// use xiangqi::{Position, game::{classify_move, MoveNature}};
/// // The red rook attacks the unprotected black horse on the open file: a chase.
/// let pos = Position::from_fen("3k5/9/9/9/4n4/9/9/9/9/R3K4 w - - 0 1").unwrap();
/// let natures = classify_move(&pos, "a0a5".parse().unwrap());
/// assert_eq!(natures.heaviest(), MoveNature::Chase);
/// ```
pub fn classify_move(before: &Position, mv: Move) -> Natures {
    let mover = before.turn();
    let mut after = before.clone();
    after.play_unchecked(mv);
    let mut natures = Natures {
        check: after.is_check(),
        mate_threat: false,
        chased: Bitboard::EMPTY,
        chased_rooks: Bitboard::EMPTY,
        chased_unprotected: Bitboard::EMPTY,
        jointly_chased: Bitboard::EMPTY,
        pawn_chased: Bitboard::EMPTY,
    };
    let moved_kind = after.piece_at(mv.to()).map(|p| p.kind);
    if natures.check || (moved_kind == Some(PieceKind::King) && before.is_check()) {
        return natures;
    }
    // The mover again to move: what does it threaten?
    let threats = after.with_turn(mover);
    natures.mate_threat = mates_by_checks(&threats, 2);

    let old: Vec<(Square, Square)> =
        gainful_captures(before).into_iter().map(|(a, t)| (if a == mv.from() { mv.to() } else { a }, t)).collect();
    // In check, captures that did not answer the check were illegal, but one that would have won
    // material was there all along: answering the check does not make it new (26.3 counts only
    // new chases). One that the answer made winning, by cutting the target's root, is new.
    let won_before = |attacker: Square, target: Square| {
        let origin = if attacker == mv.to() { mv.from() } else { attacker };
        before.is_check()
            && before.pseudo_attacks(origin).contains(target)
            && capture_gain(before, Move::new(origin, target)) > 0
    };
    // 26.4: chases of advisors and elephants that come with a lone attacker's move are idle.
    let spared = if lone_attacker_moved(&after, mv) {
        threats.piece_bb(Piece::new(!mover, PieceKind::Advisor))
            | threats.piece_bb(Piece::new(!mover, PieceKind::Elephant))
    } else {
        Bitboard::EMPTY
    };
    // Targets that some capture by one piece alone wins.
    let mut single = Bitboard::EMPTY;
    for (attacker, target) in gainful_captures(&threats) {
        let kind = threats.piece_at(attacker).map(|p| p.kind);
        if old.contains(&(attacker, target)) || won_before(attacker, target) {
            continue;
        }
        let bit = Bitboard::from_square(target);
        if kind == Some(PieceKind::Pawn) {
            natures.pawn_chased |= bit;
        }
        let joint = is_joint(&threats, attacker, target);
        // The king's and the pawns' own chases are allowed (26.1), not those they make together
        // with another piece (26.2: 与其他子配合同时产生“捉”).
        if (matches!(kind, Some(PieceKind::King | PieceKind::Pawn)) && !joint) || spared.contains(target) {
            continue;
        }
        natures.chased |= bit;
        if threats.piece_at(target).is_some_and(|p| p.kind == PieceKind::Rook) {
            natures.chased_rooks |= bit;
        }
        if !is_protected(&threats, attacker, target) {
            natures.chased_unprotected |= bit;
        }
        if joint {
            natures.jointly_chased |= bit;
        } else {
            single |= bit;
        }
    }
    natures.jointly_chased &= !single;
    drop_accepted_exchanges(&mut natures, &after, &threats);
    let (won_now, unprotected_now) = won_through_check(&threats);
    let through_check = won_now & !won_through_check(before).0 & !spared;
    natures.chased |= through_check;
    natures.chased_unprotected |= through_check & unprotected_now;
    natures.chased_rooks |= through_check & threats.piece_bb(Piece::new(!mover, PieceKind::Rook));
    for offered in offers_not_to_accept(before, &after, mv) {
        let bit = Bitboard::from_square(offered);
        natures.chased |= bit;
        if threats.piece_at(offered).is_some_and(|p| p.kind == PieceKind::Rook) {
            natures.chased_rooks |= bit;
        }
        // Unprotected only as the offering piece would find it taking (where it can).
        if threats.is_legal(Move::new(mv.to(), offered)) && !is_protected(&threats, mv.to(), offered) {
            natures.chased_unprotected |= bit;
        }
    }
    natures
}

/// 26.4 (守和方只有一个进攻子时，占据守和要点，附带产生的捉士象按“闲”处理): whether `mv` moved the
/// only attacking piece (rook, horse, cannon or pawn) of a defending side, one with less material
/// than the other. Whether its point is a key drawing point is not judged: any point the lone
/// attacker takes counts as one.
fn lone_attacker_moved(after: &Position, mv: Move) -> bool {
    let mover = !after.turn();
    let attackers = [PieceKind::Rook, PieceKind::Horse, PieceKind::Cannon, PieceKind::Pawn]
        .into_iter()
        .map(|kind| after.piece_bb(Piece::new(mover, kind)))
        .fold(Bitboard::EMPTY, |all, b| all | b);
    attackers == Bitboard::from_square(mv.to()) && after.material(mover) < after.material(!mover)
}

/// 26.11 (车马同时与马(车炮同时与炮)产生接触，兑和捉的判断 ... 被接触的马(炮)有根，且主动接受邀兑后其
/// “根”无损失，按“兑”处理): takes out of `natures` the protected horses (cannons) that only a rook
/// and a horse (cannon) attack, together, where the contacted piece can accept the exchange, taking
/// the horse (cannon) that attacks it, and none of its roots can be won after it has: an exchange
/// offer, idle, though the plain balance of article 24 (the horse takes first, a root takes back,
/// the rook takes the root) would make it a chase. The contacted piece is the subject of the
/// article's sentence, so it is the one that "actively accepts". A piece the rook side adds
/// (车方增加其他参与子力) leaves article 24 to judge, as does an unprotected contacted piece (无根:
/// a chase).
fn drop_accepted_exchanges(natures: &mut Natures, after: &Position, threats: &Position) {
    let theirs = |kind| threats.piece_bb(Piece::new(after.turn(), kind));
    let candidates = natures.jointly_chased & (theirs(PieceKind::Horse) | theirs(PieceKind::Cannon));
    for target in candidates.into_iter().filter(|&target| exchange_accepted(after, threats, target)) {
        let kept = !Bitboard::from_square(target);
        natures.chased &= kept;
        natures.chased_unprotected &= kept;
        natures.jointly_chased &= kept;
    }
}

/// Whether `target`, attacked in `threats` by exactly a rook and a piece of its own kind that it
/// can take in `after`, has roots, none of which can be won once it has taken that piece (see
/// [`drop_accepted_exchanges`]).
fn exchange_accepted(after: &Position, threats: &Position, target: Square) -> bool {
    let attackers: Vec<Square> = threats.legal_moves().iter().filter(|m| m.to() == target).map(|m| m.from()).collect();
    let kind = |sq: Square| threats.piece_at(sq).map(|p| p.kind);
    let offered = match attackers[..] {
        [a, b] if kind(a) == Some(PieceKind::Rook) => b,
        [a, b] if kind(b) == Some(PieceKind::Rook) => a,
        _ => return false,
    };
    let accept = Move::new(target, offered);
    if kind(offered) != kind(target) || !after.is_legal(accept) {
        return false;
    }
    // The roots: the pieces that would take back on the contacted piece's point.
    let mut taken = threats.clone();
    taken.play_unchecked(Move::new(offered, target));
    let roots: Bitboard = taken
        .legal_moves()
        .iter()
        .filter(|m| m.to() == target)
        .fold(Bitboard::EMPTY, |roots, m| roots | Bitboard::from_square(m.from()));
    let mut accepted = after.clone();
    accepted.play_unchecked(accept);
    !roots.is_empty()
        && !accepted.legal_moves().iter().any(|&m| roots.contains(m.to()) && capture_gain(&accepted, m) > 0)
}

/// 26.10 (同兵种邀兑，被邀兑方兑子后立即被杀或子力价值受损，邀兑方按“捉”处理): the enemy pieces of
/// its own kind that the moved rook, horse or cannon newly offers itself to (that can take it)
/// where taking the offered piece costs the taker: it is then mated by checks, or
/// the offering side wins more than the piece it gave, and more than it could win before the
/// offer was taken. An offer whose acceptance costs nothing is an exchange (兑), idle; an offer
/// that also threatens mate already counts as a mate threat (26.10's last sentence, 26.6).
/// Losses are looked for one capture deep, with each capture's exchange on its point.
fn offers_not_to_accept(before: &Position, after: &Position, mv: Move) -> Vec<Square> {
    let Some(offered) = after.piece_at(mv.to()) else { return Vec::new() };
    if !matches!(offered.kind, PieceKind::Rook | PieceKind::Horse | PieceKind::Cannon) {
        return Vec::new();
    }
    let mover = offered.color;
    let threats = after.with_turn(mover);
    let takers: Vec<Move> = after
        .legal_moves()
        .iter()
        .copied()
        .filter(|m| m.to() == mv.to() && after.piece_at(m.from()).is_some_and(|p| p.kind == offered.kind))
        // An offer the piece already made on its old point is no new one.
        .filter(|m| !before.pseudo_attacks(m.from()).contains(mv.from()))
        .collect();
    if takers.is_empty() {
        return Vec::new();
    }
    let before_taking = best_gain(&threats);
    takers
        .into_iter()
        .filter(|&take| {
            let mut taken = after.clone();
            taken.play_unchecked(take);
            let won_back = best_gain(&taken);
            (won_back > value(after, mv.to()) && won_back > before_taking) || mates_by_checks(&taken, 2)
        })
        .map(|take| take.from())
        .collect()
}

/// The most material the side to move wins with one capture and the exchange on its point.
fn best_gain(pos: &Position) -> i32 {
    let theirs = pos.color_bb(!pos.turn());
    pos.legal_moves()
        .iter()
        .filter(|m| theirs.contains(m.to()) && pos.piece_at(m.to()).is_some_and(|p| p.kind != PieceKind::King))
        .map(|&m| capture_gain(pos, m))
        .fold(0, i32::max)
}

/// Classifies `mv` as [`classify_move`] does, knowing `prev`, the move that led to `before` and
/// the position it was played in: 26.5 (自毙) needs it. A side that checks into a position where
/// it is itself under a mate threat, or where its pieces can be won (a protector that leaves its
/// line to check, 做为根的子，自己离线断根“将军”), answers for that itself: the other side's answer
/// to the check threatens mate and chases only what it would also threaten and chase on the board
/// as it stood before the check (若另一方应将着法产生新的杀法，仍应按“杀”处理), or what the answering
/// piece itself attacks (it takes part in that chase). The king's answers are idle anyway (26.3).
///
/// ```
/// use xiangqi::{Position, game::{MoveNature, classify_move, classify_move_in_game}};
/// // Red's rook leaves c3, where it kept Black's rook c5 from mating on c0, to check from f3.
/// let earlier = Position::from_fen("3N1k3/4a4/1n7/9/2r6/9/2R6/9/3NC4/4K4 w - - 0 1").unwrap();
/// let check = "c3f3".parse().unwrap();
/// let mut before = earlier.clone();
/// before.play(check).unwrap();
/// // Black blocks with the advisor: Rc0 mate is threatened now, but Red brought it on itself.
/// let block = "e8f7".parse().unwrap();
/// assert_eq!(classify_move(&before, block).heaviest(), MoveNature::MateThreat);
/// let natures = classify_move_in_game(Some((&earlier, check)), &before, block);
/// assert_eq!(natures.heaviest(), MoveNature::Idle);
/// ```
pub fn classify_move_in_game(prev: Option<(&Position, Move)>, before: &Position, mv: Move) -> Natures {
    let mut natures = classify_move(before, mv);
    let Some((earlier, _)) = prev else { return natures };
    if !before.is_check() || natures.heaviest() == MoveNature::Idle {
        return natures;
    }
    if let Some(unchecked) = as_if_unchecked(earlier, mv) {
        // What the answering piece itself attacks it takes part in (无直接参与...不予考虑 spares
        // only the chases it had no part in).
        let mut after = before.clone();
        after.play_unchecked(mv);
        natures.mate_threat &= unchecked.mate_threat;
        natures.chased &= unchecked.chased | after.pseudo_attacks(mv.to()) | roots_cut(before, &after, natures.chased);
        natures.chased_rooks &= natures.chased;
        natures.chased_unprotected &= natures.chased;
        natures.jointly_chased &= natures.chased;
        natures.pawn_chased &= unchecked.pawn_chased;
    }
    natures
}

/// Of `targets`, chased after `after` (the answer to the check in `before`), the pieces whose root
/// the answer itself cut: protected on `before` against a capture possible there too, and
/// unprotected after. The answer took direct part in that chase, which 26.5 does not spare (无直接
/// 参与...不予考虑). The board before the check, by which 26.5 is judged otherwise, misses such a
/// cut where the checking move brought the root (a horse that checks and guards over one leg).
fn roots_cut(before: &Position, after: &Position, targets: Bitboard) -> Bitboard {
    let threats = after.with_turn(before.turn());
    threats
        .legal_moves()
        .iter()
        .filter(|m| {
            targets.contains(m.to())
                && before.pseudo_attacks(m.from()).contains(m.to())
                && is_protected(before, m.from(), m.to())
                && !is_protected(&threats, m.from(), m.to())
        })
        .fold(Bitboard::EMPTY, |cut, m| cut | Bitboard::from_square(m.to()))
}

/// `answer` classified on `earlier`, the board before the opponent's check, with the answering
/// side to move; `None` where that board cannot be handed over (the checker was in check there)
/// or the answer is not legal on it.
fn as_if_unchecked(earlier: &Position, answer: Move) -> Option<Natures> {
    if earlier.is_check() {
        return None;
    }
    let board = earlier.with_turn(!earlier.turn());
    board.is_legal(answer).then(|| classify_move(&board, answer))
}

/// Whether winning `target` with `attacker` needs another of the attacker's pieces (联合捉子: a
/// joint chase, 24): a partner is the cannon's own screen or a second piece that attacks the
/// target, and without it the capture is no longer possible or no longer gains. Pieces that
/// only block a defender's line are not partners.
fn is_joint(pos: &Position, attacker: Square, target: Square) -> bool {
    let capture = Move::new(attacker, target);
    let screen = crate::attacks::BETWEEN[attacker.index()][target.index()];
    let partners =
        (pos.color_bb(pos.turn()) & !Bitboard::from_square(attacker) & !Bitboard::from_square(pos.king(pos.turn())))
            .into_iter()
            .filter(|&p| screen >> p.index() & 1 != 0 || pos.pseudo_attacks(p).contains(target));
    partners.into_iter().any(|partner| {
        let mut setup = pos.to_setup();
        setup.board[partner.index()] = None;
        // Taking a piece away may expose the other king; such a piece is no partner here.
        Position::from_setup(&setup)
            .is_ok_and(|without| !without.is_legal(capture) || capture_gain(&without, capture) <= 0)
    })
}

/// Whether the target's side can really recapture after `attacker` takes it.
fn is_protected(pos: &Position, attacker: Square, target: Square) -> bool {
    let mut after = pos.clone();
    after.play_unchecked(Move::new(attacker, target));
    after.legal_moves().iter().any(|m| m.to() == target)
}

impl Position {
    /// This board with `color` to move; only valid while the other side is not in check.
    pub(crate) fn with_turn(&self, color: Color) -> Position {
        let mut pos = self.clone();
        pos.set_turn(color);
        pos
    }
}
