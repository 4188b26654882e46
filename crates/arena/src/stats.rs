//! Statistics of engine matches played in pairs (one opening, colours swapped), as fishtest does them:
//! Elo and normalized Elo with 95% intervals, the likelihood of superiority, the generalized sequential
//! probability ratio test (GSPRT) on the pentanomial model, and a Bradley–Terry ladder for many players.
//!
//! ```
//! use xqz_arena::stats::{EloModel, Pentanomial, Sprt, SprtState};
//!
//! // Game pairs counted by the first player's pair score 0, ½, 1, 1½, 2.
//! let mut pairs = Pentanomial { counts: [5, 10, 40, 30, 15] };
//! pairs.add_pair(1.0, 0.5); // A win with one colour and a draw with the other: pair score 1½.
//! assert_eq!(pairs.pairs(), 101);
//!
//! let elo = pairs.elo();
//! assert!(elo.lower < elo.elo && elo.elo < elo.upper);
//! println!("Elo {:+.1} [{:+.1}, {:+.1}], LOS {:.2}%", elo.elo, elo.lower, elo.upper, 100.0 * elo.los);
//!
//! // H0: the first player is 0 Elo stronger, H1: it is 5 Elo stronger; 5% error rates.
//! let sprt = Sprt { elo0: 0.0, elo1: 5.0, alpha: 0.05, beta: 0.05, model: EloModel::Logistic };
//! let (lower, upper) = sprt.bounds();
//! let llr = sprt.llr(&pairs);
//! assert!(lower < llr && llr < upper);
//! assert_eq!(sprt.decide(&pairs), SprtState::Continue);
//! ```
//!
//! # Definitions
//!
//! Scores are per game, from the first player's point of view: a win 1, a draw ½, a loss 0. A pair's
//! score is the mean of its two games, one of 0, ¼, ½, ¾, 1 ([`Pentanomial::counts`] is indexed by
//! 4 × that, i.e. twice the pair's summed score). With N pairs whose pair scores have mean `m` and
//! (population) variance `v` ([`Pentanomial::score`], [`Pentanomial::variance_per_pair`]):
//!
//! * **Elo** ([`Pentanomial::elo`]): `elo_from_score(m)`, with `elo_from_score(s) = 400 log10(s / (1 − s))`;
//!   the 95% interval maps `m ± 1.959964 √(v / N)` through `elo_from_score`, so it is not symmetric.
//! * **LOS**, the likelihood of superiority: `Φ((m − ½) / √(v / N))`, Φ the standard normal CDF.
//! * **Normalized Elo** ([`Pentanomial::normalized_elo`], fishtest's nElo after Michel Van den Bergh):
//!   `nElo = (m − ½) / σ × 800 / ln 10` with σ the per-game standard deviation, `σ = √(2v)` for pairs
//!   (two independent games would have a pair variance of σ²/2). Its 95% interval treats σ as known:
//!   `nElo ± 1.959964 × (800 / ln 10) / √(games)`, games = 2N. One nElo is about one Elo at a 50% score
//!   with a per-game standard deviation of ½ (no draws).
//! * Unpaired games ([`elo_wdl`], [`normalized_elo_wdl`]) use the same formulas on the per-game scores
//!   (trinomial model), N the number of games and σ = √v.
//!
//! The [`Sprt`] follows fishtest's GSPRT: the log-likelihood ratio of H1 against H0 is
//! `Σᵢ nᵢ ln(p1ᵢ / p0ᵢ)`, where `pkᵢ` is the maximum-likelihood distribution of pair scores (on the
//! same five values) among those satisfying hypothesis k, given the observed counts `nᵢ` (Van den Bergh's
//! method). Under [`EloModel::Logistic`] hypothesis k is "expected score = `score_from_elo(elo_k)`"; under
//! [`EloModel::Normalized`] it is "`(mean − ½) / σ` = `nElo_k` × ln 10 / 800" with σ the per-game
//! standard deviation of the candidate distribution. Empty bins are replaced by 10⁻³ pairs before the
//! LLR is computed, as fishtest does, so that lopsided counts give finite ratios.
//!
//! [`bradley_terry`] rates many players jointly from their mutual results by maximum likelihood in the
//! Bradley–Terry model (a draw counts as half a win for each side), fitted by Newton's method.

pub mod simulation;

use std::collections::BTreeMap;
use std::f64::consts::{LN_10, PI, SQRT_2};
use std::fmt;

/// Φ⁻¹(0.975): the half-width of a two-sided 95% interval in standard errors.
const Z_95: f64 = 1.959_963_984_540_054;

/// Normalized Elo per unit of per-game t-value ((score − ½) / σ).
const NELO_PER_T: f64 = 800.0 / LN_10;

/// Elo per natural-log unit of the Bradley–Terry strength ratio.
const ELO_PER_NEPER: f64 = 400.0 / LN_10;

/// Weight given to an empty bin when computing a log-likelihood ratio (fishtest's regularization).
const EMPTY_BIN: f64 = 1e-3;

/// How many times its expected length at `elo1` a test that must decide may run before it is cut
/// ([`Sprt::truncation`]): long enough that the cut rarely comes and, when it does, falls on a
/// model between `elo0` and `elo1`, for which either answer is fair (docs/EVALUATION.md has the
/// simulated rates).
pub const TRUNCATION: f64 = 3.0;

/// The shape of the project's matches between two models: the pair counts of every
/// model-against-model pair in the committed A/B records (`docs/learning-evidence/ab-*/eval`,
/// 1,350 pairs), each counted from both players' side, so that the shape sits at 0 Elo. Pairs
/// of a model against the one before look like these (most games drawn, few pairs lopsided), so
/// the gate's cap and its simulation ([`simulation`]) use them.
pub const MODEL_MATCHES: Pentanomial = Pentanomial { counts: [161, 678, 1022, 678, 161] };

/// Elo difference implied by an expected score: `400 log10(s / (1 − s))`; ±infinity at 1 and 0.
pub fn elo_from_score(score: f64) -> f64 {
    if score <= 0.0 {
        f64::NEG_INFINITY
    } else if score >= 1.0 {
        f64::INFINITY
    } else {
        400.0 * (score / (1.0 - score)).log10()
    }
}

/// Expected score at an Elo difference: `1 / (1 + 10^(−elo / 400))`, the inverse of [`elo_from_score`].
pub fn score_from_elo(elo: f64) -> f64 {
    1.0 / (1.0 + 10f64.powf(-elo / 400.0))
}

/// The standard normal cumulative distribution function Φ, with a relative error below about 10⁻¹³.
pub fn normal_cdf(x: f64) -> f64 {
    0.5 * erfc(-x / SQRT_2)
}

/// The complementary error function.
///
/// For `0 ≤ x < 2` it is `1 − erf x`, with `erf x = (2/√π) e^(−x²) Σₙ 2ⁿ x^(2n+1) / (1·3·…·(2n+1))`, a series
/// of positive terms (no cancellation); for `x ≥ 2` Laplace's continued fraction
/// `erfc x = (e^(−x²)/√π) / (x + (1/2)/(x + 1/(x + (3/2)/(x + 2/(x + …)))))`, evaluated by the modified
/// Lentz method; `erfc(−x) = 2 − erfc x`.
fn erfc(x: f64) -> f64 {
    if x.is_nan() {
        x
    } else if x < 0.0 {
        2.0 - erfc(-x)
    } else if x < 2.0 {
        let x2 = x * x;
        let mut term = x;
        let mut sum = x;
        let mut n = 0.0;
        while term > sum * f64::EPSILON / 4.0 {
            n += 1.0;
            term *= 2.0 * x2 / (2.0 * n + 1.0);
            sum += term;
        }
        1.0 - 2.0 / PI.sqrt() * (-x2).exp() * sum
    } else if x > 27.3 {
        0.0
    } else {
        const TINY: f64 = 1e-300;
        let mut f = x;
        let mut c = x;
        let mut d = 0.0;
        for n in 1..1000 {
            let a = f64::from(n) / 2.0;
            d = x + a * d;
            if d == 0.0 {
                d = TINY;
            }
            d = 1.0 / d;
            c = x + a / c;
            if c == 0.0 {
                c = TINY;
            }
            let delta = c * d;
            f *= delta;
            if (delta - 1.0).abs() < f64::EPSILON / 2.0 {
                break;
            }
        }
        (-x * x).exp() / PI.sqrt() / f
    }
}

/// Counts of game pairs by the first player's pair score 0, ½, 1, 1½, 2 (index = 2 × pair score).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Pentanomial {
    /// Pairs with pair score `index / 2`, e.g. `counts[3]` holds a win and a draw.
    pub counts: [u32; 5],
}

impl Pentanomial {
    /// Counts one pair from the first player's score in each game (0, 0.5 or 1; panics on others).
    pub fn add_pair(&mut self, first: f64, second: f64) {
        self.counts[game_index(first) + game_index(second)] += 1;
    }

    /// The number of pairs counted.
    pub fn pairs(&self) -> u64 {
        self.counts.iter().map(|&count| u64::from(count)).sum()
    }

    /// The number of games counted, two per pair.
    pub fn games(&self) -> u64 {
        2 * self.pairs()
    }

    /// The first player's mean score per game, in [0, 1]; ½ when nothing was counted.
    pub fn score(&self) -> f64 {
        moments(&self.counts).0
    }

    /// The population variance of the pairs' mean game scores (0, ¼, ½, ¾, 1); 0 when nothing was counted.
    pub fn variance_per_pair(&self) -> f64 {
        moments(&self.counts).1
    }

    /// How far these pairs (one worker's share of a match) stand from `whole` (all the match's
    /// pairs, these among them), in standard errors: fishtest's residual of a worker, with
    /// pairs. It is the difference of the mean scores over the standard error of that difference
    /// under the hypothesis that every pair is drawn alike, `σ √(1/n − 1/N)` with `σ²` the
    /// variance per pair of the whole match, `n` these pairs and `N` all (the worker against the
    /// others, as fishtest's adjusted χ² collapses the other rows). 0 where it is undefined:
    /// no pairs, all of them, or pairs that do not vary.
    ///
    /// ```
    /// use xqz_arena::stats::Pentanomial;
    ///
    /// let mut honest = Pentanomial { counts: [2, 8, 20, 8, 2] };
    /// let odd = Pentanomial { counts: [10, 0, 0, 0, 0] };
    /// honest.counts.iter_mut().zip(odd.counts).for_each(|(h, o)| *h += o);
    /// assert!(odd.residual(&honest) < -3.0, "ten lost pairs among even ones stand out");
    /// ```
    pub fn residual(&self, whole: &Pentanomial) -> f64 {
        let (n, all) = (self.pairs() as f64, whole.pairs() as f64);
        let spread = whole.variance_per_pair() * (1.0 / n - 1.0 / all);
        if n == 0.0 || n >= all || spread <= 0.0 {
            return 0.0;
        }
        (self.score() - whole.score()) / spread.sqrt()
    }

    /// Logistic Elo of the first player with its 95% interval and LOS (see the module's definitions).
    pub fn elo(&self) -> EloEstimate {
        estimate(&self.counts, Scale::Logistic)
    }

    /// Normalized Elo (nElo) of the first player with its 95% interval and LOS (see the module's definitions).
    pub fn normalized_elo(&self) -> EloEstimate {
        estimate(&self.counts, Scale::Normalized)
    }
}

/// The index of a single game's score among 0, ½, 1.
fn game_index(score: f64) -> usize {
    if score == 0.0 {
        0
    } else if score == 0.5 {
        1
    } else if score == 1.0 {
        2
    } else {
        panic!("a game scores 0, 0.5 or 1, not {score}")
    }
}

/// An Elo difference (logistic or normalized) with its 95% interval and likelihood of superiority.
///
/// With nothing counted it is 0 with the interval (−∞, ∞) and a LOS of ½. When all results fall in one
/// bin the variance is 0: the interval shrinks to the estimate and the LOS is 0, ½ or 1.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EloEstimate {
    /// The estimate; ±infinity for a score of 100% or 0% on the logistic scale.
    pub elo: f64,
    /// The lower end of the 95% interval.
    pub lower: f64,
    /// The upper end of the 95% interval.
    pub upper: f64,
    /// The likelihood of superiority: the probability that the first player is the stronger one.
    pub los: f64,
}

/// Logistic Elo with its 95% interval and LOS of unpaired games counted as wins, draws and losses.
pub fn elo_wdl(wins: u32, draws: u32, losses: u32) -> EloEstimate {
    estimate(&[losses, draws, wins], Scale::Logistic)
}

/// Normalized Elo (σ the per-game standard deviation) with its 95% interval and LOS of unpaired games.
pub fn normalized_elo_wdl(wins: u32, draws: u32, losses: u32) -> EloEstimate {
    estimate(&[losses, draws, wins], Scale::Normalized)
}

/// Which Elo an estimate is expressed in.
#[derive(Clone, Copy)]
enum Scale {
    Logistic,
    Normalized,
}

/// Games per counted result: 2 for pair counts (5 bins), 1 for game counts (3 bins).
fn games_per_result(bins: usize) -> f64 {
    if bins == 5 { 2.0 } else { 1.0 }
}

/// The mean and population variance of results counted on the evenly spaced scores `i / (bins − 1)`.
fn moments(counts: &[u32]) -> (f64, f64) {
    let weights: Vec<f64> = counts.iter().map(|&count| f64::from(count)).collect();
    let total: f64 = weights.iter().sum();
    if total == 0.0 {
        return (0.5, 0.0);
    }
    let probabilities: Vec<f64> = weights.iter().map(|weight| weight / total).collect();
    distribution_moments(&support(counts.len()), &probabilities)
}

/// The evenly spaced per-game scores of `bins` result classes: 0, 1/(bins − 1), …, 1.
fn support(bins: usize) -> Vec<f64> {
    let last = (bins - 1) as f64;
    (0..bins).map(|index| index as f64 / last).collect()
}

/// The mean and variance of a distribution with the given probabilities on the given values.
fn distribution_moments(values: &[f64], probabilities: &[f64]) -> (f64, f64) {
    let mean: f64 = values.iter().zip(probabilities).map(|(value, p)| p * value).sum();
    let variance = values.iter().zip(probabilities).map(|(value, p)| p * (value - mean).powi(2)).sum();
    (mean, variance)
}

/// Elo or nElo with interval and LOS of counted results (see [`EloEstimate`] for the degenerate cases).
fn estimate(counts: &[u32], scale: Scale) -> EloEstimate {
    let n: f64 = counts.iter().map(|&count| f64::from(count)).sum();
    if n == 0.0 {
        return EloEstimate { elo: 0.0, lower: f64::NEG_INFINITY, upper: f64::INFINITY, los: 0.5 };
    }
    let (mean, variance) = moments(counts);
    let standard_error = (variance / n).sqrt();
    let excess = mean - 0.5;
    let los = if standard_error > 0.0 {
        normal_cdf(excess / standard_error)
    } else if excess > 0.0 {
        1.0
    } else if excess < 0.0 {
        0.0
    } else {
        0.5
    };
    match scale {
        Scale::Logistic => EloEstimate {
            elo: elo_from_score(mean),
            lower: elo_from_score(mean - Z_95 * standard_error),
            upper: elo_from_score(mean + Z_95 * standard_error),
            los,
        },
        Scale::Normalized => {
            let per_result = games_per_result(counts.len());
            let sigma = (per_result * variance).sqrt();
            let elo = if excess == 0.0 { 0.0 } else { excess / sigma * NELO_PER_T };
            let half_width = Z_95 * NELO_PER_T / (per_result * n).sqrt();
            EloEstimate { elo, lower: elo - half_width, upper: elo + half_width, los }
        }
    }
}

/// How an SPRT's Elo bounds are read.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EloModel {
    /// Logistic Elo: hypothesis k fixes the expected score at `score_from_elo(elo_k)`.
    #[default]
    Logistic,
    /// Normalized Elo: hypothesis k fixes `(score − ½) / σ` (σ per game) at `elo_k × ln 10 / 800`.
    Normalized,
}

impl fmt::Display for EloModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            EloModel::Logistic => "logistic",
            EloModel::Normalized => "normalized",
        })
    }
}

/// A sequential probability ratio test of H0: Elo = `elo0` against H1: Elo = `elo1` (fishtest's GSPRT).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Sprt {
    /// The Elo difference of H0, in the unit of `model`.
    pub elo0: f64,
    /// The Elo difference of H1, in the unit of `model`; normally above `elo0`.
    pub elo1: f64,
    /// The probability of accepting H1 when H0 holds, in (0, 1).
    pub alpha: f64,
    /// The probability of accepting H0 when H1 holds, in (0, 1).
    pub beta: f64,
    /// Whether `elo0` and `elo1` are logistic or normalized Elo.
    pub model: EloModel,
}

/// Where a sequential test stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SprtState {
    /// The LLR lies between the bounds: play on.
    Continue,
    /// The LLR reached the upper bound: H1 accepted.
    AcceptH1,
    /// The LLR reached the lower bound: H0 accepted.
    AcceptH0,
}

impl fmt::Display for SprtState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SprtState::Continue => "continue",
            SprtState::AcceptH1 => "H1 accepted",
            SprtState::AcceptH0 => "H0 accepted",
        })
    }
}

/// Why a text is not an SPRT's bounds.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("an SPRT is ELO0,ELO1[,ALPHA,BETA][,normalized] with ELO0 < ELO1 and 0 < ALPHA, BETA < 1, not {0:?}")]
pub struct ParseSprtError(String);

impl std::str::FromStr for Sprt {
    type Err = ParseSprtError;

    /// `ELO0,ELO1[,ALPHA,BETA][,normalized|logistic]`: `0,10` is H0 Elo 0 against H1 Elo 10 with
    /// alpha = beta = 0.05 in logistic Elo.
    fn from_str(text: &str) -> Result<Sprt, ParseSprtError> {
        let bad = || ParseSprtError(text.to_string());
        let mut model = EloModel::Logistic;
        let mut numbers = Vec::new();
        for part in text.split(',').map(str::trim) {
            match part {
                "normalized" => model = EloModel::Normalized,
                "logistic" => model = EloModel::Logistic,
                n => numbers.push(n.parse::<f64>().map_err(|_| bad())?),
            }
        }
        let (elo0, elo1, alpha, beta) = match numbers[..] {
            [elo0, elo1] => (elo0, elo1, 0.05, 0.05),
            [elo0, elo1, alpha, beta] => (elo0, elo1, alpha, beta),
            _ => return Err(bad()),
        };
        let unit = |p: f64| p > 0.0 && p < 1.0;
        if !(elo0.is_finite() && elo1.is_finite() && elo0 < elo1 && unit(alpha) && unit(beta)) {
            return Err(bad());
        }
        Ok(Sprt { elo0, elo1, alpha, beta, model })
    }
}

impl Sprt {
    /// The LLR bounds (lower, upper) = (ln(β / (1 − α)), ln((1 − β) / α)).
    pub fn bounds(&self) -> (f64, f64) {
        ((self.beta / (1.0 - self.alpha)).ln(), ((1.0 - self.beta) / self.alpha).ln())
    }

    /// The log-likelihood ratio of H1 against H0 for counted pairs (0 when none; NaN if a bound is infinite).
    pub fn llr(&self, pairs: &Pentanomial) -> f64 {
        self.llr_counts(&pairs.counts)
    }

    /// The log-likelihood ratio of H1 against H0 for unpaired games (trinomial model).
    pub fn llr_wdl(&self, wins: u32, draws: u32, losses: u32) -> f64 {
        self.llr_counts(&[losses, draws, wins])
    }

    /// The normal approximation `N (s1 − s0)(2m − s0 − s1) / (2v)` of [`Sprt::llr`], for cross-checking.
    ///
    /// `m`, `v` and `N` are the mean, variance and count of the regularized pair counts (as for the exact
    /// LLR); `sk` is `score_from_elo(elo_k)` (logistic) or `½ + tk √v` with `tk = elo_k × √2 × ln 10 / 800`
    /// the pair-level t-value of the bound (normalized).
    pub fn llr_approx(&self, pairs: &Pentanomial) -> f64 {
        let Some(observed) = Observed::new(&pairs.counts) else {
            return 0.0;
        };
        let (mean, variance) = distribution_moments(&observed.values, &observed.probabilities);
        let (s0, s1) = match self.model {
            EloModel::Logistic => (score_from_elo(self.elo0), score_from_elo(self.elo1)),
            EloModel::Normalized => {
                let sigma = variance.sqrt();
                let per_result = games_per_result(pairs.counts.len());
                let t = |nelo: f64| nelo / NELO_PER_T * per_result.sqrt();
                (0.5 + t(self.elo0) * sigma, 0.5 + t(self.elo1) * sigma)
            }
        };
        observed.total * (s1 - s0) * (2.0 * mean - s0 - s1) / (2.0 * variance)
    }

    /// The state of the test for counted pairs.
    pub fn decide(&self, pairs: &Pentanomial) -> SprtState {
        self.decide_llr(self.llr(pairs))
    }

    /// The state of the test for unpaired games.
    pub fn decide_wdl(&self, wins: u32, draws: u32, losses: u32) -> SprtState {
        self.decide_llr(self.llr_wdl(wins, draws, losses))
    }

    /// The state of the test at a given LLR: H1 at or above the upper bound, H0 at or below the lower one.
    pub fn decide_llr(&self, llr: f64) -> SprtState {
        let (lower, upper) = self.bounds();
        if llr >= upper {
            SprtState::AcceptH1
        } else if llr <= lower {
            SprtState::AcceptH0
        } else {
            SprtState::Continue
        }
    }

    /// The state of the test cut at `cap` pairs (Wald's truncated SPRT): as [`Sprt::decide`] below
    /// `cap` pairs; at `cap` pairs or more a test still undecided accepts H1 if its LLR is positive
    /// (the pairs are likelier under H1 than under H0), else H0.
    pub fn decide_truncated(&self, pairs: &Pentanomial, cap: u64) -> SprtState {
        let llr = self.llr(pairs);
        match self.decide_llr(llr) {
            SprtState::Continue if pairs.pairs() >= cap && llr > 0.0 => SprtState::AcceptH1,
            SprtState::Continue if pairs.pairs() >= cap => SprtState::AcceptH0,
            state => state,
        }
    }

    /// The distribution of pair scores (0, ¼, ½, ¾, 1) shaped like `shape` at `elo` (in this test's
    /// model): the one on which `shape`'s counts are likeliest among those at that Elo, as the
    /// test fits its hypotheses. None when `shape` is empty.
    pub fn shaped(&self, shape: &Pentanomial, elo: f64) -> Option<[f64; 5]> {
        let fitted = self.fit(&Observed::new(&shape.counts)?, elo)?;
        fitted.try_into().ok()
    }

    /// The mean LLR that one pair adds when the pairs follow `truth` (probabilities of the pair
    /// scores 0, ¼, ½, ¾, 1): `Σᵢ qᵢ ln(p1ᵢ / p0ᵢ)`, `pk` the hypotheses fitted to `truth` itself,
    /// which is what the test's fits tend to as the pairs add up.
    pub fn drift(&self, truth: &[f64; 5]) -> f64 {
        let observed = Observed::from_probabilities(truth);
        let (Some(p0), Some(p1)) = (self.fit(&observed, self.elo0), self.fit(&observed, self.elo1)) else {
            return f64::NAN;
        };
        truth.iter().zip(p0.iter().zip(&p1)).filter(|(q, _)| **q > 0.0).map(|(q, (q0, q1))| q * (q1 / q0).ln()).sum()
    }

    /// The pairs the test plays on average when H1 holds, for pairs shaped like `shape` (Wald's
    /// approximation `((1 − β) ln B + β ln A) / drift`, A and B the bounds, drift the
    /// [`Sprt::drift`] at `elo1`); infinite when `shape` is empty.
    pub fn expected_pairs(&self, shape: &Pentanomial) -> f64 {
        let Some(truth) = self.shaped(shape, self.elo1) else {
            return f64::INFINITY;
        };
        let (lower, upper) = self.bounds();
        ((1.0 - self.beta) * upper + self.beta * lower) / self.drift(&truth)
    }

    /// The pair cap of a test that must decide ([`Sprt::decide_truncated`]):
    /// [`TRUNCATION`] × [`Sprt::expected_pairs`] on `shape`, rounded up.
    pub fn truncation(&self, shape: &Pentanomial) -> u64 {
        let pairs = (TRUNCATION * self.expected_pairs(shape)).ceil();
        if pairs.is_finite() { pairs as u64 } else { u64::MAX }
    }

    /// The distribution closest to `observed` whose Elo (in this test's model) is `elo`.
    fn fit(&self, observed: &Observed, elo: f64) -> Option<Vec<f64>> {
        match self.model {
            EloModel::Logistic => observed.mle_with_mean(score_from_elo(elo)),
            EloModel::Normalized => {
                let per_result = games_per_result(observed.values.len());
                observed.mle_with_t_value(elo / NELO_PER_T * per_result.sqrt())
            }
        }
    }

    /// `Σᵢ nᵢ ln(p1ᵢ / p0ᵢ)` over the regularized counts, `pk` the MLE under hypothesis k.
    fn llr_counts(&self, counts: &[u32]) -> f64 {
        let Some(observed) = Observed::new(counts) else {
            return 0.0;
        };
        let (Some(p0), Some(p1)) = (self.fit(&observed, self.elo0), self.fit(&observed, self.elo1)) else {
            return f64::NAN;
        };
        observed.weights.iter().zip(p0.iter().zip(&p1)).map(|(n, (q0, q1))| n * (q1 / q0).ln()).sum()
    }
}

/// Counted results as an empirical distribution, each empty bin given a weight of [`EMPTY_BIN`].
struct Observed {
    /// Per-game scores of the bins, evenly spaced on [0, 1].
    values: Vec<f64>,
    /// Regularized counts.
    weights: Vec<f64>,
    /// Their sum.
    total: f64,
    /// `weights / total`.
    probabilities: Vec<f64>,
}

impl Observed {
    /// The regularized distribution of some counts; none when nothing was counted.
    fn new(counts: &[u32]) -> Option<Self> {
        if counts.iter().all(|&count| count == 0) {
            return None;
        }
        let weights: Vec<f64> =
            counts.iter().map(|&count| if count == 0 { EMPTY_BIN } else { f64::from(count) }).collect();
        let total: f64 = weights.iter().sum();
        let probabilities = weights.iter().map(|weight| weight / total).collect();
        Some(Observed { values: support(counts.len()), weights, total, probabilities })
    }

    /// A distribution as if observed once (weights summing to 1), empty bins kept empty.
    fn from_probabilities(probabilities: &[f64]) -> Self {
        let total = probabilities.iter().sum();
        Observed {
            values: support(probabilities.len()),
            weights: probabilities.to_vec(),
            total,
            probabilities: probabilities.to_vec(),
        }
    }

    /// The most likely distribution (on the same values) with mean `score`.
    ///
    /// Maximizing `Σ p̂ᵢ ln pᵢ` subject to `Σ pᵢ = 1` and `Σ pᵢ aᵢ = s` gives `pᵢ = p̂ᵢ / (1 + x (aᵢ − s))`
    /// with `x` the root of `Σ p̂ᵢ (aᵢ − s) / (1 + x (aᵢ − s)) = 0`.
    fn mle_with_mean(&self, score: f64) -> Option<Vec<f64>> {
        let shifts: Vec<f64> = self.values.iter().map(|value| value - score).collect();
        self.tilt(&shifts)
    }

    /// The most likely distribution (on the same values) with `(mean − ½) / sd = t`.
    ///
    /// The stationarity conditions give `pᵢ = p̂ᵢ / (1 + x bᵢ)` with
    /// `bᵢ = aᵢ − ½ − t (σ² + (aᵢ − μ)²) / (2σ)` (the constraint's gradient, shifted so that `Σ pᵢ bᵢ` is the
    /// constraint itself), μ and σ those of `p`: a fixed point, iterated with `x` solved each time. The
    /// iteration starts from the solution at `t = 0` (mean ½) and walks `t` towards its target in steps that
    /// are halved whenever the iteration fails to converge from the previous solution (none after 200 steps).
    fn mle_with_t_value(&self, t: f64) -> Option<Vec<f64>> {
        let mut solution = self.mle_with_mean(0.5)?;
        let mut reached = 0.0;
        let mut step = t;
        for _ in 0..200 {
            if reached == t {
                return Some(solution);
            }
            let target = if (t - reached).abs() <= step.abs() { t } else { reached + step };
            match self.t_value_fixed_point(&solution, target) {
                Some(next) => {
                    solution = next;
                    reached = target;
                    step *= 2.0;
                }
                None if step.abs() > 1e-9 * t.abs() => step /= 2.0,
                None => return None,
            }
        }
        None
    }

    /// The fixed point of [`Observed::mle_with_t_value`] iterated from `start`; none unless it converges.
    fn t_value_fixed_point(&self, start: &[f64], t: f64) -> Option<Vec<f64>> {
        let mut current = start.to_vec();
        for _ in 0..100 {
            let (mean, variance) = distribution_moments(&self.values, &current);
            let sigma = variance.sqrt();
            let shifts: Vec<f64> = self
                .values
                .iter()
                .map(|value| value - 0.5 - t * (variance + (value - mean).powi(2)) / (2.0 * sigma))
                .collect();
            let next = self.tilt(&shifts)?;
            let change = next.iter().zip(&current).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
            current = next;
            if change < 1e-13 {
                let (mean, variance) = distribution_moments(&self.values, &current);
                return ((mean - 0.5) / variance.sqrt() - t).abs().le(&1e-9).then_some(current);
            }
        }
        None
    }

    /// `p̂ᵢ / (1 + x bᵢ)` normalized, `x` the root of `Σ p̂ᵢ bᵢ / (1 + x bᵢ) = 0` keeping every `1 + x bᵢ`
    /// positive; none when the `bᵢ` do not take both signs (the constraint cannot be met).
    ///
    /// The sum decreases from +∞ to −∞ as `x` runs between the poles `−1 / max b` and `−1 / min b`. Nearly
    /// empty bins put the root close to a pole, where `1 + x bᵢ` would cancel; so `x` is written as the pole
    /// on the root's side plus or minus a distance δ, which makes each denominator
    /// `(1 − bᵢ / b_pole) ± δ bᵢ` (exactly `δ |b_pole|` for the pole's own bin), and δ is bisected.
    fn tilt(&self, shifts: &[f64]) -> Option<Vec<f64>> {
        if shifts.iter().any(|b| b.is_nan()) {
            return None;
        }
        let lowest = shifts.iter().copied().fold(f64::INFINITY, f64::min);
        let highest = shifts.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if lowest == 0.0 && highest == 0.0 {
            return Some(self.probabilities.clone());
        }
        if lowest >= 0.0 || highest <= 0.0 {
            return None;
        }
        let sum = |denominators: &[f64]| -> f64 {
            self.probabilities.iter().zip(shifts).zip(denominators).map(|((p, b), d)| p * b / d).sum()
        };
        let (low_pole, high_pole) = (-1.0 / highest, -1.0 / lowest);
        let middle = 0.5 * (low_pole + high_pole);
        let at_middle: Vec<f64> = shifts.iter().map(|b| 1.0 + middle * b).collect();
        // The root lies towards the pole of the smallest shift when the sum is still positive at the middle.
        let (pole_shift, mut far) =
            if sum(&at_middle) > 0.0 { (lowest, high_pole - middle) } else { (highest, middle - low_pole) };
        let direction = pole_shift.signum();
        let denominators = |delta: f64| -> Vec<f64> {
            shifts
                .iter()
                .map(|&b| if b == pole_shift { delta * b.abs() } else { 1.0 - b / pole_shift + direction * delta * b })
                .collect()
        };
        // The sum increases with δ from the upper pole (x = pole − δ) and decreases from the lower one.
        let mut near = 0.0;
        let delta = loop {
            let delta = 0.5 * (near + far);
            if delta <= near || delta >= far {
                break delta;
            }
            if (sum(&denominators(delta)) > 0.0) == (direction < 0.0) {
                far = delta;
            } else {
                near = delta;
            }
        };
        let tilted: Vec<f64> = self.probabilities.iter().zip(denominators(delta)).map(|(p, d)| p / d).collect();
        let total: f64 = tilted.iter().sum();
        Some(tilted.into_iter().map(|p| p / total).collect())
    }
}

/// Games between two players, from the first one's point of view.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Encounter {
    /// The first player's index.
    pub first: usize,
    /// The second player's index; not the first's.
    pub second: usize,
    /// Games the first player won.
    pub wins: u32,
    /// Games drawn.
    pub draws: u32,
    /// Games the first player lost.
    pub losses: u32,
}

/// Ratings of a Bradley–Terry fit with their standard errors.
#[derive(Clone, Debug, PartialEq)]
pub struct Ratings {
    /// Elo of each player relative to its anchor (see [`bradley_terry`]); ±infinity or NaN when unbounded.
    pub elo: Vec<f64>,
    /// One standard error of each rating from the fit's Fisher information (0 for anchors).
    pub stderr: Vec<f64>,
}

/// Elo ratings of `players` from their encounters by Bradley–Terry maximum likelihood, player 0 at 0.
///
/// A draw counts as half a win for each side. `prior_draws` (BayesElo's prior) adds that many virtual draws
/// between every two players that met, which keeps 100% and 0% scores finite. See [`fit_bradley_terry`]
/// for the players that are not connected to player 0 and the results that leave ratings unbounded.
pub fn bradley_terry(players: usize, encounters: &[Encounter], prior_draws: f64) -> Vec<f64> {
    fit_bradley_terry(players, encounters, prior_draws).elo
}

/// [`bradley_terry`] with standard errors.
///
/// Players are grouped into components of those linked by games; each component is rated relative to its
/// lowest-indexed player (its anchor, rated 0), so player 0 is at 0 and a player who never played is at 0.
/// The likelihood is maximized by Newton's method with a backtracking line search. Without a prior the
/// maximum may not be finite. Call a chain from one player to another a sequence in which each player took
/// points (a win or a draw) from the next: a player with a chain from the anchor but none back is rated
/// −∞, one with a chain to the anchor but none back +∞, and one with neither NaN; the players with chains
/// both ways are fitted on their mutual games. Standard errors
/// come from the binomial Fisher information with the anchor fixed (conservative when there are draws).
///
/// Panics when an encounter names a player outside `0..players` or pits a player against itself, or when
/// `prior_draws` is negative or not finite.
pub fn fit_bradley_terry(players: usize, encounters: &[Encounter], prior_draws: f64) -> Ratings {
    assert!(prior_draws.is_finite() && prior_draws >= 0.0, "prior_draws must be finite and non-negative");
    let pairs = pair_totals(players, encounters, prior_draws);

    // Who outscored whom at least once (a draw links both ways), and who met whom.
    let mut took_points_from = vec![Vec::new(); players];
    let mut gave_points_to = vec![Vec::new(); players];
    let mut met = vec![Vec::new(); players];
    for pair in &pairs {
        if pair.score > 0.0 {
            took_points_from[pair.first].push(pair.second);
            gave_points_to[pair.second].push(pair.first);
        }
        if pair.games - pair.score > 0.0 {
            took_points_from[pair.second].push(pair.first);
            gave_points_to[pair.first].push(pair.second);
        }
        met[pair.first].push(pair.second);
        met[pair.second].push(pair.first);
    }

    let mut place = vec![Place::Unrelated; players];
    let mut seen = vec![false; players];
    for anchor in 0..players {
        if seen[anchor] {
            continue;
        }
        let component = reachable(anchor, &met);
        let below = membership(players, &reachable(anchor, &took_points_from));
        let above = membership(players, &reachable(anchor, &gave_points_to));
        for &player in &component {
            seen[player] = true;
            place[player] = match (below[player], above[player]) {
                (true, true) => Place::Fitted { anchor: player == anchor },
                (true, false) => Place::Below,
                (false, true) => Place::Above,
                (false, false) => Place::Unrelated,
            };
        }
    }

    // Newton's method on the natural-log strengths of the fitted players other than the anchors.
    let mut free = vec![None; players];
    let mut count = 0;
    for (player, place) in place.iter().enumerate() {
        if *place == (Place::Fitted { anchor: false }) {
            free[player] = Some(count);
            count += 1;
        }
    }
    let fitted = |player: usize| matches!(place[player], Place::Fitted { .. });
    let pairs: Vec<PairTotal> = pairs.into_iter().filter(|pair| fitted(pair.first) && fitted(pair.second)).collect();
    let mut strength = vec![0.0; players];
    for _ in 0..200 {
        let (gradient, information) = derivatives(&pairs, &strength, &free, count);
        let Some(factor) = cholesky(information, count) else {
            break;
        };
        let step = cholesky_solve(&factor, count, &gradient);
        let slope: f64 = gradient.iter().zip(&step).map(|(g, s)| g * s).sum();
        let base = log_likelihood(&pairs, &strength);
        let mut fraction = 1.0;
        let mut candidate;
        loop {
            candidate = strength.clone();
            for (player, index) in free.iter().enumerate() {
                if let Some(index) = *index {
                    candidate[player] += fraction * step[index];
                }
            }
            let tolerance = 1e-12 * base.abs().max(1.0);
            if log_likelihood(&pairs, &candidate) >= base + 1e-4 * fraction * slope - tolerance || fraction < 1e-12 {
                break;
            }
            fraction /= 2.0;
        }
        strength = candidate;
        if step.iter().all(|s| (fraction * s).abs() < 1e-12) {
            break;
        }
    }

    let (_, information) = derivatives(&pairs, &strength, &free, count);
    let variances = cholesky(information, count).map(|factor| {
        (0..count)
            .map(|index| {
                let mut unit = vec![0.0; count];
                unit[index] = 1.0;
                cholesky_solve(&factor, count, &unit)[index]
            })
            .collect::<Vec<f64>>()
    });
    let mut elo = Vec::with_capacity(players);
    let mut stderr = Vec::with_capacity(players);
    for player in 0..players {
        let (rating, error) = match place[player] {
            Place::Fitted { anchor: true } => (0.0, 0.0),
            Place::Fitted { anchor: false } => {
                let variance = free[player].zip(variances.as_ref()).map_or(f64::INFINITY, |(i, v)| v[i]);
                (ELO_PER_NEPER * strength[player], ELO_PER_NEPER * variance.sqrt())
            }
            Place::Above => (f64::INFINITY, f64::INFINITY),
            Place::Below => (f64::NEG_INFINITY, f64::INFINITY),
            Place::Unrelated => (f64::NAN, f64::NAN),
        };
        elo.push(rating);
        stderr.push(error);
    }
    Ratings { elo, stderr }
}

/// Where a player stands relative to the anchor of its component.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    /// Linked both ways to the anchor (or the anchor itself): a finite rating.
    Fitted { anchor: bool },
    /// Infinitely above the anchor.
    Above,
    /// Infinitely below the anchor.
    Below,
    /// Not comparable with the anchor.
    Unrelated,
}

/// Games between two players (with the prior's virtual draws) and the first one's score in them.
struct PairTotal {
    /// The lower-indexed player.
    first: usize,
    /// The higher-indexed player.
    second: usize,
    /// Games played, virtual draws included.
    games: f64,
    /// The first player's points in them.
    score: f64,
}

/// The games of every two players that met, summed over encounters, with the prior's virtual draws added.
fn pair_totals(players: usize, encounters: &[Encounter], prior_draws: f64) -> Vec<PairTotal> {
    let mut totals: BTreeMap<(usize, usize), (f64, f64)> = BTreeMap::new();
    for encounter in encounters {
        let Encounter { first, second, wins, draws, losses } = *encounter;
        assert!(first < players && second < players, "encounter {first}-{second} with only {players} players");
        assert_ne!(first, second, "player {first} cannot play itself");
        let games = f64::from(wins) + f64::from(draws) + f64::from(losses);
        if games == 0.0 {
            continue;
        }
        let score = f64::from(wins) + 0.5 * f64::from(draws);
        let (key, score) = if first < second { ((first, second), score) } else { ((second, first), games - score) };
        let total = totals.entry(key).or_insert((0.0, 0.0));
        total.0 += games;
        total.1 += score;
    }
    totals
        .into_iter()
        .map(|((first, second), (games, score))| PairTotal {
            first,
            second,
            games: games + prior_draws,
            score: score + prior_draws / 2.0,
        })
        .collect()
}

/// The players reachable from `start` along `edges`, `start` included.
fn reachable(start: usize, edges: &[Vec<usize>]) -> Vec<usize> {
    let mut seen = vec![false; edges.len()];
    seen[start] = true;
    let mut found = vec![start];
    let mut next = 0;
    while next < found.len() {
        for &neighbour in &edges[found[next]] {
            if !seen[neighbour] {
                seen[neighbour] = true;
                found.push(neighbour);
            }
        }
        next += 1;
    }
    found
}

/// Which of `players` are among `members`.
fn membership(players: usize, members: &[usize]) -> Vec<bool> {
    let mut member = vec![false; players];
    for &player in members {
        member[player] = true;
    }
    member
}

/// `ln(1 / (1 + e^(−d)))`, the log of the logistic function, without overflow.
fn log_logistic(d: f64) -> f64 {
    -((-d).max(0.0) + (-d.abs()).exp().ln_1p())
}

/// The Bradley–Terry log-likelihood of the pairs' scores at natural-log strengths.
fn log_likelihood(pairs: &[PairTotal], strength: &[f64]) -> f64 {
    pairs
        .iter()
        .map(|pair| {
            let d = strength[pair.first] - strength[pair.second];
            pair.score * log_logistic(d) + (pair.games - pair.score) * log_logistic(-d)
        })
        .sum()
}

/// The log-likelihood's gradient and negated Hessian (row-major) in the free players' strengths.
fn derivatives(pairs: &[PairTotal], strength: &[f64], free: &[Option<usize>], count: usize) -> (Vec<f64>, Vec<f64>) {
    let mut gradient = vec![0.0; count];
    let mut information = vec![0.0; count * count];
    for pair in pairs {
        let expected = 1.0 / (1.0 + (strength[pair.second] - strength[pair.first]).exp());
        let residual = pair.score - pair.games * expected;
        let weight = pair.games * expected * (1.0 - expected);
        let (i, j) = (free[pair.first], free[pair.second]);
        if let Some(i) = i {
            gradient[i] += residual;
            information[i * count + i] += weight;
        }
        if let Some(j) = j {
            gradient[j] -= residual;
            information[j * count + j] += weight;
        }
        if let (Some(i), Some(j)) = (i, j) {
            information[i * count + j] -= weight;
            information[j * count + i] -= weight;
        }
    }
    (gradient, information)
}

/// The lower Cholesky factor (row-major, upper part left as is) of a symmetric matrix; none unless it
/// is positive definite.
fn cholesky(mut matrix: Vec<f64>, size: usize) -> Option<Vec<f64>> {
    for column in 0..size {
        let mut diagonal = matrix[column * size + column];
        for k in 0..column {
            diagonal -= matrix[column * size + k].powi(2);
        }
        if diagonal.is_nan() || diagonal <= 0.0 {
            return None;
        }
        let diagonal = diagonal.sqrt();
        matrix[column * size + column] = diagonal;
        for row in column + 1..size {
            let mut sum = matrix[row * size + column];
            for k in 0..column {
                sum -= matrix[row * size + k] * matrix[column * size + k];
            }
            matrix[row * size + column] = sum / diagonal;
        }
    }
    Some(matrix)
}

/// Solves `L Lᵀ x = b` for the factor `L` from [`cholesky`].
fn cholesky_solve(factor: &[f64], size: usize, b: &[f64]) -> Vec<f64> {
    let mut y = vec![0.0; size];
    for row in 0..size {
        let mut sum = b[row];
        for k in 0..row {
            sum -= factor[row * size + k] * y[k];
        }
        y[row] = sum / factor[row * size + row];
    }
    let mut x = vec![0.0; size];
    for row in (0..size).rev() {
        let mut sum = y[row];
        for k in row + 1..size {
            sum -= factor[k * size + row] * x[k];
        }
        x[row] = sum / factor[row * size + row];
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_workers_residual_is_its_score_against_the_others_in_standard_errors() {
        let (drawn, won) = (Pentanomial { counts: [0, 0, 5, 0, 0] }, Pentanomial { counts: [0, 0, 0, 0, 5] });
        let whole = Pentanomial { counts: [0, 0, 5, 0, 5] };
        // Pairs of ½ and 1 in equal numbers: σ² = 1/16, and each half is √10 errors off the mean.
        assert!((drawn.residual(&whole) + 10f64.sqrt()).abs() < 1e-12, "{}", drawn.residual(&whole));
        assert!((won.residual(&whole) - 10f64.sqrt()).abs() < 1e-12);
        let alike = Pentanomial { counts: [1, 2, 4, 2, 1] };
        let twice = Pentanomial { counts: [2, 4, 8, 4, 2] };
        assert_eq!(alike.residual(&twice), 0.0, "a worker like the others");
        assert_eq!(whole.residual(&whole), 0.0, "the only worker");
        assert_eq!(Pentanomial::default().residual(&whole), 0.0, "no pairs");
        assert_eq!(drawn.residual(&Pentanomial { counts: [0, 0, 9, 0, 0] }), 0.0, "no spread");
    }

    #[test]
    fn sprt_bounds_parse_from_text_or_say_what_they_are() {
        let sprt: Sprt = "0,10".parse().unwrap();
        assert_eq!((sprt.elo0, sprt.elo1, sprt.alpha, sprt.model), (0.0, 10.0, 0.05, EloModel::Logistic));
        let sprt: Sprt = "-5, 5, 0.1, 0.2, normalized".parse().unwrap();
        assert_eq!((sprt.alpha, sprt.beta, sprt.model), (0.1, 0.2, EloModel::Normalized));
        for bad in ["", "10", "10,0", "0,10,0.05", "0,10,1.5,0.05", "0,x", "0,inf"] {
            assert!(bad.parse::<Sprt>().is_err(), "{bad}");
        }
    }

    /// Asserts `|actual − expected| ≤ tolerance`.
    #[track_caller]
    fn assert_close(actual: f64, expected: f64, tolerance: f64) {
        assert!((actual - expected).abs() <= tolerance, "{actual} is not within {tolerance} of {expected}");
    }

    // The reference values marked "mpmath" were computed independently in Python with mpmath at 50
    // digits: the MLE under a mean constraint by root-finding the same secular equation
    // Σ p̂ᵢ (aᵢ − s) / (1 + x (aᵢ − s)) = 0 with mpmath.findroot, and the MLE under a t-value constraint
    // by solving the full Lagrange (KKT) system pᵢ (λ + ν ∂g/∂pᵢ) = p̂ᵢ, Σ pᵢ = 1, μ − ½ = tσ for
    // (p, λ, ν) with multidimensional Newton, continued from t = 0 in 40 steps (not the fixed point used
    // here); empty bins set to 10⁻³; LLR = Σ nᵢ ln(p1ᵢ / p0ᵢ).

    #[test]
    fn a_75_percent_score_is_400_log10_3_elo() {
        // 400 log10(0.75 / 0.25) = 400 log10 3 = 400 × 0.47712125472 = 190.848501888.
        assert_close(elo_from_score(0.75), 190.848_501_887_864_97, 1e-9);
        assert_close(elo_from_score(0.25), -190.848_501_887_864_97, 1e-9);
        assert_eq!(elo_from_score(0.5), 0.0);
        assert_eq!(elo_from_score(1.0), f64::INFINITY);
        assert_eq!(elo_from_score(0.0), f64::NEG_INFINITY);
    }

    #[test]
    fn score_from_elo_inverts_elo_from_score() {
        // 1 / (1 + 10^(−100/400)) = 1 / (1 + 0.56234132519) = 0.640064999803.
        assert_close(score_from_elo(100.0), 0.640_064_999_802_885_1, 1e-15);
        assert_eq!(score_from_elo(0.0), 0.5);
        for elo in [-800.0, -190.85, -1.0, 0.0, 3.5, 70.0, 400.0] {
            assert_close(elo_from_score(score_from_elo(elo)), elo, 1e-9);
        }
        assert_eq!(score_from_elo(f64::INFINITY), 1.0);
        assert_eq!(score_from_elo(f64::NEG_INFINITY), 0.0);
    }

    #[test]
    fn normal_cdf_and_erfc_match_reference_values() {
        // Python's math.erfc.
        let reference = [
            (0.1, 0.887_537_083_981_715_2),
            (0.5, 0.479_500_122_186_953_5),
            (1.0, 0.157_299_207_050_285_13),
            (1.5, 0.033_894_853_524_689_274),
            (2.0, 0.004_677_734_981_047_265),
            (2.5, 0.000_406_952_017_444_958_9),
            (3.0, 2.209_049_699_858_543_8e-5),
            (5.0, 1.537_459_794_428_035_1e-12),
            (10.0, 2.088_487_583_762_545e-45),
            (26.0, 5.663_192_408_856_143e-296),
        ];
        for (x, expected) in reference {
            assert!((erfc(x) / expected - 1.0).abs() < 1e-13, "erfc({x}) = {} not {expected}", erfc(x));
            assert_close(erfc(-x), 2.0 - expected, 1e-15);
        }
        assert_eq!(erfc(0.0), 1.0);
        assert_eq!(erfc(30.0), 0.0);
        assert_eq!(normal_cdf(0.0), 0.5);
        assert_close(normal_cdf(Z_95), 0.975, 1e-15);
        assert_close(normal_cdf(-Z_95), 0.025, 1e-15);
    }

    #[test]
    fn pairs_are_binned_by_the_first_players_pair_score() {
        let mut pairs = Pentanomial::default();
        pairs.add_pair(0.0, 0.0); // 0
        pairs.add_pair(0.5, 0.0); // ½
        pairs.add_pair(1.0, 0.0); // 1
        pairs.add_pair(0.5, 0.5); // 1
        pairs.add_pair(0.5, 1.0); // 1½
        pairs.add_pair(1.0, 1.0); // 2
        assert_eq!(pairs.counts, [1, 1, 2, 1, 1]);
        assert_eq!(pairs.pairs(), 6);
        assert_eq!(pairs.games(), 12);
        // Points 0 + ½ + 1 + 1 + 1½ + 2 = 6 of 12 games.
        assert_eq!(pairs.score(), 0.5);
    }

    #[test]
    #[should_panic(expected = "a game scores 0, 0.5 or 1")]
    fn a_pair_rejects_other_game_scores() {
        Pentanomial::default().add_pair(0.25, 1.0);
    }

    #[test]
    fn mean_and_variance_per_pair() {
        // Pair scores 0, ¼, ½, ¾, 1 counted 5, 10, 40, 30, 15 (100 pairs):
        // mean = (0·5 + 0.25·10 + 0.5·40 + 0.75·30 + 1·15) / 100 = (2.5 + 20 + 22.5 + 15) / 100 = 0.6;
        // E[x²] = (0.0625·10 + 0.25·40 + 0.5625·30 + 1·15) / 100 = (0.625 + 10 + 16.875 + 15) / 100 = 0.425;
        // variance = 0.425 − 0.6² = 0.065.
        let pairs = Pentanomial { counts: [5, 10, 40, 30, 15] };
        assert_close(pairs.score(), 0.6, 1e-15);
        assert_close(pairs.variance_per_pair(), 0.065, 1e-15);
    }

    #[test]
    fn elo_interval_and_los_of_a_pentanomial() {
        // Mean 0.6, variance 0.065 over 100 pairs: standard error √(0.065 / 100) = 0.0254951;
        // Elo = 400 log10(0.6 / 0.4) = 400 log10 1.5 = 70.4365;
        // interval 0.6 ± 1.959964 × 0.0254951 = 0.6 ± 0.0499695 = [0.5500305, 0.6499695]
        //   → [400 log10(0.5500305 / 0.4499695), 400 log10(0.6499695 / 0.3500305)] = [34.8815, 107.5148];
        // LOS = Φ(0.1 / 0.0254951) = Φ(3.92232) = 0.99995615 (mpmath).
        let estimate = Pentanomial { counts: [5, 10, 40, 30, 15] }.elo();
        assert_close(estimate.elo, 70.436_503_622_272_5, 1e-9);
        assert_close(estimate.lower, 34.881_497_007_037_77, 1e-9);
        assert_close(estimate.upper, 107.514_815_142_830_9, 1e-9);
        assert_close(estimate.los, 0.999_956_150_288_122, 1e-12);
    }

    #[test]
    fn normalized_elo_of_a_pentanomial() {
        // Per-game σ = √(2 × 0.065) = √0.13 = 0.3605551; nElo = 0.1 / 0.3605551 × 800 / ln 10
        //   = 0.2773501 × 347.4355855 = 96.36129;
        // half-width 1.959964 × 347.4355855 / √200 = 680.9612 / 14.1421356 = 48.15123; LOS as for Elo.
        let estimate = Pentanomial { counts: [5, 10, 40, 30, 15] }.normalized_elo();
        assert_close(estimate.elo, 96.361_293_732_507_2, 1e-9);
        assert_close(estimate.upper - estimate.elo, 48.151_230_669_094_29, 1e-9);
        assert_close(estimate.elo - estimate.lower, 48.151_230_669_094_29, 1e-9);
        assert_close(estimate.los, 0.999_956_150_288_122, 1e-12);
    }

    #[test]
    fn elo_of_unpaired_games() {
        // 30 wins, 50 draws, 20 losses: mean (30 + 25) / 100 = 0.55; E[x²] = (30 + 50/4) / 100 = 0.425;
        // variance 0.425 − 0.3025 = 0.1225, standard error √(0.1225 / 100) = 0.035;
        // Elo = 400 log10(0.55 / 0.45) = 34.86007; interval 0.55 ± 0.0685987
        //   → [−12.92969, 84.01076]; LOS = Φ(0.05 / 0.035) = Φ(1.4285714) = 0.92343627 (mpmath).
        let estimate = elo_wdl(30, 50, 20);
        assert_close(estimate.elo, 34.860_070_287_560_07, 1e-9);
        assert_close(estimate.lower, -12.929_693_470_337_89, 1e-9);
        assert_close(estimate.upper, 84.010_762_649_402_5, 1e-9);
        assert_close(estimate.los, 0.923_436_274_490_165_2, 1e-12);
        // nElo = 0.05 / √0.1225 × 347.4355855 = 0.1428571 × 347.4355855 = 49.63366;
        // half-width 1.959964 × 347.4355855 / √100 = 68.09612.
        let normalized = normalized_elo_wdl(30, 50, 20);
        assert_close(normalized.elo, 49.633_655_074_657_35, 1e-9);
        assert_close(normalized.upper - normalized.elo, 68.096_123_457_188_47, 1e-9);
    }

    #[test]
    fn no_results_carry_no_information() {
        for estimate in [Pentanomial::default().elo(), Pentanomial::default().normalized_elo(), elo_wdl(0, 0, 0)] {
            assert_eq!(estimate, EloEstimate { elo: 0.0, lower: f64::NEG_INFINITY, upper: f64::INFINITY, los: 0.5 });
        }
    }

    #[test]
    fn results_in_a_single_bin_have_no_spread() {
        // Every pair a win and a draw: score ¾ exactly, no variance.
        let estimate = Pentanomial { counts: [0, 0, 0, 10, 0] }.elo();
        assert_close(estimate.elo, 190.848_501_887_864_97, 1e-9);
        assert_eq!((estimate.lower, estimate.upper, estimate.los), (estimate.elo, estimate.elo, 1.0));
        let even = Pentanomial { counts: [0, 0, 10, 0, 0] };
        assert_eq!(even.elo().los, 0.5);
        assert_eq!(even.normalized_elo().elo, 0.0);
        assert_eq!(Pentanomial { counts: [0, 0, 0, 0, 3] }.elo().elo, f64::INFINITY);
    }

    #[test]
    fn sprt_bounds_at_5_percent_error_rates() {
        // ln(0.05 / 0.95) = −ln 19 = −2.944439; ln(0.95 / 0.05) = ln 19 = 2.944439.
        let sprt = Sprt { elo0: 0.0, elo1: 5.0, alpha: 0.05, beta: 0.05, model: EloModel::Logistic };
        let (lower, upper) = sprt.bounds();
        assert_close(lower, -2.944_438_979_166_440_5, 1e-12);
        assert_close(upper, 2.944_438_979_166_440_5, 1e-12);
        // α = 0.05, β = 0.1: (ln(0.1 / 0.95), ln(0.9 / 0.05)) = (−2.251292, 2.890372).
        let lopsided = Sprt { beta: 0.1, ..sprt };
        assert_close(lopsided.bounds().0, (0.1f64 / 0.95).ln(), 1e-15);
        assert_close(lopsided.bounds().1, 18f64.ln(), 1e-15);
    }

    /// A [0, 5] logistic test at 5% error rates.
    const LOGISTIC: Sprt = Sprt { elo0: 0.0, elo1: 5.0, alpha: 0.05, beta: 0.05, model: EloModel::Logistic };

    /// A [0, 10] normalized test at 5% error rates.
    const NORMALIZED: Sprt = Sprt { elo0: 0.0, elo1: 10.0, alpha: 0.05, beta: 0.05, model: EloModel::Normalized };

    #[test]
    fn logistic_llr_matches_the_independent_maximum_likelihood_computation() {
        // H0 fixes the mean at ½, H1 at score_from_elo(5) = 0.50719; the values are mpmath's (see above).
        let cases: [([u32; 5], f64); 5] = [
            ([5, 10, 40, 30, 15], 0.876_238_044_613_609_4),
            ([40, 400, 1100, 420, 40], -0.443_390_240_748_325_4),
            ([20, 60, 120, 80, 20], 0.449_345_521_824_771_9),
            ([60, 120, 80, 20, 20], -3.034_876_677_785_394),
            ([20, 40, 160, 120, 60], 3.504_952_178_454_437_7),
        ];
        for (counts, expected) in cases {
            assert_close(LOGISTIC.llr(&Pentanomial { counts }), expected, 1e-9);
        }
        // Unpaired: 30 wins, 50 draws, 20 losses.
        assert_close(LOGISTIC.llr_wdl(30, 50, 20), 0.267_471_931_428_503_4, 1e-9);
    }

    #[test]
    fn normalized_llr_matches_the_independent_maximum_likelihood_computation() {
        // H1: nElo 10, i.e. a per-game t-value 10 / 347.4355855 = 0.0287823 and, per pair, √2 times that.
        let cases: [([u32; 5], f64); 4] = [
            ([5, 10, 40, 30, 15], 1.361_521_664_332_371_3),
            ([40, 400, 1100, 420, 40], -0.578_221_100_075_558_2),
            ([20, 60, 120, 80, 20], 0.563_464_419_575_553_8),
            ([60, 120, 80, 20, 20], -5.798_618_407_554_735),
        ];
        for (counts, expected) in cases {
            assert_close(NORMALIZED.llr(&Pentanomial { counts }), expected, 1e-9);
        }
        assert_close(NORMALIZED.llr_wdl(30, 50, 20), 0.365_810_576_943_153_3, 1e-9);
    }

    #[test]
    fn empty_bins_are_regularized_and_no_pairs_give_a_zero_llr() {
        assert_eq!(LOGISTIC.llr(&Pentanomial::default()), 0.0);
        assert_eq!(NORMALIZED.llr(&Pentanomial::default()), 0.0);
        assert_eq!(LOGISTIC.llr_approx(&Pentanomial::default()), 0.0);
        assert_eq!(LOGISTIC.llr_wdl(0, 0, 0), 0.0);
        // Only one bin counted; the others weigh 10⁻³ pair each (mpmath).
        let draws = Pentanomial { counts: [0, 0, 3, 0, 0] };
        assert_close(LOGISTIC.llr(&draws), -0.039_170_199_288_332_93, 1e-9);
        assert_close(NORMALIZED.llr(&draws), -0.003_349_025_390_184_289, 1e-9);
        let wins_and_draws = Pentanomial { counts: [0, 0, 0, 7, 0] };
        assert_close(LOGISTIC.llr(&wins_and_draws), 0.100_026_885_610_937_1, 1e-9);
        assert_close(NORMALIZED.llr(&wins_and_draws), 0.195_672_375_470_043_1, 1e-9);
        // Lopsided bounds on lopsided counts stay finite.
        let wipeout = Pentanomial { counts: [0, 0, 0, 0, 1000] };
        let wide = Sprt { elo0: -100.0, elo1: 300.0, ..LOGISTIC };
        assert!(wide.llr(&wipeout).is_finite() && wide.llr(&wipeout) > 0.0);
        let wide = Sprt { elo0: -100.0, elo1: 300.0, ..NORMALIZED };
        assert!(wide.llr(&wipeout).is_finite() && wide.llr(&wipeout) > 0.0);
    }

    #[test]
    fn the_hypotheses_fits_meet_their_constraints_even_for_lopsided_counts() {
        let counts: [&[u32]; 8] = [
            &[5, 10, 40, 30, 15],
            &[0, 0, 0, 0, 1000],
            &[1000, 0, 0, 0, 0],
            &[0, 0, 100_000, 0, 0],
            &[0, 0, 0, 1_000_000, 0],
            &[0, 1, 0, 0, 0],
            &[0, 0, 1000],
            &[0, 1_000_000, 0],
        ];
        for counts in counts {
            let observed = Observed::new(counts).unwrap();
            for target in [-5.0, -1.0, -0.2, -0.01, 0.0, 0.001, 0.2, 1.0, 5.0] {
                let fitted = observed.mle_with_t_value(target).unwrap();
                let (mean, variance) = distribution_moments(&observed.values, &fitted);
                assert_close((mean - 0.5) / variance.sqrt(), target, 1e-9);
                assert_close(fitted.iter().sum(), 1.0, 1e-12);
            }
            for target in [0.01, 0.3, 0.5, 0.507, 0.9, 0.999] {
                let fitted = observed.mle_with_mean(target).unwrap();
                assert_close(distribution_moments(&observed.values, &fitted).0, target, 1e-12);
            }
        }
    }

    #[test]
    fn equal_hypotheses_give_a_zero_llr() {
        let pairs = Pentanomial { counts: [5, 10, 40, 30, 15] };
        assert_close(Sprt { elo1: 0.0, ..LOGISTIC }.llr(&pairs), 0.0, 1e-12);
        assert_close(Sprt { elo0: 10.0, ..NORMALIZED }.llr(&pairs), 0.0, 1e-12);
    }

    #[test]
    fn decide_accepts_h1_at_the_upper_bound_and_h0_at_the_lower_one() {
        // LLRs 3.50495 ≥ 2.94444, −3.03488 ≤ −2.94444 and −0.44339 (see the logistic LLR test).
        assert_eq!(LOGISTIC.decide(&Pentanomial { counts: [20, 40, 160, 120, 60] }), SprtState::AcceptH1);
        assert_eq!(LOGISTIC.decide(&Pentanomial { counts: [60, 120, 80, 20, 20] }), SprtState::AcceptH0);
        assert_eq!(LOGISTIC.decide(&Pentanomial { counts: [40, 400, 1100, 420, 40] }), SprtState::Continue);
        assert_eq!(LOGISTIC.decide(&Pentanomial::default()), SprtState::Continue);
        // Normalized: −5.79862 below −2.94444 and 1.36152 in between.
        assert_eq!(NORMALIZED.decide(&Pentanomial { counts: [60, 120, 80, 20, 20] }), SprtState::AcceptH0);
        assert_eq!(NORMALIZED.decide(&Pentanomial { counts: [5, 10, 40, 30, 15] }), SprtState::Continue);
        // 20 × the unpaired counts of the LLR test: 20 × 0.267472 = 5.34944.
        assert_eq!(LOGISTIC.decide_wdl(600, 1000, 400), SprtState::AcceptH1);
        assert_eq!(LOGISTIC.decide_llr(2.944_438_979_166_441), SprtState::AcceptH1);
        assert_eq!(LOGISTIC.decide_llr(-2.944_438_979_166_441), SprtState::AcceptH0);
        assert_eq!(LOGISTIC.decide_llr(f64::NAN), SprtState::Continue);
    }

    #[test]
    fn approximate_llr_agrees_with_the_exact_one_on_a_large_sample() {
        // 200 000 pairs with a mean of 0.5025 and variance 0.03561875:
        // 200000 × (s1 − ½)(2 × 0.5025 − ½ − s1) / (2 × 0.03561875), s1 = 0.50719 → −44.34123 (mpmath);
        // the exact LLR is −44.33902.
        let pairs = Pentanomial { counts: [4000, 40000, 110000, 42000, 4000] };
        assert_close(LOGISTIC.llr_approx(&pairs), -44.341_231_106_282_51, 1e-8);
        assert_close(LOGISTIC.llr(&pairs), -44.339_024_074_832_54, 1e-7);
        for sprt in [LOGISTIC, NORMALIZED, Sprt { elo0: -3.0, elo1: 1.0, ..LOGISTIC }] {
            let (exact, approximate) = (sprt.llr(&pairs), sprt.llr_approx(&pairs));
            assert!((approximate / exact - 1.0).abs() < 0.02, "{sprt:?}: {exact} against {approximate}");
        }
    }

    #[test]
    fn states_and_models_display_in_words() {
        assert_eq!(SprtState::Continue.to_string(), "continue");
        assert_eq!(SprtState::AcceptH1.to_string(), "H1 accepted");
        assert_eq!(SprtState::AcceptH0.to_string(), "H0 accepted");
        assert_eq!(EloModel::Logistic.to_string(), "logistic");
        assert_eq!(EloModel::Normalized.to_string(), "normalized");
    }

    /// An encounter of `first` against `second`.
    fn encounter(first: usize, second: usize, wins: u32, draws: u32, losses: u32) -> Encounter {
        Encounter { first, second, wins, draws, losses }
    }

    #[test]
    fn a_75_percent_score_puts_the_loser_190_85_elo_below() {
        // 60 wins, 30 draws, 10 losses: (60 + 15) / 100 = 75%, so B = −400 log10 3 = −190.8485.
        let ratings = fit_bradley_terry(2, &[encounter(0, 1, 60, 30, 10)], 0.0);
        assert_eq!(ratings.elo[0], 0.0);
        assert_close(ratings.elo[1], -190.848_501_887_864_97, 1e-6);
        // Fisher information 100 × 0.75 × 0.25 = 18.75 (natural-log units): one standard error
        // 400 / ln 10 / √18.75 = 173.717793 / 4.330127 = 40.11841 Elo.
        assert_eq!(ratings.stderr[0], 0.0);
        assert_close(ratings.stderr[1], 40.118_405_765_505_834, 1e-6);
    }

    #[test]
    fn a_chain_of_two_75_percent_scores_spans_twice_the_difference() {
        // A–B and B–C met, A–C did not: each pair is fitted exactly, C = 2 × −190.8485 = −381.6970.
        let ratings = bradley_terry(3, &[encounter(0, 1, 15, 0, 5), encounter(2, 1, 5, 0, 15)], 0.0);
        assert_close(ratings[1], -190.848_501_887_864_97, 1e-6);
        assert_close(ratings[2], -381.697_003_775_729_94, 1e-6);
    }

    #[test]
    fn three_players_recover_the_ratings_that_generated_their_results() {
        // Ratings 0, −100, +150 give expected scores score_from_elo(100) = 0.640065 (0 against 1),
        // score_from_elo(−150) = 1 / (1 + 10^0.375) = 0.296615 (0 against 2) and
        // score_from_elo(−250) = 1 / (1 + 10^0.625) = 0.191682 (1 against 2). In 1000 games each, scores
        // rounded to the half point: 540 + 200/2 = 640, 196 + 201/2 = 296.5, 91 + 201/2 = 191.5.
        let encounters =
            [encounter(0, 1, 540, 200, 260), encounter(0, 2, 196, 201, 603), encounter(1, 2, 91, 201, 708)];
        let ratings = bradley_terry(3, &encounters, 0.0);
        assert_eq!(ratings[0], 0.0);
        assert_close(ratings[1], -100.0, 0.5);
        assert_close(ratings[2], 150.0, 0.5);
        // The maximum-likelihood fit itself, by Zermelo's / Hunter's MM iteration
        // γᵢ ← Wᵢ / Σⱼ nᵢⱼ / (γᵢ + γⱼ) run to convergence in Python: −99.994900, +150.144265.
        assert_close(ratings[1], -99.994_899_813_225_23, 1e-6);
        assert_close(ratings[2], 150.144_264_966_222_9, 1e-6);
    }

    #[test]
    fn how_encounters_are_listed_does_not_matter() {
        let one_way = [encounter(0, 1, 6, 3, 1), encounter(1, 2, 4, 2, 4), encounter(0, 2, 2, 2, 6)];
        let other_way =
            [encounter(1, 0, 1, 3, 6), encounter(2, 1, 2, 0, 2), encounter(2, 1, 2, 2, 2), encounter(2, 0, 6, 2, 2)];
        let (a, b) = (bradley_terry(3, &one_way, 0.0), bradley_terry(3, &other_way, 0.0));
        for (x, y) in a.iter().zip(&b) {
            assert_close(*x, *y, 1e-9);
        }
    }

    #[test]
    fn prior_draws_keep_a_perfect_score_finite() {
        // 10 wins plus 1 virtual draw: 10.5 points of 11, so B = −400 log10(10.5 / 0.5) = −400 log10 21
        // = −528.8877.
        let ratings = bradley_terry(2, &[encounter(0, 1, 10, 0, 0)], 1.0);
        assert_close(ratings[1], -528.887_717_893_567_7, 1e-6);
    }

    #[test]
    fn without_a_prior_a_perfect_score_is_unbounded() {
        // Player 0 beat 1 every time: 1 is infinitely below.
        assert_eq!(bradley_terry(2, &[encounter(0, 1, 10, 0, 0)], 0.0), [0.0, f64::NEG_INFINITY]);
        assert_eq!(bradley_terry(2, &[encounter(1, 0, 10, 0, 0)], 0.0), [0.0, f64::INFINITY]);
        // 0 beat 1 and 2 every time, 1 and 2 drew: 1 and 2 are fitted together, infinitely below 0.
        let ratings =
            bradley_terry(3, &[encounter(0, 1, 3, 0, 0), encounter(0, 2, 3, 0, 0), encounter(1, 2, 0, 4, 0)], 0.0);
        assert_eq!(ratings, [0.0, f64::NEG_INFINITY, f64::NEG_INFINITY]);
        // 0 and 2 both beat 1 every time: 2 is linked to 0 only through 1, in neither direction.
        let ratings = fit_bradley_terry(3, &[encounter(0, 1, 3, 0, 0), encounter(2, 1, 3, 0, 0)], 0.0);
        assert_eq!(ratings.elo[1], f64::NEG_INFINITY);
        assert!(ratings.elo[2].is_nan() && ratings.stderr[2].is_nan());
        // One win in the other direction makes everything finite: 3 of 4 against 1 each.
        let ratings = bradley_terry(3, &[encounter(0, 1, 3, 0, 1), encounter(2, 1, 3, 0, 1)], 0.0);
        assert_close(ratings[1], -190.848_501_887_864_97, 1e-6);
        assert_close(ratings[2], 0.0, 1e-6);
    }

    #[test]
    fn players_without_a_link_to_player_0_are_rated_within_their_own_component() {
        // {0, 1} and {2, 3} never met; 4 never played: 2 anchors its component at 0, 4 stays at 0.
        let ratings = bradley_terry(5, &[encounter(0, 1, 60, 30, 10), encounter(3, 2, 60, 30, 10)], 0.0);
        assert_close(ratings[1], -190.848_501_887_864_97, 1e-6);
        assert_eq!(ratings[2], 0.0);
        assert_close(ratings[3], 190.848_501_887_864_97, 1e-6);
        assert_eq!(ratings[4], 0.0);
        assert_eq!(bradley_terry(0, &[], 1.0), Vec::<f64>::new());
    }

    #[test]
    fn a_small_prior_on_a_ladder_of_wipeouts_gives_finite_ordered_ratings() {
        // Each player beat the next one 10–0; 10⁻⁶ virtual draws per pair: each step is
        // 400 log10((10 + 5e-7) / 5e-7) = 400 log10(2·10⁷ + 1) ≈ 2921.2 Elo.
        let encounters: Vec<Encounter> = (0..5).map(|player| encounter(player, player + 1, 10, 0, 0)).collect();
        let ratings = fit_bradley_terry(6, &encounters, 1e-6);
        let step = 400.0 * (2e7f64 + 1.0).log10();
        for (player, (elo, stderr)) in ratings.elo.iter().zip(&ratings.stderr).enumerate() {
            assert_close(*elo, -(player as f64) * step, 1e-6);
            assert!(stderr.is_finite());
        }
    }

    #[test]
    #[should_panic(expected = "cannot play itself")]
    fn a_player_cannot_meet_itself() {
        bradley_terry(2, &[encounter(1, 1, 1, 0, 0)], 0.0);
    }

    #[test]
    #[should_panic(expected = "with only 2 players")]
    fn encounters_name_existing_players() {
        bradley_terry(2, &[encounter(0, 2, 1, 0, 0)], 0.0);
    }
}
