//! Rulings on a repeated cycle of moves (articles 23, 25 and 26.9; for the 1999 rules its 26 and
//! 27.2; for WXF, as Fairy-Stockfish rules).

use super::axf::axf_chased;
use super::classify::{MoveNature, classify_move_in_game};
use super::{Outcome, Reason, Ruleset, Verdict};
use crate::bitboard::Bitboard;
use crate::position::Position;
use crate::types::{Color, Move};
use Reason::{AllowedRepetition, MutualForbidden};

/// What one side did over the cycle.
#[derive(Default)]
struct Conduct {
    moves: usize,
    checks: usize,
    threats: usize,
    chases: usize,
    /// Chase moves whose targets include a rook or an unprotected piece (26.9's weighty chases).
    weighty_chases: usize,
    /// Chase moves that chase a rook / an unprotected piece ([`Weighty::Rook`], [`Weighty::Unprotected`]).
    chases_of: [usize; 2],
    /// Of those, the ones in which all such targets are chased jointly (联合捉子).
    joint_chases_of: [usize; 2],
    /// Idle moves in which a pawn attacks with gain (allowed by 26.1; the 1999 rules' 27.2).
    pawn_chases: usize,
}

/// The two kinds of weighty chase that 26.9 weighs against a joint chase of the same kind.
#[derive(Copy, Clone)]
enum Weighty {
    Rook = 0,
    Unprotected = 1,
}

impl Conduct {
    /// Every move checks, threatens mate or chases (24: 禁止着法).
    fn forbidden(&self) -> bool {
        self.moves > 0 && self.checks + self.threats + self.chases == self.moves
    }

    /// Every move checks, threatens mate or chases, a pawn's chases counted (1999: 27.2, 28.14).
    fn attacks_throughout_1999(&self) -> bool {
        self.moves > 0 && self.checks + self.threats + self.chases + self.pawn_chases == self.moves
    }

    fn perpetual_check(&self) -> bool {
        self.moves > 0 && self.checks == self.moves
    }

    /// 26.9: perpetual mate threat or check-and-threat, or chases of a rook or an unprotected
    /// piece (alone or mixed with checks and threats) must vary.
    fn must_vary(&self) -> bool {
        (self.threats > 0 && self.chases == 0) || (self.chases > 0 && self.weighty_chases == self.chases)
    }

    /// Every chase move chases pieces of this kind, and never jointly (单方长捉车 / 长捉无根子).
    fn chases_alone(&self, kind: Weighty) -> bool {
        self.chases > 0 && self.chases_of[kind as usize] == self.chases && self.joint_chases_of[kind as usize] == 0
    }

    /// Every chase move chases pieces of this kind, only jointly (联合捉车 / 联合捉无根子).
    fn chases_jointly(&self, kind: Weighty) -> bool {
        self.chases > 0
            && self.chases_of[kind as usize] == self.chases
            && self.joint_chases_of[kind as usize] == self.chases
    }

    fn reason(&self) -> Reason {
        if self.checks == self.moves {
            Reason::PerpetualCheck
        } else if self.threats == self.moves {
            Reason::PerpetualMateThreat
        } else if self.chases == self.moves {
            Reason::PerpetualChase
        } else {
            Reason::MixedForbidden
        }
    }
}

/// Rules on a cycle: `positions[i]` is the position before `moves[i]`; the cycle starts at the
/// first occurrence of the repeated position and ends with its third (or, for 23.4, spans the
/// last nine rounds). `entry` is the move that reached the first position, with the position
/// before it (when there is one): the WXF rules weigh it, the Chinese ones read the first move
/// in its light (26.5).
pub(super) fn rule(
    ruleset: Ruleset,
    positions: &[Position],
    moves: &[Move],
    entry: Option<(&Position, Move)>,
) -> Outcome {
    if ruleset == Ruleset::Wxf {
        return rule_wxf(positions, moves, entry);
    }
    let conduct = conduct(positions, moves, entry);
    let [red, black] = &conduct;
    if ruleset == Ruleset::Chinese1999 {
        return rule_1999(red, black);
    }
    rule_2011(ruleset, red, black)
}

/// Whether the side that made the last of `moves` made only forbidden moves among them (checks,
/// mate threats, chases), looked at from the last one back so that an idle move ends the look.
pub(super) fn forbidden_throughout(positions: &[Position], moves: &[Move], entry: Option<(&Position, Move)>) -> bool {
    let (Some(last), n) = (positions.last(), positions.len()) else { return false };
    let side = last.turn();
    (0..n).rev().filter(|&i| positions[i].turn() == side).all(|i| {
        let prev = if i == 0 { entry } else { Some((&positions[i - 1], moves[i - 1])) };
        classify_move_in_game(prev, &positions[i], moves[i]).heaviest() != MoveNature::Idle
    })
}

/// What each side did over the moves, Red's conduct first.
fn conduct(positions: &[Position], moves: &[Move], entry: Option<(&Position, Move)>) -> [Conduct; 2] {
    let mut conduct = [Conduct::default(), Conduct::default()];
    for (i, (pos, &mv)) in positions.iter().zip(moves).enumerate() {
        let prev = if i == 0 { entry } else { Some((&positions[i - 1], moves[i - 1])) };
        let natures = classify_move_in_game(prev, pos, mv);
        let c = &mut conduct[pos.turn().index()];
        c.moves += 1;
        match natures.heaviest() {
            MoveNature::Check => c.checks += 1,
            MoveNature::MateThreat => c.threats += 1,
            MoveNature::Chase => {
                c.chases += 1;
                if !(natures.chased_rooks | natures.chased_unprotected).is_empty() {
                    c.weighty_chases += 1;
                }
                for (kind, targets) in
                    [(Weighty::Rook, natures.chased_rooks), (Weighty::Unprotected, natures.chased_unprotected)]
                {
                    if !targets.is_empty() {
                        c.chases_of[kind as usize] += 1;
                        if (targets & !natures.jointly_chased).is_empty() {
                            c.joint_chases_of[kind as usize] += 1;
                        }
                    }
                }
            }
            MoveNature::Idle => c.pawn_chases += usize::from(!natures.pawn_chased.is_empty()),
        }
    }
    conduct
}

/// The 1999 rules (its 26): one-sided perpetual check loses (26.1); both sides allowed (26.2) or
/// both forbidden (26.3, perpetual check on both sides included) is a draw; a forbidden side
/// facing allowed moves must vary (26.4), unless the allowed side's pawn attacks with every
/// move it does not check, threaten or chase with: mutual perpetual attack, where the pawn's
/// chases count (27.2) and the draw of 26.3 follows.
fn rule_1999(red: &Conduct, black: &Conduct) -> Outcome {
    let ruleset = Ruleset::Chinese1999;
    match (red.perpetual_check(), black.perpetual_check()) {
        (true, false) => return loses(ruleset, Color::Red, Reason::PerpetualCheck, "26.1"),
        (false, true) => return loses(ruleset, Color::Black, Reason::PerpetualCheck, "26.1"),
        (true, true) => return draw(ruleset, MutualForbidden, "26.3"),
        (false, false) => {}
    }
    match (red.forbidden(), black.forbidden()) {
        (false, false) => draw(ruleset, AllowedRepetition, "26.2"),
        (true, true) => draw(ruleset, MutualForbidden, "26.3"),
        // The pawn's attacks count as chases (按捉處理): both sides attack throughout.
        (true, false) if black.attacks_throughout_1999() => draw(ruleset, MutualForbidden, "27.2"),
        (false, true) if red.attacks_throughout_1999() => draw(ruleset, MutualForbidden, "27.2"),
        (true, false) => loses(ruleset, Color::Red, red.reason(), "26.4"),
        (false, true) => loses(ruleset, Color::Black, black.reason(), "26.4"),
    }
}

/// The 2011 rules (25 and 26.9), and the simple rules: perpetual check loses, anything else draws.
fn rule_2011(ruleset: Ruleset, red: &Conduct, black: &Conduct) -> Outcome {
    // One-sided perpetual check loses under every ruleset (25.1).
    match (red.perpetual_check(), black.perpetual_check()) {
        (true, false) => return loses(ruleset, Color::Red, Reason::PerpetualCheck, "25.1"),
        (false, true) => return loses(ruleset, Color::Black, Reason::PerpetualCheck, "25.1"),
        (true, true) => return draw(ruleset, MutualForbidden, "26.9"),
        (false, false) => {}
    }
    if ruleset == Ruleset::Simple {
        return draw(ruleset, AllowedRepetition, "25.2");
    }
    match (red.forbidden(), black.forbidden()) {
        (false, false) => draw(ruleset, AllowedRepetition, "25.2"),
        (true, false) => loses(ruleset, Color::Red, red.reason(), "25.3"),
        (false, true) => loses(ruleset, Color::Black, black.reason(), "25.3"),
        (true, true) => match (red.must_vary(), black.must_vary()) {
            (true, false) => loses(ruleset, Color::Red, red.reason(), "26.9"),
            (false, true) => loses(ruleset, Color::Black, black.reason(), "26.9"),
            // A perpetual chaser of rooks or unprotected pieces facing the other side's joint
            // chase of them is the one to vary (26.9's second and third cases).
            (true, true) if outchased(red, black) => loses(ruleset, Color::Red, red.reason(), "26.9"),
            (true, true) if outchased(black, red) => loses(ruleset, Color::Black, black.reason(), "26.9"),
            _ => draw(ruleset, MutualForbidden, "26.9"),
        },
    }
}

/// Whether `chaser` perpetually chases rooks (or unprotected pieces) alone while `other` chases the
/// same kind of piece only jointly: then `chaser` must vary (26.9's second and third cases).
fn outchased(chaser: &Conduct, other: &Conduct) -> bool {
    [Weighty::Rook, Weighty::Unprotected]
        .into_iter()
        .any(|kind| chaser.chases_alone(kind) && other.chases_jointly(kind))
}

/// What one side did over the moves the WXF ruling weighs.
struct AxfConduct {
    /// Whether it moved at all.
    moved: bool,
    /// Every move gave check.
    checks_throughout: bool,
    /// Enemy pieces chased (see [`axf_chased`]) by every move so far, checks included, followed
    /// as they move; `None` before the first move.
    chased_throughout: Option<Bitboard>,
}

impl AxfConduct {
    fn new() -> AxfConduct {
        AxfConduct { moved: false, checks_throughout: true, chased_throughout: None }
    }

    /// One more move of this side.
    fn record(&mut self, check: bool, chased: Bitboard) {
        self.moved = true;
        self.checks_throughout &= check;
        self.chased_throughout = Some(self.chased_throughout.map_or(chased, |b| b & chased));
    }

    /// The other side moved: a piece of its that this side keeps chasing is followed.
    fn follow(&mut self, mv: Move) {
        if let Some(tracked) = self.chased_throughout.as_mut()
            && tracked.contains(mv.from())
        {
            *tracked ^= Bitboard::from_square(mv.from()) | Bitboard::from_square(mv.to());
        }
    }

    fn perpetual_check(&self) -> bool {
        self.moved && self.checks_throughout
    }

    /// One and the same piece was chased throughout.
    fn perpetual_chase(&self) -> bool {
        self.chased_throughout.is_some_and(|b| !b.is_empty())
    }
}

/// The WXF ruling as Fairy-Stockfish gives it (`Position::is_optional_game_end()`): a side that
/// checks with every move loses; failing that, a side that chases one and the same piece with every
/// move (checks included) loses; both sides doing the same is a draw, as is anything else. The
/// side that completed the repetition also answers for its move that reached the first occurrence
/// (`entry`), outside the cycle: FSF looks that far back for it.
fn rule_wxf(positions: &[Position], moves: &[Move], entry: Option<(&Position, Move)>) -> Outcome {
    let ruleset = Ruleset::Wxf;
    let mut conduct = [AxfConduct::new(), AxfConduct::new()];
    for (pos, mv) in entry.into_iter().chain(positions.iter().zip(moves.iter().copied())) {
        let side = pos.turn();
        let mut after = pos.clone();
        after.play_unchecked(mv);
        conduct[side.index()].record(after.is_check(), axf_chased(pos, mv));
        conduct[(!side).index()].follow(mv);
    }
    let [red, black] = &conduct;
    match (red.perpetual_check(), black.perpetual_check()) {
        (true, false) => loses(ruleset, Color::Red, Reason::PerpetualCheck, "25.1"),
        (false, true) => loses(ruleset, Color::Black, Reason::PerpetualCheck, "25.1"),
        (true, true) => draw(ruleset, MutualForbidden, "WXF repetition"),
        (false, false) => match (red.perpetual_chase(), black.perpetual_chase()) {
            (true, false) => loses(ruleset, Color::Red, Reason::PerpetualChase, "WXF chase"),
            (false, true) => loses(ruleset, Color::Black, Reason::PerpetualChase, "WXF chase"),
            (true, true) => draw(ruleset, MutualForbidden, "WXF repetition"),
            (false, false) => draw(ruleset, AllowedRepetition, "WXF repetition"),
        },
    }
}

/// `loser` has lost by `reason`.
fn loses(ruleset: Ruleset, loser: Color, reason: Reason, article: &'static str) -> Outcome {
    Outcome::Win { winner: !loser, verdict: Verdict { reason, ruleset, article } }
}

/// A drawn repetition: of allowed moves, or of forbidden moves on both sides.
fn draw(ruleset: Ruleset, reason: Reason, article: &'static str) -> Outcome {
    Outcome::Draw { verdict: Verdict { reason, ruleset, article } }
}
