//! `--metrics ADDR` of the roles that serve their Prometheus metrics on a port of their own (the
//! worker, the trainer; the coordinator serves them beside its dashboard).

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::{Context, Result};
use xqz_metrics::{Registry, Server};

/// Serves `registry` at `http://ADDR/metrics` if an address was given, and says where.
pub fn serve(addr: Option<SocketAddr>, registry: Registry, role: &str) -> Result<Option<Server>> {
    let Some(addr) = addr else { return Ok(None) };
    let server = Server::start(addr, Arc::new(registry)).with_context(|| format!("serving metrics on {addr}"))?;
    tracing::info!(role, address = %server.addr(), "serving metrics at http://{}/metrics", server.addr());
    Ok(Some(server))
}
