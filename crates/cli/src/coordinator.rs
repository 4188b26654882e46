//! `xqz coordinator`: serves the coordinator until Ctrl-C or SIGTERM.

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use xiangqi::game::Ruleset;
use xqz_coordinator::{CoordinatorConfig, Settings};

use crate::selfplay::SelfPlayRules;

/// Options of `xqz coordinator`.
#[derive(Args, Debug)]
pub struct CoordinatorArgs {
    /// gRPC address to listen on (port 0 picks a free port; the bound address is printed).
    #[arg(long)]
    listen: SocketAddr,
    /// Data folder: dataset/, models/ and the idempotency log.
    #[arg(long)]
    data: PathBuf,
    /// Bearer token every call must carry (none: no authentication).
    #[arg(long)]
    token: Option<String>,
    /// Address of the Prometheus metrics endpoint (plain HTTP), if any.
    #[arg(long)]
    metrics: Option<SocketAddr>,
    /// Repetition rules the games are adjudicated under: chinese2011, wxf or simple.
    #[arg(long, default_value = "chinese2011")]
    ruleset: Ruleset,
    /// Game length cap in plies (a max_length draw when reached; 0: no cap).
    #[arg(long, default_value_t = 300)]
    max_plies: u32,
    /// Playouts of a full search, for the workers.
    #[arg(long, default_value_t = 200)]
    playouts: u32,
    /// Playouts of a cheap search, for the workers.
    #[arg(long, default_value_t = 40)]
    cheap_playouts: u32,
    /// Move temperature after the opening plies, for the workers (0: the most visited move).
    #[arg(long, default_value_t = xqz_mcts::SelfPlayConfig::default().late_temperature)]
    late_temperature: f32,
    /// Softmax temperature of the network's priors at the root of full self-play searches (above
    /// 1 flattens them against the policy's collapse with few playouts).
    #[arg(long, default_value_t = xqz_mcts::SelfPlayConfig::default().root_policy_temperature, value_parser = crate::selfplay::parse_temperature)]
    root_policy_temperature: f32,
    #[command(flatten)]
    rules: SelfPlayRules,
}

/// Resolves on Ctrl-C or, on Unix, SIGTERM.
async fn stop_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => drop(tokio::signal::ctrl_c().await),
        }
    }
    #[cfg(not(unix))]
    drop(tokio::signal::ctrl_c().await);
}

/// Runs `xqz coordinator`.
pub fn run(args: &CoordinatorArgs) -> Result<()> {
    let mut config = CoordinatorConfig::new(args.listen, &args.data);
    config.token = args.token.clone().filter(|t| !t.is_empty());
    config.metrics = args.metrics;
    config.settings = Settings {
        ruleset: args.ruleset,
        max_plies: args.max_plies,
        playouts: args.playouts,
        cheap_playouts: args.cheap_playouts,
        late_temperature: args.late_temperature,
        root_policy_temperature: args.root_policy_temperature,
        material_adjudication: args.rules.material_adjudication,
        repeater_loses: args.rules.repeater_loses,
        policy_target: args.rules.policy_target.into(),
        mate_moves: args.rules.mate_search.mate_moves,
        ..Settings::default()
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting tokio")?;
    runtime.block_on(async {
        let running = xqz_coordinator::serve(config, stop_signal()).await.with_context(|| {
            format!("starting the coordinator on {} with data in {}", args.listen, args.data.display())
        })?;
        println!("listening on {}", running.addr());
        if let Some(metrics) = running.metrics_addr() {
            println!("metrics on http://{metrics}/metrics");
        }
        running.wait().await.context("coordinator stopped with an error")?;
        eprintln!("coordinator stopped");
        Ok(())
    })
}
