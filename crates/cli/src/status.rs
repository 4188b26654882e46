//! `xqz status`: a running coordinator's state at a glance (its `GetStats` and its matches).

use anyhow::Result;
use clap::Args;
use xqz_proto::v1::GetStatsRequest;

use crate::eval_jobs::{CoordinatorArgs, job_json, job_line, refused};

/// Options of `xqz status`.
#[derive(Args)]
pub struct StatusArgs {
    #[command(flatten)]
    coordinator: CoordinatorArgs,
    /// One JSON object (the fields of the API's `Stats` message, and `matches`: the jobs as
    /// `xqz eval jobs --json` gives them) instead of lines for people.
    #[arg(long)]
    json: bool,
}

pub fn run(args: &StatusArgs) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let (stats, jobs) = runtime.block_on(async {
        let mut client = args.coordinator.connect().await?;
        let stats = client.get_stats(args.coordinator.request(GetStatsRequest {})?).await.map_err(refused)?;
        let jobs = args.coordinator.all_jobs(&mut client).await?;
        Ok::<_, anyhow::Error>((stats.into_inner(), jobs))
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
            "matches": jobs.iter().map(job_json).collect::<Vec<_>>(),
        });
        println!("{line}");
    } else {
        println!("coordinator {}", args.coordinator.coordinator);
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
        for job in jobs.iter().take(10) {
            println!("  {}", job_line(job));
        }
    }
    Ok(())
}
