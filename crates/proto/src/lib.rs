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

/// The encoded file descriptor set of the API, for the gRPC reflection service.
pub const FILE_DESCRIPTOR_SET: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/xqz_descriptor.bin"));
