//! The `xqz.v1` gRPC API, generated from `proto/xqz/v1/coordinator.proto`.
//!
//! ```
//! use xqz_proto::v1::{GameSubmission, SubmitGamesRequest};
//! let request = SubmitGamesRequest { idempotency_key: "k1".into(), games: vec![GameSubmission::default()], ..Default::default() };
//! assert_eq!(request.games.len(), 1);
//! ```

#![allow(missing_docs)] // generated code

/// Messages, the client (`coordinator_client`) and the server (`coordinator_server`).
pub mod v1 {
    tonic::include_proto!("xqz.v1");
}

/// A stored game and its samples as a submission (the worker's side of `SubmitGames`).
pub fn encode_game(game: &xqz_dataset::GameRecord, samples: &[xqz_dataset::SampleRecord]) -> v1::GameSubmission {
    v1::GameSubmission {
        game_id: game.game_id.0.to_vec(),
        start_fen: game.start_fen.clone(),
        moves: game.moves.iter().map(|m| u32::from(m.to_u16())).collect(),
        result: game.result.name().to_string(),
        reason: game.reason.clone(),
        model_version: game.model_version,
        seed: game.seed,
        start_time_ms: game.start_time_ms,
        end_time_ms: game.end_time_ms,
        plies: samples
            .iter()
            .map(|s| v1::PlySearch {
                policy_moves: s.policy.iter().map(|e| u32::from(e.mv.to_u16())).collect(),
                policy_probs: s.policy.iter().map(|e| e.p).collect(),
                root_wdl: s.root_wdl.to_vec(),
                full_search: s.full_search,
            })
            .collect(),
    }
}

/// The encoded file descriptor set of the API, for the gRPC reflection service.
pub const FILE_DESCRIPTOR_SET: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/xqz_descriptor.bin"));
