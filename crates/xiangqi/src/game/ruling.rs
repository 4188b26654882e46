//! Rulings on a repeated cycle of moves (articles 23, 25 and 26.9).

use super::classify::{MoveNature, classify_move};
use super::{Outcome, Reason, Ruleset, Verdict};
use crate::bitboard::Bitboard;
use crate::position::Position;
use crate::types::{Color, Move};

/// What one side did over the cycle.
#[derive(Default)]
struct Conduct {
    moves: usize,
    checks: usize,
    threats: usize,
    chases: usize,
    /// Chase moves whose targets include a rook or an unprotected piece (26.9's weighty chases).
    weighty_chases: usize,
    /// Enemy pieces chased by every chase move so far, followed as they move.
    chased_throughout: Option<Bitboard>,
}

impl Conduct {
    /// Every move checks, threatens mate or chases (24: 禁止着法).
    fn forbidden_2011(&self) -> bool {
        self.moves > 0 && self.checks + self.threats + self.chases == self.moves
    }

    fn perpetual_check(&self) -> bool {
        self.moves > 0 && self.checks == self.moves
    }

    /// WXF: every move chases, and one and the same piece is chased throughout.
    fn perpetual_chase_same_piece(&self) -> bool {
        self.moves > 0 && self.chases == self.moves && self.chased_throughout.is_some_and(|b| !b.is_empty())
    }

    /// 26.9: perpetual mate threat or check-and-threat, or chases of a rook or an unprotected
    /// piece (alone or mixed with checks and threats) must vary.
    fn must_vary(&self) -> bool {
        (self.threats > 0 && self.chases == 0) || (self.chases > 0 && self.weighty_chases == self.chases)
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
/// first occurrence of the repeated position and ends with its third.
pub(super) fn rule(ruleset: Ruleset, positions: &[Position], moves: &[Move]) -> Outcome {
    let mut conduct = [Conduct::default(), Conduct::default()];
    for (pos, &mv) in positions.iter().zip(moves) {
        let side = pos.turn().index();
        let natures = classify_move(pos, mv);
        let c = &mut conduct[side];
        c.moves += 1;
        match natures.heaviest() {
            MoveNature::Check => c.checks += 1,
            MoveNature::MateThreat => c.threats += 1,
            MoveNature::Chase => {
                c.chases += 1;
                if !(natures.chased_rooks | natures.chased_unprotected).is_empty() {
                    c.weighty_chases += 1;
                }
                c.chased_throughout = Some(c.chased_throughout.map_or(natures.chased, |b| b & natures.chased));
            }
            MoveNature::Idle => c.chased_throughout = Some(Bitboard::EMPTY),
        }
        // The mover's own pieces that the other side keeps chasing move with it.
        let other = &mut conduct[1 - side];
        if let Some(tracked) = other.chased_throughout.as_mut()
            && tracked.contains(mv.from())
        {
            *tracked ^= Bitboard::from_square(mv.from()) | Bitboard::from_square(mv.to());
        }
    }
    let [red, black] = &conduct;
    let loses = |loser: Color, reason: Reason, article: &'static str| Outcome::Win {
        winner: !loser,
        verdict: Verdict { reason, ruleset, article },
    };
    let draw = |article: &'static str| Outcome::Draw {
        verdict: Verdict { reason: Reason::AllowedRepetition, ruleset, article },
    };

    // One-sided perpetual check loses under every ruleset (25.1).
    match (red.perpetual_check(), black.perpetual_check()) {
        (true, false) => return loses(Color::Red, Reason::PerpetualCheck, "25.1"),
        (false, true) => return loses(Color::Black, Reason::PerpetualCheck, "25.1"),
        (true, true) => return draw("26.9"),
        (false, false) => {}
    }
    match ruleset {
        Ruleset::Simple => draw("25.2"),
        Ruleset::Wxf => match (red.perpetual_chase_same_piece(), black.perpetual_chase_same_piece()) {
            (true, false) => loses(Color::Red, Reason::PerpetualChase, "WXF chase"),
            (false, true) => loses(Color::Black, Reason::PerpetualChase, "WXF chase"),
            _ => draw("WXF repetition"),
        },
        Ruleset::Chinese2011 => match (red.forbidden_2011(), black.forbidden_2011()) {
            (false, false) => draw("25.2"),
            (true, false) => loses(Color::Red, red.reason(), "25.3"),
            (false, true) => loses(Color::Black, black.reason(), "25.3"),
            (true, true) => match (red.must_vary(), black.must_vary()) {
                (true, false) => loses(Color::Red, red.reason(), "26.9"),
                (false, true) => loses(Color::Black, black.reason(), "26.9"),
                _ => draw("26.9"),
            },
        },
    }
}
