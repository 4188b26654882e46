//! `xqz status`: a running coordinator's state at a glance (its `GetStats`).

use anyhow::{Context, Result};
use clap::Args;
use tonic::metadata::MetadataValue;
use xqz_proto::v1::GetStatsRequest;
use xqz_proto::v1::coordinator_client::CoordinatorClient;

/// Options of `xqz status`.
#[derive(Args)]
pub struct StatusArgs {
    /// The coordinator (`http://HOST:PORT`, or `https://` with --tls-ca).
    #[arg(long, default_value = "http://127.0.0.1:50051")]
    coordinator: String,
    #[command(flatten)]
    token: crate::token::TokenArgs,
    #[command(flatten)]
    tls: crate::token::ClientTlsArgs,
    /// One JSON object (the fields of the API's `Stats` message) instead of lines for people.
    #[arg(long)]
    json: bool,
}

pub fn run(args: &StatusArgs) -> Result<()> {
    let endpoint = xqz_proto::tls::endpoint(&args.coordinator, args.tls.resolve()?.as_ref())?;
    let token = args.token.resolve()?;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let stats = runtime.block_on(async {
        let channel = endpoint.connect().await.with_context(|| format!("connecting to {}", args.coordinator))?;
        let mut request = tonic::Request::new(GetStatsRequest {});
        if let Some(token) = token {
            let value: MetadataValue<_> = format!("Bearer {token}").parse().context("the token")?;
            request.metadata_mut().insert("authorization", value);
        }
        let reply = CoordinatorClient::new(channel).get_stats(request).await;
        reply.map(tonic::Response::into_inner).map_err(|s| anyhow::anyhow!("{}: {}", s.code(), s.message()))
    })?;
    if args.json {
        let by_model: Vec<_> = stats
            .games_by_model
            .iter()
            .map(|m| serde_json::json!({ "model_version": m.model_version, "games": m.games }))
            .collect();
        let line = serde_json::json!({
            "games": stats.games,
            "samples": stats.samples,
            "rejected_batches": stats.rejected_batches,
            "workers_alive": stats.workers_alive,
            "latest_model_version": stats.latest_model_version,
            "games_by_model": by_model,
            "duplicate_games": stats.duplicate_games,
        });
        println!("{line}");
    } else {
        println!("coordinator {}", args.coordinator);
        println!("  model        v{}", stats.latest_model_version);
        println!("  workers      {} alive (heard from in the last minute)", stats.workers_alive);
        println!("  games        {} ({} positions)", stats.games, stats.samples);
        println!(
            "  refused      {} batches; {} duplicate games skipped",
            stats.rejected_batches, stats.duplicate_games
        );
        let recent: Vec<String> =
            stats.games_by_model.iter().rev().take(5).map(|m| format!("v{}: {}", m.model_version, m.games)).collect();
        if !recent.is_empty() {
            println!("  games of the latest models  {}", recent.join(", "));
        }
    }
    Ok(())
}
