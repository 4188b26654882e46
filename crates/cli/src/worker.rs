//! `xqz worker`: self-play for a coordinator (see `xqz_worker::remote`).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::Result;
use clap::Args;
use tch::Device;
use xqz_net::service::{Client, InferenceService, ServiceConfig};
use xqz_net::{ModelConfig, Network, checkpoint};
use xqz_worker::remote::{InstallError, ModelHost, RemoteConfig, Session};

/// Options of `xqz worker`.
#[derive(Args)]
pub struct WorkerArgs {
    /// The coordinator's URL, e.g. `http://host:50051`.
    #[arg(long)]
    coordinator: String,
    #[command(flatten)]
    token: crate::token::TokenArgs,
    #[command(flatten)]
    tls: crate::token::ClientTlsArgs,
    /// Search threads.
    #[arg(long, default_value_t = 1)]
    threads: usize,
    /// Games each thread plays at once (their leaves share one evaluator batch).
    #[arg(long, default_value_t = 32)]
    games_per_thread: usize,
    /// The worker's folder: upload spool, rejected batches, downloaded models.
    #[arg(long, default_value = "xqz-worker")]
    dir: PathBuf,
    #[command(flatten)]
    device: crate::model::DeviceArg,
    /// Config of the random network played with until a model is published (tiny, mid, ...; the
    /// default is the trainer's).
    #[arg(long, default_value_t = xqz_trainer::TrainSettings::default().model)]
    init_model: String,
    /// On SIGTERM or Ctrl-C, how long games in progress may take to finish before they are
    /// dropped (finished games are then uploaded for up to 10 more seconds).
    #[arg(long, default_value_t = 15.0, value_parser = crate::parse_seconds)]
    drain_seconds: f64,
    /// Stop after this many games are played and uploaded.
    #[arg(long)]
    max_games: Option<u64>,
    /// Name to register under (default: host name and process id).
    #[arg(long)]
    name: Option<String>,
    /// Serve Prometheus metrics (games, moves, evaluations, uploads, model version) at
    /// `http://ADDR/metrics`, e.g. `0.0.0.0:9091`; they hold no secrets.
    #[arg(long)]
    metrics: Option<std::net::SocketAddr>,
    /// Share of the time (0 to 1) spent playing the coordinator's evaluation matches (`xqz eval
    /// submit`, the matches of new models): 0 none, 1 only those (no self-play, one pair at a
    /// time per thread). Rungs are played where Fairy-Stockfish is installed.
    #[arg(long, default_value_t = 0.0, value_parser = parse_share)]
    eval_share: f64,
}

fn parse_share(text: &str) -> Result<f64, String> {
    match text.parse::<f64>() {
        Ok(share) if (0.0..=1.0).contains(&share) => Ok(share),
        _ => Err(format!("{text:?} is not a share from 0 to 1")),
    }
}

/// Match players' networks kept loaded: a match plays the same two models pair after pair.
const PLAYER_NETS: usize = 4;

/// The network behind an inference service; installing a model swaps it between batches.
struct NetHost {
    service: InferenceService,
    device: Device,
    /// The networks of match players, by checkpoint, most recently used last.
    players: Mutex<Vec<(PathBuf, InferenceService)>>,
}

impl ModelHost for NetHost {
    type Evaluator = Client;

    fn evaluator(&self) -> Client {
        self.service.client()
    }

    fn install(&self, path: &Path) -> Result<(), InstallError> {
        let failed = |source: Box<dyn std::error::Error + Send + Sync>| InstallError { path: path.into(), source };
        let (net, _) = checkpoint::load(path, self.device, None).map_err(|e| failed(e.into()))?;
        self.service.swap(net).map_err(|e| failed(e.into()))
    }

    type Player = Client;

    fn load_player(&self, path: &Path) -> Result<Client, InstallError> {
        let mut players = self.players.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(at) = players.iter().position(|(p, _)| p == path) {
            let found = players.remove(at);
            players.push(found);
        } else {
            let (net, _) = checkpoint::load(path, self.device, None)
                .map_err(|e| InstallError { path: path.into(), source: e.into() })?;
            if players.len() >= PLAYER_NETS {
                players.remove(0);
            }
            // Evaluation jobs play in single precision whatever `--precision` self-play runs
            // in, so that a job's figure does not depend on the flags of the workers it ran on.
            players.push((path.to_path_buf(), InferenceService::spawn(net, ServiceConfig::default())));
        }
        Ok(players.last().expect("just pushed").1.client())
    }
}

fn default_name() -> String {
    let host = std::env::var("HOSTNAME").unwrap_or_else(|_| "worker".into());
    format!("{host}-{}", std::process::id())
}

pub fn run(args: WorkerArgs) -> Result<()> {
    let device = args.device.resolve()?;
    let init = ModelConfig::resolve(&args.init_model)?;
    let mut registry = xqz_metrics::Registry::default();
    let metrics = xqz_worker::WorkerMetrics::register(&mut registry);
    let _server = crate::metrics::serve(args.metrics, registry, "worker")?;
    let config = RemoteConfig {
        coordinator: args.coordinator,
        token: args.token.resolve()?,
        tls: args.tls.resolve()?,
        dir: args.dir,
        name: args.name.unwrap_or_else(default_name),
        threads: args.threads,
        games_per_thread: args.games_per_thread,
        max_games: args.max_games,
        batch_games: 16,
        batch_interval: Duration::from_secs(5),
        heartbeat_interval: Duration::from_secs(5),
        drain: Duration::from_secs_f64(args.drain_seconds),
        metrics,
        eval_share: args.eval_share,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build()?;
    runtime.block_on(async move {
        let session = tokio::select! {
            session = Session::connect(config) => session?,
            () = shutdown_signal() => return Ok(()),
        };
        tracing::info!(worker = session.worker_id(), "registered");
        let (net, version) = match session.current_model().cloned() {
            Some(model) => {
                let path = session.download(&model).await?;
                let net = tokio::task::spawn_blocking(move || crate::model::load(&path, device)).await??.0;
                (net, model.version)
            }
            None => {
                tracing::info!(model = %init.name, "no model published yet; a random network plays");
                (tokio::task::spawn_blocking(move || Network::new(&init, device)).await?, 0)
            }
        };
        let config = args.device.service(crate::model::SELF_PLAY_PRECISION);
        tracing::info!(model_version = version, precision = %config.precision.on(device), "playing with model");
        let service = InferenceService::spawn(net, config);
        let host = Arc::new(NetHost { service, device, players: Mutex::new(Vec::new()) });
        let uploaded = session.run(host, version, shutdown_signal()).await?;
        tracing::info!(uploaded, "done");
        Ok(())
    })
}

/// Resolves on SIGINT or SIGTERM.
async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("install the SIGTERM handler");
        tokio::select! {
            _ = interrupt => {}
            _ = terminate.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = interrupt.await;
    }
}
