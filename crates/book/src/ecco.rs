//! ECCO names of opening lines, recognised by move patterns.
//!
//! ```
//! use xqz_book::ecco;
//! let line: Vec<xiangqi::Move> =
//!     ["h2e2", "h9g7", "h0g2", "b9c7"].iter().map(|m| m.parse().unwrap()).collect();
//! let opening = ecco::classify(&line).unwrap().unwrap();
//! assert_eq!((opening.code, opening.name), ("C00", "中炮对屏风马"));
//! ```
//!
//! [`OPENINGS`] is the whole table. Each entry names, for each side, moves in Chinese notation
//! that the side must have played (in any order), and, with a leading `^`, the move that must be
//! the side's first. Moves are matched by piece, from and to points, so the same pattern is found
//! whatever order the moves came in, as ECCO groups such lines (屏风马 is both horses out, whichever
//! first), while the first-move marks keep what ECCO keys on the first move apart (仙人指路 that
//! turns into a central cannon stays 仙人指路). A line and its left-right mirror are one opening
//! (炮八平五 is 中炮 as much as 炮二平五). Among the matching entries the **last in the table wins**:
//! the table runs from general to specific, and where two families overlap the one ECCO files
//! the line under comes later (顺炮 after 屏风马, since a 顺炮 whose Black later brings out both
//! horses is still 顺炮).
//!
//! Codes follow the ECCO 2004 tables (A: openings other than the central cannon, B: the central
//! cannon against anything but the screen horses and the central cannons, C: against the screen
//! horses, D: 顺炮 and 列炮, E: 仙人指路). A code is written to two digits where the entry's
//! moves are the ECCO entry's own; where only the group is certain it is the letter and the
//! group's digit (`B3`) or the letter alone (`B`), as noted on the entry.

use std::sync::OnceLock;

use xiangqi::notation::Chinese;
use xiangqi::{Color, IllegalMoveError, Move, PieceKind, Position, Setup};

/// One named opening line: its ECCO code, its Chinese name, and the moves that make it.
#[derive(Debug)]
pub struct Opening {
    /// The ECCO code (`C00`), or its group (`B3`) or letter (`B`) where only that is certain.
    pub code: &'static str,
    /// The Chinese name (`中炮对屏风马`).
    pub name: &'static str,
    /// Red's moves, in Chinese notation separated by spaces; `^` marks Red's first move.
    pub red: &'static str,
    /// Black's moves, the same way.
    pub black: &'static str,
}

const fn line(code: &'static str, name: &'static str, red: &'static str, black: &'static str) -> Opening {
    Opening { code, name, red, black }
}

/// The openings recognised, from general to specific: the last entry that matches a line names it.
pub const OPENINGS: &[Opening] = &[
    // A: openings other than the central cannon, keyed on Red's first move.
    line("A10", "飞相局", "^相三进五", ""),
    line("A40", "起马局", "^马二进三", ""),
    line("A50", "仕角炮局", "^炮二平四", ""),
    line("A60", "过宫炮局", "^炮二平六", ""),
    line("A02", "边马局", "^马八进九", ""),
    line("A07", "金钩炮局", "^炮二平七", ""),
    line("A27", "飞相对左中炮", "^相三进五", "^炮8平5"),
    line("A29", "飞相对右中炮", "^相三进五", "^炮2平5"),
    line("A52", "仕角炮对右中炮", "^炮二平四", "^炮2平5"),
    line("A62", "过宫炮对横车", "^炮二平六", "^车9进1"),
    line("A63", "过宫炮对左中炮", "^炮二平六", "^炮8平5"),
    // E: 仙人指路 (the pawn opening); 兵七进一 is its mirror.
    line("E00", "仙人指路", "^兵三进一", ""),
    line("E03", "仙人指路对中炮", "^兵三进一", "^炮2平5"),
    line("E10", "仙人指路对卒底炮", "^兵三进一", "^炮8平7"),
    line("E40", "对兵局", "^兵三进一", "^卒3进1"),
    // B: the central cannon against the rest.
    line("B00", "中炮", "^炮二平五", ""),
    line("B05", "中炮对进左马", "^炮二平五", "^马8进7"),
    line("B01", "中炮对进右马", "^炮二平五", "^马2进3"),
    // C: the central cannon against the screen horses (屏风马), both horses out in either order.
    line("C00", "中炮对屏风马", "^炮二平五", "马8进7 马2进3"),
    line("C01", "中炮七路马对屏风马", "^炮二平五 马二进三 马八进七", "马8进7 马2进3"),
    line("C50", "五六炮对屏风马", "^炮二平五 炮八平六", "马8进7 马2进3"),
    // B again: defences that also bring out both horses, or that a later horse does not undo.
    line("B20", "中炮对左三步虎", "^炮二平五", "马8进7 炮8平9"),
    // ECCO files 反宫马 under B3 (中炮对反宫马); the two-digit code depends on Red's set-up.
    line("B3", "中炮对反宫马", "^炮二平五", "马2进3 炮8平6 马8进7"),
    // 鸳鸯炮: Black's first reply pulls a cannon back one to its back rank, to pair it with the
    // other later. An uncommon defence: ECCO's B0 group ("中炮对非常见开局") is not certain here,
    // so the letter alone.
    line("B", "中炮对鸳鸯炮", "^炮二平五", "^炮2退1"),
    // 龟背炮: a cannon pulled back one and set behind its own horse and pawn on the 7 file (卒,
    // 马 and 炮 in one line, the turtle's back). Uncommon; letter only, as for 鸳鸯炮.
    line("B", "中炮对龟背炮", "^炮二平五", "马8进7 炮8退1 炮8平7"),
    // D: 顺炮 (Black's central cannon from the same side) and 列炮 (from the other side).
    line("D00", "顺炮", "^炮二平五", "^炮8平5"),
    line("D03", "顺炮横车对缓开车", "^炮二平五 车一进一", "^炮8平5"),
    line("D10", "顺炮直车对缓开车", "^炮二平五 马二进三 车一平二", "^炮8平5 马8进7"),
    line("D20", "顺炮直车对横车", "^炮二平五 马二进三 车一平二", "^炮8平5 马8进7 车9进1"),
    line("D50", "列炮", "^炮二平五", "^炮2平5"),
];

/// A move as a pattern sees it: who moves what from where to where.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Step {
    color: Color,
    kind: PieceKind,
    mv: Move,
}

impl Step {
    fn mirror(self) -> Step {
        Step { mv: self.mv.mirror(), ..self }
    }
}

/// One side's part of a pattern in one frame.
#[derive(Debug, Default)]
struct SidePattern {
    first: Option<Step>,
    all: Vec<Step>,
}

impl SidePattern {
    fn matches(&self, played: &[Step]) -> bool {
        self.first.is_none_or(|f| played.first() == Some(&f)) && self.all.iter().all(|s| played.contains(s))
    }

    fn mirror(&self) -> SidePattern {
        SidePattern { first: self.first.map(Step::mirror), all: self.all.iter().map(|s| s.mirror()).collect() }
    }
}

/// The table resolved to moves, in both frames, with every step any pattern names.
struct Compiled {
    /// `[played frame, mirrored frame]` of `[red, black]` per entry of [`OPENINGS`].
    patterns: Vec<[[SidePattern; 2]; 2]>,
    /// Sorted: a move outside it cannot change a line's opening.
    relevant: Vec<Step>,
}

/// Resolves one side's pattern text, each move against the position its earlier moves left.
fn side_pattern(color: Color, text: &str) -> SidePattern {
    let mut setup = Position::startpos().to_setup();
    let mut pattern = SidePattern::default();
    for word in text.split_whitespace() {
        let (first, word) = match word.strip_prefix('^') {
            Some(rest) => (true, rest),
            None => (false, word),
        };
        setup.turn = color;
        let pos = Position::from_setup(&setup).expect("the table's set-ups are legal");
        let chinese: Chinese = word.parse().unwrap_or_else(|e| panic!("ECCO table: {word:?}: {e}"));
        let mv = chinese.resolve(&pos).unwrap_or_else(|e| panic!("ECCO table: {word:?}: {e}"));
        let kind = pos.piece_at(mv.from()).expect("a resolved move moves a piece").kind;
        let step = Step { color, kind, mv };
        if first {
            pattern.first = Some(step);
        } else {
            pattern.all.push(step);
        }
        let mut next = pos;
        next.play_unchecked(mv);
        setup = Setup { turn: color, ..next.to_setup() };
    }
    pattern
}

fn compiled() -> &'static Compiled {
    static COMPILED: OnceLock<Compiled> = OnceLock::new();
    COMPILED.get_or_init(|| {
        let mut relevant = Vec::new();
        let patterns = OPENINGS
            .iter()
            .map(|o| {
                let played = [side_pattern(Color::Red, o.red), side_pattern(Color::Black, o.black)];
                let mirrored = [played[0].mirror(), played[1].mirror()];
                for side in played.iter().chain(&mirrored) {
                    relevant.extend(side.first.iter().chain(&side.all).copied());
                }
                [played, mirrored]
            })
            .collect();
        relevant.sort();
        relevant.dedup();
        Compiled { patterns, relevant }
    })
}

/// Follows a line move by move and names its opening; cheap for moves no pattern names.
///
/// ```
/// use xqz_book::ecco::Classifier;
/// let mut pos = xiangqi::Position::startpos();
/// let mut classifier = Classifier::new();
/// for text in ["g3g4", "h7g7"] {
///     let mv = text.parse()?;
///     classifier.push(&pos, mv);
///     pos.play(mv)?;
/// }
/// assert_eq!(classifier.opening().map(|o| o.name), Some("仙人指路对卒底炮"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct Classifier {
    played: [Vec<Step>; 2],
    best: Option<usize>,
}

impl Classifier {
    /// A classifier at the start position.
    pub fn new() -> Classifier {
        Classifier::default()
    }

    /// Records `mv`, legal in `before`, the position it is played from.
    pub fn push(&mut self, before: &Position, mv: Move) {
        let Some(piece) = before.piece_at(mv.from()) else { return };
        let step = Step { color: piece.color, kind: piece.kind, mv };
        self.played[piece.color.index()].push(step);
        let table = compiled();
        if table.relevant.binary_search(&step).is_ok() {
            self.best = table.patterns.iter().rposition(|frames| {
                frames.iter().any(|[red, black]| {
                    red.matches(&self.played[Color::Red.index()]) && black.matches(&self.played[Color::Black.index()])
                })
            });
        }
    }

    /// The opening of the line so far, if the table names it.
    pub fn opening(&self) -> Option<&'static Opening> {
        self.best.map(|i| &OPENINGS[i])
    }

    /// The index in [`OPENINGS`] of [`Classifier::opening`].
    pub fn index(&self) -> Option<usize> {
        self.best
    }
}

/// The opening of a line of coordinate moves from the start position; fails on an illegal move.
pub fn classify(moves: &[Move]) -> Result<Option<&'static Opening>, IllegalMoveError> {
    let mut pos = Position::startpos();
    let mut classifier = Classifier::new();
    for &mv in moves {
        classifier.push(&pos, mv);
        pos.play(mv)?;
    }
    Ok(classifier.opening())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Plays Chinese moves from the start position, optionally mirrored, and names the line.
    fn name_of(line: &str, mirrored: bool) -> Option<(&'static str, &'static str)> {
        let mut pos = Position::startpos();
        let mut moves = Vec::new();
        for word in line.split_whitespace() {
            let mv = word.parse::<Chinese>().unwrap().resolve(&pos).unwrap_or_else(|e| panic!("{line}: {word}: {e}"));
            pos.play(mv).unwrap();
            moves.push(if mirrored { mv.mirror() } else { mv });
        }
        classify(&moves).unwrap().map(|o| (o.code, o.name))
    }

    /// Each line names its opening, and so does its mirror image.
    fn assert_names(line: &str, code: &str, name: &str) {
        for mirrored in [false, true] {
            assert_eq!(name_of(line, mirrored), Some((code, name)), "{line} (mirrored: {mirrored})");
        }
    }

    #[test]
    fn every_table_entry_resolves_in_both_frames() {
        let table = compiled();
        assert_eq!(table.patterns.len(), OPENINGS.len());
        for (opening, [played, mirrored]) in OPENINGS.iter().zip(&table.patterns) {
            let count = |s: &SidePattern| usize::from(s.first.is_some()) + s.all.len();
            let words = opening.red.split_whitespace().count() + opening.black.split_whitespace().count();
            assert_eq!(count(&played[0]) + count(&played[1]), words, "{}", opening.name);
            assert_eq!(count(&mirrored[0]) + count(&mirrored[1]), words, "{}", opening.name);
        }
    }

    #[test]
    fn central_cannon_openings() {
        assert_names("炮二平五 卒7进1", "B00", "中炮");
        assert_names("炮二平五 马8进7", "B05", "中炮对进左马");
        assert_names("炮二平五 马2进3", "B01", "中炮对进右马");
        assert_names("炮二平五 马8进7 马二进三 炮8平9", "B20", "中炮对左三步虎");
    }

    #[test]
    fn screen_horses_are_both_horses_out_in_either_order() {
        assert_names("炮二平五 马8进7 马二进三 马2进3", "C00", "中炮对屏风马");
        assert_names("炮二平五 马2进3 马二进三 马8进7", "C00", "中炮对屏风马");
        assert_names("炮二平五 马8进7 马二进三 马2进3 马八进七", "C01", "中炮七路马对屏风马");
        assert_names("炮二平五 马8进7 马二进三 马2进3 炮八平六", "C50", "五六炮对屏风马");
    }

    #[test]
    fn uncommon_defences_to_the_central_cannon() {
        assert_names("炮二平五 马2进3 马二进三 炮8平6 车一平二 马8进7", "B3", "中炮对反宫马");
        assert_names("炮二平五 炮2退1", "B", "中炮对鸳鸯炮");
        assert_names("炮二平五 马8进7 马二进三 炮8退1 车一平二 炮8平7", "B", "中炮对龟背炮");
    }

    #[test]
    fn same_and_opposite_side_central_cannons() {
        assert_names("炮二平五 炮8平5", "D00", "顺炮");
        assert_names("炮二平五 炮2平5", "D50", "列炮");
        // A 顺炮 stays one when Black brings out both horses later.
        assert_names("炮二平五 炮8平5 马二进三 马8进7 马八进七 马2进3", "D00", "顺炮");
    }

    #[test]
    fn horizontal_and_straight_chariots_in_the_same_side_cannons() {
        assert_names("炮二平五 炮8平5 车一进一", "D03", "顺炮横车对缓开车");
        assert_names("炮二平五 炮8平5 马二进三 马8进7 车一平二", "D10", "顺炮直车对缓开车");
        assert_names("炮二平五 炮8平5 马二进三 马8进7 车一平二 车9进1", "D20", "顺炮直车对横车");
        assert_names("炮二平六 车9进1", "A62", "过宫炮对横车");
    }

    #[test]
    fn pawn_openings() {
        assert_names("兵三进一", "E00", "仙人指路");
        assert_names("兵七进一", "E00", "仙人指路");
        assert_names("兵三进一 炮2平5", "E03", "仙人指路对中炮");
        assert_names("兵三进一 炮8平7", "E10", "仙人指路对卒底炮");
        assert_names("兵三进一 卒3进1", "E40", "对兵局");
        // ECCO keys on the first move: a pawn opening that turns into a central cannon stays one.
        assert_names("兵三进一 马8进7 炮二平五 马2进3", "E00", "仙人指路");
    }

    #[test]
    fn other_first_moves() {
        assert_names("相三进五", "A10", "飞相局");
        assert_names("相七进五", "A10", "飞相局");
        assert_names("相三进五 炮8平5", "A27", "飞相对左中炮");
        assert_names("相三进五 炮2平5", "A29", "飞相对右中炮");
        assert_names("马二进三", "A40", "起马局");
        assert_names("马八进七", "A40", "起马局");
        assert_names("炮二平四", "A50", "仕角炮局");
        assert_names("炮二平四 炮2平5", "A52", "仕角炮对右中炮");
        assert_names("炮二平六", "A60", "过宫炮局");
        assert_names("炮二平六 炮8平5", "A63", "过宫炮对左中炮");
        assert_names("马八进九", "A02", "边马局");
        assert_names("炮二平七", "A07", "金钩炮局");
    }

    #[test]
    fn unnamed_lines_have_no_opening() {
        assert_eq!(name_of("兵一进一", false), None);
        assert_eq!(name_of("", false), None);
    }

    #[test]
    fn an_illegal_line_is_an_error() {
        assert!(classify(&["a0a5".parse().unwrap()]).is_err(), "the rook is blocked by its pawn");
    }
}
