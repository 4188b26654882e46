//! A budget of request bytes in flight, in front of the gRPC services: a request waits, before
//! its message is read, until the bytes its message declares fit in the budget, and gives them
//! back when its answer is ready. Memory then follows the bytes in flight, not the number of
//! requests: many small submissions run side by side (and share group commits), while a few
//! large ones take turns.
//!
//! A gRPC message opens with five bytes, a compression flag and its length, so the length is known
//! before the message is read. Taking the whole length at once, rather than a share per chunk as
//! chunks arrive, means no request ever holds part of the budget while it waits for the rest, so
//! requests cannot block each other for good. A message longer than the budget takes all of it
//! (tonic refuses it anyway beyond `max_message_bytes`); a body shorter than the prefix takes
//! nothing. A client stream (`PublishModel`) is charged for its first message, for as long as it
//! runs.
//!
//! Two things keep one client from holding the budget: the bytes its connection's calls may hold
//! are capped ([`Connection::take_bytes`]: a request past the cap is refused with `UNAVAILABLE`
//! rather than left waiting), and a request whose prefix, or any of whose messages, takes longer
//! than the upload timeout to arrive (counted from the request's arrival, from the grant of its
//! bytes, then from the end of the message before) is ended with `DEADLINE_EXCEEDED`, which gives
//! its bytes back. So declaring a large message and then trickling or stalling holds the bytes
//! for the upload timeout at most.

use std::collections::VecDeque;
use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use http_body::{Body as _, Frame};
use tokio::sync::Semaphore;
use tokio::time::{Instant, Sleep};
use tonic::Status;
use tonic::body::Body;
use tonic::codegen::Bytes;
use tonic::codegen::http::{Request, Response};
use tower::{Layer, Service, ServiceExt as _};

use crate::connections::Connection;

/// The gRPC message prefix: a compression flag, then the length as a big-endian `u32`.
const PREFIX_BYTES: usize = 5;

/// The layer that puts a [`ByteBudget`] of `bytes` in front of a service.
#[derive(Clone, Debug)]
pub(crate) struct ByteBudgetLayer {
    budget: Arc<Semaphore>,
    capacity: u32,
    upload_timeout: Duration,
}

impl ByteBudgetLayer {
    /// A budget of `bytes` (at least 1, at most `u32::MAX`), shared by every request, each of
    /// whose messages must arrive within `upload_timeout`.
    pub(crate) fn new(bytes: usize, upload_timeout: Duration) -> ByteBudgetLayer {
        let capacity = u32::try_from(bytes.max(1)).unwrap_or(u32::MAX);
        ByteBudgetLayer { budget: Arc::new(Semaphore::new(capacity as usize)), capacity, upload_timeout }
    }
}

impl<S> Layer<S> for ByteBudgetLayer {
    type Service = ByteBudget<S>;

    fn layer(&self, inner: S) -> ByteBudget<S> {
        ByteBudget { inner, layer: self.clone() }
    }
}

/// A service whose requests wait for their message's bytes in a shared budget.
#[derive(Clone, Debug)]
pub(crate) struct ByteBudget<S> {
    inner: S,
    layer: ByteBudgetLayer,
}

impl<S> Service<Request<Body>> for ByteBudget<S>
where
    S: Service<Request<Body>, Response = Response<Body>> + Clone + Send + 'static,
    S::Future: Send,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, S::Error>> + Send>>;

    /// Ready at once: the service inside (the handlers' concurrency limit) is waited for only
    /// once the request has its bytes, so a request that is slow to declare them holds no handler.
    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let inner = self.inner.clone();
        let ByteBudgetLayer { budget, capacity, upload_timeout } = self.layer.clone();
        let connection = Connection::of(&request);
        Box::pin(async move {
            let (parts, body) = request.into_parts();
            let Ok((body, declared)) = tokio::time::timeout(upload_timeout, read_prefix(body)).await else {
                return Ok(too_slow(upload_timeout).into_http());
            };
            let (mut share, mut permit) = (None, None);
            if let Some(bytes) = declared {
                let bytes = bytes.clamp(1, capacity);
                if let Some(connection) = &connection {
                    match connection.take_bytes(bytes) {
                        Ok(taken) => share = Some(taken),
                        Err(refused) => return Ok(refused.into_http()),
                    }
                }
                // The semaphore is never closed, so acquiring fails only if it were.
                permit = budget.acquire_many_owned(bytes).await.ok();
            }
            let body = Timed::new(body, upload_timeout);
            let response = inner.oneshot(Request::from_parts(parts, Body::new(body))).await;
            drop((permit, share));
            response
        })
    }
}

/// The refusal of a request whose message did not arrive in time.
fn too_slow(limit: Duration) -> Status {
    Status::deadline_exceeded(format!(
        "the request's message did not arrive within the upload timeout of {limit:?} (upload_timeout)"
    ))
}

/// Where a reader stands in a body's gRPC framing: how much of a message prefix it has read, and
/// what is left of the message after it.
#[derive(Debug, Default)]
struct Framing {
    prefix: [u8; PREFIX_BYTES],
    have: usize,
    left: u32,
}

impl Framing {
    /// Reads `data` on; the number of messages that ended in it.
    fn advance(&mut self, mut data: &[u8]) -> usize {
        let mut ended = 0;
        while !data.is_empty() {
            if self.have < PREFIX_BYTES {
                let take = data.len().min(PREFIX_BYTES - self.have);
                self.prefix[self.have..self.have + take].copy_from_slice(&data[..take]);
                self.have += take;
                data = &data[take..];
                if self.have == PREFIX_BYTES {
                    self.left = declared(&self.prefix);
                }
            } else {
                let take = data.len().min(self.left as usize);
                self.left -= take as u32;
                data = &data[take..];
            }
            if self.have == PREFIX_BYTES && self.left == 0 {
                self.have = 0;
                ended += 1;
            }
        }
        ended
    }
}

/// The message length a prefix declares.
fn declared(prefix: &[u8; PREFIX_BYTES]) -> u32 {
    u32::from_be_bytes([prefix[1], prefix[2], prefix[3], prefix[4]])
}

/// A request body each of whose messages must arrive within `limit` of the end of the one before
/// (the first, of the body's start); one that does not is ended with `DEADLINE_EXCEEDED`.
struct Timed {
    body: Replayed,
    limit: Duration,
    deadline: Pin<Box<Sleep>>,
    framing: Framing,
    expired: bool,
}

impl Timed {
    fn new(body: Replayed, limit: Duration) -> Timed {
        Timed {
            body,
            limit,
            deadline: Box::pin(tokio::time::sleep(limit)),
            framing: Framing::default(),
            expired: false,
        }
    }
}

impl http_body::Body for Timed {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        let this = self.get_mut();
        if this.expired {
            return Poll::Ready(None);
        }
        match Pin::new(&mut this.body).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if frame.data_ref().is_some_and(|data| this.framing.advance(data) > 0) {
                    this.deadline.as_mut().reset(Instant::now() + this.limit);
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(other) => Poll::Ready(other),
            Poll::Pending if this.deadline.as_mut().poll(cx).is_ready() => {
                this.expired = true;
                Poll::Ready(Some(Err(too_slow(this.limit))))
            }
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.expired || self.body.is_end_stream()
    }
}

/// Reads frames until the message prefix is in: the body to pass on (those frames replayed
/// first) and the message length it declares, if the body held a whole prefix.
async fn read_prefix(mut body: Body) -> (Replayed, Option<u32>) {
    let mut replayed = Replayed { read: VecDeque::new(), failed: None, rest: None };
    let mut prefix = [0u8; PREFIX_BYTES];
    let mut have = 0;
    while have < PREFIX_BYTES {
        match poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
            // Empty data frames carry nothing to replay; kept, a client sending them without end
            // would grow the queue without end.
            Some(Ok(frame)) if frame.data_ref().is_some_and(Bytes::is_empty) => {}
            Some(Ok(frame)) => {
                if let Some(data) = frame.data_ref() {
                    let take = data.len().min(PREFIX_BYTES - have);
                    prefix[have..have + take].copy_from_slice(&data[..take]);
                    have += take;
                }
                replayed.read.push_back(frame);
            }
            Some(Err(status)) => {
                replayed.failed = Some(status);
                return (replayed, None);
            }
            None => return (replayed, None),
        }
    }
    replayed.rest = Some(body);
    (replayed, Some(declared(&prefix)))
}

/// A request body whose first frames were read already: those, then an error met while reading
/// them, then the rest of the body.
struct Replayed {
    read: VecDeque<Frame<Bytes>>,
    failed: Option<Status>,
    rest: Option<Body>,
}

impl http_body::Body for Replayed {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        let this = self.get_mut();
        if let Some(frame) = this.read.pop_front() {
            return Poll::Ready(Some(Ok(frame)));
        }
        if let Some(status) = this.failed.take() {
            return Poll::Ready(Some(Err(status)));
        }
        match &mut this.rest {
            Some(rest) => Pin::new(rest).poll_frame(cx),
            None => Poll::Ready(None),
        }
    }

    fn is_end_stream(&self) -> bool {
        self.read.is_empty() && self.failed.is_none() && self.rest.as_ref().is_none_or(Body::is_end_stream)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::Duration;

    use super::*;

    /// A gRPC-framed message of `len` bytes, cut into frames of `chunk` bytes.
    fn framed(len: u32, chunk: usize) -> Vec<Bytes> {
        let mut bytes = vec![0u8];
        bytes.extend_from_slice(&len.to_be_bytes());
        bytes.extend((0..len).map(|i| i as u8));
        bytes.chunks(chunk).map(Bytes::copy_from_slice).collect()
    }

    /// A body that yields `chunks` one by one, each after a yield to the runtime.
    fn body_of(chunks: Vec<Bytes>) -> Body {
        let stream = tokio_stream::iter(chunks.into_iter().map(|c| Ok::<_, Status>(Frame::data(c))));
        Body::new(streamed(stream))
    }

    /// A body over a stream of frames.
    fn streamed<St>(stream: St) -> impl http_body::Body<Data = Bytes, Error = Status> + Send + 'static
    where
        St: tokio_stream::Stream<Item = Result<Frame<Bytes>, Status>> + Send + Unpin + 'static,
    {
        struct Streamed<St>(St);
        impl<St: tokio_stream::Stream<Item = Result<Frame<Bytes>, Status>> + Unpin> http_body::Body for Streamed<St> {
            type Data = Bytes;
            type Error = Status;
            fn poll_frame(
                mut self: Pin<&mut Self>,
                cx: &mut Context<'_>,
            ) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
                Pin::new(&mut self.0).poll_next(cx)
            }
        }
        Streamed(stream)
    }

    /// The bytes in flight now and at most, as the inner service sees them (each message counted
    /// up to the budget's capacity, as it is charged), and every body it read whole.
    #[derive(Default)]
    struct Seen {
        now: AtomicU32,
        peak: AtomicU32,
        bodies: Mutex<Vec<Vec<u8>>>,
    }

    fn counting(
        seen: Arc<Seen>,
        capacity: u32,
    ) -> impl Service<Request<Body>, Response = Response<Body>, Error = Status, Future: Send> + Clone {
        tower::service_fn(move |request: Request<Body>| {
            let seen = seen.clone();
            async move {
                let mut body = request.into_body();
                let mut read = Vec::new();
                while let Some(frame) = poll_fn(|cx| Pin::new(&mut body).poll_frame(cx)).await {
                    if let Ok(data) = frame?.into_data() {
                        read.extend_from_slice(&data);
                    }
                }
                let declared = if read.len() >= PREFIX_BYTES {
                    u32::from_be_bytes([read[1], read[2], read[3], read[4]]).min(capacity)
                } else {
                    0
                };
                let now = seen.now.fetch_add(declared, Ordering::SeqCst) + declared;
                seen.peak.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(100)).await;
                seen.now.fetch_sub(declared, Ordering::SeqCst);
                seen.bodies.lock().unwrap().push(read);
                Ok(Response::new(Body::empty()))
            }
        })
    }

    #[tokio::test]
    async fn requests_wait_until_their_declared_bytes_fit_and_every_body_arrives_whole() {
        let seen = Arc::new(Seen::default());
        let service = ByteBudgetLayer::new(1000, Duration::from_secs(60)).layer(counting(seen.clone(), 1000));
        // 400 bytes each: two fit at once, never three; one of 2,500 takes the whole budget
        // alone; a body cut before its prefix ends passes with nothing taken.
        let mut sent: Vec<Vec<Bytes>> = (0..8).map(|i| framed(400, 1 + i * 3)).collect();
        sent.push(framed(2500, 4096));
        sent.push(vec![Bytes::from_static(&[0, 0, 0])]);
        // Empty frames before and inside the prefix change nothing.
        let mut padded = vec![Bytes::new(); 1000];
        padded.extend(framed(300, 2).into_iter().flat_map(|chunk| [Bytes::new(), chunk]));
        sent.push(padded);
        let calls = sent.iter().map(|chunks| {
            let mut service = service.clone();
            let body = body_of(chunks.clone());
            tokio::spawn(async move { service.call(Request::new(body)).await })
        });
        for call in calls.collect::<Vec<_>>() {
            call.await.unwrap().unwrap();
        }
        let peak = seen.peak.load(Ordering::SeqCst);
        assert!(peak <= 1000, "{peak} bytes in flight");
        let mut bodies = seen.bodies.lock().unwrap().clone();
        let mut expected: Vec<Vec<u8>> = sent.iter().map(|chunks| chunks.concat()).collect();
        bodies.sort();
        expected.sort();
        assert_eq!(bodies, expected, "every body reaches the service byte for byte");
    }

    #[tokio::test]
    async fn small_messages_never_overlap_beyond_the_budget() {
        let seen = Arc::new(Seen::default());
        let service = ByteBudgetLayer::new(1000, Duration::from_secs(60)).layer(counting(seen.clone(), 1000));
        let calls: Vec<_> = (0..12)
            .map(|_| {
                let mut service = service.clone();
                let body = body_of(framed(300, 2));
                tokio::spawn(async move { service.call(Request::new(body)).await })
            })
            .collect();
        for call in calls {
            call.await.unwrap().unwrap();
        }
        let peak = seen.peak.load(Ordering::SeqCst);
        // Three fit in 1,000 bytes; the fourth waits.
        assert_eq!(peak, 900, "{peak} bytes in flight");
    }

    #[tokio::test]
    async fn an_error_while_reading_the_prefix_reaches_the_service() {
        let seen = Arc::new(Seen::default());
        let mut service = ByteBudgetLayer::new(1000, Duration::from_secs(60)).layer(counting(seen.clone(), 1000));
        let frames = vec![Ok(Frame::data(Bytes::from_static(&[0, 0]))), Err(Status::cancelled("reset"))];
        let body = Body::new(streamed(tokio_stream::iter(frames)));
        let status = service.call(Request::new(body)).await.unwrap_err();
        assert_eq!(status.code(), tonic::Code::Cancelled);
    }

    /// A body of `frames`; then, if `stall`, nothing more for ever.
    fn stalling(frames: Vec<Bytes>, stall: bool) -> Body {
        let (tx, rx) = tokio::sync::mpsc::channel(1);
        tokio::spawn(async move {
            for data in frames {
                if tx.send(Ok(Frame::data(data))).await.is_err() {
                    return;
                }
            }
            if stall {
                std::future::pending::<()>().await;
            }
        });
        Body::new(streamed(tokio_stream::wrappers::ReceiverStream::new(rx)))
    }

    fn grpc_status(response: &Response<Body>) -> Option<&str> {
        response.headers().get("grpc-status").and_then(|v| v.to_str().ok())
    }

    #[tokio::test]
    async fn a_message_that_stops_arriving_is_ended_and_gives_its_bytes_back() {
        let limit = Duration::from_millis(200);
        let seen = Arc::new(Seen::default());
        let service = ByteBudgetLayer::new(1000, limit).layer(counting(seen.clone(), 1000));
        let call = |body| service.clone().oneshot(Request::new(body));
        // A message of the whole budget that stops halfway: ended with DEADLINE_EXCEEDED.
        let half = framed(1000, 500).into_iter().take(1).collect();
        let error = call(stalling(half, true)).await.unwrap_err();
        assert_eq!(error.code(), tonic::Code::DeadlineExceeded, "{error:?}");
        assert!(error.message().contains("upload timeout of 200ms"), "{}", error.message());
        // A prefix that never ends: refused before the service sees it.
        let answer = call(stalling(vec![Bytes::from_static(&[0, 0])], true)).await.unwrap();
        assert_eq!(grpc_status(&answer), Some("4"), "DEADLINE_EXCEEDED");
        // The stalled message gave its bytes back: the next takes the whole budget again.
        let answer = call(stalling(framed(1000, 300), false)).await.unwrap();
        assert!(grpc_status(&answer).is_none());
        assert_eq!(seen.bodies.lock().unwrap().len(), 1, "the service read the message on time whole");
    }

    #[test]
    fn the_framing_finds_every_message_end_however_the_bytes_are_cut() {
        let stream: Vec<u8> = [framed(3, 8), framed(0, 8), framed(300, 1000)].concat().concat();
        for cut in [1, 2, 5, 7, 64, 1000] {
            let mut framing = Framing::default();
            let ends: usize = stream.chunks(cut).map(|chunk| framing.advance(chunk)).sum();
            assert_eq!((ends, framing.have), (3, 0), "cut {cut}");
        }
    }
}
