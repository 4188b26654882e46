//! The codec of the `xqz.v1` service: prost's, except that a message whose decoded form would
//! take far more memory than its bytes on the wire is refused before it is decoded.
//!
//! Protobuf lets a few bytes stand for a whole struct: an empty `PlySearch` is two bytes on the
//! wire and about eighty in memory, so a request of empty games and plies would cost some forty
//! times its size once decoded, whatever the message size limit. [`WireBudget::check`] walks the
//! wire format (no allocation) and counts the structs a message would make; a message whose
//! estimate exceeds [`MAX_EXPANSION`] times its size (plus [`SLACK_BYTES`]) is answered with
//! `RESOURCE_EXHAUSTED`. Honest submissions expand about two to seven times.
//!
//! ```
//! use prost::Message;
//! use xqz_proto::codec::WireBudget;
//! use xqz_proto::v1::{GameSubmission, PlySearch, SubmitGamesRequest};
//!
//! let honest = SubmitGamesRequest {
//!     games: vec![GameSubmission {
//!         moves: vec![1; 80],
//!         plies: vec![PlySearch { root_wdl: vec![0.3, 0.4, 0.3], ..Default::default() }; 80],
//!         ..Default::default()
//!     }],
//!     ..Default::default()
//! };
//! assert!(SubmitGamesRequest::check(&honest.encode_to_vec()).is_ok());
//! let hollow = SubmitGamesRequest { games: vec![GameSubmission::default(); 50_000], ..Default::default() };
//! assert!(SubmitGamesRequest::check(&hollow.encode_to_vec()).is_err());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::marker::PhantomData;

use prost::Message;
use prost::bytes::Buf;
use tonic::Status;
use tonic::codec::{BufferSettings, Codec, DecodeBuf, Decoder};
use tonic_prost::ProstCodec;

use crate::v1;

/// How many times its wire size a message may take in memory once decoded.
pub const MAX_EXPANSION: usize = 16;

/// Bytes every message may take beyond [`MAX_EXPANSION`] times its size (small messages).
pub const SLACK_BYTES: usize = 64 << 10;

/// A message type's check of its wire bytes before they are decoded.
pub trait WireBudget {
    /// Refuses `bytes` if decoding them would take more than the budget; messages without
    /// repeated sub-messages cannot, and accept everything (decoding then says what is wrong).
    fn check(bytes: &[u8]) -> Result<(), Status> {
        let _ = bytes;
        Ok(())
    }
}

macro_rules! flat_messages {
    ($($message:ident),* $(,)?) => {
        $(impl WireBudget for v1::$message {})*
    };
}

// Messages whose decoded size is bounded by a small multiple of their bytes: scalars, strings
// and packed numbers only, or sub-messages that are not repeated.
flat_messages!(
    RegisterRequest,
    RegisterResponse,
    HeartbeatRequest,
    HeartbeatResponse,
    WatchModelsRequest,
    ModelAnnouncement,
    DownloadModelRequest,
    ModelChunk,
    PublishModelChunk,
    PublishModelResponse,
    SubmitGamesResponse,
    GetStatsRequest,
    SubmitMatchRequest,
    MatchJob,
    ListMatchesRequest,
    TakePairRequest,
    SubmitPairResponse,
);

/// Checks a message whose field `field` is a repeated message of `size` bytes in memory.
fn repeated(bytes: &[u8], field: u64, size: usize, what: &str) -> Result<(), Status> {
    let mut entries = 0usize;
    walk(bytes, &mut |f, _| {
        entries += usize::from(f == field);
        Ok(())
    })
    .map_err(malformed)?;
    within(bytes.len(), 2 * entries * size + 4 * bytes.len(), &format!("{entries} {what}"))
}

impl WireBudget for v1::ListMatchesResponse {
    fn check(bytes: &[u8]) -> Result<(), Status> {
        repeated(bytes, 1, size_of::<v1::MatchJob>(), "matches")
    }
}

impl WireBudget for v1::SubmitPairRequest {
    fn check(bytes: &[u8]) -> Result<(), Status> {
        repeated(bytes, 4, size_of::<v1::PlayedGame>(), "games")
    }
}

impl WireBudget for v1::TakePairResponse {
    fn check(bytes: &[u8]) -> Result<(), Status> {
        // Field 1 is the assignment, whose field 4 is `repeated ModelAnnouncement models`.
        let mut models = 0usize;
        walk(bytes, &mut |field, value| {
            if field == 1
                && let Value::Bytes(assignment) = value
            {
                walk(assignment, &mut |field, _| {
                    models += usize::from(field == 4);
                    Ok(())
                })?;
            }
            Ok(())
        })
        .map_err(malformed)?;
        let estimate = 2 * models * size_of::<v1::ModelAnnouncement>() + 4 * bytes.len();
        within(bytes.len(), estimate, &format!("{models} models"))
    }
}

impl WireBudget for v1::Stats {
    fn check(bytes: &[u8]) -> Result<(), Status> {
        // Field 6 is `repeated ModelGames games_by_model`.
        let mut entries = 0usize;
        walk(bytes, &mut |field, _| {
            entries += usize::from(field == 6);
            Ok(())
        })
        .map_err(malformed)?;
        within(bytes.len(), entries * size_of::<v1::ModelGames>() * 2, "Stats")
    }
}

impl WireBudget for v1::SubmitGamesRequest {
    fn check(bytes: &[u8]) -> Result<(), Status> {
        let (mut games, mut plies) = (0usize, 0usize);
        // Field 3 is `repeated GameSubmission games`; field 10 of a game `repeated PlySearch plies`.
        walk(bytes, &mut |field, value| {
            if field == 3 {
                games += 1;
                if let Value::Bytes(game) = value {
                    walk(game, &mut |field, _| {
                        plies += usize::from(field == 10);
                        Ok(())
                    })?;
                }
            }
            Ok(())
        })
        .map_err(malformed)?;
        // Vectors grow by doubling: up to twice the structs they hold; every scalar element (one
        // byte on the wire at least) takes up to four.
        let structs = 2 * (games * size_of::<v1::GameSubmission>() + plies * size_of::<v1::PlySearch>());
        within(bytes.len(), structs + 4 * bytes.len(), &format!("{games} games with {plies} plies"))
    }
}

fn within(wire: usize, estimate: usize, what: &str) -> Result<(), Status> {
    let budget = MAX_EXPANSION.saturating_mul(wire).saturating_add(SLACK_BYTES);
    if estimate > budget {
        return Err(Status::resource_exhausted(format!(
            "a message of {wire} bytes holding {what} would take about {estimate} bytes once decoded, more than \
             {MAX_EXPANSION} times its size"
        )));
    }
    Ok(())
}

fn malformed(message: &'static str) -> Status {
    Status::invalid_argument(format!("malformed protobuf message: {message}"))
}

/// A field's value as the wire format gives it.
enum Value<'a> {
    Number,
    Bytes(&'a [u8]),
}

/// Calls `visit` with each top-level field number and value of a message's bytes.
fn walk<'a>(
    mut bytes: &'a [u8],
    visit: &mut dyn FnMut(u64, Value<'a>) -> Result<(), &'static str>,
) -> Result<(), &'static str> {
    while !bytes.is_empty() {
        let key = varint(&mut bytes)?;
        let value = match key & 7 {
            0 => varint(&mut bytes).map(|_| Value::Number)?,
            1 => skip(&mut bytes, 8).map(|_| Value::Number)?,
            2 => {
                let len = usize::try_from(varint(&mut bytes)?).map_err(|_| "length out of range")?;
                Value::Bytes(skip(&mut bytes, len)?)
            }
            5 => skip(&mut bytes, 4).map(|_| Value::Number)?,
            _ => return Err("unsupported wire type"),
        };
        visit(key >> 3, value)?;
    }
    Ok(())
}

fn varint(bytes: &mut &[u8]) -> Result<u64, &'static str> {
    let mut value = 0u64;
    for shift in (0..64).step_by(7) {
        let (&byte, rest) = bytes.split_first().ok_or("truncated varint")?;
        *bytes = rest;
        value |= u64::from(byte & 0x7f) << shift;
        if byte < 0x80 {
            return Ok(value);
        }
    }
    Err("varint longer than 10 bytes")
}

fn skip<'a>(bytes: &mut &'a [u8], len: usize) -> Result<&'a [u8], &'static str> {
    if bytes.len() < len {
        return Err("truncated field");
    }
    let (taken, rest) = bytes.split_at(len);
    *bytes = rest;
    Ok(taken)
}

/// Prost's codec with [`WireBudget::check`] before every decode; the generated client and server
/// use it for every method.
#[derive(Debug, Clone)]
pub struct BoundedCodec<T, U> {
    _types: PhantomData<(T, U)>,
}

impl<T, U> Default for BoundedCodec<T, U> {
    fn default() -> Self {
        BoundedCodec { _types: PhantomData }
    }
}

impl<T, U> Codec for BoundedCodec<T, U>
where
    T: Message + Send + 'static,
    U: Message + Default + WireBudget + Send + 'static,
{
    type Encode = T;
    type Decode = U;
    type Encoder = <ProstCodec<T, U> as Codec>::Encoder;
    type Decoder = BoundedDecoder<U>;

    fn encoder(&mut self) -> Self::Encoder {
        ProstCodec::<T, U>::raw_encoder(BufferSettings::default())
    }

    fn decoder(&mut self) -> Self::Decoder {
        BoundedDecoder { _type: PhantomData }
    }
}

/// The decoder of [`BoundedCodec`].
#[derive(Debug)]
pub struct BoundedDecoder<U> {
    _type: PhantomData<U>,
}

impl<U: Message + Default + WireBudget> Decoder for BoundedDecoder<U> {
    type Item = U;
    type Error = Status;

    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<U>, Status> {
        let decoded = if src.chunk().len() == src.remaining() {
            U::check(src.chunk())?;
            U::decode(src)
        } else {
            // Tonic hands a frame as one buffer; should it ever not, the check needs a copy.
            let bytes = src.copy_to_bytes(src.remaining());
            U::check(&bytes)?;
            U::decode(bytes)
        };
        decoded.map(Some).map_err(|e| Status::internal(e.to_string()))
    }
}
