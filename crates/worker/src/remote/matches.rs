//! Match pairs for the coordinator's evaluation jobs: ask for a pair (`TakePair`, naming what
//! this worker can play besides models and the built-in players), download the models it needs,
//! play its two games and hand them in (`SubmitPair`, retried until the coordinator has them).
//!
//! With a share below 1 the worker self-plays beside one such loop, which rests after each pair
//! for as long as makes its time with pairs that share of the wall time; with a share of 1 it plays
//! matches only, one loop per thread. A pair that forfeits (an engine that failed) is not handed
//! in, nobody could check a forfeit: it is given back with the next `TakePair`, and the
//! coordinator hands it out again (a pair that goes out 5 times fails its match).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tracing::{debug, info, warn};
use xqz_arena::job::{Contestant, FAIRY_STOCKFISH, play_pair};
use xqz_arena::ladder::{self, Rung};
use xqz_arena::player::{EnginePlayer, Player, SearchPlayer};
use xqz_mcts::{MaterialEvaluator, SearchConfig, UniformEvaluator};
use xqz_proto::matches::{pair_to_wire, spec_from_wire};
use xqz_proto::v1::{PairAssignment, PairRef, SubmitPairRequest, TakePairRequest};

use super::client::{Client, Failure, call, classify, wait};
use super::{ModelHost, RemoteConfig, models};
use crate::backoff::Backoff;

/// How long a worker waits before asking again when no pair is to be played.
const IDLE_POLL: Duration = Duration::from_secs(2);

/// What this worker can play besides models and the built-in players.
pub fn capabilities() -> Vec<String> {
    ladder::fairy_stockfish().map(|_| vec![FAIRY_STOCKFISH.to_string()]).unwrap_or_default()
}

/// Plays match pairs for ever (the caller aborts the task), resting after each so that pairs take
/// `share` of the wall time.
pub(super) async fn play_matches<H: ModelHost>(
    mut client: Client,
    config: RemoteConfig,
    worker_id: String,
    host: Arc<H>,
    share: f64,
) {
    let can_play = capabilities();
    let mut backoff = Backoff::default();
    // A pair this worker could not play, given back with the next request.
    let mut give_back = None;
    loop {
        let request = TakePairRequest { worker_id: worker_id.clone(), can_play: can_play.clone(), give_back };
        let assignment = match call(client.take_pair(request)).await {
            Ok(answer) => answer.pair,
            Err(status) if classify(status.code()) == Failure::Fatal => {
                warn!(code = ?status.code(), reason = status.message(), "the coordinator hands out no match pairs; playing none");
                return;
            }
            Err(status) => {
                debug!(code = ?status.code(), reason = status.message(), "asking for a match pair failed");
                wait(&mut backoff).await;
                continue;
            }
        };
        backoff.reset();
        give_back = None;
        let Some(assignment) = assignment else {
            tokio::time::sleep(IDLE_POLL).await;
            continue;
        };
        let started = Instant::now();
        let (id, pair) = (assignment.match_id, assignment.pair);
        info!(match_id = id, pair, "playing match pair");
        match play(&client, &config, &worker_id, &host, assignment).await {
            Ok(Some(request)) => hand_in(&mut client, request).await,
            Ok(None) => give_back = Some(PairRef { match_id: id, pair }),
            Err(e) => {
                warn!(match_id = id, pair, error = %e, "cannot play the match pair; giving it back");
                give_back = Some(PairRef { match_id: id, pair });
            }
        }
        if share < 1.0 {
            tokio::time::sleep(started.elapsed().mul_f64((1.0 - share) / share.max(0.01))).await;
        }
    }
}

/// Plays the pair; `None` if a player forfeited.
async fn play<H: ModelHost>(
    client: &Client,
    config: &RemoteConfig,
    worker_id: &str,
    host: &Arc<H>,
    assignment: PairAssignment,
) -> Result<Option<SubmitPairRequest>, String> {
    let wire = assignment.spec.as_ref().ok_or("the pair came without its match")?;
    let spec = spec_from_wire(wire).map_err(|e| e.to_string())?;
    let mut checkpoints = Vec::new();
    for model in &assignment.models {
        let path =
            models::download(client.clone(), &config.dir.join("models"), model).await.map_err(|e| e.to_string())?;
        checkpoints.push((model.version, path));
    }
    let host = host.clone();
    let pair = assignment.pair;
    let played = tokio::task::spawn_blocking(move || {
        let mut a = player(&spec.a, &checkpoints, &*host)?;
        let mut b = player(&spec.b, &checkpoints, &*host)?;
        Ok::<_, String>(play_pair(&spec, pair, a.as_mut(), b.as_mut()))
    })
    .await
    .map_err(|e| format!("the pair's thread: {e}"))??;
    match played {
        Ok(games) => Ok(Some(SubmitPairRequest {
            worker_id: worker_id.to_string(),
            match_id: assignment.match_id,
            pair,
            games: pair_to_wire(&games),
        })),
        Err(forfeit) => {
            warn!(match_id = assignment.match_id, pair, reason = %forfeit.reason, "a player forfeited; giving the pair back");
            Ok(None)
        }
    }
}

/// A player for `contestant`, the models among `checkpoints` (version, metadata file).
fn player<H: ModelHost>(
    contestant: &Contestant,
    checkpoints: &[(u64, PathBuf)],
    host: &H,
) -> Result<Box<dyn Player>, String> {
    let search = SearchConfig::default();
    let name = contestant.name();
    Ok(match contestant {
        Contestant::Model { version, playouts } => {
            let (_, path) = checkpoints
                .iter()
                .find(|(v, _)| v == version)
                .ok_or_else(|| format!("model v{version} came without its announcement"))?;
            let evaluator = host.load_player(path).map_err(|e| e.to_string())?;
            Box::new(SearchPlayer::new(&name, evaluator, *playouts, search))
        }
        Contestant::Material { playouts } => Box::new(SearchPlayer::new(&name, MaterialEvaluator, *playouts, search)),
        Contestant::Uniform { playouts } => Box::new(SearchPlayer::new(&name, UniformEvaluator, *playouts, search)),
        Contestant::Rung { name } => {
            let rung = Rung::find(name).ok_or_else(|| format!("no rung {name}"))?;
            let program = ladder::fairy_stockfish().ok_or("Fairy-Stockfish is not installed here")?;
            let engine = EnginePlayer::spawn(rung.engine(program.to_string_lossy()), rung.limit());
            Box::new(engine.map_err(|e| e.to_string())?)
        }
    })
}

/// Sends the pair until the coordinator has it (or refuses it for good).
async fn hand_in(client: &mut Client, request: SubmitPairRequest) {
    let mut backoff = Backoff::default();
    loop {
        match call(client.submit_pair(request.clone())).await {
            Ok(answer) => {
                let job = answer.job.unwrap_or_default();
                info!(
                    match_id = request.match_id,
                    pair = request.pair,
                    counted = answer.counted,
                    games = job.wins + job.draws + job.losses,
                    "match pair handed in"
                );
                return;
            }
            Err(status) if classify(status.code()) == Failure::Transient => wait(&mut backoff).await,
            Err(status) => {
                warn!(match_id = request.match_id, pair = request.pair, code = ?status.code(), reason = status.message(), "match pair refused");
                return;
            }
        }
    }
}
