//! Differential test against pyffish (Fairy-Stockfish's Python binding), an independent
//! implementation of the rules. Over thousands of seeded random games:
//! - at every distinct position, our legal move set must equal pyffish's;
//! - for every move played, pyffish's "gives check" must match our in-check flag of the next
//!   position;
//! - replaying each whole game in pyffish must end in our final position.
//!
//! All requests go to one temp file and one Python process (`tests/pyffish_legal.py`, which
//! spreads them over worker processes); the comparison happens here. The Python interpreter is
//! `$XQZ_PYTHON` (`scripts/test` sets it), else `<repo>/.venv/bin/python` (made by
//! `scripts/python-env`).
//!
//! Cost: pyffish re-initialises its piece tables on every call (a few ms each), so the 2000
//! games (~141,000 distinct positions) take about 7 CPU-minutes in Python, spread over
//! `$XQZ_PYFFISH_JOBS` worker processes (default: one per CPU). `$XQZ_DIFF_GAMES` overrides the
//! number of games for quick runs (200 games: ~13,000 positions).

mod common;

use std::collections::{BTreeSet, HashSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

const SEED: u64 = 0x5851_5A30_D1FF;
const GAMES: usize = 2000;
const MAX_PLIES: usize = 150;
/// How many disagreements of each kind are printed in full.
const SHOWN: usize = 10;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The Python with pyffish: `$XQZ_PYTHON`, else the project venv.
fn python() -> PathBuf {
    if let Some(p) = std::env::var_os("XQZ_PYTHON").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        assert!(p.exists(), "XQZ_PYTHON={} does not exist; run scripts/python-env or scripts/test", p.display());
        return p;
    }
    let venv = repo_root().join(".venv/bin/python");
    assert!(
        venv.exists(),
        "no Python with pyffish: XQZ_PYTHON is unset and {} does not exist; run scripts/python-env \
         (creates the venv) or scripts/test (sets XQZ_PYTHON)",
        venv.display()
    );
    venv
}

fn games_count() -> usize {
    match std::env::var("XQZ_DIFF_GAMES") {
        Ok(v) if !v.is_empty() => v.parse().unwrap_or_else(|_| panic!("XQZ_DIFF_GAMES={v:?} is not a number")),
        _ => GAMES,
    }
}

/// Our coordinate move (`h2e2`, ranks 0-9) in pyffish's coordinates (ranks 1-10).
fn to_ffish(mv: &str) -> String {
    let b = mv.as_bytes();
    assert_eq!(b.len(), 4, "unexpected move text {mv:?}");
    format!("{}{}{}{}", b[0] as char, b[1] - b'0' + 1, b[2] as char, b[3] - b'0' + 1)
}

/// A pyffish move (`h3e3`, `a10a9`) in our coordinates, or `None` if it does not parse.
fn from_ffish(mv: &str) -> Option<String> {
    fn square(s: &str) -> Option<(String, &str)> {
        let file = s.chars().next().filter(|c| ('a'..='i').contains(c))?;
        let rest = &s[1..];
        let digits = rest.find(|c: char| !c.is_ascii_digit()).unwrap_or(rest.len());
        let rank: u8 = rest[..digits].parse().ok()?;
        (1..=10).contains(&rank).then(|| (format!("{file}{}", rank - 1), &rest[digits..]))
    }
    let (from, rest) = square(mv)?;
    let (to, rest) = square(rest)?;
    rest.is_empty().then(|| from + &to)
}

/// Board and side to move of a FEN (the counters' conventions may differ).
fn fen_core(fen: &str) -> String {
    fen.split_whitespace().take(2).collect::<Vec<_>>().join(" ")
}

/// A distinct position and our legal moves there.
struct Sample {
    fen: String,
    ours: BTreeSet<String>,
}

/// A game as pyffish sees it: the start FEN, the moves (ours and in pyffish's coordinates), and
/// per position our FEN and check flag.
struct GameCase {
    index: usize,
    start: String,
    moves: Vec<String>,
    ffish_moves: Vec<String>,
    fens: Vec<String>,
    checks: Vec<bool>,
}

/// Runs the Python helper on `input`; returns its header and answer lines.
fn ask_pyffish(input: &str) -> (String, Vec<String>, f64) {
    let python = python();
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("pyffish-input-{}.tsv", std::process::id()));
    std::fs::write(&tmp, input).unwrap_or_else(|e| panic!("cannot write {}: {e}", tmp.display()));
    let script = repo_root().join("tests/pyffish_legal.py");
    let started = Instant::now();
    let output = Command::new(&python)
        .arg(&script)
        .arg(&tmp)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {} {}: {e}", python.display(), script.display()));
    let secs = started.elapsed().as_secs_f64();
    assert!(
        output.status.success(),
        "{} {} {} failed ({}); stderr:\n{}\n(if pyffish is missing, run scripts/python-env or scripts/test)",
        python.display(),
        script.display(),
        tmp.display(),
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let _ = std::fs::remove_file(&tmp);
    let stdout = String::from_utf8(output.stdout).expect("pyffish output is UTF-8");
    let mut lines = stdout.lines().map(str::to_string);
    let header = lines.next().unwrap_or_default();
    (header, lines.collect(), secs)
}

#[test]
fn legal_moves_agree_with_pyffish() {
    let started = Instant::now();
    let games = common::random_games(SEED, games_count(), MAX_PLIES);

    let mut seen = HashSet::new();
    let mut samples = Vec::new();
    let mut cases = Vec::new();
    let mut total = 0usize;
    for (index, game) in games.iter().enumerate() {
        let positions = game.positions();
        total += positions.len();
        for (pos, _) in &positions {
            let fen = pos.to_string();
            if seen.insert(fen.clone()) {
                let ours = pos.legal_moves().iter().map(|m| m.to_string()).collect();
                samples.push(Sample { fen, ours });
            }
        }
        cases.push(GameCase {
            index,
            start: game.start.to_string(),
            moves: game.moves.iter().map(|m| m.to_string()).collect(),
            ffish_moves: game.moves.iter().map(|m| to_ffish(&m.to_string())).collect(),
            fens: positions.iter().map(|(p, _)| p.to_string()).collect(),
            checks: positions.iter().map(|(p, _)| p.is_check()).collect(),
        });
    }

    // One input file, one Python process: positions first, then games.
    let mut input = String::new();
    for s in &samples {
        let ours = s.ours.iter().map(String::as_str).collect::<Vec<_>>().join(" ");
        let _ = writeln!(input, "P\t{}\t{ours}", s.fen);
    }
    for g in &cases {
        let _ = writeln!(input, "G\t{}\t{}", g.start, g.ffish_moves.join(" "));
    }
    let (header, answers, py_secs) = ask_pyffish(&input);
    assert_eq!(
        answers.len(),
        samples.len() + cases.len(),
        "pyffish answered {} lines for {} requests",
        answers.len(),
        samples.len() + cases.len()
    );
    let (position_answers, game_answers) = answers.split_at(samples.len());

    let mut move_mismatches = Vec::new();
    let mut check_mismatches = Vec::new();
    let mut end_mismatches = Vec::new();
    let mut refused = Vec::new();
    let mut compared = 0usize;
    let mut terminal = 0usize;
    for (s, answer) in samples.iter().zip(position_answers) {
        let Some(list) = answer.strip_prefix("ok\t") else {
            refused.push(format!("{}: pyffish says {answer:?}", s.fen));
            continue;
        };
        compared += 1;
        let theirs: BTreeSet<String> = list
            .split_whitespace()
            .map(|m| from_ffish(m).unwrap_or_else(|| panic!("unparsable pyffish move {m:?} in {}", s.fen)))
            .collect();
        if s.ours.is_empty() {
            terminal += 1;
        }
        if theirs != s.ours {
            let only_ours: Vec<&str> = s.ours.difference(&theirs).map(String::as_str).collect();
            let only_theirs: Vec<&str> = theirs.difference(&s.ours).map(String::as_str).collect();
            move_mismatches.push(format!("{}\n    only ours: {only_ours:?}\n    only pyffish: {only_theirs:?}", s.fen));
        }
    }

    let mut checks_compared = 0usize;
    let mut in_check = 0usize;
    for (g, answer) in cases.iter().zip(game_answers) {
        let fields: Vec<&str> = answer.split('\t').collect();
        if fields[0] != "game" || fields.len() != 3 {
            refused.push(format!("game {} from {}: pyffish says {answer:?}", g.index, g.start));
            continue;
        }
        let flags: Vec<bool> = fields[1].split_whitespace().map(|f| f == "1").collect();
        if flags.len() != g.moves.len() {
            refused.push(format!("game {}: {} check flags for {} moves", g.index, flags.len(), g.moves.len()));
            continue;
        }
        for (ply, &theirs) in flags.iter().enumerate() {
            checks_compared += 1;
            in_check += usize::from(theirs);
            let ours = g.checks[ply + 1];
            if ours != theirs {
                check_mismatches.push(format!(
                    "{} after {}: in check: ours {ours}, pyffish {theirs} (game {}, ply {})",
                    g.fens[ply],
                    g.moves[ply],
                    g.index,
                    ply + 1
                ));
            }
        }
        let ours_end = g.fens.last().expect("a game has a position");
        if fen_core(ours_end) != fen_core(fields[2]) {
            end_mismatches.push(format!("game {}: ours ends in {ours_end}, pyffish in {}", g.index, fields[2]));
        }
    }

    println!(
        "differential vs {header}: {} games, {total} positions ({} distinct); legal move sets compared at \
         {compared} ({terminal} without legal moves); in-check compared after {checks_compared} moves \
         ({in_check} checks); {} refused; {:.1} s in all, {py_secs:.1} s in Python",
        cases.len(),
        samples.len(),
        refused.len(),
        started.elapsed().as_secs_f64(),
    );
    let mut report = String::new();
    for (what, list) in [
        ("legal move set mismatches", &move_mismatches),
        ("in-check mismatches", &check_mismatches),
        ("final position mismatches", &end_mismatches),
        ("requests pyffish refused or failed", &refused),
    ] {
        if !list.is_empty() {
            let _ = writeln!(report, "{} {what}; the first {}:", list.len(), list.len().min(SHOWN));
            for item in list.iter().take(SHOWN) {
                let _ = writeln!(report, "  {item}");
            }
        }
    }
    assert!(report.is_empty(), "disagreement with pyffish:\n{report}");
    assert_eq!(compared, samples.len());
}

#[test]
fn ffish_coordinates_round_trip() {
    assert_eq!(to_ffish("h2e2"), "h3e3");
    assert_eq!(to_ffish("a9a8"), "a10a9");
    assert_eq!(from_ffish("a10a9").as_deref(), Some("a9a8"));
    assert_eq!(from_ffish("h3e3").as_deref(), Some("h2e2"));
    assert_eq!(from_ffish("j1a1"), None);
    assert_eq!(from_ffish("a11a1"), None);
    assert_eq!(from_ffish("a1a2x"), None);
}
