//! Match pairs for the coordinator's evaluation jobs: ask for a pair (`TakePair`, naming what
//! this worker can play besides models and the built-in players), download the models it needs,
//! play its two games and hand them in (`SubmitPair`, retried until the coordinator has them).
//!
//! With a share below 1 the worker self-plays beside one such loop, which rests after each pair
//! for as long as makes its time with pairs that share of the wall time; with a share of 1 it plays
//! matches only, one loop per thread. A pair that forfeits (an engine that failed) is not handed
//! in, nobody could check a forfeit: it is given back with the next `TakePair` with the reason
//! (as is one whose models would not download or load), and the coordinator hands it out again
//! (a pair that workers fail to play 5 times fails its match, with the last reason). When the
//! worker stops ([`MatchLoops::stop`]), each loop gives back the pair it holds, untried, so that
//! it goes out again at once instead of when the worker counts as gone, and counts as no failure.

use std::future::Future;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tracing::{debug, info, warn};
use xqz_arena::job::{Contestant, FAIRY_STOCKFISH, play_pair};
use xqz_arena::ladder::{self, Rung};
use xqz_arena::player::{EnginePlayer, Player, SearchPlayer};
use xqz_mcts::{MaterialEvaluator, SearchConfig, UniformEvaluator};
use xqz_proto::matches::{MAX_FAILURE_BYTES, pair_to_wire, spec_from_wire};
use xqz_proto::v1::{PairAssignment, PairRef, SubmitPairRequest, TakePairRequest};

use super::client::{Client, Failure, call, classify, wait};
use super::{ModelHost, RemoteConfig, models};
use crate::backoff::Backoff;

/// How long a worker waits before asking again when no pair is to be played.
const IDLE_POLL: Duration = Duration::from_secs(2);
/// How long stopping match loops have to give their pairs back.
const GIVE_BACK_GRACE: Duration = Duration::from_secs(5);

/// What this worker can play besides models and the built-in players.
pub fn capabilities() -> Vec<String> {
    ladder::fairy_stockfish().map(|_| vec![FAIRY_STOCKFISH.to_string()]).unwrap_or_default()
}

/// A worker's match loops, stopped together.
pub(super) struct MatchLoops {
    stop: watch::Sender<bool>,
    loops: Vec<JoinHandle<()>>,
}

impl MatchLoops {
    /// Starts `n` loops of [`play_matches`].
    pub(super) fn start<H: ModelHost>(
        n: usize,
        client: &Client,
        config: &RemoteConfig,
        worker_id: &str,
        host: &Arc<H>,
        share: f64,
    ) -> MatchLoops {
        let (stop, stopped) = watch::channel(false);
        let loops = (0..n)
            .map(|_| {
                let (client, config, id, host) = (client.clone(), config.clone(), worker_id.to_string(), host.clone());
                tokio::spawn(play_matches(client, config, id, host, share, stopped.clone()))
            })
            .collect();
        MatchLoops { stop, loops }
    }

    /// How many loops there are.
    pub(super) fn len(&self) -> usize {
        self.loops.len()
    }

    /// Stops the loops: each gives back the pair it holds, within [`GIVE_BACK_GRACE`] (a pair in
    /// play is dropped); then they end.
    pub(super) async fn stop(self) {
        self.stop.send_replace(true);
        let deadline = tokio::time::Instant::now() + GIVE_BACK_GRACE;
        for mut task in self.loops {
            if tokio::time::timeout_at(deadline, &mut task).await.is_err() {
                warn!("a match loop did not give its pair back in time");
                task.abort();
            }
        }
    }
}

/// `work`, unless `stop` turns true first (or its sender is gone): then `None`.
async fn unless_stopped<T>(stop: &mut watch::Receiver<bool>, work: impl Future<Output = T>) -> Option<T> {
    tokio::select! {
        done = work => Some(done),
        _ = stop.wait_for(|&stopping| stopping) => None,
    }
}

/// `reason` cut to the length the coordinator takes, at a character's boundary.
fn clipped(mut reason: String) -> String {
    if reason.len() > MAX_FAILURE_BYTES {
        let cut = (0..=MAX_FAILURE_BYTES).rev().find(|&i| reason.is_char_boundary(i)).unwrap_or(0);
        reason.truncate(cut);
    }
    reason
}

/// Plays match pairs until `stop`, resting after each so that pairs take `share` of the wall
/// time; then gives back the pair it holds.
async fn play_matches<H: ModelHost>(
    mut client: Client,
    config: RemoteConfig,
    worker_id: String,
    host: Arc<H>,
    share: f64,
    mut stop: watch::Receiver<bool>,
) {
    let can_play = capabilities();
    let mut backoff = Backoff::default();
    // The pair this loop holds the lease of and has not handed in, with why it could not play it
    // (empty: not tried); given back with the next request.
    let mut held: Option<(PairRef, String)> = None;
    loop {
        let (give_back, failure) = held.clone().map_or((None, String::new()), |(pair, why)| (Some(pair), why));
        let request = TakePairRequest {
            worker_id: worker_id.clone(),
            can_play: can_play.clone(),
            give_back,
            failure,
            stopping: false,
        };
        let Some(answer) = unless_stopped(&mut stop, call(client.take_pair(request))).await else { break };
        let assignment = match answer {
            Ok(answer) => answer.pair,
            Err(status) if classify(status.code()) == Failure::Fatal => {
                warn!(code = ?status.code(), reason = status.message(), "the coordinator hands out no match pairs; playing none");
                return;
            }
            Err(status) => {
                debug!(code = ?status.code(), reason = status.message(), "asking for a match pair failed");
                if unless_stopped(&mut stop, wait(&mut backoff)).await.is_none() {
                    break;
                }
                continue;
            }
        };
        backoff.reset();
        held = None;
        let Some(assignment) = assignment else {
            if unless_stopped(&mut stop, tokio::time::sleep(IDLE_POLL)).await.is_none() {
                break;
            }
            continue;
        };
        let started = Instant::now();
        let (id, pair) = (assignment.match_id, assignment.pair);
        let pair_ref = PairRef { match_id: id, pair };
        held = Some((pair_ref, String::new()));
        info!(match_id = id, pair, "playing match pair");
        let Some(played) = unless_stopped(&mut stop, play(&client, &config, &worker_id, &host, assignment)).await
        else {
            break;
        };
        match played {
            Ok(request) => {
                if unless_stopped(&mut stop, hand_in(&mut client, request)).await.is_none() {
                    break;
                }
                held = None;
            }
            Err(why) => {
                warn!(match_id = id, pair, reason = %why, "cannot play the match pair; giving it back");
                held = Some((pair_ref, clipped(why)));
            }
        }
        if share < 1.0 {
            let rest = started.elapsed().mul_f64((1.0 - share) / share.max(0.01));
            if unless_stopped(&mut stop, tokio::time::sleep(rest)).await.is_none() {
                break;
            }
        }
    }
    if let Some((pair, failure)) = held {
        let request = TakePairRequest { worker_id, can_play, give_back: Some(pair), failure, stopping: true };
        match call(client.take_pair(request)).await {
            Ok(_) => info!(match_id = pair.match_id, pair = pair.pair, "stopping: match pair given back"),
            Err(status) => {
                warn!(
                    match_id = pair.match_id,
                    pair = pair.pair,
                    reason = status.message(),
                    "stopping: the match pair could not be given back"
                )
            }
        }
    }
}

/// Plays the pair; why not, if it could not (a player forfeited, a model would not download or
/// load).
async fn play<H: ModelHost>(
    client: &Client,
    config: &RemoteConfig,
    worker_id: &str,
    host: &Arc<H>,
    assignment: PairAssignment,
) -> Result<SubmitPairRequest, String> {
    let wire = assignment.spec.as_ref().ok_or("the pair came without its match")?;
    let spec = spec_from_wire(wire).map_err(|e| e.to_string())?;
    let mut checkpoints = Vec::new();
    for model in &assignment.models {
        let path = models::download(client.clone(), &config.dir.join("models"), model)
            .await
            .map_err(|e| format!("model v{} could not be downloaded: {e}", model.version))?;
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
        Ok(games) => Ok(SubmitPairRequest {
            worker_id: worker_id.to_string(),
            match_id: assignment.match_id,
            pair,
            games: pair_to_wire(&games),
        }),
        Err(forfeit) => Err(format!("the {} side forfeited: {}", forfeit.loser, forfeit.reason)),
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
