//! Replay batches (boards, sparse policies over move codes) to the network's dense inputs and
//! targets, in the side to move's frame.

use xiangqi::{Color, Move};
use xqz_dataset::Batch;
use xqz_mcts::MaterialEvaluator;
use xqz_net::TrainBatch;
use xqz_net::encoding::{self, BoardCodeError, History, INPUT_SIZE};
use xqz_net::policy::{self, POLICY_SIZE};

/// A batch that cannot be trained on.
#[derive(Debug, thiserror::Error)]
pub enum DataError {
    /// A board code outside the schema.
    #[error("row {row}: {source}")]
    Board {
        /// Row in the batch.
        row: usize,
        /// The bad code.
        source: BoardCodeError,
    },
    /// A board that is not a legal position, which the material share of the value target needs.
    #[error("row {row}: {source}")]
    Position {
        /// Row in the batch.
        row: usize,
        /// Why it is not one.
        source: xqz_dataset::DatasetError,
    },
    /// A policy entry that is not a possible move.
    #[error("row {row}: policy move code {code} is not a possible move")]
    PolicyMove {
        /// Row in the batch.
        row: usize,
        /// The code.
        code: u16,
    },
}

/// How a replay batch becomes training targets.
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct Targets {
    /// Share of the search's root estimate in the value target, 0 to 1 (lc0's q-ratio; the rest
    /// is the game's result): a game's one result labels every position of it, which a network
    /// fits by recognising the game; the search's own estimate varies position by position.
    pub value_q_ratio: f32,
    /// Share of a uniform distribution over the recorded moves (self-play records every legal
    /// move) in the policy target, 0 to 1 (label smoothing; the rest is the recorded search
    /// policy): with few playouts the searches of an untrained network are noise, and a policy
    /// fitted to them narrows later searches onto that noise.
    pub policy_smoothing: f32,
    /// Plies over which the result's share of the value target fades (0: it does not): the
    /// result's share is `(1 - value_q_ratio) * exp(-plies_to_end / result_horizon)` and the
    /// search's root estimate takes the rest, as in TD(lambda): a result many plies away says
    /// little about the position, and a network fitted to it learns confident noise.
    pub result_horizon: f32,
    /// Share of the position's material estimate ([`MaterialEvaluator::wdl`]) in the value
    /// target, 0 to 1 (0: none; the rest is the mix above). Knowledge put in, not learnt: a short
    /// run's games, ended by material adjudication, teach that a pawn up wins, a value that
    /// saturates, and a search on a saturated value stops taking material and so never mates;
    /// the material term keeps more material better (KataGo adds a score utility to its
    /// win rate for the same reason).
    pub material_share: f32,
    /// Training samples over which [`Targets::material_share`] fades linearly to 0 (0: it does
    /// not fade): the knowledge put in bootstraps a young network, and a long run ends as pure
    /// self-play.
    pub material_fade: u64,
    /// Whether to build the opponent-reply targets ([`TrainingData::reply`]), for a network with
    /// an opponent-policy head.
    pub opponent_reply: bool,
}

impl Targets {
    /// The targets after `samples_seen` training samples: the material share faded.
    ///
    /// ```
    /// let targets = xqz_trainer::Targets { material_share: 0.5, material_fade: 1000, ..Default::default() };
    /// assert_eq!(targets.at(0).material_share, 0.5);
    /// assert_eq!(targets.at(500).material_share, 0.25);
    /// assert_eq!(targets.at(5000).material_share, 0.0);
    /// ```
    pub fn at(&self, samples_seen: u64) -> Targets {
        let left = if self.material_fade == 0 {
            1.0
        } else {
            1.0 - (samples_seen as f64 / self.material_fade as f64).min(1.0)
        };
        Targets { material_share: self.material_share * left as f32, ..*self }
    }

    /// The game result's share of the value target for a position `plies_to_end` from the end.
    pub fn result_share(&self, plies_to_end: f32) -> f32 {
        let fade = if self.result_horizon > 0.0 { (-plies_to_end / self.result_horizon).exp() } else { 1.0 };
        (1.0 - self.value_q_ratio) * fade
    }
}

/// Dense training arrays for one batch; [`TrainingData::batch`] lends them to the trainer.
#[derive(Clone, Debug, Default)]
pub struct TrainingData {
    /// Encoded positions, `rows * INPUT_SIZE`.
    pub inputs: Vec<f32>,
    /// Policy targets, `rows * POLICY_SIZE`: the recorded search policy (visit fractions, or
    /// the completed-Q policy), normalised and smoothed by [`Targets::policy_smoothing`]; all
    /// zero for rows without a full search, which so add nothing to the policy loss.
    pub policy: Vec<f32>,
    /// 1 for the legal moves of each row's position, `rows * POLICY_SIZE` (the policy's softmax
    /// is taken over them, see [`TrainBatch::legal`]); all zero for rows without a policy target.
    pub legal: Vec<f32>,
    /// Value targets for the side to move, `rows * 3` (win, draw, loss): the game's result, mixed
    /// with the search's root estimate by [`Targets::result_share`] and with the material
    /// estimate by [`Targets::material_share`].
    pub wdl: Vec<f32>,
    /// Plies from each row's position to its game's end, `rows`: the target of a moves-left head.
    pub plies_left: Vec<f32>,
    /// With [`Targets::opponent_reply`], `rows * POLICY_SIZE`: the opponent's reply to each row's
    /// move (the recorded policy of the game's next position, normalised, in the opponent's
    /// frame), all zero where the replay batch has none; else empty.
    pub reply: Vec<f32>,
}

impl TrainingData {
    /// Converts a replay batch. The value target is
    /// `(1 - m) * (r * result + (1 - r) * root WDL) + m * material WDL`, with `r` from
    /// [`Targets::result_share`] and `m` the [`Targets::material_share`], and the policy target
    /// `(1 - s) * search + s * uniform` over the recorded moves, with `s` from `targets`.
    pub fn from_replay(batch: &Batch, targets: Targets) -> Result<TrainingData, DataError> {
        let rows = batch.size;
        let wdl = (0..rows * 3)
            .map(|i| {
                let r = targets.result_share(batch.plies_to_end[i / 3]);
                r * batch.wdl_target[i] + (1.0 - r) * batch.root_wdl[i]
            })
            .collect();
        let mut data = TrainingData {
            inputs: vec![0.0; rows * INPUT_SIZE],
            policy: vec![0.0; rows * POLICY_SIZE],
            legal: vec![0.0; rows * POLICY_SIZE],
            wdl,
            plies_left: batch.plies_to_end[..rows].to_vec(),
            reply: if targets.opponent_reply { vec![0.0; rows * POLICY_SIZE] } else { Vec::new() },
        };
        let m = targets.material_share;
        // The recorded moves' indices of one row, kept for its smoothing; one buffer for all rows.
        let mut indices = Vec::new();
        for row in 0..rows {
            let turn = if batch.side_to_move[row] == 0 { Color::Red } else { Color::Black };
            let history = History {
                quiet_plies: u32::from(batch.quiet_plies[row]),
                repetitions: u32::from(batch.repetitions[row]),
            };
            encoding::encode_board(
                batch.board(row),
                turn,
                history,
                &mut data.inputs[row * INPUT_SIZE..(row + 1) * INPUT_SIZE],
            )
            .map_err(|source| DataError::Board { row, source })?;
            if targets.opponent_reply {
                let reply = &mut data.reply[row * POLICY_SIZE..(row + 1) * POLICY_SIZE];
                for (code, p) in batch.reply(row) {
                    let index = Move::from_u16(code)
                        .and_then(|mv| policy::index_for(mv, !turn))
                        .ok_or(DataError::PolicyMove { row, code })?;
                    reply[index] += p;
                }
                let sum: f32 = reply.iter().sum();
                if sum > 0.0 {
                    reply.iter_mut().for_each(|p| *p /= sum);
                }
            }
            let full = batch.full_search[row] != 0;
            if m <= 0.0 && !full {
                continue;
            }
            let pos = xqz_dataset::decode_board(batch.board(row), turn)
                .map_err(|source| DataError::Position { row, source })?;
            if m > 0.0 {
                let material = MaterialEvaluator::wdl(&pos);
                for (target, estimate) in data.wdl[row * 3..row * 3 + 3].iter_mut().zip(material) {
                    *target = (1.0 - m) * *target + m * estimate;
                }
            }
            if !full {
                continue;
            }
            let legal = &mut data.legal[row * POLICY_SIZE..(row + 1) * POLICY_SIZE];
            for &mv in pos.legal_moves().iter() {
                let index = policy::index_for(mv, turn).ok_or(DataError::PolicyMove { row, code: mv.to_u16() })?;
                legal[index] = 1.0;
            }
            let target = &mut data.policy[row * POLICY_SIZE..(row + 1) * POLICY_SIZE];
            indices.clear();
            for (code, p) in batch.policy(row) {
                let index = Move::from_u16(code)
                    .and_then(|mv| policy::index_for(mv, turn))
                    .filter(|&i| legal[i] > 0.0)
                    .ok_or(DataError::PolicyMove { row, code })?;
                target[index] += p;
                indices.push(index);
            }
            let sum: f32 = target.iter().sum();
            if sum > 0.0 {
                let (keep, spread) = (1.0 - targets.policy_smoothing, targets.policy_smoothing / indices.len() as f32);
                target.iter_mut().for_each(|p| *p *= keep / sum);
                indices.iter().for_each(|&i| target[i] += spread);
            }
        }
        Ok(data)
    }

    /// Rows.
    pub fn rows(&self) -> usize {
        self.inputs.len() / INPUT_SIZE
    }

    /// The arrays as the trainer takes them.
    pub fn batch(&self) -> TrainBatch<'_> {
        TrainBatch {
            inputs: &self.inputs,
            policy: &self.policy,
            legal: &self.legal,
            wdl: &self.wdl,
            plies_left: &self.plies_left,
            reply: &self.reply,
        }
    }
}
