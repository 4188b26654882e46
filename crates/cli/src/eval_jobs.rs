//! `xqz eval submit` and `xqz eval jobs`: matches that a coordinator's workers play (its
//! `SubmitMatch` and `ListMatches`), and each job as one JSON object (also in `xqz status --json`).

use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;
use tonic::metadata::MetadataValue;
use tonic::transport::Channel;
use xiangqi::game::Ruleset;
use xqz_arena::job::{Contestant, MatchSpec, OpeningChoice};
use xqz_arena::stats::Sprt;
use xqz_proto::matches::state_name;
use xqz_proto::v1::coordinator_client::CoordinatorClient;
use xqz_proto::v1::{ListMatchesRequest, MatchJob, MatchState, SubmitMatchRequest};

use crate::results::{EXIT_H0, EXIT_UNDECIDED};

/// Where the coordinator is and how to reach it.
#[derive(Args, Clone)]
pub struct CoordinatorArgs {
    /// The coordinator (`http://HOST:PORT`, or `https://` with --tls-ca).
    #[arg(long, default_value = "http://127.0.0.1:50051")]
    pub coordinator: String,
    #[command(flatten)]
    pub token: crate::token::TokenArgs,
    #[command(flatten)]
    pub tls: crate::token::ClientTlsArgs,
}

impl CoordinatorArgs {
    /// Connects; every call made with [`CoordinatorArgs::request`] carries the token.
    pub async fn connect(&self) -> Result<CoordinatorClient<Channel>> {
        let endpoint = xqz_proto::tls::endpoint(&self.coordinator, self.tls.resolve()?.as_ref())?;
        let channel = endpoint.connect().await.with_context(|| format!("connecting to {}", self.coordinator))?;
        Ok(CoordinatorClient::new(channel).max_decoding_message_size(64 << 20))
    }

    /// Every match job, newest first, page by page.
    pub async fn all_jobs(&self, client: &mut CoordinatorClient<Channel>) -> Result<Vec<MatchJob>> {
        let mut jobs = Vec::new();
        let mut page_token = String::new();
        loop {
            let request = self.request(ListMatchesRequest { page_size: 0, page_token })?;
            let page = client.list_matches(request).await.map_err(refused)?.into_inner();
            jobs.extend(page.jobs);
            if page.next_page_token.is_empty() {
                return Ok(jobs);
            }
            page_token = page.next_page_token;
        }
    }

    /// `message` with the bearer token, if one is given.
    pub fn request<T>(&self, message: T) -> Result<tonic::Request<T>> {
        let mut request = tonic::Request::new(message);
        if let Some(token) = self.token.resolve()? {
            let value: MetadataValue<_> = format!("Bearer {token}").parse().context("the token")?;
            request.metadata_mut().insert("authorization", value);
        }
        Ok(request)
    }
}

/// A failed call as an error that says what the coordinator said.
pub fn refused(status: tonic::Status) -> anyhow::Error {
    anyhow::anyhow!("the coordinator answered {:?}: {}", status.code(), status.message())
}

/// Options of `xqz eval submit`.
#[derive(Args)]
pub struct SubmitArgs {
    #[command(flatten)]
    coordinator: CoordinatorArgs,
    /// First player (scores are its): `vN@PLAYOUTS` (a published model), `material@PLAYOUTS`,
    /// `uniform@PLAYOUTS` or `rung:NAME` (a rung of the ladder, played by workers that have
    /// Fairy-Stockfish).
    #[arg(long)]
    a: Contestant,
    /// Second player, as for `--a`.
    #[arg(long)]
    b: Contestant,
    /// Pairs of games at most (each opening with both colours).
    #[arg(long, default_value_t = 50)]
    pairs: u32,
    /// Sequential test that ends the match: `ELO0,ELO1[,ALPHA,BETA][,normalized]`.
    #[arg(long)]
    sprt: Option<Sprt>,
    /// Openings: `balanced` (the suite built in) or `random` (--random-plies random moves from
    /// --seed). Default: balanced where a rung plays, else random, as in `xqz eval match`.
    #[arg(long, value_parser = ["balanced", "random"])]
    openings: Option<String>,
    /// Plies of each random opening.
    #[arg(long, default_value_t = 4)]
    random_plies: u32,
    /// Seed of the random openings.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Repetition rules; default wxf where a rung plays (Fairy-Stockfish's), else chinese2011.
    #[arg(long)]
    ruleset: Option<Ruleset>,
    /// Game length cap in plies (a draw when reached).
    #[arg(long, default_value_t = 300)]
    max_plies: u32,
    /// A game that reaches the cap this many pawns ahead is won (default: drawn).
    #[arg(long)]
    material_adjudication: Option<u32>,
    /// Wait until the match ends, printing its standing as pairs come in; the exit status is then
    /// that of `xqz eval match --sprt` (0 H1 or no test, 10 H0, 11 undecided, 1 failed).
    #[arg(long)]
    wait: bool,
    /// Print the job as one JSON object (at the end, with --wait).
    #[arg(long)]
    json: bool,
}

impl SubmitArgs {
    fn spec(&self) -> MatchSpec {
        let mut spec = MatchSpec::new(self.a.clone(), self.b.clone(), self.pairs);
        match self.openings.as_deref() {
            Some("balanced") => spec.openings = OpeningChoice::Balanced,
            Some(_) => spec.openings = OpeningChoice::Random { plies: self.random_plies, seed: self.seed },
            None => {
                if let OpeningChoice::Random { .. } = spec.openings {
                    spec.openings = OpeningChoice::Random { plies: self.random_plies, seed: self.seed };
                }
            }
        }
        spec.ruleset = self.ruleset.unwrap_or(spec.ruleset);
        spec.max_plies = self.max_plies;
        spec.material_adjudication = self.material_adjudication;
        spec.sprt = self.sprt;
        spec
    }
}

/// One job as a JSON object: the fields of the API's `MatchJob`, the state by name.
pub fn job_json(job: &MatchJob) -> serde_json::Value {
    serde_json::json!({
        "id": job.id,
        "a": job.a_name,
        "b": job.b_name,
        "state": state_name(job.state),
        "pairs": job.spec.as_ref().map_or(0, |s| s.pairs),
        "wins": job.wins,
        "draws": job.draws,
        "losses": job.losses,
        "pentanomial": job.pentanomial,
        "elo": job.elo,
        "elo_lower": job.elo_lower,
        "elo_upper": job.elo_upper,
        "llr": job.llr,
        "llr_bounds": [job.llr_lower, job.llr_upper],
        "pairs_in_flight": job.pairs_in_flight,
        "failure": job.failure,
        "gates_model": job.gates_model,
        "created_ms": job.created_ms,
        "workers": job.workers.iter().map(|w| serde_json::json!({
            "worker": w.worker_id,
            "pentanomial": w.pentanomial,
            "residual": w.residual,
            "marked": w.residual.abs() > xqz_coordinator::RESIDUAL_MARK,
            "quarantined": w.quarantined,
        })).collect::<Vec<_>>(),
        "pairs_audited": job.pairs_audited,
        "pairs_held": job.pairs_held,
        "audits_inconclusive": job.audits_inconclusive,
        "quarantines": job.quarantines.iter().map(|q| serde_json::json!({
            "worker": q.worker_id,
            "why": q.why,
            "pairs_discarded": q.pairs_discarded,
            "at_ms": q.at_ms,
        })).collect::<Vec<_>>(),
    })
}

/// The lines under a job's for people: each worker's pairs and residual (marked `!` past
/// [`RESIDUAL_MARK`](xqz_coordinator::RESIDUAL_MARK) standard errors), the audits and each
/// quarantine.
pub fn worker_lines(job: &MatchJob) -> Vec<String> {
    let mut lines: Vec<String> = (job.workers.iter())
        .map(|w| {
            let pairs: u64 = w.pentanomial.iter().sum();
            let mark = match () {
                _ if w.quarantined => "  quarantined",
                _ if w.residual.abs() > xqz_coordinator::RESIDUAL_MARK => "  ! past 3 standard errors",
                _ => "",
            };
            format!("  worker {}: {pairs} pairs {:?}, residual {:+.2}{mark}", w.worker_id, w.pentanomial, w.residual)
        })
        .collect();
    if job.pairs_audited + job.pairs_held + job.audits_inconclusive > 0 || !job.quarantines.is_empty() {
        lines.push(format!(
            "  audits: {} pairs agreed, {} held for a copy, {} inconclusive",
            job.pairs_audited, job.pairs_held, job.audits_inconclusive
        ));
    }
    for q in &job.quarantines {
        lines.push(format!("  quarantined {} ({} pairs discarded): {}", q.worker_id, q.pairs_discarded, q.why));
    }
    lines
}

/// One job as a line for people.
pub fn job_line(job: &MatchJob) -> String {
    let games = job.wins + job.draws + job.losses;
    let sprt = match job.llr_upper {
        0.0 => String::new(),
        upper => format!(", LLR {:+.2} [{:.2}, {upper:.2}]", job.llr, job.llr_lower),
    };
    format!(
        "match {} {} vs {}: {} | {games} games +{} ={} -{} | Elo {:+.1} [{:+.1}, {:+.1}]{sprt} | {} pairs in flight",
        job.id,
        job.a_name,
        job.b_name,
        state_name(job.state),
        job.wins,
        job.draws,
        job.losses,
        job.elo,
        job.elo_lower,
        job.elo_upper,
        job.pairs_in_flight
    )
}

/// Runs `xqz eval submit`.
pub fn submit(args: &SubmitArgs) -> Result<ExitCode> {
    let spec = args.spec();
    spec.validate()?;
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    runtime.block_on(async {
        let mut client = args.coordinator.connect().await?;
        let request =
            args.coordinator.request(SubmitMatchRequest { spec: Some(xqz_proto::matches::spec_to_wire(&spec)) })?;
        let mut job = client.submit_match(request).await.map_err(refused)?.into_inner();
        if !args.json {
            println!("{}", job_line(&job));
        }
        let mut seen = job.wins + job.draws + job.losses;
        while args.wait && job.state == MatchState::Running as i32 {
            tokio::time::sleep(Duration::from_secs(2)).await;
            // A page of one, starting from the job.
            let request = ListMatchesRequest { page_size: 1, page_token: job.id.to_string() };
            let jobs = client.list_matches(args.coordinator.request(request)?).await.map_err(refused)?;
            job = jobs.into_inner().jobs.into_iter().find(|j| j.id == job.id).context("the match is gone")?;
            let games = job.wins + job.draws + job.losses;
            if games != seen && !args.json {
                println!("{}", job_line(&job));
            }
            seen = games;
        }
        if args.json {
            println!("{}", job_json(&job));
        } else if args.wait && !job.failure.is_empty() {
            println!("failed: {}", job.failure);
        }
        Ok(ExitCode::from(match MatchState::try_from(job.state) {
            _ if !args.wait => 0,
            Ok(MatchState::H0) => EXIT_H0,
            Ok(MatchState::Finished) if job.llr_upper != 0.0 => EXIT_UNDECIDED,
            Ok(MatchState::Failed) => 1,
            _ => 0,
        }))
    })
}

/// Runs `xqz eval jobs`.
pub fn jobs(coordinator: &CoordinatorArgs, json: bool) -> Result<()> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let jobs = runtime.block_on(async {
        let mut client = coordinator.connect().await?;
        coordinator.all_jobs(&mut client).await
    })?;
    for job in &jobs {
        if json {
            println!("{}", job_json(job));
        } else {
            println!("{}", job_line(job));
            worker_lines(job).iter().for_each(|line| println!("{line}"));
        }
    }
    if jobs.is_empty() && !json {
        println!("no matches at {}", coordinator.coordinator);
    }
    Ok(())
}
