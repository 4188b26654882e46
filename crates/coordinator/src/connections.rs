//! Bounds on the gRPC port's connections, so that no client, however many sockets it opens or
//! however slowly it talks, takes what others need:
//!
//! - at most `max_connections` open at once ([`Incoming`]): past it the listener accepts no more
//!   until one closes, and further clients wait in the kernel's backlog (TLS or not: tonic's
//!   handshake runs over these connections);
//! - a connection with no call open for `idle_timeout` is closed ([`Conn`]): a socket that never
//!   sends a byte, never finishes its TLS or HTTP/2 handshake, or only answers pings cannot keep
//!   its slot, while a worker's model watch (a call that stays open) keeps its connection;
//! - each connection may have at most `max_calls_per_connection` calls in flight ([`CallsLayer`])
//!   and hold at most `max_request_bytes_per_connection` of the byte budget
//!   ([`Connection::take_bytes`], used by the budget); calls past either are refused at once with
//!   `UNAVAILABLE`, which workers retry after a pause.
//!
//! The per-client caps are kept per connection, not per worker id or per token: a connection is
//! known before anything is decoded and cannot be forged, one worker is one connection (its
//! client shares one HTTP/2 connection among all its calls), while every worker carries the
//! same token, and a worker id is only as scarce as `Register` calls are.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use http_body::Frame;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{AcquireError, OwnedSemaphorePermit, Semaphore};
use tokio::time::{Instant, Sleep};
use tokio_stream::Stream;
use tonic::Status;
use tonic::body::Body;
use tonic::codegen::Bytes;
use tonic::codegen::http::{Request, Response};
use tonic::transport::server::Connected;
use tower::{Layer, Service, ServiceExt as _};

use crate::Limits;

/// What each connection may hold, from [`Limits`].
#[derive(Clone, Copy, Debug)]
struct PerConnection {
    idle_timeout: Duration,
    calls: usize,
    bytes: u32,
}

/// A wait for a slot among the open connections.
type SlotWait = Pin<Box<dyn Future<Output = Result<OwnedSemaphorePermit, AcquireError>> + Send>>;

/// The listener's connections, at most `max_connections` open at once: a slot is taken before
/// each accept and held by the connection until it closes.
pub(crate) struct Incoming {
    listener: TcpListener,
    open: Arc<Semaphore>,
    /// The wait for the slot of the next connection.
    waiting: Option<SlotWait>,
    /// The slot of the next connection, once it is free.
    slot: Option<OwnedSemaphorePermit>,
    each: PerConnection,
}

impl Incoming {
    /// The connections of `listener`, bounded as `limits` say.
    pub(crate) fn new(listener: TcpListener, limits: &Limits) -> Incoming {
        let each = PerConnection {
            idle_timeout: limits.idle_timeout,
            calls: limits.max_calls_per_connection.max(1),
            bytes: u32::try_from(limits.max_request_bytes_per_connection.max(1)).unwrap_or(u32::MAX),
        };
        let open = Arc::new(Semaphore::new(limits.max_connections.clamp(1, Semaphore::MAX_PERMITS)));
        Incoming { listener, open, waiting: None, slot: None, each }
    }
}

impl Stream for Incoming {
    type Item = io::Result<Conn>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<io::Result<Conn>>> {
        let this = self.get_mut();
        if this.slot.is_none() {
            let open = this.open.clone();
            let waiting = this.waiting.get_or_insert_with(|| Box::pin(open.acquire_owned()));
            let slot = ready!(waiting.as_mut().poll(cx));
            this.waiting = None;
            // The semaphore is never closed.
            let Ok(slot) = slot else { return Poll::Ready(None) };
            this.slot = Some(slot);
        }
        let (stream, _) = match ready!(this.listener.poll_accept(cx)) {
            Ok(accepted) => accepted,
            Err(e) => return Poll::Ready(Some(Err(e))),
        };
        // Calls are small and answered at once; Nagle's delay would only slow them.
        let _ = stream.set_nodelay(true);
        let slot = this.slot.take();
        let state = Arc::new(Connection::new(this.each));
        let idle = Box::pin(tokio::time::sleep(this.each.idle_timeout));
        Poll::Ready(Some(Ok(Conn { stream, state, idle, _slot: slot })))
    }
}

/// One accepted connection: the socket, what its calls hold, and its slot among the open ones.
/// A read finds it idle once no call has been open for the idle timeout, and fails, which
/// closes it.
pub(crate) struct Conn {
    stream: TcpStream,
    state: Arc<Connection>,
    /// Fires when the connection may have become idle.
    idle: Pin<Box<Sleep>>,
    _slot: Option<OwnedSemaphorePermit>,
}

impl AsyncRead for Conn {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let timeout = this.state.each.idle_timeout;
        while this.idle.as_mut().poll(cx).is_ready() {
            let next = match this.state.quiet_since() {
                Some(since) if since + timeout <= Instant::now() => {
                    let message = format!("no call for the idle timeout of {timeout:?}");
                    return Poll::Ready(Err(io::Error::new(io::ErrorKind::TimedOut, message)));
                }
                Some(since) => since + timeout,
                None => Instant::now() + timeout,
            };
            this.idle.as_mut().reset(next);
        }
        Pin::new(&mut this.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for Conn {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().stream).poll_shutdown(cx)
    }
}

impl Connected for Conn {
    type ConnectInfo = Arc<Connection>;

    /// Put in every request's extensions by tonic (for TLS too, beside the TLS details).
    fn connect_info(&self) -> Arc<Connection> {
        self.state.clone()
    }
}

/// What the calls of one connection hold: how many are open and since when none has been, its
/// slots for calls in flight and its share of the byte budget.
pub(crate) struct Connection {
    each: PerConnection,
    /// Calls open (until their answers end), and when the last one ended or the connection
    /// opened.
    open: Mutex<(usize, Instant)>,
    calls: Arc<Semaphore>,
    bytes: Arc<Semaphore>,
}

impl Connection {
    fn new(each: PerConnection) -> Connection {
        Connection {
            each,
            open: Mutex::new((0, Instant::now())),
            calls: Arc::new(Semaphore::new(each.calls)),
            bytes: Arc::new(Semaphore::new(each.bytes as usize)),
        }
    }

    /// The connection a request came on, if it came through [`Incoming`].
    pub(crate) fn of<B>(request: &Request<B>) -> Option<Arc<Connection>> {
        request.extensions().get::<Arc<Connection>>().cloned()
    }

    /// Since when no call has been open; `None` while one is.
    fn quiet_since(&self) -> Option<Instant> {
        let (open, since) = *self.open.lock().unwrap_or_else(|e| e.into_inner());
        (open == 0).then_some(since)
    }

    /// Counts a call open until the guard is dropped.
    fn open_call(self: &Arc<Self>) -> OpenCall {
        self.open.lock().unwrap_or_else(|e| e.into_inner()).0 += 1;
        OpenCall(self.clone())
    }

    /// A slot for a call in flight, or the refusal that names the limit.
    fn take_call(&self) -> Result<OwnedSemaphorePermit, Status> {
        self.calls.clone().try_acquire_owned().map_err(|_| {
            Status::unavailable(format!(
                "this connection has {} calls in flight, the most one connection may (max_calls_per_connection); \
                 retry once one is answered",
                self.each.calls
            ))
        })
    }

    /// `bytes` of this connection's share of the byte budget (all of it for a message larger than
    /// the share), or the refusal that names the limit.
    pub(crate) fn take_bytes(&self, bytes: u32) -> Result<OwnedSemaphorePermit, Status> {
        let share = self.each.bytes;
        self.bytes.clone().try_acquire_many_owned(bytes.clamp(1, share)).map_err(|_| {
            let held = share as usize - self.bytes.available_permits();
            Status::unavailable(format!(
                "this connection's calls in flight hold {held} bytes of the request budget; a message of {bytes} \
                 more would pass the {share} one connection may hold (max_request_bytes_per_connection); retry once \
                 one is answered"
            ))
        })
    }
}

/// A call counted open on its connection until dropped.
struct OpenCall(Arc<Connection>);

impl Drop for OpenCall {
    fn drop(&mut self) {
        let mut open = self.0.open.lock().unwrap_or_else(|e| e.into_inner());
        open.0 -= 1;
        open.1 = Instant::now();
    }
}

/// The layer that counts each call against its connection: open (keeping the connection from
/// idling) until its answer has ended, and in flight (one of the connection's call slots) until
/// its answer begins. A call that finds every slot taken is refused with `UNAVAILABLE` before
/// anything else sees it.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct CallsLayer;

impl<S> Layer<S> for CallsLayer {
    type Service = Calls<S>;

    fn layer(&self, inner: S) -> Calls<S> {
        Calls { inner }
    }
}

/// A service whose calls are counted against their connections; see [`CallsLayer`].
#[derive(Clone, Debug)]
pub(crate) struct Calls<S> {
    inner: S,
}

impl<S> Service<Request<Body>> for Calls<S>
where
    S: Service<Request<Body>, Response = Response<Body>> + Clone + Send + 'static,
    S::Future: Send,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, S::Error>> + Send>>;

    /// Ready at once: the services inside are waited for only once the call has its slot, so a
    /// refused call holds nothing of theirs.
    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let inner = self.inner.clone();
        let connection = Connection::of(&request);
        Box::pin(async move {
            let Some(connection) = connection else { return inner.oneshot(request).await };
            let open = connection.open_call();
            let in_flight = match connection.take_call() {
                Ok(slot) => slot,
                Err(status) => return Ok(status.into_http()),
            };
            let response = inner.oneshot(request).await?;
            drop(in_flight);
            Ok(response.map(|body| Body::new(Counted { body, _open: open })))
        })
    }
}

/// An answer's body that keeps its call counted open until it is dropped.
struct Counted {
    body: Body,
    _open: OpenCall,
}

impl http_body::Body for Counted {
    type Data = Bytes;
    type Error = Status;

    fn poll_frame(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Status>>> {
        Pin::new(&mut self.get_mut().body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}
