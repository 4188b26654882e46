//! `xqz eval match`: matches between checkpoints, built-in players and external UCI engines, with
//! paired openings, Elo, LOS and SPRT; each game appended to a PGN-like listing and to an Arrow
//! table.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use clap::Args;
use xiangqi::game::{GameConfig, Ruleset};
use xqz_arena::player::{EnginePlayer, Player, PlayerError, SearchPlayer};
use xqz_arena::records::{MatchLog, finished_pairs, read_games};
use xqz_arena::stats::{EloModel, Sprt, SprtState};
use xqz_arena::tournament::{MatchGame, MatchPlan, MatchReport, Openings};
use xqz_arena::uci::{EngineConfig, Limit};
use xqz_mcts::{MaterialEvaluator, SearchConfig, UniformEvaluator};
use xqz_net::service::{InferenceService, ServiceConfig};

use crate::results;

/// Options of `xqz eval match`.
#[derive(Args)]
pub struct MatchArgs {
    /// First player (scores are its): a checkpoint `PATH.json` or `shipped` (the model built
    /// in; either optionally `@PLAYOUTS`), `material` or `uniform` (built-in evaluators), `fairy-stockfish:PATH[;Option=value...]`
    /// or `uci:COMMAND ARGS[;Option=value...]` (an engine with ranks 0-9, such as `xqz uci`).
    #[arg(long)]
    a: String,
    /// Second player, as for `--a`.
    #[arg(long)]
    b: String,
    /// Pairs of games (each opening with both colours).
    #[arg(long, default_value_t = 50)]
    pairs: u32,
    /// Go on with a match that was cut short: the pairs of which `--out` holds both games between
    /// these players, in this order, from the openings this match gives them, are not played
    /// again. Give the match's own `--pairs`, `--seed` and settings, and the rest play the
    /// openings the whole match would have; the summary adds a line for every game of these two
    /// players in `--out` pooled, as `xqz eval results` pools them (other seeds' matches too).
    #[arg(long, conflicts_with = "sprt")]
    resume: bool,
    /// Games played at once. A checkpoint's positions are batched across the games in flight,
    /// so more games use the cores better (on 2 cores, 800-playout pairs against an engine went
    /// 1.7 times as fast at 16 as at 4); an engine limited by time gets a smaller share of a
    /// core each, which changes its strength.
    #[arg(long, default_value_t = 2)]
    concurrency: usize,
    /// Playouts per move of searching players without their own `@PLAYOUTS`.
    #[arg(long, default_value_t = 64)]
    playouts: u32,
    /// Opening suite: one FEN per line (EPD-style); default: random openings.
    #[arg(long)]
    openings: Option<PathBuf>,
    /// First-play value of unvisited root moves of searching players (1.0: try every move once
    /// before any twice); default: the search's usual reduction from the parent's value.
    #[arg(long, allow_hyphen_values = true)]
    root_fpu: Option<f32>,
    /// Softmax temperature of searching players' priors at every node (above 1 flattens them).
    #[arg(long, default_value_t = 1.0, value_parser = crate::selfplay::parse_temperature)]
    policy_temperature: f32,
    /// Searching players rule on a position's first repetition as if it went on to the third.
    #[arg(long)]
    rule_first_repetition: bool,
    /// Plies before the natural move limit from which searching players draw a leaf's value
    /// toward a draw, so that a side ahead captures rather than shuffles into it (0: off).
    #[arg(long, default_value_t = SearchConfig::default().natural_limit_ramp)]
    natural_limit_ramp: u32,
    #[command(flatten)]
    mate_search: crate::selfplay::MateSearch,
    /// Plies of each random opening.
    #[arg(long, default_value_t = 4)]
    random_plies: u32,
    /// Seed of the random openings.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Game length cap in plies (a draw when reached).
    #[arg(long, default_value_t = 300)]
    max_plies: u32,
    /// Repetition rules: chinese2011, chinese1999, wxf or simple.
    #[arg(long, default_value = "chinese2011")]
    ruleset: Ruleset,
    /// External engines: nodes per move.
    #[arg(long)]
    engine_nodes: Option<u64>,
    /// External engines: depth per move (the default limit is depth 1).
    #[arg(long)]
    engine_depth: Option<u32>,
    /// External engines: milliseconds per move.
    #[arg(long)]
    engine_movetime: Option<u64>,
    /// Sequential test ending the match early: `ELO0,ELO1[,ALPHA,BETA][,normalized]`, e.g.
    /// `0,10` (alpha = beta = 0.05, logistic Elo). The exit status says what it decided: 0 H1
    /// accepted (`--a` is better by ELO1), 10 H0 accepted, 11 undecided when the pairs ran out.
    #[arg(long)]
    sprt: Option<String>,
    #[command(flatten)]
    device: crate::model::DeviceArg,
    /// Folder for the records: `eval/games.pgn` and `eval/games.arrow` inside it (a run folder
    /// keeps its evaluations with it).
    #[arg(long, default_value = "runs/eval")]
    out: PathBuf,
    /// Print the result as one JSON object (fields in the README) instead of the lines after
    /// each pair and the summary.
    #[arg(long)]
    json: bool,
}

/// The exit status of a match whose SPRT accepted H0.
pub const EXIT_H0: u8 = 10;
/// The exit status of a match whose SPRT had not decided when its pairs ran out.
pub const EXIT_UNDECIDED: u8 = 11;

/// Plays the match; the exit status of a match with an SPRT is its decision.
pub fn run(args: &MatchArgs) -> Result<ExitCode> {
    let decision = run_eval_match(args)?;
    Ok(ExitCode::from(match decision {
        None | Some(SprtState::AcceptH1) => 0,
        Some(SprtState::AcceptH0) => EXIT_H0,
        Some(SprtState::Continue) => EXIT_UNDECIDED,
    }))
}

/// A player ready to be made once per thread.
enum Prepared {
    /// A network behind one batching service that every thread's search shares.
    Net {
        name: String,
        service: InferenceService,
        playouts: u32,
        steps: u64,
    },
    Material {
        playouts: u32,
    },
    Uniform {
        playouts: u32,
    },
    Engine {
        config: EngineConfig,
        limit: Limit,
    },
}

impl Prepared {
    fn parse(spec: &str, args: &MatchArgs) -> Result<Prepared> {
        let (body, playouts) = match spec.rsplit_once('@') {
            Some((body, n)) if !spec.contains(':') || spec.starts_with("ckpt:") => {
                (body, n.parse().with_context(|| format!("bad playouts {n:?} in {spec:?}"))?)
            }
            _ => (spec, args.playouts),
        };
        anyhow::ensure!(playouts > 0, "playouts must be positive in {spec:?}");
        match body {
            "material" => return Ok(Prepared::Material { playouts }),
            "uniform" => return Ok(Prepared::Uniform { playouts }),
            _ => {}
        }
        if body.starts_with("fairy-stockfish:") || body.starts_with("fsf:") || body.starts_with("uci:") {
            let config = EngineConfig::parse(body)?;
            let limit = Limit {
                nodes: args.engine_nodes,
                depth: args.engine_depth,
                movetime: args.engine_movetime.map(Duration::from_millis),
            };
            let limit = if limit.is_empty() { Limit::depth(1) } else { limit };
            return Ok(Prepared::Engine { config, limit });
        }
        let path = Path::new(body.strip_prefix("ckpt:").unwrap_or(body));
        if !path.exists() && body != crate::model::SHIPPED {
            bail!(
                "{spec:?} is neither a checkpoint file, shipped, material, uniform, fairy-stockfish:PATH nor uci:COMMAND"
            );
        }
        let (service, meta) = crate::model::serve(path, args.device.resolve()?, ServiceConfig::default())?;
        let name = path.file_stem().map_or_else(|| body.to_string(), |s| s.to_string_lossy().into_owned());
        Ok(Prepared::Net { name, service, playouts, steps: meta.info.training_steps })
    }

    fn make(&self, search: SearchConfig) -> Result<Box<dyn Player>, PlayerError> {
        Ok(match self {
            Prepared::Net { name, service, playouts, .. } => {
                Box::new(SearchPlayer::new(name, service.client(), *playouts, search))
            }
            // Named with their playouts: a built-in searcher at two budgets is two players.
            Prepared::Material { playouts } => {
                Box::new(SearchPlayer::new(&self.label("material"), MaterialEvaluator, *playouts, search))
            }
            Prepared::Uniform { playouts } => {
                Box::new(SearchPlayer::new(&self.label("uniform"), UniformEvaluator, *playouts, search))
            }
            Prepared::Engine { config, limit } => Box::new(EnginePlayer::spawn(config.clone(), *limit)?),
        })
    }

    /// Training steps of a checkpoint player.
    fn steps(&self) -> Option<u64> {
        match self {
            Prepared::Net { steps, .. } => Some(*steps),
            _ => None,
        }
    }

    /// The player's name in the match table, from its `spec`: a built-in searcher with its
    /// playouts (`material@64`) and an engine with its limit, so that one player at two settings
    /// is two players to a ladder; a checkpoint as given.
    fn label(&self, spec: &str) -> String {
        match self {
            Prepared::Net { .. } => spec.to_string(),
            Prepared::Material { playouts } => format!("material@{playouts}"),
            Prepared::Uniform { playouts } => format!("uniform@{playouts}"),
            Prepared::Engine { limit, .. } => format!("{spec} {limit}"),
        }
    }
}

fn parse_sprt(text: &str) -> Result<Sprt> {
    let mut model = EloModel::Logistic;
    let mut numbers = Vec::new();
    for part in text.split(',').map(str::trim) {
        match part {
            "normalized" => model = EloModel::Normalized,
            "logistic" => model = EloModel::Logistic,
            n => numbers.push(n.parse::<f64>().with_context(|| format!("bad number {n:?} in --sprt {text:?}"))?),
        }
    }
    let (elo0, elo1, alpha, beta) = match numbers[..] {
        [elo0, elo1] => (elo0, elo1, 0.05, 0.05),
        [elo0, elo1, alpha, beta] => (elo0, elo1, alpha, beta),
        _ => bail!("--sprt takes ELO0,ELO1[,ALPHA,BETA][,normalized], not {text:?}"),
    };
    anyhow::ensure!(elo0 < elo1, "--sprt needs ELO0 < ELO1");
    anyhow::ensure!(alpha > 0.0 && alpha < 1.0 && beta > 0.0 && beta < 1.0, "--sprt needs 0 < ALPHA, BETA < 1");
    Ok(Sprt { elo0, elo1, alpha, beta, model })
}

/// Plays the match; returns the SPRT's decision when there is a test.
fn run_eval_match(args: &MatchArgs) -> Result<Option<SprtState>> {
    anyhow::ensure!(args.pairs > 0, "--pairs must be positive");
    let sprt = args.sprt.as_deref().map(parse_sprt).transpose()?;
    let openings = match &args.openings {
        Some(path) => {
            let text = std::fs::read_to_string(path).with_context(|| format!("read {}", path.display()))?;
            Openings::parse_suite(&text).map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?
        }
        None => Openings::Random { plies: args.random_plies, seed: args.seed },
    };
    let a = Prepared::parse(&args.a, args)?;
    let b = Prepared::parse(&args.b, args)?;
    let (a_name, b_name) = (a.label(&args.a), b.label(&args.b));
    let mut plan = MatchPlan {
        pairs: args.pairs,
        played: BTreeSet::new(),
        concurrency: args.concurrency,
        openings,
        game: GameConfig { ruleset: args.ruleset, max_plies: Some(args.max_plies), ..GameConfig::default() },
        sprt,
    };
    if args.resume {
        plan.played = finished_pairs(&read_games(&args.out)?, &a_name, &b_name, &plan);
    }
    let mut log = MatchLog::open(&args.out, &a_name, &b_name, a.steps(), b.steps())?;
    if !args.json {
        let to_play = plan.to_play().len();
        let resumed = match args.pairs as usize - to_play {
            0 => String::new(),
            n => format!(" ({n} of its pairs played already)"),
        };
        println!(
            "{a_name} vs {b_name}: up to {} games{resumed}, {} at once; records in {}",
            2 * to_play,
            args.concurrency,
            log.dir().display()
        );
    }
    let search = SearchConfig {
        root_fpu: args.root_fpu,
        policy_temperature: args.policy_temperature,
        rule_first_repetition: args.rule_first_repetition,
        natural_limit_ramp: args.natural_limit_ramp,
        mate_moves: args.mate_search.mate_moves,
        ..SearchConfig::default()
    };
    let report = results::play_recorded(
        &plan,
        &|| a.make(search),
        &|| b.make(search),
        &mut log,
        |game: &MatchGame, report: &MatchReport| {
            if game.first == xiangqi::Color::Black && !args.json {
                println!("pair {}: {}", report.pairs.pairs(), results::summary(report, plan.sprt.as_ref()));
            }
        },
    )?;
    let whole = if args.resume { results::pairing(&args.out, &a_name, &b_name)? } else { None };
    if args.json {
        let mut json = results::report_json(&a_name, &b_name, &report, plan.sprt.as_ref());
        let terminations: serde_json::Map<String, serde_json::Value> =
            log.terminations().map(|(reason, count)| (reason.to_string(), count.into())).collect();
        json["terminations"] = terminations.into();
        json["records"] = log.dir().display().to_string().into();
        if let Some(whole) = whole {
            json["whole"] = results::pairing_json(&whole);
        }
        println!("{json}");
    } else {
        println!("final: {}", results::summary(&report, plan.sprt.as_ref()));
        for (reason, count) in log.terminations() {
            println!("  {count:>5} {reason}");
        }
        if let Some(whole) = whole {
            println!(
                "all games of the two in the folder ({} matches): {}",
                whole.matches,
                results::summary(&whole.report(), None)
            );
        }
        for (name, player) in [(&a_name, &a), (&b_name, &b)] {
            if let Prepared::Net { service, .. } = player {
                let stats = service.stats();
                println!(
                    "{name}: {} positions in {} forward passes, {} more answered from the cache",
                    stats.positions, stats.batches, stats.cached
                );
            }
        }
    }
    Ok(plan.sprt.map(|_| report.sprt.unwrap_or(SprtState::Continue)))
}
