//! The worker's side of every call: the bearer token on each, a deadline on unary calls, and
//! what a failure means for the call (retry, set the request aside, or stop).

use std::future::Future;
use std::time::Duration;

use tonic::metadata::{Ascii, MetadataValue};
use tonic::service::Interceptor;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::Channel;
use tonic::{Code, Status};
use xqz_proto::v1::coordinator_client::CoordinatorClient;

use crate::backoff::Backoff;

/// Longest wait for the answer to one unary call.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// Adds `authorization: Bearer <token>` to every call.
#[derive(Clone, Debug)]
pub struct Auth(pub(super) Option<MetadataValue<Ascii>>);

impl Interceptor for Auth {
    fn call(&mut self, mut request: tonic::Request<()>) -> Result<tonic::Request<()>, Status> {
        if let Some(value) = &self.0 {
            request.metadata_mut().insert("authorization", value.clone());
        }
        Ok(request)
    }
}

/// A coordinator client that authenticates every call.
pub type Client = CoordinatorClient<InterceptedService<Channel, Auth>>;

/// What to do after a failed call.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub(super) enum Failure {
    /// Try again later (network trouble, coordinator restarting or busy).
    Transient,
    /// The request itself is at fault: retrying it cannot succeed.
    Rejected,
    /// The worker cannot go on (wrong token, incompatible coordinator).
    Fatal,
}

pub(super) fn classify(code: Code) -> Failure {
    match code {
        // AlreadyExists: the batch's key was bound to other games; FailedPrecondition: a match
        // pair whose lease this worker does not hold. Resending cannot change either.
        Code::InvalidArgument | Code::ResourceExhausted | Code::AlreadyExists | Code::FailedPrecondition => {
            Failure::Rejected
        }
        Code::Unauthenticated | Code::PermissionDenied | Code::Unimplemented => Failure::Fatal,
        _ => Failure::Transient,
    }
}

/// A unary call with a deadline; running out of time reads as `DEADLINE_EXCEEDED`.
pub(super) async fn call<T>(fut: impl Future<Output = Result<tonic::Response<T>, Status>>) -> Result<T, Status> {
    call_within(CALL_TIMEOUT, fut).await
}

async fn call_within<T>(
    limit: Duration,
    fut: impl Future<Output = Result<tonic::Response<T>, Status>>,
) -> Result<T, Status> {
    match tokio::time::timeout(limit, fut).await {
        Ok(answer) => answer.map(tonic::Response::into_inner),
        Err(_) => Err(Status::deadline_exceeded("no answer in time")),
    }
}

/// Sleeps for the next backoff delay.
pub(super) async fn wait(backoff: &mut Backoff) {
    let delay = backoff.next_delay(&mut rand::rng());
    tokio::time::sleep(delay).await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_sorted_into_retry_reject_and_stop() {
        for code in [Code::Unavailable, Code::DeadlineExceeded, Code::Internal, Code::Unknown, Code::Aborted] {
            assert_eq!(classify(code), Failure::Transient, "{code:?}");
        }
        for code in [Code::InvalidArgument, Code::ResourceExhausted, Code::AlreadyExists, Code::FailedPrecondition] {
            assert_eq!(classify(code), Failure::Rejected, "{code:?}");
        }
        for code in [Code::Unauthenticated, Code::PermissionDenied, Code::Unimplemented] {
            assert_eq!(classify(code), Failure::Fatal, "{code:?}");
        }
    }

    #[test]
    fn the_token_rides_on_every_call_and_no_token_adds_nothing() {
        let mut auth = Auth(Some("Bearer s3cret".parse().unwrap()));
        let request = auth.call(tonic::Request::new(())).unwrap();
        assert_eq!(request.metadata().get("authorization").unwrap(), "Bearer s3cret");
        let request = Auth(None).call(tonic::Request::new(())).unwrap();
        assert!(request.metadata().get("authorization").is_none());
    }

    #[tokio::test]
    async fn a_call_without_an_answer_in_time_is_a_deadline_exceeded() {
        let never = std::future::pending::<Result<tonic::Response<()>, Status>>();
        let status = call_within(Duration::from_millis(10), never).await.unwrap_err();
        assert_eq!(status.code(), Code::DeadlineExceeded);
        let answered = call_within(Duration::from_secs(5), async { Ok(tonic::Response::new(7)) }).await;
        assert_eq!(answered.unwrap(), 7);
        let refused = call_within::<()>(Duration::from_secs(5), async { Err(Status::unavailable("down")) }).await;
        assert_eq!(refused.unwrap_err().code(), Code::Unavailable);
    }
}
