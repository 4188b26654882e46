//! Perft against the suite in `tests/data/perft.epd` (counts from fairy-stockfish and the
//! literature): every position, every depth.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::time::Instant;

use xiangqi::{Position, divide, perft};

/// One suite line: a FEN and the expected leaf count per depth.
struct Case {
    line: usize,
    fen: String,
    counts: Vec<(u32, u64)>,
}

fn suite_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/perft.epd")
}

/// Parses `FEN ;D1 n ;D2 n ...` lines; `#` lines and blank lines are skipped.
fn parse_suite(text: &str) -> Vec<Case> {
    let mut cases = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut fields = line.split(';');
        let fen = fields.next().unwrap_or_default().trim().to_string();
        let counts: Vec<(u32, u64)> = fields
            .map(|field| {
                let field = field.trim();
                let parsed = field.strip_prefix('D').and_then(|rest| {
                    let (depth, nodes) = rest.split_once(char::is_whitespace)?;
                    Some((depth.parse().ok()?, nodes.trim().parse().ok()?))
                });
                parsed.unwrap_or_else(|| panic!("perft.epd line {}: bad field {field:?}", i + 1))
            })
            .collect();
        assert!(!counts.is_empty(), "perft.epd line {}: no depths given", i + 1);
        cases.push(Case { line: i + 1, fen, counts });
    }
    cases
}

/// Our perft split by root move, sorted, for a failure message.
fn divide_report(pos: &Position, depth: u32) -> String {
    let mut rows: Vec<(String, u64)> = divide(pos, depth).into_iter().map(|(mv, n)| (mv.to_string(), n)).collect();
    rows.sort();
    let mut out = format!("  our divide at depth {depth} ({} root moves):\n", rows.len());
    for (mv, n) in rows {
        let _ = writeln!(out, "    {mv} {n}");
    }
    out
}

#[test]
fn perft_suite() {
    let path = suite_path();
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let cases = parse_suite(&text);
    assert!(cases.len() >= 10, "expected a full suite in {}, found {} positions", path.display(), cases.len());

    let mut failures = Vec::new();
    let mut total_nodes = 0u64;
    let start = Instant::now();
    for case in &cases {
        let pos = match Position::from_fen(&case.fen) {
            Ok(pos) => pos,
            Err(e) => {
                failures.push(format!("line {}: {}: invalid FEN: {e}", case.line, case.fen));
                continue;
            }
        };
        for &(depth, expected) in &case.counts {
            let got = perft(&pos, depth);
            total_nodes += got;
            if got != expected {
                failures.push(format!(
                    "line {}: {}: depth {depth}: expected {expected}, got {got} (off by {})\n{}",
                    case.line,
                    case.fen,
                    got as i128 - expected as i128,
                    divide_report(&pos, depth),
                ));
            }
        }
    }
    let secs = start.elapsed().as_secs_f64();
    println!("perft suite: {} positions, {total_nodes} nodes in {secs:.2} s", cases.len());
    assert!(failures.is_empty(), "{} perft mismatch(es):\n{}", failures.len(), failures.join("\n"));
}
