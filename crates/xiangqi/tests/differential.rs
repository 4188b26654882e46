//! Differential test against Fairy-Stockfish, an independent implementation of the rules (Debian's
//! `fairy-stockfish` 11.1 binary; the same engine as PyPI's pyffish). Over thousands of seeded
//! random games:
//! - at every distinct position, our legal move set must equal the engine's (`go perft 1`);
//! - for every move played, the engine's check status after it (the `Checkers:` line of `d`)
//!   must match our in-check flag of the next position;
//! - replaying each whole game in the engine must end in our final position (the `Fen:` line of
//!   `d`).
//!
//! One engine process is driven over UCI through pipes (`uci`, `setoption name UCI_Variant value
//! xiangqi`, then `position fen ...` with `d` or `go perft 1` per request), fully pipelined: a
//! thread writes every command while this one reads the answers, so there is no round trip per
//! position. `go` runs on the engine's search thread, so the output of a later `d` could land in
//! the middle of a perft's move lines; all `d` requests are therefore sent before the first `go`
//! (each `go` waits for the previous search, so the perft answers come out in order). The
//! comparison happens here. The engine is `$XQZ_FAIRY_STOCKFISH` (`scripts/test` sets it from
//! `scripts/ensure-fairy-stockfish`, which installs Debian's package if needed), else
//! `fairy-stockfish` on `PATH`, else `/usr/games/fairy-stockfish`.
//!
//! Cost: the 2000 games (~141,000 distinct positions, as many distinct moves) take 30-35 s on
//! 2 CPUs, nearly all of it inside the engine (~0.2 ms a `go perft 1`, mostly its output).
//! `$XQZ_DIFF_GAMES` overrides the number of games for quick runs (200 games: ~13,000 positions).

mod common;

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write as _};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::thread::JoinHandle;
use std::time::Instant;

use xqz_test_support::fairy_stockfish;

const SEED: u64 = 0x5851_5A30_D1FF;
const GAMES: usize = 2000;
const MAX_PLIES: usize = 150;
/// How many disagreements of each kind are printed in full.
const SHOWN: usize = 10;

fn games_count() -> usize {
    match std::env::var("XQZ_DIFF_GAMES") {
        Ok(v) if !v.is_empty() => v.parse().unwrap_or_else(|_| panic!("XQZ_DIFF_GAMES={v:?} is not a number")),
        _ => GAMES,
    }
}

/// Our coordinate move (`h2e2`, ranks 0-9) in Fairy-Stockfish's coordinates (ranks 1-10).
fn to_fsf(mv: &str) -> String {
    let b = mv.as_bytes();
    assert_eq!(b.len(), 4, "unexpected move text {mv:?}");
    format!("{}{}{}{}", b[0] as char, b[1] - b'0' + 1, b[2] as char, b[3] - b'0' + 1)
}

/// A Fairy-Stockfish move (`h3e3`, `a10a9`) in our coordinates, or `None` if it does not parse.
fn from_fsf(mv: &str) -> Option<String> {
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

/// A distinct (position, move) pair of the games: asks the engine for the position after the
/// move and whether it is check.
struct MoveCase {
    /// Where the move is played (our FEN).
    fen: String,
    /// The move, ours.
    mv: String,
    /// Our position after the move, and whether it is check.
    next: String,
    check: bool,
    /// The first game and ply (1-based) that play it.
    game: usize,
    ply: usize,
}

/// A game as the engine replays it: the start FEN, the moves in its coordinates, our final FEN.
struct GameCase {
    index: usize,
    start: String,
    fsf_moves: Vec<String>,
    end: String,
    /// Per move, its index in the `MoveCase` list.
    move_cases: Vec<usize>,
}

/// A Fairy-Stockfish process fed a whole request script by a writer thread while this thread
/// reads its answers.
struct Engine {
    path: PathBuf,
    child: Child,
    writer: Option<JoinHandle<(ChildStdin, std::io::Result<()>)>>,
    stdout: BufReader<ChildStdout>,
    line: String,
    /// Name from `id name`.
    name: String,
}

impl Engine {
    /// Starts the engine in xiangqi mode and sends it `requests` (UCI commands, one a line).
    fn start(requests: String) -> Engine {
        let path = fairy_stockfish::engine_path();
        let mut child = Command::new(&path)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}; {}", path.display(), fairy_stockfish::HOW_TO_INSTALL));
        let mut stdin = child.stdin.take().expect("piped stdin");
        let stdout = BufReader::with_capacity(1 << 16, child.stdout.take().expect("piped stdout"));
        let writer = std::thread::spawn(move || {
            let script = format!("uci\nsetoption name UCI_Variant value xiangqi\n{requests}");
            let result = stdin.write_all(script.as_bytes()).and_then(|()| stdin.flush());
            (stdin, result)
        });
        let mut engine = Engine { path, child, writer: Some(writer), stdout, line: String::new(), name: String::new() };
        let mut name = String::from("fairy-stockfish");
        loop {
            let line = engine.next_line("waiting for uciok");
            if line == "uciok" {
                break;
            }
            if let Some(n) = line.strip_prefix("id name ") {
                name = n.to_string();
            }
        }
        engine.name = name;
        engine
    }

    /// The next output line, without its line end; panics if the output ends.
    fn next_line(&mut self, doing: &str) -> &str {
        self.line.clear();
        let n = self
            .stdout
            .read_line(&mut self.line)
            .unwrap_or_else(|e| panic!("cannot read from {}: {e}", self.path.display()));
        if n == 0 {
            let status = self.child.wait().map(|s| s.to_string()).unwrap_or_else(|e| e.to_string());
            panic!("{} ended its output ({status}) while {doing}", self.path.display());
        }
        self.line.trim_end_matches(['\n', '\r'])
    }

    /// Reads the answer to `d`: the engine's FEN and whether the side to move is in check.
    fn read_board(&mut self, doing: &str) -> Result<(String, bool), String> {
        let mut fen = None;
        loop {
            let line = self.next_line(doing);
            if let Some(f) = line.strip_prefix("Fen: ") {
                fen = Some(f.to_string());
            } else if let Some(checkers) = line.strip_prefix("Checkers:") {
                let in_check = !checkers.trim().is_empty();
                return fen.map(|f| (f, in_check)).ok_or_else(|| "no Fen: line before Checkers:".to_string());
            }
        }
    }

    /// Reads the answer to `go perft 1`: the legal moves (ours); `Err` if the answer is malformed.
    fn read_perft(&mut self, doing: &str) -> Result<BTreeSet<String>, String> {
        let mut moves = BTreeSet::new();
        let mut errors = Vec::new();
        loop {
            let line = self.next_line(doing);
            if let Some(nodes) = line.strip_prefix("Nodes searched:") {
                let nodes = nodes.trim();
                if nodes.parse::<usize>().ok() != Some(moves.len()) {
                    errors.push(format!("{} moves listed but {line:?}", moves.len()));
                }
                break;
            }
            match line.split_once(": ") {
                Some((mv, "1")) => match from_fsf(mv) {
                    Some(m) => _ = moves.insert(m),
                    None => errors.push(format!("unparsable move in {line:?}")),
                },
                _ if line.trim().is_empty() => {}
                _ => errors.push(format!("unexpected line {line:?}")),
            }
        }
        if errors.is_empty() { Ok(moves) } else { Err(errors.join("; ")) }
    }

    /// Ends the engine once every answer has been read.
    fn finish(mut self) {
        let (mut stdin, written) = self.writer.take().expect("writer").join().expect("writer thread");
        written.unwrap_or_else(|e| panic!("cannot write to {}: {e}", self.path.display()));
        let _ = stdin.write_all(b"quit\n");
        drop(stdin);
        let status = self.child.wait().unwrap_or_else(|e| panic!("cannot wait for {}: {e}", self.path.display()));
        assert!(status.success(), "{} exited with {status}", self.path.display());
    }
}

#[test]
fn legal_moves_agree_with_fairy_stockfish() {
    let started = Instant::now();
    let games = common::random_games(SEED, games_count(), MAX_PLIES);

    let mut seen = HashSet::new();
    let mut samples = Vec::new();
    let mut move_ids: HashMap<(String, String), usize> = HashMap::new();
    let mut move_cases = Vec::new();
    let mut cases = Vec::new();
    let mut total = 0usize;
    for (index, game) in games.iter().enumerate() {
        let positions = game.positions();
        total += positions.len();
        let fens: Vec<String> = positions.iter().map(|(p, _)| p.to_string()).collect();
        for ((pos, _), fen) in positions.iter().zip(&fens) {
            if seen.insert(fen.clone()) {
                let ours = pos.legal_moves().iter().map(|m| m.to_string()).collect();
                samples.push(Sample { fen: fen.clone(), ours });
            }
        }
        let moves: Vec<String> = game.moves.iter().map(|m| m.to_string()).collect();
        let mut ids = Vec::with_capacity(moves.len());
        for (ply, mv) in moves.iter().enumerate() {
            let id = *move_ids.entry((fens[ply].clone(), mv.clone())).or_insert_with(|| {
                move_cases.push(MoveCase {
                    fen: fens[ply].clone(),
                    mv: mv.clone(),
                    next: fens[ply + 1].clone(),
                    check: positions[ply + 1].0.is_check(),
                    game: index,
                    ply: ply + 1,
                });
                move_cases.len() - 1
            });
            ids.push(id);
        }
        cases.push(GameCase {
            index,
            start: fens[0].clone(),
            fsf_moves: moves.iter().map(|m| to_fsf(m)).collect(),
            end: fens.last().expect("a game has a position").clone(),
            move_cases: ids,
        });
    }
    drop(move_ids);

    // One script for one engine: every `d` (moves, then games) before the first `go`.
    let mut requests = String::new();
    for c in &move_cases {
        let _ = writeln!(requests, "position fen {} moves {}\nd", c.fen, to_fsf(&c.mv));
    }
    for g in &cases {
        let _ = writeln!(requests, "position fen {} moves {}\nd", g.start, g.fsf_moves.join(" "));
    }
    for s in &samples {
        let _ = writeln!(requests, "position fen {}\ngo perft 1", s.fen);
    }
    let engine_started = Instant::now();
    let mut engine = Engine::start(requests);
    let move_answers: Vec<_> =
        move_cases.iter().map(|c| engine.read_board(&format!("reading `d` after {} from {}", c.mv, c.fen))).collect();
    let game_answers: Vec<_> =
        cases.iter().map(|g| engine.read_board(&format!("reading `d` at the end of game {}", g.index))).collect();
    let perft_answers: Vec<_> =
        samples.iter().map(|s| engine.read_perft(&format!("reading `go perft 1` of {}", s.fen))).collect();
    let engine_secs = engine_started.elapsed().as_secs_f64();
    let header = format!("{} ({})", engine.name, engine.path.display());
    engine.finish();

    let mut move_mismatches = Vec::new();
    let mut check_mismatches = Vec::new();
    let mut end_mismatches = Vec::new();
    let mut refused = Vec::new();
    let mut compared = 0usize;
    let mut terminal = 0usize;
    for (s, answer) in samples.iter().zip(perft_answers) {
        let theirs = match answer {
            Ok(theirs) => theirs,
            Err(e) => {
                refused.push(format!("{}: go perft 1: {e}", s.fen));
                continue;
            }
        };
        compared += 1;
        if s.ours.is_empty() {
            terminal += 1;
        }
        if theirs != s.ours {
            let only_ours: Vec<&str> = s.ours.difference(&theirs).map(String::as_str).collect();
            let only_theirs: Vec<&str> = theirs.difference(&s.ours).map(String::as_str).collect();
            move_mismatches
                .push(format!("{}\n    only ours: {only_ours:?}\n    only fairy-stockfish: {only_theirs:?}", s.fen));
        }
    }

    // In-check after each distinct (position, move); valid only where the engine reached our next
    // position (it silently stops at a move it rejects).
    let mut checked = vec![None; move_cases.len()];
    let mut checks_in_games = 0usize;
    let mut in_check = 0usize;
    for ((c, answer), slot) in move_cases.iter().zip(move_answers).zip(&mut checked) {
        let (fen, theirs) = match answer {
            Ok(a) => a,
            Err(e) => {
                refused.push(format!("{} after {}: d: {e} (game {}, ply {})", c.fen, c.mv, c.game, c.ply));
                continue;
            }
        };
        if fen_core(&fen) != fen_core(&c.next) {
            refused.push(format!(
                "{} after {}: fairy-stockfish reached {fen}, ours {} (game {}, ply {})",
                c.fen, c.mv, c.next, c.game, c.ply
            ));
            continue;
        }
        *slot = Some(theirs);
        in_check += usize::from(theirs);
        if c.check != theirs {
            check_mismatches.push(format!(
                "{} after {}: in check: ours {}, fairy-stockfish {theirs} (game {}, ply {})",
                c.fen, c.mv, c.check, c.game, c.ply
            ));
        }
    }
    let checks_compared = checked.iter().flatten().count();
    for (g, answer) in cases.iter().zip(game_answers) {
        checks_in_games += g.move_cases.iter().filter(|&&id| checked[id].is_some()).count();
        match answer {
            Ok((fen, _)) if fen_core(&fen) == fen_core(&g.end) => {}
            Ok((fen, _)) => {
                end_mismatches.push(format!("game {}: ours ends in {}, fairy-stockfish in {fen}", g.index, g.end))
            }
            Err(e) => refused.push(format!("game {} from {}: d: {e}", g.index, g.start)),
        }
    }

    println!(
        "differential vs {header}: {} games, {total} positions ({} distinct); legal move sets compared at \
         {compared} ({terminal} without legal moves); in-check compared after {checks_in_games} moves \
         ({checks_compared} distinct, {in_check} of them giving check); {} refused; {:.1} s in all, \
         {engine_secs:.1} s from starting fairy-stockfish to its last answer",
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
        ("requests fairy-stockfish refused or failed", &refused),
    ] {
        if !list.is_empty() {
            let _ = writeln!(report, "{} {what}; the first {}:", list.len(), list.len().min(SHOWN));
            for item in list.iter().take(SHOWN) {
                let _ = writeln!(report, "  {item}");
            }
        }
    }
    assert!(report.is_empty(), "disagreement with fairy-stockfish:\n{report}");
    assert_eq!(compared, samples.len());
}

#[test]
fn fsf_coordinates_round_trip() {
    assert_eq!(to_fsf("h2e2"), "h3e3");
    assert_eq!(to_fsf("a9a8"), "a10a9");
    assert_eq!(from_fsf("a10a9").as_deref(), Some("a9a8"));
    assert_eq!(from_fsf("h3e3").as_deref(), Some("h2e2"));
    assert_eq!(from_fsf("j1a1"), None);
    assert_eq!(from_fsf("a11a1"), None);
    assert_eq!(from_fsf("a1a2x"), None);
}
