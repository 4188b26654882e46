//! Synthetic self-play data for tests and benchmarks: random legal games, adjudicated by the
//! rules core, with made-up search targets over the legal moves.
//!
//! ```
//! use rand::SeedableRng;
//! use xqz_dataset::synthetic::{SyntheticConfig, random_game};
//! let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(1);
//! let (game, samples) = random_game(&mut rng, 1, &SyntheticConfig::default());
//! assert_eq!(samples.len(), game.moves.len());
//! ```

use rand::Rng;
use rand::seq::IndexedRandom;
use xiangqi::game::{Game, GameConfig, Ruleset};

use crate::record::{GameId, GameRecord, PlySearch, PolicyEntry, SampleRecord};

/// Shape of the generated games.
#[derive(Clone, Debug)]
pub struct SyntheticConfig {
    /// Length cap (a draw by `max_length` when reached).
    pub max_plies: u32,
    /// Probability of playing a capture when one exists (shortens games).
    pub capture_bias: f64,
    /// At most this many moves get policy mass (the played move always does).
    pub policy_moves: usize,
    /// Fraction of plies with a full search.
    pub full_search_fraction: f64,
    /// The model version recorded.
    pub model_version: u64,
    /// The ruleset.
    pub ruleset: Ruleset,
}

impl Default for SyntheticConfig {
    fn default() -> SyntheticConfig {
        SyntheticConfig {
            max_plies: 160,
            capture_bias: 0.3,
            policy_moves: 40,
            full_search_fraction: 0.75,
            model_version: 1,
            ruleset: Ruleset::Chinese2011,
        }
    }
}

/// Plays one random game and makes up its samples: a policy over up to `policy_moves` legal
/// moves (summing to 1), a root WDL estimate, a seed and timestamps.
pub fn random_game<R: Rng>(rng: &mut R, id: u128, config: &SyntheticConfig) -> (GameRecord, Vec<SampleRecord>) {
    let mut game =
        Game::new(GameConfig { ruleset: config.ruleset, max_plies: Some(config.max_plies), ..GameConfig::default() });
    let mut searches = Vec::new();
    while !game.outcome().is_over() {
        let pos = game.position();
        let legal: Vec<_> = game.legal_moves().iter().copied().collect();
        let captures: Vec<_> = legal.iter().copied().filter(|m| pos.piece_at(m.to()).is_some()).collect();
        let mv = match captures.choose(rng) {
            Some(&c) if rng.random_bool(config.capture_bias) => c,
            _ => *legal.choose(rng).unwrap_or(&legal[0]),
        };
        let mut moves: Vec<_> = legal.choose_multiple(rng, config.policy_moves.max(1)).copied().collect();
        if !moves.contains(&mv) {
            moves[0] = mv;
        }
        let weights: Vec<f32> = moves.iter().map(|_| rng.random_range(0.01f32..1.0)).collect();
        let sum: f32 = weights.iter().sum();
        let policy = moves.iter().zip(&weights).map(|(&mv, &w)| PolicyEntry { mv, p: w / sum }).collect();
        let (w, l) = (rng.random_range(0.0f32..0.6), rng.random_range(0.0f32..0.4));
        searches.push(PlySearch {
            policy,
            root_wdl: [w, 1.0 - w - l, l],
            model_version: config.model_version,
            full_search: rng.random_bool(config.full_search_fraction),
        });
        game.push_unchecked(mv);
    }
    let mut record = GameRecord::from_game(&game, GameId::from_u128(id)).expect("the game is over");
    record.model_version = config.model_version;
    record.worker_id = format!("synthetic-{}", id % 4);
    record.seed = rng.random();
    record.start_time_ms = 1_767_225_600_000 + (id as i64) * 60_000;
    record.end_time_ms = record.start_time_ms + 45_000;
    let samples = SampleRecord::from_game(&record, &searches).expect("the moves are legal");
    (record, samples)
}
