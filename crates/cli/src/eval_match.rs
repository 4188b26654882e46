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
use xqz_arena::ladder::{self, RUNGS, Rung};
use xqz_arena::player::{EnginePlayer, Player, PlayerError, SearchPlayer};
use xqz_arena::records::{MatchLog, finished_pairs, read_games};
use xqz_arena::stats::{Sprt, SprtState};
use xqz_arena::tournament::{MatchGame, MatchPlan, MatchReport, Openings};
use xqz_arena::uci::{EngineConfig, Limit};
use xqz_mcts::{MaterialEvaluator, SearchConfig, UniformEvaluator};
use xqz_net::Precision;
use xqz_net::service::{InferenceService, ServiceConfig};

use crate::results;
use crate::results::{EXIT_H0, EXIT_UNDECIDED};

/// Options of `xqz eval match`.
#[derive(Args, Clone)]
pub struct MatchArgs {
    /// First player (scores are its): a checkpoint `PATH.json` or `shipped` (the model built
    /// in; either optionally `@PLAYOUTS`), `material` or `uniform` (built-in evaluators), `rung:NAME` (a rung of the ladder, e.g.
    /// `rung:R3`: Fairy-Stockfish at Skill Level 3 and depth 4, with its own limit),
    /// `fairy-stockfish:PATH[;Option=value...]`, `sjaakii:PATH[;Option=value...]` or
    /// `uci:COMMAND ARGS[;Option=value...]` (an engine with ranks 0-9, such as `xqz uci`).
    #[arg(long)]
    pub a: String,
    /// Second player, as for `--a`.
    #[arg(long)]
    pub b: String,
    /// Number format of `--a`'s network where it differs from `--precision` (which sets both):
    /// `--a shipped --b shipped --a-precision bf16` measures what bfloat16 costs in play. A
    /// network in another precision than f32 is named with it in the records (`shipped bf16`).
    #[arg(long)]
    pub a_precision: Option<Precision>,
    /// The same for `--b`.
    #[arg(long)]
    pub b_precision: Option<Precision>,
    /// Pairs of games (each opening with both colours).
    #[arg(long, default_value_t = 50)]
    pub pairs: u32,
    /// Go on with a match that was cut short: the pairs of which `--out` holds both games between
    /// these players, in this order, from the openings this match gives them, are not played
    /// again. Give the match's own `--pairs`, `--seed` and settings, and the rest play the
    /// openings the whole match would have; the summary adds a line for every game of these two
    /// players in `--out` pooled, as `xqz eval results` pools them (other seeds' matches too).
    #[arg(long, conflicts_with = "sprt")]
    pub resume: bool,
    /// Sequential test ending the match early: `ELO0,ELO1[,ALPHA,BETA][,normalized]`, e.g.
    /// `0,10` (alpha = beta = 0.05, logistic Elo). The exit status says what it decided: 0 H1
    /// accepted (`--a` is better by ELO1), 10 H0 accepted, 11 undecided when the pairs ran out.
    #[arg(long)]
    pub sprt: Option<String>,
    #[command(flatten)]
    pub play: PlayArgs,
    /// Folder for the records: `eval/games.pgn` and `eval/games.arrow` inside it (a run folder
    /// keeps its evaluations with it).
    #[arg(long, default_value = "runs/eval")]
    pub out: PathBuf,
    /// Print the result as one JSON object (fields in docs/CLI.md) instead of the lines after
    /// each pair and the summary.
    #[arg(long)]
    pub json: bool,
    /// Print nothing: for a caller that reports the match itself (`xqz eval rate --json`).
    #[arg(skip)]
    pub quiet: bool,
}

/// How the games of a match are played: shared by `xqz eval match` and `xqz eval rate`.
#[derive(Args, Clone)]
pub struct PlayArgs {
    /// Games played at once. A checkpoint's positions are batched across the games in flight,
    /// so more games use the cores better (on 2 cores, 800-playout pairs against an engine went
    /// 1.7 times as fast at 16 as at 4); an engine limited by time gets a smaller share of a
    /// core each, which changes its strength.
    #[arg(long, default_value_t = 2)]
    pub concurrency: usize,
    /// Playouts per move of searching players without their own `@PLAYOUTS`.
    #[arg(long, default_value_t = 64)]
    pub playouts: u32,
    /// Openings: `balanced` (the suite built in: 120 positions at plies 4-10 over the ECCO
    /// families, each judged even by a deep search), `random` (`--random-plies` random moves),
    /// or a suite file (one FEN per line, EPD-style, or a book). Default: `balanced` where an
    /// engine (a rung among them) plays, else `random`.
    #[arg(long)]
    pub openings: Option<String>,
    /// First-play value of unvisited root moves of searching players (1.0: try every move once
    /// before any twice); default: the search's usual reduction from the parent's value.
    #[arg(long, allow_hyphen_values = true)]
    pub root_fpu: Option<f32>,
    /// Softmax temperature of searching players' priors at every node (above 1 flattens them).
    #[arg(long, default_value_t = 1.0, value_parser = crate::selfplay::parse_temperature)]
    pub policy_temperature: f32,
    /// Searching players rule on a position's first repetition as if it went on to the third.
    #[arg(long)]
    pub rule_first_repetition: bool,
    /// Plies before the natural move limit from which searching players draw a leaf's value
    /// toward a draw, so that a side ahead captures rather than shuffles into it (0: off).
    #[arg(long, default_value_t = SearchConfig::default().natural_limit_ramp)]
    pub natural_limit_ramp: u32,
    #[command(flatten)]
    pub mate_search: crate::selfplay::MateSearch,
    /// Plies of each random opening.
    #[arg(long, default_value_t = 4)]
    pub random_plies: u32,
    /// Seed of the random openings.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Game length cap in plies (a draw when reached).
    #[arg(long, default_value_t = 300)]
    pub max_plies: u32,
    /// Repetition rules: chinese2011, chinese1999, wxf or simple. Default: wxf where a
    /// Fairy-Stockfish player (a rung among them) plays, as those are the rules it searches by
    /// (it does not know the Chinese books' chase rules, and would walk into losses by them),
    /// else chinese2011.
    #[arg(long)]
    pub ruleset: Option<Ruleset>,
    /// External engines: nodes per move.
    #[arg(long)]
    pub engine_nodes: Option<u64>,
    /// External engines: depth per move (the default limit is depth 1).
    #[arg(long)]
    pub engine_depth: Option<u32>,
    /// External engines: milliseconds per move.
    #[arg(long)]
    pub engine_movetime: Option<u64>,
    #[command(flatten)]
    pub device: crate::model::DeviceArg,
}

/// Plays the match; the exit status of a match with an SPRT is its decision.
pub fn run(args: &MatchArgs) -> Result<ExitCode> {
    let played = play(args)?;
    let decision = args.sprt.as_ref().map(|_| played.report.sprt.unwrap_or(SprtState::Continue));
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
        precision: Precision,
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
        /// The name in records: a rung's own, else the spec with the limit.
        label: Option<String>,
    },
}

impl Prepared {
    /// The player `spec` names; a network runs its convolutions in `precision`.
    fn parse(spec: &str, args: &MatchArgs, precision: Precision) -> Result<Prepared> {
        let (body, playouts) = match spec.rsplit_once('@') {
            Some((body, n)) if !spec.contains(':') || spec.starts_with("ckpt:") => {
                (body, n.parse().with_context(|| format!("bad playouts {n:?} in {spec:?}"))?)
            }
            _ => (spec, args.play.playouts),
        };
        anyhow::ensure!(playouts > 0, "playouts must be positive in {spec:?}");
        match body {
            "material" => return Ok(Prepared::Material { playouts }),
            "uniform" => return Ok(Prepared::Uniform { playouts }),
            _ => {}
        }
        if let Some(name) = body.strip_prefix("rung:") {
            let rung = Rung::find(name).with_context(|| {
                let names: Vec<&str> = RUNGS.iter().map(|r| r.name).collect();
                format!("no rung {name:?} in {spec:?}; the rungs are {}", names.join(", "))
            })?;
            let program = ladder::fairy_stockfish()
                .context("a rung needs Fairy-Stockfish: set XQZ_FAIRY_STOCKFISH or put fairy-stockfish on the PATH")?;
            let config = rung.engine(program.to_string_lossy());
            return Ok(Prepared::Engine { config, limit: rung.limit(), label: Some(rung.name.to_string()) });
        }
        if EngineConfig::names_an_engine(body) {
            let config = EngineConfig::parse(body)?;
            let limit = Limit {
                nodes: args.play.engine_nodes,
                depth: args.play.engine_depth,
                movetime: args.play.engine_movetime.map(Duration::from_millis),
            };
            let limit = if limit.is_empty() { Limit::depth(1) } else { limit };
            return Ok(Prepared::Engine { config, limit, label: None });
        }
        let path = Path::new(body.strip_prefix("ckpt:").unwrap_or(body));
        if !path.exists() && body != crate::model::SHIPPED {
            bail!(
                "{spec:?} is neither a checkpoint file, shipped, material, uniform, rung:NAME, fairy-stockfish:PATH, sjaakii:PATH nor uci:COMMAND"
            );
        }
        let device = args.play.device.resolve()?;
        // Resolved here, so that the records name the format that played (`auto` is none).
        let precision = precision.on(device);
        let config = ServiceConfig { precision, ..ServiceConfig::default() };
        let (service, meta) = crate::model::serve(path, device, config)?;
        let name = path.file_stem().map_or_else(|| body.to_string(), |s| s.to_string_lossy().into_owned());
        Ok(Prepared::Net { name, service, playouts, steps: meta.info.training_steps, precision })
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
            Prepared::Engine { config, limit, .. } => Box::new(EnginePlayer::spawn(config.clone(), *limit)?),
        })
    }

    /// Whether the player is Fairy-Stockfish (which plays the `xiangqi` variant by its own rules).
    fn is_fairy_stockfish(&self) -> bool {
        matches!(self, Prepared::Engine { config, .. } if config.variant.as_deref() == Some("xiangqi"))
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
            Prepared::Net { precision: Precision::F32, .. } => spec.to_string(),
            Prepared::Net { precision, .. } => format!("{spec} {precision}"),
            Prepared::Material { playouts } => format!("material@{playouts}"),
            Prepared::Uniform { playouts } => format!("uniform@{playouts}"),
            Prepared::Engine { label: Some(label), .. } => label.clone(),
            Prepared::Engine { limit, label: None, .. } => format!("{spec} {limit}"),
        }
    }
}

/// A match played: its totals and the name its first player has in the records.
pub struct Played {
    /// The totals, the SPRT's decision among them.
    pub report: MatchReport,
    /// `--a`'s name in the records.
    pub a: String,
}

/// The openings of `--openings`, or the default for a match where an engine plays or not.
fn openings(play: &PlayArgs, engine_plays: bool) -> Result<Openings> {
    let random = Openings::Random { plies: play.random_plies, seed: play.seed };
    Ok(match play.openings.as_deref() {
        Some("random") => random,
        Some("balanced") => balanced(),
        Some(path) => Openings::Suite(crate::book::load_suite(Path::new(path))?.positions().to_vec()),
        None if engine_plays => balanced(),
        None => random,
    })
}

/// The balanced suite built in ([`ladder::BALANCED_SUITE`]).
fn balanced() -> Openings {
    Openings::parse_suite(ladder::BALANCED_SUITE).expect("the built-in suite is checked by a test")
}

/// Plays the match `args` describes, printing as it goes (or its JSON at the end).
pub fn play(args: &MatchArgs) -> Result<Played> {
    anyhow::ensure!(args.pairs > 0, "--pairs must be positive");
    let sprt = args.sprt.as_deref().map(str::parse::<Sprt>).transpose()?;
    let precision = args.play.device.precision_or(Precision::F32);
    let a = Prepared::parse(&args.a, args, args.a_precision.unwrap_or(precision))?;
    let b = Prepared::parse(&args.b, args, args.b_precision.unwrap_or(precision))?;
    let (a_name, b_name) = (a.label(&args.a), b.label(&args.b));
    anyhow::ensure!(
        a_name != b_name,
        "--a and --b are both {a_name:?}: the records could not tell their games apart (give one of them \
         other playouts, or another --a-precision / --b-precision)"
    );
    let engine_plays = [&a, &b].iter().any(|p| matches!(p, Prepared::Engine { .. }));
    let openings = openings(&args.play, engine_plays)?;
    let ruleset = args.play.ruleset.unwrap_or(if a.is_fairy_stockfish() || b.is_fairy_stockfish() {
        Ruleset::Wxf
    } else {
        Ruleset::Chinese2011
    });
    let mut plan = MatchPlan {
        pairs: args.pairs,
        played: BTreeSet::new(),
        concurrency: args.play.concurrency,
        openings,
        game: GameConfig { ruleset, max_plies: Some(args.play.max_plies), ..GameConfig::default() },
        sprt,
    };
    if args.resume {
        plan.played = finished_pairs(&read_games(&args.out)?, &a_name, &b_name, &plan);
    }
    let mut log = MatchLog::open(&args.out, &a_name, &b_name, a.steps(), b.steps())?;
    let (text, as_json) = (!args.quiet && !args.json, !args.quiet && args.json);
    if text {
        let to_play = plan.to_play().len();
        let resumed = match args.pairs as usize - to_play {
            0 => String::new(),
            n => format!(" ({n} of its pairs played already)"),
        };
        println!(
            "{a_name} vs {b_name}: up to {} games{resumed}, {} at once, {} rules; records in {}",
            2 * to_play,
            args.play.concurrency,
            ruleset.name(),
            log.dir().display()
        );
    }
    let search = SearchConfig {
        root_fpu: args.play.root_fpu,
        policy_temperature: args.play.policy_temperature,
        rule_first_repetition: args.play.rule_first_repetition,
        natural_limit_ramp: args.play.natural_limit_ramp,
        mate_moves: args.play.mate_search.mate_moves,
        ..SearchConfig::default()
    };
    let report = results::play_recorded(
        &plan,
        &|| a.make(search),
        &|| b.make(search),
        &std::sync::atomic::AtomicBool::new(false),
        &mut log,
        |game: &MatchGame, report: &MatchReport| {
            if game.first == xiangqi::Color::Black && text {
                println!("pair {}: {}", report.pairs.pairs(), results::summary(report, plan.sprt.as_ref()));
            }
        },
    )?;
    let whole = if args.resume { results::pairing(&args.out, &a_name, &b_name)? } else { None };
    if as_json {
        let mut json = results::report_json(&a_name, &b_name, &report, plan.sprt.as_ref());
        let terminations: serde_json::Map<String, serde_json::Value> =
            log.terminations().map(|(reason, count)| (reason.to_string(), count.into())).collect();
        json["terminations"] = terminations.into();
        json["ruleset"] = ruleset.name().into();
        json["records"] = log.dir().display().to_string().into();
        if let Some(whole) = whole {
            json["whole"] = results::pairing_json(&whole);
        }
        println!("{json}");
    } else if text {
        // A resumed match with nothing left to play has no games of its own to sum up.
        if report.pairs.pairs() > 0 {
            println!("final: {}", results::summary(&report, plan.sprt.as_ref()));
            for (reason, count) in log.terminations() {
                println!("  {count:>5} {reason}");
            }
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
    Ok(Played { report, a: a_name })
}
