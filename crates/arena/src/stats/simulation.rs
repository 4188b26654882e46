//! A gate's operating characteristic by simulation: how often a truncated SPRT
//! ([`Sprt::decide_truncated`]) passes a model of a given true Elo, and how many pairs it plays,
//! over matches whose pairs are drawn from a pentanomial shape moved to that Elo ([`Sprt::shaped`]).
//!
//! ```
//! use xqz_arena::stats::simulation::GateSimulation;
//! use xqz_arena::stats::{MODEL_MATCHES, Sprt};
//!
//! let sprt: Sprt = "0,50".parse()?;
//! let simulation = GateSimulation { sprt, cap: sprt.truncation(&MODEL_MATCHES), shape: MODEL_MATCHES, matches: 50, seed: 1 };
//! let strong = simulation.run(150.0);
//! assert_eq!(strong.passed + strong.refused, 50);
//! assert!(strong.passed >= 45);
//! # Ok::<(), xqz_arena::stats::ParseSprtError>(())
//! ```

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::{Pentanomial, Sprt, SprtState};

/// Matches of one gate simulated from one shape.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GateSimulation {
    /// The gate's test.
    pub sprt: Sprt,
    /// The pairs at which an undecided match is cut and decided by the sign of its LLR.
    pub cap: u64,
    /// The shape of a match's pairs, moved to each true Elo.
    pub shape: Pentanomial,
    /// Matches simulated per true Elo.
    pub matches: u32,
    /// The seed; each true Elo draws from its own stream of it.
    pub seed: u64,
}

/// What the matches of one true Elo came to.
#[derive(Clone, Debug, PartialEq)]
pub struct GateOutcome {
    /// The model's true Elo against the one it is gated against.
    pub elo: f64,
    /// Matches that accepted H1 (the model passes), at a bound or at the cap.
    pub passed: u32,
    /// Matches that accepted H0 (the model is refused), at a bound or at the cap.
    pub refused: u32,
    /// Matches decided at the cap rather than at a bound.
    pub at_cap: u32,
    /// Pairs played, averaged over the matches.
    pub mean_pairs: f64,
    /// The 95th percentile of the pairs played (nearest rank).
    pub p95_pairs: u64,
}

impl GateOutcome {
    /// The share of matches that passed the model.
    pub fn pass_rate(&self) -> f64 {
        f64::from(self.passed) / f64::from(self.passed + self.refused)
    }
}

impl GateSimulation {
    /// Simulates the matches of a model `elo` stronger than the one it is gated against.
    ///
    /// # Panics
    /// If the shape is empty or `elo` cannot be reached from it (a shape with a single bin).
    pub fn run(&self, elo: f64) -> GateOutcome {
        let truth = self.sprt.shaped(&self.shape, elo).expect("a shape with pairs in more than one bin");
        let mut cumulative = [0.0; 5];
        let mut sum = 0.0;
        for (bin, p) in truth.iter().enumerate() {
            sum += p;
            cumulative[bin] = sum;
        }
        let mut rng = ChaCha8Rng::seed_from_u64(self.seed ^ elo.to_bits());
        let mut lengths = Vec::with_capacity(self.matches as usize);
        let (mut passed, mut at_cap) = (0, 0);
        for _ in 0..self.matches {
            let mut pairs = Pentanomial::default();
            let state = loop {
                let draw: f64 = rng.random::<f64>() * sum;
                let bin = cumulative.iter().position(|&c| draw < c).unwrap_or(4);
                pairs.counts[bin] += 1;
                match self.sprt.decide_truncated(&pairs, self.cap) {
                    SprtState::Continue => {}
                    state => break state,
                }
            };
            passed += u32::from(state == SprtState::AcceptH1);
            at_cap += u32::from(self.sprt.decide(&pairs) == SprtState::Continue);
            lengths.push(pairs.pairs());
        }
        lengths.sort_unstable();
        let mean_pairs = lengths.iter().sum::<u64>() as f64 / lengths.len().max(1) as f64;
        let rank = (lengths.len() * 95).div_ceil(100).max(1);
        GateOutcome {
            elo,
            passed,
            refused: self.matches - passed,
            at_cap,
            mean_pairs,
            p95_pairs: lengths.get(rank - 1).copied().unwrap_or(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{EloModel, MODEL_MATCHES, score_from_elo};

    /// A wide gate, so that its matches are short: H0 0 Elo, H1 50 Elo, 5% errors.
    const WIDE: Sprt = Sprt { elo0: 0.0, elo1: 50.0, alpha: 0.05, beta: 0.05, model: EloModel::Logistic };

    fn simulation(cap: u64, matches: u32) -> GateSimulation {
        GateSimulation { sprt: WIDE, cap, shape: MODEL_MATCHES, matches, seed: 7 }
    }

    #[test]
    fn the_shape_moved_to_an_elo_scores_as_that_elo_and_keeps_its_draws_near() {
        for elo in [-60.0, 0.0, 30.0] {
            let truth = WIDE.shaped(&MODEL_MATCHES, elo).unwrap();
            let score: f64 = truth.iter().enumerate().map(|(bin, p)| p * bin as f64 / 4.0).sum();
            assert!((score - score_from_elo(elo)).abs() < 1e-12, "{elo}: {score}");
            assert!((truth.iter().sum::<f64>() - 1.0).abs() < 1e-12);
            // The middle bin (pairs drawn twice, or won once and lost once) stays the largest.
            assert!(truth[2] > 0.33 && truth.iter().all(|&p| p <= truth[2]), "{truth:?}");
        }
        // At 0 Elo the symmetric shape is itself.
        let even = WIDE.shaped(&MODEL_MATCHES, 0.0).unwrap();
        assert!((even[1] - 678.0 / 2700.0).abs() < 1e-9, "{even:?}");
    }

    #[test]
    fn wald_expected_length_agrees_with_the_simulated_one_at_elo1() {
        // Uncut (a cap far beyond any match), matches at elo1 last about Wald's approximation,
        // which neglects the overshoot of the bounds: within 25% over 400 matches.
        let expected = WIDE.expected_pairs(&MODEL_MATCHES);
        assert!((40.0..200.0).contains(&expected), "{expected}");
        let at_elo1 = simulation(u64::MAX, 400).run(50.0);
        assert!((at_elo1.mean_pairs / expected - 1.0).abs() < 0.25, "{} against {expected}", at_elo1.mean_pairs);
        assert_eq!(at_elo1.at_cap, 0);
        // At elo1 the test accepts H1 with probability 1 − β = 95%.
        assert!((0.91..=0.99).contains(&at_elo1.pass_rate()), "{}", at_elo1.pass_rate());
    }

    #[test]
    fn a_gate_passes_gains_above_elo1_and_refuses_losses() {
        let sim = simulation(WIDE.truncation(&MODEL_MATCHES), 200);
        let gain = sim.run(100.0);
        let loss = sim.run(-20.0);
        assert!(gain.passed >= 196, "{gain:?}");
        assert!(loss.passed <= 4, "{loss:?}");
        assert!(gain.p95_pairs >= gain.mean_pairs as u64 && gain.p95_pairs <= sim.cap, "{gain:?}");
    }

    #[test]
    fn a_cut_match_is_decided_by_the_sign_of_its_llr() {
        // Cut at 10 pairs, nothing reaches a bound: every match is decided at the cap, and a
        // model at the middle of the hypotheses passes about half the time.
        let cut = simulation(10, 400).run(25.0);
        assert_eq!((cut.at_cap, cut.mean_pairs, cut.p95_pairs), (400, 10.0, 10));
        assert!((0.35..0.65).contains(&cut.pass_rate()), "{cut:?}");
        // By hand: ten even pairs have an LLR below 0 (H0 is 0 Elo), so H0.
        let even = Pentanomial { counts: [0, 0, 10, 0, 0] };
        assert_eq!(WIDE.decide_truncated(&even, 10), SprtState::AcceptH0);
        assert_eq!(WIDE.decide_truncated(&even, 11), SprtState::Continue);
        let ahead = Pentanomial { counts: [0, 2, 4, 3, 1] };
        assert!(WIDE.llr(&ahead) > 0.0 && WIDE.decide(&ahead) == SprtState::Continue);
        assert_eq!(WIDE.decide_truncated(&ahead, 10), SprtState::AcceptH1);
    }

    #[test]
    fn the_same_seed_gives_the_same_matches() {
        let sim = simulation(500, 50);
        assert_eq!(sim.run(20.0), sim.run(20.0));
        assert_ne!(sim.run(20.0), GateSimulation { seed: 8, ..sim }.run(20.0));
    }
}
