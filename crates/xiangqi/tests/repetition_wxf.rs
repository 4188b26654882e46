//! Differential test of the WXF repetition rulings (`Ruleset::Wxf`) against Fairy-Stockfish
//! (FSF), through pyffish's `is_optional_game_end` / `is_immediate_game_end` / `game_result`.
//!
//! Cases (all seeded, so every run builds the same ones):
//! - `root`: a position from a seeded random game (its half-move clock set to 0) and a 4-ply cycle
//!   played from it three times over: a reversible non-capture by the side to move (A), one by the
//!   other side (B), and both moves back. Cycles are picked so that what their moves do (check,
//!   threaten a new capture, neither: see [`pressure`], which looks at the board only, so that the
//!   cases do not change with the rulings) varies: each position gets the cycle whose pattern was
//!   picked least so far, three times in four among those in which a side checks with both its
//!   moves or threatens the same piece with both.
//! - `history`: the same from the start position, the random game's moves leading to the cycle
//!   included, so that what happened before the cycle (a capture just before it, the move that
//!   reached its first position) can matter. A third of these cycles start right after a capture.
//! - `entry`: a cycle in which B threatens the same piece with both its moves, entered from a
//!   position one ply earlier by another move of B's; and the same cycle from its first position.
//! - `natural`: a position with a running half-move clock and random non-capturing moves that never
//!   repeat a position, past the 100-ply natural move limit; in most of them the side to move
//!   checks whenever it can and the other side never does.
//!
//! For every case we note the first ply at which our game ends and how, and pyffish
//! (`tests/pyffish_repetition.py`, one process for all cases) says the same for the same moves;
//! they agree when both end at the same ply with the same winner (or draw), or neither ends.
//! FSF ends a xiangqi game by repetition at the third occurrence of a position (two earlier ones,
//! same side to move) within the plies since the last capture; `is_optional_game_end` is what
//! reports it (game servers end the game there), so it maps onto our ending ply for ply. Its
//! score is from the side to move's point of view (+32000: it wins, -32000: it loses, 0: draw).
//! pyffish is only asked at the plies where FSF can end the game at all (see
//! [`candidate_plies`]): each call costs milliseconds.
//!
//! Tools, run by hand (`-- --ignored --nocapture`): `explain` prints every move's checks and AXF
//! chases and our ruling for one game (`XQZ_EXPLAIN="<fen>|<moves>"`); `external_cases` compares
//! the games of a file (`XQZ_REPETITION_CASES`); `chases_agree_with_fairy_stockfish` compares
//! [`axf_chased`] with the chased pieces a Fairy-Stockfish binary prints (`XQZ_FSF_CHASED`).
//!
//! `XQZ_REPETITION_DUMP=<file>` writes every case there as `<id>|<fen>|<moves>|<from>`.
//!
//! The test prints counts and every disagreement, and fails on any that is not in [`KNOWN`]
//! (none is: `Ruleset::Wxf` follows FSF's rules, see `xiangqi::game::axf_chased`).
//!
//! The Python interpreter is `$XQZ_PYTHON` (`scripts/test` sets it), else
//! `<repo>/.venv/bin/python` (made by `scripts/python-env`).

mod common;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use rand::seq::{IndexedRandom, SliceRandom};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use xiangqi::game::{Game, GameConfig, Outcome, Ruleset, axf_chased};
use xiangqi::{Color, Move, PieceKind, Position, START_FEN, Square};

const SEED: u64 = 0x5245_5057_5846;
const GAMES: usize = 400;
const MAX_PLIES: usize = 120;
const ROOT_CASES: usize = 400;
const HISTORY_CASES: usize = 120;
const NATURAL_CASES: usize = 30;
const ENTRY_CASES: usize = 40;
/// Cycles looked at per position (all of them when there are fewer).
const CYCLES_PER_POSITION: usize = 150;
/// Fail on disagreements that are not in [`KNOWN`].
const ENFORCE: bool = true;

/// Why we and Fairy-Stockfish disagree on a case: none is known. (The disagreements once listed
/// here, FSF counting the position right after a capture, weighing the move that reached the
/// first occurrence, its own chase rules, chases by checking moves and the AXF natural move rule,
/// are all followed by `Ruleset::Wxf` now.)
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Why {}

/// Disagreements that are understood, with the reasons.
const KNOWN: &[(&str, &[Why])] = &[];

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

/// Our coordinate move (`h2e2`, ranks 0-9) in pyffish's coordinates (ranks 1-10).
fn to_ffish(mv: Move) -> String {
    let text = mv.to_string();
    let b = text.as_bytes();
    assert_eq!(b.len(), 4, "unexpected move text {text:?}");
    format!("{}{}{}{}", b[0] as char, b[1] - b'0' + 1, b[2] as char, b[3] - b'0' + 1)
}

/// The FEN with its half-move clock replaced.
fn with_clock(fen: &str, clock: u32) -> String {
    let mut fields: Vec<String> = fen.split_whitespace().map(str::to_string).collect();
    assert!(fields.len() >= 5, "FEN without clocks: {fen}");
    fields[4] = clock.to_string();
    fields.join(" ")
}

fn config() -> GameConfig {
    GameConfig { ruleset: Ruleset::Wxf, ..GameConfig::default() }
}

fn reverse(mv: Move) -> Move {
    Move::new(mv.to(), mv.from())
}

fn is_capture(pos: &Position, mv: Move) -> bool {
    pos.piece_at(mv.to()).is_some()
}

fn played(pos: &Position, mv: Move) -> Position {
    let mut next = pos.clone();
    next.play_unchecked(mv);
    next
}

/// The FEN with the other side to move.
fn flip_turn(fen: &str) -> String {
    let mut fields: Vec<String> = fen.split_whitespace().map(str::to_string).collect();
    fields[1] = if fields[1] == "w" { "b" } else { "w" }.to_string();
    fields.join(" ")
}

/// A position from which the side not to move in `pos` reaches `pos` by a non-capture (the
/// reverse of one of its reversible moves), with that move.
fn predecessor(pos: &Position, rng: &mut ChaCha8Rng) -> Option<(Position, Move)> {
    let other = Position::from_fen(&flip_turn(&pos.to_string())).ok()?;
    let mut moves: Vec<Move> = other.legal_moves().iter().copied().filter(|&m| !is_capture(&other, m)).collect();
    moves.shuffle(rng);
    moves.into_iter().find_map(|z| {
        let before = Position::from_fen(&flip_turn(&played(&other, z).to_string())).ok()?;
        let entry = reverse(z);
        (before.is_legal(entry) && !is_capture(&before, entry) && played(&before, entry).hash() == pos.hash())
            .then_some((before, entry))
    })
}

/// The captures of pieces other than the king that the side to move has in `pos`.
fn captures(pos: &Position) -> HashSet<(Square, Square)> {
    let theirs = pos.color_bb(!pos.turn());
    let legal = pos.legal_moves();
    legal
        .iter()
        .filter(|m| theirs.contains(m.to()) && pos.piece_at(m.to()).is_some_and(|p| p.kind != PieceKind::King))
        .map(|m| (m.from(), m.to()))
        .collect()
}

/// A rough material rank, for [`pressure`] only.
fn rank_of(pos: &Position, sq: Square) -> u8 {
    pos.piece_at(sq).map_or(0, |p| match p.kind {
        PieceKind::Rook => 3,
        PieceKind::Horse | PieceKind::Cannon => 2,
        _ => 1,
    })
}

/// What a move does, judged from the board alone (not by the rules under test, so that the
/// cases stay the same when the rulings change): `K` it gives check, `X` it gives the mover a
/// capture it did not have before, of a piece other than the king that is worth more than the
/// capturer or cannot be taken back, `-` neither. With `X`, the pieces so threatened.
fn pressure(before: &Position, mv: Move) -> (char, Vec<Square>) {
    let after = played(before, mv);
    if after.is_check() {
        return ('K', Vec::new());
    }
    let Ok(again) = Position::from_fen(&flip_turn(&after.to_string())) else { return ('-', Vec::new()) };
    let old: HashSet<(Square, Square)> =
        captures(before).into_iter().map(|(a, t)| (if a == mv.from() { mv.to() } else { a }, t)).collect();
    let mut targets: Vec<Square> = captures(&again)
        .into_iter()
        .filter(|c| !old.contains(c))
        .filter(|&(a, t)| {
            rank_of(&again, t) > rank_of(&again, a)
                || !captures(&played(&again, Move::new(a, t))).iter().any(|c| c.1 == t)
        })
        .map(|(_, t)| t)
        .collect();
    targets.sort_unstable_by_key(|s| s.index());
    targets.dedup();
    (if targets.is_empty() { '-' } else { 'X' }, targets)
}

/// A 4-ply cycle from a position: A's move, B's reply, and both moves back.
struct Cycle {
    moves: [Move; 4],
    /// [`pressure`] of each move.
    pressure: [char; 4],
    /// Whether A's (`[0]`) or B's (`[1]`) two moves threaten one and the same piece.
    same_target: [bool; 2],
}

impl Cycle {
    /// The pressure pattern: A's two moves and B's two, each pair sorted, `=` when they threaten
    /// the same piece.
    fn signature(&self) -> String {
        let side = |first: usize, same: bool| {
            let mut pair = [self.pressure[first], self.pressure[first + 2]];
            pair.sort_unstable();
            format!("{}{}{}", pair[0], pair[1], if same { "=" } else { "" })
        };
        format!("A:{} B:{}", side(0, self.same_target[0]), side(1, self.same_target[1]))
    }

    /// Whether a side checks with both its moves or threatens the same piece with both.
    fn is_pressing(&self) -> bool {
        let checks = |first: usize| self.pressure[first] == 'K' && self.pressure[first + 2] == 'K';
        checks(0) || checks(1) || self.same_target.contains(&true)
    }
}

/// Every 4-ply cycle of reversible non-captures from `pos` (up to `limit`, sampled at random,
/// cycles with checks kept first), with the pressure of their moves.
fn cycles(pos: &Position, rng: &mut ChaCha8Rng, limit: usize) -> Vec<Cycle> {
    let mut found: Vec<([Move; 4], bool)> = Vec::new();
    for a in pos.legal_moves().iter().copied().filter(|&m| !is_capture(pos, m)) {
        let p1 = played(pos, a);
        for b in p1.legal_moves().iter().copied().filter(|&m| !is_capture(&p1, m)) {
            let p2 = played(&p1, b);
            let ra = reverse(a);
            if is_capture(&p2, ra) || !p2.is_legal(ra) {
                continue;
            }
            let p3 = played(&p2, ra);
            let rb = reverse(b);
            if is_capture(&p3, rb) || !p3.is_legal(rb) {
                continue;
            }
            let p4 = played(&p3, rb);
            if p4.hash() != pos.hash() {
                continue;
            }
            let checks = p1.is_check() || p2.is_check() || p3.is_check() || p4.is_check();
            found.push(([a, b, ra, rb], checks));
        }
    }
    found.shuffle(rng);
    found.sort_by_key(|&(_, checks)| !checks);
    found.truncate(limit);
    found
        .into_iter()
        .map(|(moves, _)| {
            let mut pressure = ['-'; 4];
            let mut targets: [Vec<Square>; 4] = Default::default();
            let mut p = pos.clone();
            for (i, &mv) in moves.iter().enumerate() {
                (pressure[i], targets[i]) = self::pressure(&p, mv);
                p.play_unchecked(mv);
            }
            // A piece threatened by a side's first move, followed through the other side's reply.
            let same = |first: usize| {
                let reply = moves[first + 1];
                targets[first]
                    .iter()
                    .map(|&t| if t == reply.from() { reply.to() } else { t })
                    .any(|t| targets[first + 2].contains(&t))
            };
            Cycle { moves, pressure, same_target: [same(0), same(1)] }
        })
        .collect()
}

/// Picks the cycle whose signature was picked least so far, among the pressing ones (see
/// [`Cycle::is_pressing`]) when there are any, three times in four.
fn pick<'a>(cycles: &'a [Cycle], picked: &mut HashMap<String, usize>, rng: &mut ChaCha8Rng) -> Option<&'a Cycle> {
    let pressing = rng.random_bool(0.75) && cycles.iter().any(Cycle::is_pressing);
    let best = cycles
        .iter()
        .filter(|c| !pressing || c.is_pressing())
        .min_by_key(|c| picked.get(&c.signature()).copied().unwrap_or(0))?;
    *picked.entry(best.signature()).or_insert(0) += 1;
    Some(best)
}

struct Case {
    id: String,
    /// Start position given to both sides.
    fen: String,
    moves: Vec<Move>,
    /// The first ply compared (the cycle's start, or 0).
    from: usize,
    /// The cycle's pressure pattern (see [`Cycle::signature`]), or what a `natural` case did.
    signature: String,
}

/// The side to move after `ply` plies from `fen`.
fn turn_at(fen: &str, ply: usize) -> Color {
    let turn = Position::from_fen(fen).unwrap().turn();
    if ply.is_multiple_of(2) { turn } else { !turn }
}

fn build_cases() -> Vec<Case> {
    let mut rng = ChaCha8Rng::seed_from_u64(SEED);
    let games = common::random_games(SEED, GAMES, MAX_PLIES);
    let mut cases = Vec::new();
    let mut picked = HashMap::new();

    // Cycles from a position given as the root.
    let mut tries = 0;
    while cases.len() < ROOT_CASES && tries < 20 * ROOT_CASES {
        tries += 1;
        let game = games.choose(&mut rng).unwrap();
        let positions = game.positions();
        let (pos, _) = &positions[rng.random_range(0..positions.len())];
        let fen = with_clock(&pos.to_string(), 0);
        let pos = Position::from_fen(&fen).unwrap();
        if Game::from_position(pos.clone(), config()).outcome().is_over() {
            continue;
        }
        let found = cycles(&pos, &mut rng, CYCLES_PER_POSITION);
        let Some(cycle) = pick(&found, &mut picked, &mut rng) else { continue };
        let moves = cycle.moves.repeat(3);
        cases.push(Case { id: format!("root-{}", cases.len()), fen, moves, from: 0, signature: cycle.signature() });
    }

    // Cycles played after the game that led to them.
    let mut history = 0;
    tries = 0;
    while history < HISTORY_CASES && tries < 20 * HISTORY_CASES {
        tries += 1;
        let game = games.choose(&mut rng).unwrap();
        let positions = game.positions();
        let after_capture: Vec<usize> =
            (1..positions.len()).filter(|&i| is_capture(&positions[i - 1].0, game.moves[i - 1])).collect();
        let start = if history % 3 == 0 && !after_capture.is_empty() {
            *after_capture.choose(&mut rng).unwrap()
        } else {
            rng.random_range(1..positions.len())
        };
        let mut ours = Game::from_position(Position::startpos(), config());
        if game.moves[..start].iter().any(|&mv| ours.push(mv).map_or(true, Outcome::is_over)) {
            continue;
        }
        let pos = &positions[start].0;
        let found = cycles(pos, &mut rng, CYCLES_PER_POSITION);
        let Some(cycle) = pick(&found, &mut picked, &mut rng) else { continue };
        let mut moves = game.moves[..start].to_vec();
        moves.extend(cycle.moves.repeat(3));
        let kind = if after_capture.contains(&start) { "capture" } else { "quiet" };
        cases.push(Case {
            id: format!("history-{history}-{kind}"),
            fen: START_FEN.to_string(),
            moves,
            from: start,
            signature: cycle.signature(),
        });
        history += 1;
    }

    // Cycles in which B (the side moving second) threatens the same piece with both its moves,
    // entered by another move of B's: FSF also weighs the move that reached the first occurrence.
    let mut entry = 0;
    tries = 0;
    while entry < ENTRY_CASES && tries < 40 * ENTRY_CASES {
        tries += 1;
        let game = games.choose(&mut rng).unwrap();
        let positions = game.positions();
        let (pos, _) = &positions[rng.random_range(0..positions.len())];
        let pos = Position::from_fen(&with_clock(&pos.to_string(), 0)).unwrap();
        let found = cycles(&pos, &mut rng, CYCLES_PER_POSITION);
        let Some(cycle) = found.iter().find(|c| c.same_target[1]) else { continue };
        let Some((before, first)) = predecessor(&pos, &mut rng) else { continue };
        if first == cycle.moves[3] {
            continue;
        }
        // The same cycle from its first position as the root, for comparison.
        let signature = cycle.signature();
        let root = Case {
            id: format!("entry-{entry}-root"),
            fen: pos.to_string(),
            moves: cycle.moves.repeat(3),
            from: 0,
            signature: signature.clone(),
        };
        cases.push(root);
        let mut moves = vec![first];
        moves.extend(cycle.moves.repeat(3));
        cases.push(Case { id: format!("entry-{entry}-entered"), fen: before.to_string(), moves, from: 1, signature });
        entry += 1;
    }

    // Long runs without capture or repetition across the natural move limit.
    for n in 0..NATURAL_CASES {
        let game = games.choose(&mut rng).unwrap();
        let positions = game.positions();
        let (pos, _) = &positions[rng.random_range(0..positions.len())];
        let clock = if n % 2 == 0 { rng.random_range(40..60) } else { rng.random_range(80..98) };
        let fen = with_clock(&pos.to_string(), clock);
        let mut pos = Position::from_fen(&fen).unwrap();
        // The side to move checks whenever it can (in most cases), the other side never if it can
        // help it: FSF's natural move rule leaves out checks beyond a side's tenth.
        let checker = pos.turn();
        let prefer_checks = rng.random_bool(0.8);
        let mut seen = HashSet::from([pos.hash()]);
        let mut moves = Vec::new();
        let mut checks_given = [0, 0];
        while moves.len() < (100 - clock as usize) + 30 {
            let (checks, quiet): (Vec<Move>, Vec<Move>) = pos
                .legal_moves()
                .iter()
                .copied()
                .filter(|&m| !is_capture(&pos, m) && !seen.contains(&played(&pos, m).hash()))
                .partition(|&m| played(&pos, m).is_check());
            let choice = match (pos.turn() == checker && prefer_checks, checks.is_empty(), quiet.is_empty()) {
                (true, false, _) | (false, false, true) => checks.choose(&mut rng),
                _ => quiet.choose(&mut rng),
            };
            let Some(&mv) = choice else { break };
            let mover = pos.turn();
            pos.play_unchecked(mv);
            checks_given[usize::from(mover != checker)] += usize::from(pos.is_check());
            seen.insert(pos.hash());
            moves.push(mv);
        }
        let signature = format!("clock {clock}, {} plies, checks {}/{}", moves.len(), checks_given[0], checks_given[1]);
        cases.push(Case { id: format!("natural-{n}"), fen, moves, from: 0, signature });
    }
    cases
}

/// How a game ended, in terms both sides can express.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Res {
    Win(Color),
    Draw,
}

#[derive(Clone, Debug)]
struct Ending {
    ply: usize,
    res: Res,
    /// Our verdict, or FSF's answer (how and value).
    detail: String,
}

fn our_ending(case: &Case) -> Option<Ending> {
    let mut game = Game::from_position(Position::from_fen(&case.fen).unwrap(), config());
    let ended = |game: &Game| {
        let outcome = game.outcome();
        let res = match outcome {
            Outcome::Ongoing => return None,
            Outcome::Win { winner, .. } => Res::Win(winner),
            Outcome::Draw { .. } => Res::Draw,
        };
        Some(Ending { ply: game.len(), res, detail: outcome.to_json() })
    };
    if let Some(end) = ended(&game) {
        return Some(end);
    }
    for (i, &mv) in case.moves.iter().enumerate() {
        game.push(mv).unwrap_or_else(|e| panic!("{}: move {i} ({mv}): {e}", case.id));
        if let Some(end) = ended(&game) {
            return Some(end);
        }
    }
    None
}

/// The plies (from `case.from` on) at which Fairy-Stockfish could end the game, and those of them
/// without a legal move. FSF's `is_optional_game_end` ends a xiangqi game only by its n-move rule
/// (100 plies without capture, counting the FEN's clock) or by a third occurrence of a position,
/// and `game_result` applies where no move is legal; elsewhere it cannot end, so it is not asked.
fn candidate_plies(case: &Case) -> (Vec<usize>, Vec<usize>) {
    let mut pos = Position::from_fen(&case.fen).unwrap();
    let mut clock = pos.halfmove_clock() as usize;
    let mut seen: HashMap<u64, usize> = HashMap::new();
    let (mut plies, mut mates) = (Vec::new(), Vec::new());
    for k in 0..=case.moves.len() {
        let count = seen.entry(pos.hash()).or_insert(0);
        *count += 1;
        let no_moves = !pos.has_legal_moves();
        if k >= case.from && (*count >= 3 || clock >= 100 || no_moves) {
            plies.push(k);
            if no_moves {
                mates.push(k);
            }
        }
        if let Some(&mv) = case.moves.get(k) {
            clock = if is_capture(&pos, mv) { 0 } else { clock + 1 };
            pos.play_unchecked(mv);
        }
    }
    (plies, mates)
}

fn parse_ffish_end(case: &Case, text: &str) -> Result<Option<Ending>, String> {
    if text == "none" {
        return Ok(None);
    }
    let fields: Vec<&str> = text.split(':').collect();
    let [ply, how, value] = fields[..] else { return Err(format!("bad answer {text:?}")) };
    let ply: usize = ply.parse().map_err(|_| format!("bad ply in {text:?}"))?;
    let value: i32 = value.parse().map_err(|_| format!("bad value in {text:?}"))?;
    // The value is from the point of view of the side to move at that ply.
    let stm = turn_at(&case.fen, ply);
    let res = match value.signum() {
        1 => Res::Win(stm),
        -1 => Res::Win(!stm),
        _ => Res::Draw,
    };
    Ok(Some(Ending { ply, res, detail: format!("{how} {value}") }))
}

/// pyffish's answers for one case: its first ending, and its answer at our ending's ply.
struct FsfAnswer {
    first: Option<Ending>,
    at_ours: Option<Ending>,
}

/// Runs pyffish on every case (one process, one input file).
fn pyffish(cases: &[Case], ours: &[Option<Ending>]) -> (String, Vec<Result<FsfAnswer, String>>) {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("pyffish-repetition-{}.jsonl", std::process::id()));
    let mut input = String::new();
    for (case, our) in cases.iter().zip(ours) {
        let moves: Vec<String> = case.moves.iter().map(|&m| format!("\"{}\"", to_ffish(m))).collect();
        let (plies, mates) = candidate_plies(case);
        let list = |v: &[usize]| v.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ");
        let also = our.as_ref().map_or("null".to_string(), |e| e.ply.to_string());
        let _ = writeln!(
            input,
            r#"{{"id": "{}", "fen": "{}", "moves": [{}], "plies": [{}], "mates": [{}], "also": {also}}}"#,
            case.id,
            case.fen,
            moves.join(", "),
            list(&plies),
            list(&mates),
        );
    }
    std::fs::write(&tmp, input).unwrap_or_else(|e| panic!("cannot write {}: {e}", tmp.display()));
    let python = python();
    let script = repo_root().join("tests/pyffish_repetition.py");
    let output = Command::new(&python)
        .arg(&script)
        .arg(&tmp)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {} {}: {e}", python.display(), script.display()));
    assert!(
        output.status.success(),
        "{} {} failed ({}); stderr:\n{}\n(if pyffish is missing, run scripts/python-env or scripts/test)",
        python.display(),
        script.display(),
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let _ = std::fs::remove_file(&tmp);
    let stdout = String::from_utf8(output.stdout).expect("pyffish output is UTF-8");
    let mut lines = stdout.lines();
    let version = lines.next().unwrap_or_default().to_string();
    let answers: Vec<&str> = lines.collect();
    assert_eq!(answers.len(), cases.len(), "pyffish answered {} lines for {} cases", answers.len(), cases.len());
    let parsed = cases
        .iter()
        .zip(answers)
        .map(|(case, answer)| match answer.split('\t').collect::<Vec<_>>()[..] {
            ["error", message] => Err(message.to_string()),
            [first, at_ours] => {
                Ok(FsfAnswer { first: parse_ffish_end(case, first)?, at_ours: parse_ffish_end(case, at_ours)? })
            }
            _ => Err(format!("bad answer line {answer:?}")),
        })
        .collect();
    (version, parsed)
}

/// A result as seen from the cycle: A is the side to move at its start.
fn describe(res: Res, a: Color) -> &'static str {
    match res {
        Res::Draw => "draw",
        Res::Win(w) if w == a => "A wins",
        Res::Win(_) => "B wins",
    }
}

fn reason(detail: &str) -> &str {
    detail.split("\"reason\":\"").nth(1).and_then(|s| s.split('"').next()).unwrap_or(detail)
}

#[test]
fn wxf_repetition_rulings_agree_with_pyffish() {
    let started = Instant::now();
    let cases = build_cases();
    let built = started.elapsed().as_secs_f64();
    let disagreeing = compare(&cases);
    println!("{} cases built in {built:.1}s, all done in {:.1}s", cases.len(), started.elapsed().as_secs_f64());
    let known: HashSet<&str> = KNOWN.iter().map(|&(id, _)| id).collect();
    let new_disagreements: Vec<&String> = disagreeing.iter().filter(|id| !known.contains(id.as_str())).collect();
    let stale: Vec<&str> = known.iter().copied().filter(|id| !disagreeing.contains(*id)).collect();
    if !stale.is_empty() {
        println!("known disagreements that now agree (remove them from KNOWN): {stale:?}");
    }
    if ENFORCE {
        assert!(new_disagreements.is_empty(), "new disagreements with pyffish: {new_disagreements:?}");
    }
}

/// A game of the rule-book tests (`rules2011.rs`, `rules1999.rs`, explained there) played on
/// under each ruleset: where the ending comes and who wins. The Chinese books' rulings are ours
/// alone; under `Ruleset::Wxf` the same moves must end as Fairy-Stockfish ends them.
struct BookCase {
    id: &'static str,
    fen: &'static str,
    cycle: &'static [&'static str],
    /// Plies played, enough for every ruleset's ending.
    plies: usize,
    /// (ruleset, ply of the ending, JSON of the outcome's status and winner) per ruleset.
    endings: &'static [(Ruleset, usize, &'static str)],
}

/// Why the books part ways on each case:
/// - `nine-rounds`: 2011's 23.4 makes a rook's tour of chases of three different pieces a pending
///   position after nine rounds (ply 17), ruled with the chaser's second move after it (23.5);
///   WXF chases must be of one and the same piece, so the threefold repetition is a draw
///   there (and under 1999, which has no nine-round rule, Red must vary: 26.4 after 24.3's one
///   more cycle).
/// - `rounds-to-vary`: the same perpetual chase of one horse loses under every book; WXF rules
///   at the third occurrence, 2011 after the chaser's two rounds to vary (23.5), 1999 after its
///   one more cycle (24.3).
/// - `lone-defender`: a defending side's lone rook attacking elephants (26.4) is idle under 2011
///   (a draw after two rounds); WXF sees chases of different pieces, not one perpetual chase,
///   and calls it a draw at once.
/// - `self-inflicted`: the block of a check that leaves a threat the checker made itself (26.5)
///   is idle under 2011; WXF ignores mate threats and calls the cycle a draw at once.
/// - `both-forbidden`: a rook chase of two different rooks against chases of protected pieces:
///   2011's 26.9 makes the rook chaser vary, 1999's 26.3 calls it a draw, and WXF, seeing no
///   piece chased throughout, a draw.
/// - `exchange-offer`, `rook-horse-contact`: an offer that is a chase (26.10, 26.11) beside a
///   chase of an unprotected cannon: a perpetual chase under both Chinese books (the 1999 one
///   classifies moves as 2011 does); WXF sees two different pieces attacked, no one piece
///   chased throughout: a draw.
const BOOK_CASES: &[BookCase] = &[
    BookCase {
        id: "nine-rounds",
        fen: "4k4/9/9/9/7n1/9/7c1/9/R6n1/3K5 w - - 0 1",
        cycle: &["a1a3", "e9e8", "a3a5", "e8e9", "a5a1", "e9e8", "a1a3", "e8e9", "a3a5", "e9e8", "a5a1", "e8e9"],
        plies: 40,
        endings: &[
            (Ruleset::Chinese2011, 21, r#""win","winner":"black""#),
            (Ruleset::Chinese1999, 35, r#""win","winner":"black""#),
            (Ruleset::Wxf, 24, r#""draw","winner":null"#),
        ],
    },
    BookCase {
        id: "rounds-to-vary",
        fen: "5k3/4a4/9/9/n7R/9/9/9/9/3AKA3 b - - 0 1",
        cycle: &["a5c6", "i5i6", "c6a5", "i6i5"],
        plies: 16,
        endings: &[
            (Ruleset::Chinese2011, 12, r#""win","winner":"black""#),
            (Ruleset::Chinese1999, 12, r#""win","winner":"black""#),
            (Ruleset::Wxf, 8, r#""win","winner":"black""#),
        ],
    },
    BookCase {
        id: "lone-defender",
        fen: "2b6/4k4/9/9/R5b2/9/9/8r/9/3K5 w - - 0 1",
        cycle: &["a5a9", "e8f8", "a9a5", "f8e8"],
        plies: 16,
        endings: &[
            (Ruleset::Chinese2011, 12, r#""draw","winner":null"#),
            (Ruleset::Chinese1999, 8, r#""draw","winner":null"#),
            (Ruleset::Wxf, 8, r#""draw","winner":null"#),
        ],
    },
    BookCase {
        id: "self-inflicted",
        fen: "3N1k3/4a4/1n7/9/2r6/9/2R6/9/3NC4/4K4 w - - 0 1",
        cycle: &["c3f3", "e8f7", "f3c3", "f7e8"],
        plies: 16,
        endings: &[
            (Ruleset::Chinese2011, 12, r#""draw","winner":null"#),
            (Ruleset::Chinese1999, 8, r#""draw","winner":null"#),
            (Ruleset::Wxf, 8, r#""draw","winner":null"#),
        ],
    },
    BookCase {
        id: "both-forbidden",
        fen: "3k2rr1/4P4/N3N4/Pc2P4/2b3PP1/9/9/9/4A1C2/4K4 w - - 0 1",
        cycle: &["g1h1", "b6d6", "h1g1", "d6b6"],
        plies: 16,
        endings: &[
            (Ruleset::Chinese2011, 11, r#""win","winner":"black""#),
            (Ruleset::Chinese1999, 8, r#""draw","winner":null"#),
            (Ruleset::Wxf, 8, r#""draw","winner":null"#),
        ],
    },
    BookCase {
        id: "exchange-offer",
        fen: "3nk4/2P6/4P4/2N6/4c4/9/9/9/9/R2K5 w - - 0 1",
        cycle: &["c6b8", "e9f9", "b8c6", "f9e9"],
        plies: 16,
        endings: &[
            (Ruleset::Chinese2011, 11, r#""win","winner":"black""#),
            (Ruleset::Chinese1999, 11, r#""win","winner":"black""#),
            (Ruleset::Wxf, 8, r#""draw","winner":null"#),
        ],
    },
    BookCase {
        id: "rook-horse-contact",
        fen: "4k4/9/9/9/2n6/4N4/9/9/R5c2/3K5 w - - 0 1",
        cycle: &["a1a5", "e9e8", "a5a1", "e8e9"],
        plies: 16,
        endings: &[
            (Ruleset::Chinese2011, 11, r#""win","winner":"black""#),
            (Ruleset::Chinese1999, 11, r#""win","winner":"black""#),
            (Ruleset::Wxf, 8, r#""draw","winner":null"#),
        ],
    },
];

/// The rule-book cases end where each book says ([`BOOK_CASES`] says why they differ), and under
/// `Ruleset::Wxf` as Fairy-Stockfish ends them.
#[test]
fn rule_book_cases_under_each_ruleset_and_fairy_stockfish() {
    let mut cases = Vec::new();
    for book in BOOK_CASES {
        let moves: Vec<Move> = book.cycle.iter().cycle().take(book.plies).map(|m| m.parse().unwrap()).collect();
        for &(ruleset, ply, result) in book.endings {
            let mut game = Game::from_position(
                Position::from_fen(book.fen).unwrap(),
                GameConfig { ruleset, ..GameConfig::default() },
            );
            for &mv in &moves {
                if game.outcome().is_over() {
                    break;
                }
                game.push(mv).unwrap_or_else(|e| panic!("{}: {e}", book.id));
            }
            let json = game.outcome().to_json();
            assert_eq!(game.len(), ply, "{} under {ruleset}: {json}", book.id);
            assert!(json.contains(result), "{} under {ruleset}: {json}, expected {result}", book.id);
        }
        cases.push(Case {
            id: book.id.to_string(),
            fen: book.fen.to_string(),
            moves,
            from: 0,
            signature: "book".into(),
        });
    }
    let disagreeing = compare(&cases);
    assert!(disagreeing.is_empty(), "the WXF rulings of {disagreeing:?} differ from Fairy-Stockfish's");
}

/// Compares our endings with pyffish's for every case and prints the agreement, the
/// disagreement classes and every disagreement; returns the ids of the cases that disagree.
/// Panics if pyffish cannot answer for a case.
fn compare(cases: &[Case]) -> HashSet<String> {
    if let Some(path) = std::env::var_os("XQZ_REPETITION_DUMP") {
        // Every case as `<id>|<fen>|<moves>|<from>`, for study with other tools.
        let dump: String = cases
            .iter()
            .map(|c| {
                let moves = c.moves.iter().map(ToString::to_string).collect::<Vec<_>>().join(" ");
                format!("{}|{}|{moves}|{}\n", c.id, c.fen, c.from)
            })
            .collect();
        std::fs::write(&path, dump).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.to_string_lossy()));
    }
    let ours: Vec<Option<Ending>> = cases.iter().map(our_ending).collect();
    let (version, answers) = pyffish(cases, &ours);

    let mut agree = 0usize;
    let mut by_group: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut by_verdict: BTreeMap<String, usize> = BTreeMap::new();
    let mut by_signature: BTreeMap<String, (usize, usize)> = BTreeMap::new();
    let mut classes: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut report = String::new();
    let mut errors = Vec::new();
    let known: HashMap<&str, &[Why]> = KNOWN.iter().copied().collect();
    let mut by_why: BTreeMap<Why, usize> = BTreeMap::new();
    let mut new_disagreements = Vec::new();
    let mut disagreeing = HashSet::new();
    for ((case, our), answer) in cases.iter().zip(&ours).zip(answers) {
        let fsf = match answer {
            Ok(fsf) => fsf,
            Err(e) => {
                errors.push(format!("{}: {e}", case.id));
                continue;
            }
        };
        let group = case.id.split('-').next().unwrap().to_string();
        let a = turn_at(&case.fen, case.from);
        let entry = by_group.entry(group).or_default();
        entry.0 += 1;
        let show = |e: &Option<Ending>, ours: bool| {
            e.as_ref().map_or("not ended".to_string(), |e| {
                let why = if ours { reason(&e.detail).to_string() } else { e.detail.clone() };
                format!("+{} {} ({why})", e.ply - case.from, describe(e.res, a))
            })
        };
        let verdict = our.as_ref().map_or("ongoing", |e| reason(&e.detail));
        *by_verdict.entry(verdict.to_string()).or_default() += 1;
        let same = match (our, &fsf.first) {
            (Some(o), Some(f)) => o.ply == f.ply && o.res == f.res,
            (None, None) => true,
            _ => false,
        };
        let signature = if case.signature.starts_with('A') { case.signature.as_str() } else { "natural" };
        let sig = by_signature.entry(signature.to_string()).or_default();
        sig.0 += 1;
        if same {
            agree += 1;
            entry.1 += 1;
            sig.1 += 1;
            continue;
        }
        disagreeing.insert(case.id.clone());
        // The class: which side ends first and how, and FSF's ruling at our ply when it ends earlier.
        let at_ours = match (our, &fsf.first) {
            (Some(o), Some(f)) if o.ply != f.ply => format!("; fsf at ours: {}", show(&fsf.at_ours, false)),
            _ => String::new(),
        };
        let class = format!("ours {} / fsf {}{at_ours}", show(our, true), show(&fsf.first, false));
        classes.entry(class.clone()).or_default().push(case.id.clone());
        match known.get(case.id.as_str()) {
            Some(whys) => whys.iter().for_each(|&w| *by_why.entry(w).or_default() += 1),
            None => new_disagreements.push(case.id.clone()),
        }
        let cycle: Vec<String> = case.moves[case.from..].iter().take(4).map(ToString::to_string).collect();
        let _ = writeln!(
            report,
            "{} [{}]{}\n  class {class}\n  fen   {}\n  moves {}\n  from  ply {} (A = {a}); cycle {}\n  ours  {}\n  ffish {}",
            case.id,
            case.signature,
            known.get(case.id.as_str()).map_or(" NEW".to_string(), |r| format!(" known: {r:?}")),
            case.fen,
            case.moves.iter().map(ToString::to_string).collect::<Vec<_>>().join(" "),
            case.from,
            cycle.join(" "),
            our.as_ref().map_or(String::new(), |e| e.detail.clone()),
            case.moves.iter().map(|&m| to_ffish(m)).collect::<Vec<_>>().join(" "),
        );
    }

    println!("{version}; agreement: {agree}/{}", cases.len());
    for (group, (n, ok)) in &by_group {
        println!("  {group:8} {ok}/{n}");
    }
    println!("our verdicts: {by_verdict:?}");
    println!("cycle pressure (K check, X capture threat, - neither, = same piece; by side), agreeing/all:");
    for (signature, (n, ok)) in &by_signature {
        println!("  {signature:10} {ok}/{n}");
    }
    println!("disagreement classes (A: the side to move at the cycle's start; +n: plies from it):");
    for (class, ids) in &classes {
        println!("  {:4} {class}  e.g. {}", ids.len(), ids[..ids.len().min(3)].join(", "));
    }
    println!("known disagreements by reason (a case may have several): {by_why:?}");
    println!("new disagreements (not in KNOWN): {}", new_disagreements.len());
    println!("disagreements:\n{report}");
    assert!(errors.is_empty(), "pyffish could not answer {} cases: {errors:#?}", errors.len());
    disagreeing
}

/// Compares the games in the file named by `XQZ_REPETITION_CASES`, one a line as
/// `<id>|<fen>|<moves in our coordinates>`, from their first ply:
/// `XQZ_REPETITION_CASES=cases.txt cargo test -p xiangqi --test repetition_wxf external -- --ignored --nocapture`.
#[test]
#[ignore = "a tool: needs XQZ_REPETITION_CASES"]
fn external_cases() {
    let Ok(path) = std::env::var("XQZ_REPETITION_CASES") else { return };
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"));
    let cases: Vec<Case> = text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|line| {
            let fields: Vec<&str> = line.split('|').collect();
            let [id, fen, moves] = fields[..] else { panic!("bad line {line:?}") };
            let moves =
                moves.split_whitespace().map(|m| m.parse().unwrap_or_else(|_| panic!("bad move {m}"))).collect();
            Case {
                id: id.trim().to_string(),
                fen: fen.trim().to_string(),
                moves,
                from: 0,
                signature: "A:external".into(),
            }
        })
        .collect();
    compare(&cases);
}

/// Prints, for one game given as `XQZ_EXPLAIN="<fen>|<moves>"` (our coordinates), whether each
/// move checks, the pieces it chases (see [`axf_chased`]) and our ruling after it, to study a
/// disagreement:
/// `XQZ_EXPLAIN='...' cargo test -p xiangqi --test repetition_wxf explain -- --ignored --nocapture`.
#[test]
#[ignore = "a tool: needs XQZ_EXPLAIN"]
fn explain() {
    let Ok(spec) = std::env::var("XQZ_EXPLAIN") else { return };
    let (fen, moves) = spec.split_once('|').expect("XQZ_EXPLAIN is <fen>|<moves>");
    let mut game = Game::from_position(Position::from_fen(fen.trim()).unwrap(), config());
    for (i, text) in moves.split_whitespace().enumerate() {
        if game.outcome().is_over() {
            println!("game over after {i} plies");
            break;
        }
        let mv: Move = text.parse().unwrap();
        let chased = axf_chased(game.position(), mv);
        let after = played(game.position(), mv);
        let check = if after.is_check() { " check" } else { "" };
        let chased: Vec<String> =
            chased.map(|s| format!("{}{s}", after.piece_at(s).map_or('-', |p| p.fen_char()))).collect();
        let outcome = game.push(mv).unwrap_or_else(|e| panic!("move {i} ({text}): {e}"));
        println!("{:3} {text} ({}){check} chased [{}] -> {}", i + 1, to_ffish(mv), chased.join(","), outcome.to_json());
    }
}

/// Compares [`axf_chased`] with what a Fairy-Stockfish binary (`XQZ_FSF_CHASED`; one from 2022 on,
/// whose `d` command prints the chased pieces, not Debian's 11.1) says after every move of the
/// random games, and prints the differences:
/// `XQZ_FSF_CHASED=<path> cargo test -p xiangqi --test repetition_wxf chases -- --ignored --nocapture`.
#[test]
#[ignore = "a tool: needs XQZ_FSF_CHASED"]
fn chases_agree_with_fairy_stockfish() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;

    let Ok(engine) = std::env::var("XQZ_FSF_CHASED") else { return };
    let mut child = Command::new(&engine).stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().unwrap();
    let mut input = child.stdin.take().unwrap();
    let mut output = BufReader::new(child.stdout.take().unwrap());
    writeln!(input, "setoption name UCI_Variant value xiangqi").unwrap();
    let square = |s: Square| format!("{}{}", s.file().char(), s.rank().index() + 1);
    let (mut moves_seen, mut differences) = (0, 0);
    for game in common::random_games(SEED, GAMES, MAX_PLIES) {
        let mut pos = game.start.clone();
        for (k, &mv) in game.moves.iter().enumerate() {
            let mut ours: Vec<String> = axf_chased(&pos, mv).map(square).collect();
            let played: Vec<String> = game.moves[..=k].iter().map(|&m| to_ffish(m)).collect();
            writeln!(input, "position fen {} moves {}\nd", game.start, played.join(" ")).unwrap();
            input.flush().unwrap();
            let mut line = String::new();
            while !line.starts_with("Chased:") {
                line.clear();
                assert!(output.read_line(&mut line).unwrap() > 0, "{engine} ended before printing Chased:");
            }
            let mut fsf: Vec<String> = line["Chased:".len()..].split_whitespace().map(str::to_string).collect();
            ours.sort();
            fsf.sort();
            if ours != fsf {
                differences += 1;
                println!("{pos} {mv} ({}): ours {ours:?}, fsf {fsf:?}", to_ffish(mv));
            }
            moves_seen += 1;
            pos.play_unchecked(mv);
        }
    }
    let _ = writeln!(input, "quit");
    let _ = child.wait();
    println!("{differences} differences in {moves_seen} moves");
    assert_eq!(differences, 0);
}
