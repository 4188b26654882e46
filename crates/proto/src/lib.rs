//! The `xqz.v1` gRPC API, generated from `proto/xqz/v1/coordinator.proto`, and the conversions
//! between its messages and the project's types ([`wire`]).
//!
//! ```
//! use xqz_proto::v1::{GameSubmission, SubmitGamesRequest};
//! let request = SubmitGamesRequest { idempotency_key: "k1".into(), games: vec![GameSubmission::default()], ..Default::default() };
//! assert_eq!(request.games.len(), 1);
//! ```

/// Messages, the client (`coordinator_client`) and the server (`coordinator_server`).
#[allow(missing_docs)] // generated code
pub mod v1 {
    tonic::include_proto!("xqz.v1");
}

pub mod codec;
pub mod matches;
pub mod tls;
pub mod wire;

/// The encoded file descriptor set of the API, for the gRPC reflection service.
pub const FILE_DESCRIPTOR_SET: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/xqz_descriptor.bin"));
