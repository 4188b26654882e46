//! The coordinator's HTTP side, on axum: the Prometheus metrics at `/metrics`, open as scrapers
//! expect, and the read-only [dashboard](crate::dashboard) (its page at `/`, its JSON under
//! `/api/`), which takes the coordinator's token when one is configured.

use std::sync::Arc;

use axum::extract::{Query, Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use serde::Deserialize;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::dashboard::ApiError;
use crate::service;

/// Requests handled at once; others wait. The largest answer (a game of a thousand plies with
/// the position after each) is a few hundred kilobytes, so this bounds the memory they take.
const MAX_CONCURRENT_REQUESTS: usize = 8;

/// The credentials that open the dashboard: the workers' token and the publisher's; none when
/// the coordinator has no token.
pub(crate) type Tokens = Arc<[Arc<str>]>;

/// The router: `/metrics` and the dashboard behind [`require_token`].
pub(crate) fn router(dashboard: Router, state: Arc<service::State>, tokens: Tokens) -> Router {
    Router::new()
        .route("/metrics", get(metrics))
        .with_state(state)
        .merge(dashboard.layer(middleware::from_fn_with_state(tokens, require_token)))
        .layer(tower::limit::ConcurrencyLimitLayer::new(MAX_CONCURRENT_REQUESTS))
}

/// Serves `router` on `listener` until `stop` turns true.
pub(crate) async fn serve(listener: TcpListener, router: Router, mut stop: watch::Receiver<bool>) {
    let stopped = async move {
        let _ = stop.wait_for(|s| *s).await;
    };
    // axum retries failed accepts itself, so serving ends only at the stop; there is nobody to
    // tell of an error at that point.
    let _ = axum::serve(listener, router).with_graceful_shutdown(stopped).await;
}

/// The metrics as Prometheus scrapes them.
async fn metrics(State(state): State<Arc<service::State>>) -> Response {
    xqz_metrics::response(state.metrics.render(state.workers_alive(), state.registry.latest_version()))
}

/// The page's way to send the token: a link that carries it, `/?token=...`, which the page
/// passes on to its requests.
#[derive(Deserialize)]
struct TokenQuery {
    token: Option<String>,
}

/// Lets a request through if no token is configured or it carries one of `tokens`, as
/// `Authorization: Bearer <token>` or `?token=<token>`.
async fn require_token(State(tokens): State<Tokens>, request: Request, next: Next) -> Response {
    if tokens.is_empty() {
        return next.run(request).await;
    }
    let bearer = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|h| h.strip_prefix("Bearer "))
        .map(str::to_string);
    let query = Query::<TokenQuery>::try_from_uri(request.uri()).ok().and_then(|q| q.0.token);
    match bearer.or(query) {
        Some(given) if tokens.iter().any(|t| crate::same_secret(given.as_bytes(), t.as_bytes())) => {
            next.run(request).await
        }
        Some(_) => unauthorized("wrong token"),
        None => unauthorized(
            "this dashboard needs the coordinator's token: open /?token=TOKEN, or send `Authorization: Bearer TOKEN`",
        ),
    }
}

fn unauthorized(message: &str) -> Response {
    let body = Json(ApiError { error: message.to_string() });
    (StatusCode::UNAUTHORIZED, [(header::WWW_AUTHENTICATE, "Bearer")], body).into_response()
}
