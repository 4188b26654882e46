//! `xqz eval suite`: a balanced opening suite, spread over the ECCO families, for anchor matches.
//!
//! Each candidate line starts with a move (or two) that steers it to a group of ECCO families (a
//! flank opening, A; a central cannon, B or C by the defence; a central cannon met by one, D; a
//! pawn opening, E), then takes, at every ply, a move the engine's multi-line search finds within
//! a margin of its best, to a length drawn from 4 to 10 plies. ECCO names the line
//! ([`xqz_book::ecco`]); a group whose share is full, or an ECCO code that holds half of its
//! group's share already, turns the line away before it is judged. The rest are judged by a
//! deeper search and kept when its score is within the balance. The suite is written
//! interleaved over the ECCO letters, so the first pairs of a match (which takes entry `i` for
//! pair `i`) already meet every family.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use xiangqi::Move;
use xiangqi::game::{Game, GameConfig};
use xqz_arena::ladder;
use xqz_arena::uci::{EngineConfig, Limit, Score, UciEngine};
use xqz_book::ecco;

/// Options of `xqz eval suite`.
#[derive(Args)]
pub struct SuiteArgs {
    /// Positions in the suite.
    #[arg(long, default_value_t = 120)]
    positions: usize,
    /// The engine that walks and judges (`fairy-stockfish:PATH`); default: Fairy-Stockfish as
    /// the ladder's rungs find it.
    #[arg(long)]
    engine: Option<String>,
    /// Depth of the multi-line search that picks each move of a line.
    #[arg(long, default_value_t = 8)]
    walk_depth: u32,
    /// Lines of that search: the moves a line may take.
    #[arg(long, default_value_t = 8)]
    walk_lines: u32,
    /// Centipawns below the best move within which a move may be taken.
    #[arg(long, default_value_t = 30)]
    walk_margin: i32,
    /// Depth of the search that judges a line's last position.
    #[arg(long, default_value_t = 16)]
    judge_depth: u32,
    /// The largest score, in centipawns either way, of a balanced position.
    #[arg(long, default_value_t = 50)]
    balance: i32,
    /// Shortest line, in plies.
    #[arg(long, default_value_t = 4)]
    min_plies: u32,
    /// Longest line, in plies.
    #[arg(long, default_value_t = 10)]
    max_plies: u32,
    /// Seed of the lines' lengths and picks.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Candidate lines walked at most before giving up on the families still short.
    #[arg(long, default_value_t = 2000)]
    tries: usize,
    /// The suite file to write (EPD-style: the FEN, then `;` and the line's moves, ECCO code and
    /// score, which readers of suites skip).
    #[arg(long)]
    out: PathBuf,
}

/// The groups of the suite: the ECCO letters a group's lines land in, its share of the suite (in
/// fifths), and the moves that steer a line there (one of the first list for Red's first move,
/// one of the second, if any, for Black's reply).
const GROUPS: &[(&str, usize, &[&str], &[&str])] = &[
    // Flank openings: the elephant, the horse, the cannon to the palace corner or across it.
    ("A", 1, &["g0e2", "c0e2", "h0g2", "b0c2", "h2f2", "b2d2", "h2d2", "b2f2"], &[]),
    // The central cannon: ECCO files it under B or C by Black's defence, which the walk picks
    // (mostly the screen horses, C, as strong play does).
    ("BC", 2, &["h2e2", "b2e2"], &[]),
    // The central cannon met by a central cannon (顺炮 and 列炮).
    ("D", 1, &["h2e2", "b2e2"], &["h7e7", "b7e7"]),
    // The pawn opening (仙人指路).
    ("E", 1, &["g3g4", "c3c4"], &[]),
];

/// One position of the suite.
struct Entry {
    fen: String,
    moves: Vec<Move>,
    code: &'static str,
    name: &'static str,
    score: i32,
}

/// Builds the suite and writes it to `--out`.
pub fn run(args: &SuiteArgs) -> Result<()> {
    anyhow::ensure!(args.positions > 0, "--positions must be positive");
    anyhow::ensure!(
        1 <= args.min_plies && args.min_plies <= args.max_plies,
        "--min-plies must be at least 1 and at most --max-plies"
    );
    anyhow::ensure!(
        args.walk_lines > 0 && args.walk_depth > 0 && args.judge_depth > 0,
        "depths and lines must be positive"
    );
    let config = match &args.engine {
        Some(spec) => EngineConfig::parse(spec)?,
        None => EngineConfig::fairy_stockfish(
            ladder::fairy_stockfish()
                .context("no Fairy-Stockfish: give --engine, set XQZ_FAIRY_STOCKFISH or put it on the PATH")?
                .to_string_lossy(),
        ),
    };
    let mut engine = UciEngine::spawn(&config)?;
    let mut rng = ChaCha8Rng::seed_from_u64(args.seed);
    // Each group's share of the positions, the remainder to the first groups.
    let fifths: usize = GROUPS.iter().map(|g| g.1).sum();
    let mut quotas: Vec<usize> = GROUPS.iter().map(|g| args.positions * g.1 / fifths).collect();
    let short = args.positions - quotas.iter().sum::<usize>();
    quotas.iter_mut().take(short).for_each(|q| *q += 1);
    let group_of = |code: &str| GROUPS.iter().position(|g| g.0.contains(&code[..1]));
    let mut kept: Vec<Entry> = Vec::new();
    let mut seen = BTreeSet::new();
    let (mut walked, mut judged) = (0, 0);
    let have = |kept: &[Entry], group: usize| kept.iter().filter(|e| group_of(e.code) == Some(group)).count();
    while walked < args.tries {
        // The group furthest from its share steers the next line.
        let Some(group) = (0..GROUPS.len())
            .filter(|&g| have(&kept, g) < quotas[g])
            .max_by_key(|&g| (quotas[g] - have(&kept, g), std::cmp::Reverse(g)))
        else {
            break;
        };
        walked += 1;
        if walked % 50 == 0 {
            let counts: Vec<String> = GROUPS
                .iter()
                .enumerate()
                .map(|(g, group)| format!("{} {}/{}", group.0, have(&kept, g), quotas[g]))
                .collect();
            eprintln!("{walked} lines walked, {judged} judged: {}", counts.join(", "));
        }
        let plies = rng.random_range(args.min_plies..=args.max_plies);
        let (_, _, reds, blacks) = GROUPS[group];
        let Some(game) = walk(&mut engine, &mut rng, args, plies, [reds, blacks])? else { continue };
        let moves: Vec<Move> = game.moves().collect();
        let Some(opening) = ecco::classify(&moves)? else { continue };
        let Some(landed) = group_of(opening.code) else { continue };
        // No ECCO code takes more than half its group's share, so that the suite spreads.
        let same_code = kept.iter().filter(|e| e.code == opening.code).count();
        let fen = game.position().to_string();
        if have(&kept, landed) >= quotas[landed] || 2 * same_code >= quotas[landed].max(2) || seen.contains(&fen) {
            continue;
        }
        judged += 1;
        engine.new_game()?;
        let judgement = engine.go(&game, &Limit::depth(args.judge_depth))?;
        let Some(Score::Cp(score)) = judgement.score else { continue };
        if score.abs() > args.balance {
            continue;
        }
        seen.insert(fen.clone());
        kept.push(Entry { fen, moves, code: opening.code, name: opening.name, score });
    }
    let total = kept.len();
    println!("{total} positions in {} ({walked} lines walked, {judged} judged)", args.out.display());
    let mut by_letter: BTreeMap<char, Vec<Entry>> = BTreeMap::new();
    for e in kept {
        by_letter.entry(e.code.chars().next().expect("ECCO codes are not empty")).or_default().push(e);
    }
    for (letter, entries) in &by_letter {
        let mut codes: BTreeMap<&str, usize> = BTreeMap::new();
        for e in entries {
            *codes.entry(e.code).or_default() += 1;
        }
        let codes: Vec<String> = codes.iter().map(|(code, n)| format!("{code} {n}")).collect();
        println!("  {letter}: {} ({})", entries.len(), codes.join(", "));
    }
    let mut text = String::new();
    writeln!(
        text,
        "# Balanced opening suite by `xqz eval suite`: {total} positions at plies {}-{}, each within {} \
         centipawns at depth {} of {} (lines picked within {} centipawns of the best of {} lines at depth \
         {}; seed {}).",
        args.min_plies,
        args.max_plies,
        args.balance,
        args.judge_depth,
        engine.name(),
        args.walk_margin,
        args.walk_lines,
        args.walk_depth,
        args.seed
    )?;
    writeln!(text, "# FEN ; moves ; ECCO code and name ; score in centipawns for the side to move")?;
    let mut by_family: Vec<std::vec::IntoIter<Entry>> = by_letter.into_values().map(Vec::into_iter).collect();
    loop {
        let round: Vec<Entry> = by_family.iter_mut().filter_map(Iterator::next).collect();
        if round.is_empty() {
            break;
        }
        for e in round {
            let moves: Vec<String> = e.moves.iter().map(Move::to_string).collect();
            writeln!(text, "{} ; moves {} ; ecco {} {} ; score {}", e.fen, moves.join(" "), e.code, e.name, e.score)?;
        }
    }
    std::fs::write(&args.out, text).with_context(|| format!("write {}", args.out.display()))?;
    anyhow::ensure!(
        total == args.positions,
        "only {total} of {} positions after {} lines: raise --tries or --balance",
        args.positions,
        args.tries
    );
    Ok(())
}

/// A line of `plies` plies: the steering moves first (one of each list, where legal), then at
/// each ply a move within the margin of the engine's best. `None` if the game ends on the way.
fn walk(
    engine: &mut UciEngine,
    rng: &mut ChaCha8Rng,
    args: &SuiteArgs,
    plies: u32,
    steer: [&[&str]; 2],
) -> Result<Option<Game>> {
    let mut game = Game::new(GameConfig::default());
    engine.new_game()?;
    for ply in 0..plies {
        let steered = steer.get(ply as usize).filter(|moves| !moves.is_empty());
        let mv = match steered {
            Some(moves) => moves[rng.random_range(0..moves.len())].parse::<Move>()?,
            None => {
                let lines = engine.analyse(&game, &Limit::depth(args.walk_depth), args.walk_lines)?;
                let Some(best) = lines.first().map(|l| centipawns(l.score)) else { return Ok(None) };
                let near: Vec<Move> =
                    lines.iter().filter(|l| centipawns(l.score) >= best - args.walk_margin).map(|l| l.first).collect();
                near[rng.random_range(0..near.len())]
            }
        };
        if game.push(mv)?.is_over() {
            return Ok(None);
        }
    }
    Ok(Some(game))
}

/// A score as centipawns, mates beyond any material.
fn centipawns(score: Score) -> i32 {
    match score {
        Score::Cp(cp) => cp,
        Score::Mate(n) if n > 0 => 100_000 - n,
        Score::Mate(n) => -100_000 - n,
    }
}
