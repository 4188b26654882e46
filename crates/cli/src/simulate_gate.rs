//! `xqz eval simulate-gate`: how often the coordinator's gate passes a model of a given true Elo,
//! and how many pairs its match plays, by simulation ([`xqz_arena::stats::simulation`]).

use anyhow::{Result, ensure};
use clap::Args;
use xqz_arena::stats::simulation::{GateOutcome, GateSimulation};
use xqz_arena::stats::{MODEL_MATCHES, Pentanomial, Sprt};
use xqz_coordinator::Evaluation;

/// Options of `xqz eval simulate-gate`.
#[derive(Args)]
pub struct SimulateGateArgs {
    /// The gate's SPRT, as `xqz coordinator --gate` takes it.
    #[arg(long, default_value = "0,10")]
    gate: Sprt,
    /// As `xqz coordinator --eval-previous-pairs`: a gating match plays at least this many pairs
    /// before it is cut.
    #[arg(long, default_value_t = Evaluation::default().previous_pairs)]
    eval_previous_pairs: u32,
    /// Cut the matches at this many pairs instead of the coordinator's cap.
    #[arg(long)]
    cap: Option<u64>,
    /// The true Elo of the gated model against the one before, one row each.
    #[arg(long, value_delimiter = ',', allow_hyphen_values = true, default_value = "-20,-10,0,10,20,30,60")]
    elo: Vec<f64>,
    /// Matches simulated per true Elo.
    #[arg(long, default_value_t = 1000)]
    matches: u32,
    /// The seed of the simulated pairs.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// The pair counts (scores 0, ½, 1, 1½, 2) whose shape the simulated pairs take, moved to
    /// each Elo; by default the project's model-against-model matches.
    #[arg(long, value_delimiter = ',')]
    shape: Option<Vec<u32>>,
}

/// Prints the gate's simulated pass rates and match lengths, one row per true Elo.
pub fn run(args: &SimulateGateArgs) -> Result<()> {
    let shape = match &args.shape {
        Some(counts) => {
            let counts = counts.as_slice().try_into();
            Pentanomial {
                counts: counts.map_err(|_| anyhow::anyhow!("--shape takes 5 counts, of pair scores 0 to 2"))?,
            }
        }
        None => MODEL_MATCHES,
    };
    ensure!(shape.counts.iter().filter(|&&c| c > 0).count() > 1, "--shape needs pairs in more than one bin");
    ensure!(args.matches > 0, "--matches must be at least 1");
    let evaluation =
        Evaluation { previous_pairs: args.eval_previous_pairs, gate: Some(args.gate), ..Default::default() };
    let cap = args.cap.unwrap_or_else(|| u64::from(evaluation.gate_pairs().expect("a gate is set")));
    let simulation = GateSimulation { sprt: args.gate, cap, shape, matches: args.matches, seed: args.seed };
    let rows: Vec<GateOutcome> = std::thread::scope(|scope| {
        let running: Vec<_> = args.elo.iter().map(|&elo| scope.spawn(move || simulation.run(elo))).collect();
        running.into_iter().map(|row| row.join().expect("a simulation thread panicked")).collect()
    });
    let sprt = args.gate;
    println!(
        "gate SPRT({}, {}) {} Elo, alpha {}, beta {}; cut at {cap} pairs ({:.0} expected at elo1); \
         shape {:?}; {} matches per Elo, seed {}",
        sprt.elo0,
        sprt.elo1,
        sprt.model,
        sprt.alpha,
        sprt.beta,
        sprt.expected_pairs(&shape),
        shape.counts,
        args.matches,
        args.seed
    );
    println!("{:>8} {:>8} {:>8} {:>8} {:>11} {:>10}", "true Elo", "pass", "fail", "at cap", "mean pairs", "p95 pairs");
    let percent = |count: u32| format!("{:.1}%", 100.0 * f64::from(count) / f64::from(args.matches));
    for row in rows {
        println!(
            "{:>+8} {:>8} {:>8} {:>8} {:>11.0} {:>10}",
            row.elo,
            percent(row.passed),
            percent(row.refused),
            percent(row.at_cap),
            row.mean_pairs,
            row.p95_pairs
        );
    }
    Ok(())
}
