//! `xqz coordinator`: serves the coordinator until Ctrl-C or SIGTERM.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, Result};
use clap::{ArgMatches, Args};
use xqz_coordinator::{CoordinatorConfig, Evaluation};
use xqz_dataset::DatasetLocation;
use xqz_mcts::{PlaySchedule, PlaySettings};
use xqz_run_folder::Ready;

use crate::settings::SettingsFile;

/// Options of `xqz coordinator`.
#[derive(Args, Debug)]
pub struct CoordinatorArgs {
    /// gRPC address to listen on (port 0 picks a free port; the bound address is printed and
    /// written to --ready-file).
    #[arg(long)]
    listen: SocketAddr,
    /// Data folder: dataset/, models/, the settings history and the idempotency log.
    #[arg(long)]
    data: PathBuf,
    /// Where the games' dataset lives instead of DATA/dataset: a folder, or an object store prefix
    /// (s3://BUCKET/PREFIX, gs://BUCKET/PREFIX, az://CONTAINER/PREFIX) whose client reads the usual
    /// AWS_* (GOOGLE_*, AZURE_*) variables, e.g. AWS_ENDPOINT_URL and AWS_ALLOW_HTTP=true for a
    /// local S3-compatible server. One coordinator holds a prefix at a time.
    #[arg(long, value_parser = DatasetLocation::parse)]
    dataset: Option<DatasetLocation>,
    /// Keep a copy of the published models, the settings history and the worker-id key here (a
    /// folder or an object store prefix, as for --dataset), and with --dataset outside DATA the
    /// idempotency log: copied at start-up, at every publication and at a clean stop; a DATA
    /// folder without them is filled from it at start-up, so a lost volume loses no model.
    #[arg(long, value_parser = DatasetLocation::parse)]
    backup: Option<DatasetLocation>,
    /// The bearer token every call must carry (none: no authentication, which is refused on an
    /// address other than loopback unless --insecure).
    #[command(flatten)]
    token: crate::token::TokenArgs,
    #[command(flatten)]
    publisher_token: crate::token::PublisherTokenArgs,
    #[command(flatten)]
    tls: crate::token::ServerTlsArgs,
    /// Serve without a token on an address other than loopback (anyone who reaches it may submit
    /// games and publish models, or see the dashboard on a --metrics address off loopback).
    #[arg(long)]
    insecure: bool,
    /// Address of the HTTP endpoint (plain HTTP), if any: Prometheus metrics at /metrics and the
    /// read-only dashboard at / (which takes the token, if one is set, as ?token= or a bearer
    /// header; without a token, refused off loopback unless --insecure).
    #[arg(long)]
    metrics: Option<SocketAddr>,
    /// A run folder of `xqz run` whose trainer/metrics.csv and strength.csv the dashboard plots
    /// (without it, those panels say they are not available).
    #[arg(long)]
    run_folder: Option<PathBuf>,
    /// A settings file (TOML; its [play] and [schedule] sections), such as a run folder's
    /// settings.toml; flags given on the command line override it.
    #[arg(long)]
    settings: Option<PathBuf>,
    /// The opening suite that --opening-share of games start from (the only starts besides the
    /// standard one that games may have): an EPD file, one FEN per line, at most 100,000, or a
    /// book (.sqlite) whose `xqz book export --format epd` suite is taken.
    #[arg(long)]
    openings: Option<PathBuf>,
    /// Once serving, write `{"listen": ADDR, "metrics": ADDR or null}` to this file (for programs
    /// that start the coordinator).
    #[arg(long)]
    ready_file: Option<PathBuf>,
    /// Seconds a worker may be silent before it is counted lost (logged once, no longer counted
    /// alive); at least 1. Workers send a heartbeat every 5 s.
    #[arg(long, default_value_t = 60.0, value_parser = crate::parse_seconds)]
    alive_seconds: f64,
    /// Requests served at once (others wait). Memory is bounded by --max-request-mib-in-flight,
    /// not by this.
    #[arg(long, default_value_t = xqz_coordinator::Limits::default().max_concurrent_requests as u16,
          value_parser = clap::value_parser!(u16).range(1..=256))]
    max_concurrent_requests: u16,
    /// MiB of request messages in flight, counted by the length each declares before it is read
    /// (others wait); with their decoded forms, at most 17 times that, this bounds the memory
    /// requests take.
    #[arg(long, default_value_t = (xqz_coordinator::Limits::default().max_request_bytes_in_flight >> 20) as u16,
          value_parser = clap::value_parser!(u16).range(1..=4095))]
    max_request_mib_in_flight: u16,
    /// Connections open at once (a worker keeps one; the trainer, `xqz status` and probes open
    /// their own): past it the coordinator accepts no more until one closes, and further clients
    /// wait to connect. Each may buffer up to 8 MiB of request data it has not read.
    #[arg(long, default_value_t = xqz_coordinator::Limits::default().max_connections as u32,
          value_parser = clap::value_parser!(u32).range(1..=65536))]
    max_connections: u32,
    /// Seconds a connection may go without a call open before it is closed (a worker's model
    /// watch is a call that stays open), and that a client has to answer an HTTP/2 ping; at
    /// least 1.
    #[arg(long, default_value_t = xqz_coordinator::Limits::default().idle_timeout.as_secs_f64(),
          value_parser = crate::parse_seconds)]
    idle_seconds: f64,
    /// Calls one connection may have in flight; further ones are refused with UNAVAILABLE, which
    /// workers retry after a pause.
    #[arg(long, default_value_t = xqz_coordinator::Limits::default().max_calls_per_connection as u16,
          value_parser = clap::value_parser!(u16).range(1..=256))]
    max_calls_per_connection: u16,
    /// MiB of --max-request-mib-in-flight that the calls of one connection may hold; a call whose
    /// message would pass it is refused with UNAVAILABLE (one larger than it takes all of it).
    #[arg(long, default_value_t = (xqz_coordinator::Limits::default().max_request_bytes_per_connection >> 20) as u16,
          value_parser = clap::value_parser!(u16).range(1..=4095))]
    max_request_mib_per_connection: u16,
    /// Seconds a request's message may take to arrive (its prefix from the call's start; the
    /// message, and each one after it in a stream, once the call has its bytes of the budget);
    /// a slower call is ended with DEADLINE_EXCEEDED and gives its bytes back; at least 1.
    #[arg(long, default_value_t = xqz_coordinator::Limits::default().upload_timeout.as_secs_f64(),
          value_parser = crate::parse_seconds)]
    upload_seconds: f64,
    /// Queue a match of each published model against the newest announced one before it, of
    /// this many pairs, for workers with --eval-share to play (0: none). These flags override
    /// the settings file's [evaluation] section.
    #[arg(long, default_value_t = Evaluation::default().previous_pairs)]
    eval_previous_pairs: u32,
    /// Queue a match of each published model against this anchor too: `rung:NAME` (played by
    /// workers with Fairy-Stockfish), `material@N` or `uniform@N`.
    #[arg(long)]
    eval_anchor: Option<xqz_arena::job::Contestant>,
    /// Playouts of the models in these matches.
    #[arg(long, default_value_t = Evaluation::default().playouts)]
    eval_playouts: u32,
    /// Gate each model after the first: announced to self-play workers only once its match
    /// against the newest announced model accepts H1 of this SPRT (`ELO0,ELO1[,ALPHA,BETA]`),
    /// never if it accepts H0. The match plays up to 3 times the SPRT's expected pairs at ELO1
    /// (or --eval-previous-pairs if more); one undecided there passes if its LLR is positive.
    #[arg(long)]
    gate: Option<xqz_arena::stats::Sprt>,
    /// The share of match pairs that another worker plays again to check them, 0 to 1: copies
    /// that agree move for move count once, and a worker whose copy two others contradict is
    /// quarantined (docs/EVALUATION.md, "Audits"). Overrides the settings file's [evaluation].
    #[arg(long, default_value_t = Evaluation::default().audit_share)]
    audit_share: f64,
    /// Lift an audit's quarantine of this worker id at start (repeatable); its pairs that were
    /// discarded stay so (docs/SECURITY.md).
    #[arg(long, value_name = "WORKER_ID")]
    lift_quarantine: Vec<String>,
    #[command(flatten)]
    play: PlaySettings,
    #[command(flatten)]
    schedule: PlaySchedule,
}

/// The settings file's [evaluation] section with the flags given on the command line over it.
fn evaluation(args: &CoordinatorArgs, given: &ArgMatches) -> Result<Evaluation> {
    let mut evaluation = match &args.settings {
        Some(path) => SettingsFile::load(path)?.evaluation,
        None => Evaluation::default(),
    };
    let on_command_line = |id: &str| given.value_source(id) == Some(clap::parser::ValueSource::CommandLine);
    if on_command_line("eval_previous_pairs") {
        evaluation.previous_pairs = args.eval_previous_pairs;
    }
    if on_command_line("eval_anchor") {
        evaluation.anchor = args.eval_anchor.clone();
    }
    if on_command_line("eval_playouts") {
        evaluation.playouts = args.eval_playouts;
    }
    if on_command_line("gate") {
        evaluation.gate = args.gate;
    }
    if on_command_line("audit_share") {
        evaluation.audit_share = args.audit_share;
    }
    // Checked by `serve`, before it binds, as the play settings are.
    Ok(evaluation)
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

/// The request and connection limits the flags give.
fn limits(args: &CoordinatorArgs) -> Result<xqz_coordinator::Limits> {
    let seconds = |flag: &str, value: f64| {
        anyhow::ensure!(value >= 1.0, "--{flag} {value} is too short: at least 1");
        Ok(std::time::Duration::from_secs_f64(value))
    };
    Ok(xqz_coordinator::Limits {
        alive_window: seconds("alive-seconds", args.alive_seconds)?,
        max_concurrent_requests: usize::from(args.max_concurrent_requests),
        max_request_bytes_in_flight: usize::from(args.max_request_mib_in_flight) << 20,
        max_connections: args.max_connections as usize,
        idle_timeout: seconds("idle-seconds", args.idle_seconds)?,
        max_calls_per_connection: usize::from(args.max_calls_per_connection),
        max_request_bytes_per_connection: usize::from(args.max_request_mib_per_connection) << 20,
        upload_timeout: seconds("upload-seconds", args.upload_seconds)?,
        ..xqz_coordinator::Limits::default()
    })
}

/// Runs `xqz coordinator`.
pub fn run(args: &CoordinatorArgs, given: &ArgMatches) -> Result<()> {
    let mut config = CoordinatorConfig::new(args.listen, &args.data);
    config.token = args.token.resolve()?;
    config.publisher_token = args.publisher_token.resolve()?;
    config.tls = args.tls.resolve()?;
    anyhow::ensure!(
        config.publisher_token.is_none() || config.publisher_token != config.token,
        "the publisher token must differ from the workers' token, or workers could publish models"
    );
    anyhow::ensure!(
        config.token.is_some() || args.listen.ip().is_loopback() || args.insecure,
        "refusing to serve on {} without a token: give one with --token-file FILE or the {} variable, or pass \
         --insecure to serve anyone who reaches the address",
        args.listen,
        crate::token::TOKEN_ENV
    );
    anyhow::ensure!(
        config.token.is_some() || args.metrics.is_none_or(|at| at.ip().is_loopback()) || args.insecure,
        "refusing to serve the dashboard and metrics on {} without a token: give one with --token-file FILE or \
         the {} variable, or pass --insecure to show the run to anyone who reaches the address",
        args.metrics.map_or_else(String::new, |at| at.to_string()),
        crate::token::TOKEN_ENV
    );
    config.limits = limits(args)?;
    config.metrics = args.metrics;
    config.run_folder = args.run_folder.clone();
    config.dataset = args.dataset.clone();
    config.backup = args.backup.clone();
    // Checked by `serve`, before it binds.
    config.settings = SettingsFile::role(args.settings.as_deref(), |f| f.play, &args.play, given)?;
    config.schedule = SettingsFile::role(args.settings.as_deref(), |f| f.schedule, &args.schedule, given)?;
    config.openings = args.openings.as_deref().map(crate::book::load_suite).transpose()?.map(Arc::new);
    config.evaluation = evaluation(args, given)?;
    config.lift_quarantine = args.lift_quarantine.clone();
    let runtime = tokio::runtime::Builder::new_multi_thread().enable_all().build().context("starting tokio")?;
    runtime.block_on(async {
        let running = xqz_coordinator::serve(config, stop_signal()).await.with_context(|| {
            let dataset = args.dataset.as_ref().map_or_else(String::new, |d| format!(" and its dataset at {d}"));
            format!("starting the coordinator on {} with data in {}{dataset}", args.listen, args.data.display())
        })?;
        // This line on stdout is how scripts and tests learn the bound port; keep it first.
        println!("listening on {}", running.addr());
        if let Some(http) = running.metrics_addr() {
            println!("metrics on http://{http}/metrics, dashboard on http://{http}/");
        }
        tracing::info!(
            listen = %running.addr(),
            http = running.metrics_addr().map(|a| a.to_string()),
            data = %args.data.display(),
            "coordinator serving"
        );
        if let Some(path) = &args.ready_file {
            Ready { listen: running.addr(), metrics: running.metrics_addr() }.write(path)?;
        }
        running.wait().await.context("coordinator stopped with an error")?;
        tracing::info!("coordinator stopped");
        Ok(())
    })
}
