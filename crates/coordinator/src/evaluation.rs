//! Evaluation as a cluster job: the match RPCs (`SubmitMatch`, `ListMatches`, `TakePair`,
//! `SubmitPair`) over the [`Board`](crate::matches::Board), and the release of a model that a gate
//! held back from self-play once its match decides.

use std::collections::{HashMap, HashSet};

use tonic::{Request, Status};
use tracing::{info, warn};
use xqz_arena::job::replay_pair;
use xqz_dataset::GameResult;
use xqz_proto::matches::{MAX_FAILURE_BYTES, pair_from_wire, spec_from_wire};
use xqz_proto::v1::*;

use crate::matches::{Assignment, CountError, SubmitError};
use crate::service::{CoordinatorService, State, lock, now_ms, publisher_only};
use crate::validate::check_worker_id;

/// Most capabilities a `TakePair` may list, and the longest each may be.
const MAX_CAPABILITIES: usize = 16;
const MAX_CAPABILITY_BYTES: usize = 64;
/// Jobs in a page of `ListMatches` when the request names no size, and the most it may ask for.
const DEFAULT_PAGE: usize = 100;
const MAX_PAGE: usize = 1000;

/// A status for a failure of the coordinator's own storage.
fn internal(what: &str, e: impl std::fmt::Display) -> Status {
    Status::internal(format!("{what}: {e}"))
}

/// Announces a gated model that passed, or refuses one that failed; the settings follow an
/// announced model as they follow a published one.
pub(crate) fn release_gate(state: &State, model: u64, passed: bool) {
    let mut settings = state.settings.write().unwrap_or_else(|e| e.into_inner());
    match state.registry.release(model, passed) {
        Ok(true) if passed => {
            if let Err(e) = settings.on_model(model) {
                warn!(version = model, error = %e, "model announced, but the settings it brings could not be stored");
            }
            info!(version = model, "model passed its gating match and is announced");
        }
        Ok(true) => info!(version = model, "model lost its gating match and is never announced"),
        Ok(false) => {}
        Err(e) => {
            warn!(version = model, error = %e, "the gate's decision could not be stored; it is taken again at the next pair")
        }
    }
}

impl CoordinatorService {
    pub(crate) async fn submit_match(&self, request: Request<SubmitMatchRequest>) -> Result<MatchJob, Status> {
        publisher_only(&request, "submit matches")?;
        let wire = request.into_inner().spec.ok_or_else(|| Status::invalid_argument("the match has no spec"))?;
        let spec = spec_from_wire(&wire).map_err(|e| Status::invalid_argument(e.to_string()))?;
        for version in [spec.a.model(), spec.b.model()].into_iter().flatten() {
            if self.state.registry.get(version).is_none() {
                return Err(Status::failed_precondition(format!("no model v{version} is published")));
            }
        }
        let state = self.state.clone();
        let job = tokio::task::spawn_blocking(move || lock(&state.matches).submit(spec, None, now_ms()))
            .await
            .map_err(|e| internal("match task", e))?;
        match job {
            Ok(job) => {
                info!(match_id = job.id, a = job.a_name, b = job.b_name, "match submitted");
                Ok(job)
            }
            Err(e @ SubmitError::Full) => Err(Status::resource_exhausted(e.to_string())),
            Err(SubmitError::Store(e)) => Err(internal("storing the match", e)),
        }
    }

    /// A page of the jobs, newest first. A page token is the id of the job the page starts from.
    pub(crate) fn list_matches(&self, request: ListMatchesRequest) -> Result<ListMatchesResponse, Status> {
        let size = match request.page_size as usize {
            0 => DEFAULT_PAGE,
            size if size > MAX_PAGE => {
                return Err(Status::invalid_argument(format!("page_size is at most {MAX_PAGE}, not {size}")));
            }
            size => size,
        };
        let from = match request.page_token.as_str() {
            "" => None,
            token => Some(token.parse::<u64>().ok().filter(|&id| id > 0).ok_or_else(|| {
                Status::invalid_argument(format!("page_token {token:?} is not one that ListMatches gave"))
            })?),
        };
        let board = lock(&self.state.matches);
        let (jobs, next) = board.page(from, size);
        let next_page_token = next.map(|id| id.to_string()).unwrap_or_default();
        Ok(ListMatchesResponse { jobs, next_page_token, total: board.len() as u64 })
    }

    pub(crate) async fn take_pair(&self, request: TakePairRequest) -> Result<TakePairResponse, Status> {
        let state = &self.state;
        check_worker_id(&state.worker_ids, &request.worker_id)?;
        if request.can_play.len() > MAX_CAPABILITIES || request.can_play.iter().any(|c| c.len() > MAX_CAPABILITY_BYTES)
        {
            return Err(Status::invalid_argument(format!(
                "can_play lists at most {MAX_CAPABILITIES} names of at most {MAX_CAPABILITY_BYTES} bytes"
            )));
        }
        if request.failure.len() > MAX_FAILURE_BYTES {
            return Err(Status::invalid_argument(format!("failure is at most {MAX_FAILURE_BYTES} bytes")));
        }
        state.touch(&request.worker_id);
        if let Some(why) = lock(&state.matches).quarantined(&request.worker_id) {
            return Err(Status::permission_denied(why));
        }
        let live: HashSet<String> = state.live_workers().into_iter().map(|(id, _)| id).collect();
        let state = self.state.clone();
        let (failed_gate, assignment) = tokio::task::spawn_blocking(move || {
            let mut board = lock(&state.matches);
            let failure = Some(request.failure.as_str()).filter(|f| !f.is_empty());
            let failed_gate = match request.give_back {
                Some(PairRef { match_id, pair }) => board.give_back(&request.worker_id, match_id, pair, failure)?,
                None => None,
            };
            let assignment =
                (!request.stopping).then(|| board.take(&request.worker_id, &request.can_play, &|w| live.contains(w)));
            Ok::<_, crate::error::CoordinatorError>((failed_gate, assignment.flatten()))
        })
        .await
        .map_err(|e| internal("match task", e))?
        .map_err(|e| internal("storing the matches", e))?;
        if let Some((model, passed)) = failed_gate {
            release_gate(&self.state, model, passed);
        }
        let Some(Assignment { match_id, pair, spec }) = assignment else {
            return Ok(TakePairResponse { pair: None });
        };
        let models =
            [spec.a.model(), spec.b.model()].into_iter().flatten().filter_map(|v| self.state.registry.get(v)).collect();
        let spec = Some(xqz_proto::matches::spec_to_wire(&spec));
        Ok(TakePairResponse { pair: Some(PairAssignment { match_id, pair, spec, models }) })
    }

    pub(crate) async fn submit_pair(&self, request: SubmitPairRequest) -> Result<SubmitPairResponse, Status> {
        let state = self.state.clone();
        check_worker_id(&state.worker_ids, &request.worker_id)?;
        state.touch(&request.worker_id);
        let (id, pair) = (request.match_id, request.pair);
        let (spec, wanted) = {
            let board = lock(&state.matches);
            let spec = board.spec(id).cloned().ok_or_else(|| Status::not_found(format!("no match {id}")))?;
            let wanted = board.wants(id, pair);
            // Before the replay: a pair nobody leased to this worker costs no work.
            if wanted {
                board.check_lease(id, pair, &request.worker_id).map_err(count_status)?;
            }
            (spec, wanted)
        };
        let answer = |counted: bool| {
            let job = lock(&state.matches).get(id);
            SubmitPairResponse { counted, job }
        };
        if !wanted {
            return Ok(answer(false));
        }
        let worker = request.worker_id.clone();
        let games = pair_from_wire(&request.games).map_err(|e| Status::invalid_argument(e.to_string()))?;
        let board = state.clone();
        let counted = tokio::task::spawn_blocking(move || {
            let claimed = games.each_ref().map(|(_, result)| *result);
            let checked = replay_pair(&spec, pair, games.map(|(moves, _)| moves))
                .map_err(|e| Status::invalid_argument(format!("match {id}: {e}")))?;
            for (index, (game, claimed)) in checked.iter().zip(claimed).enumerate() {
                let ruled = GameResult::from_outcome(game.outcome).expect("checked games are over");
                if ruled != claimed {
                    return Err(Status::invalid_argument(format!(
                        "match {id}, pair {pair}, game {index}: the result is {}, not {}, by the match's rules",
                        ruled.name(),
                        claimed.name()
                    )));
                }
            }
            // The lease is checked again under the lock: it may have passed on during the replay.
            lock(&board.matches).count(id, pair, &worker, checked).map_err(count_status)
        })
        .await
        .map_err(|e| internal("match task", e))??;
        if let Some((model, passed)) = counted.gate {
            release_gate(&state, model, passed);
        }
        Ok(answer(counted.counted))
    }
}

/// The status of a pair that was not counted.
fn count_status(e: CountError) -> Status {
    match e {
        CountError::NoJob(_) => Status::not_found(e.to_string()),
        CountError::NotLeased { .. } => Status::failed_precondition(e.to_string()),
        CountError::Quarantined { .. } => Status::permission_denied(e.to_string()),
        e => internal("counting the pair", e),
    }
}

/// Settles every model that a gate holds without a running match: one whose match ended (the
/// decision was not stored, or the match was judged at the start: [`Board::open`]) is released
/// or refused by that match's result, the newest one's; one with no match at all (its
/// queueing failed, or a crash came between the publication and it) gets its gating match
/// queued again, against the newest model announced before it, or is announced if the
/// coordinator now runs without a gate. A match that cannot be queued for want of room refuses
/// its model; one that cannot be stored is tried again at the next call. Called at the start
/// and at every sweep.
///
/// [`Board::open`]: crate::matches::Board::open
pub(crate) fn settle_gates(state: &State) {
    let held = state.registry.held();
    // Held models are usually in their running match: that costs only a look at the board.
    if held.is_empty() || held.iter().all(|model| lock(&state.matches).gating().any(|m| m == *model)) {
        return;
    }
    let mut decided = Vec::new();
    {
        // A publication holds the settings' lock from the model's storing to its match's queueing.
        let _settings = state.settings.write().unwrap_or_else(|e| e.into_inner());
        let mut board = lock(&state.matches);
        let running: HashSet<u64> = board.gating().collect();
        let mut ended: HashMap<u64, bool> = HashMap::new();
        for (model, passed) in board.ended_gates() {
            ended.entry(model).or_insert(passed);
        }
        for model in held.into_iter().filter(|model| !running.contains(model)) {
            if let Some(&passed) = ended.get(&model) {
                decided.push((model, passed));
                continue;
            }
            let previous = state.registry.announced_before(model);
            let queued = match previous {
                Some(previous) => board.queue_gate(&state.evaluation, model, previous, now_ms()),
                None => Ok(None),
            };
            match queued {
                Ok(Some(id)) => {
                    info!(version = model, match_id = id, "a held model without a match has its gating match queued")
                }
                Ok(None) => {
                    info!(version = model, "a held model without a match is announced: no gate is set now");
                    decided.push((model, true));
                }
                Err(e @ SubmitError::Full) => {
                    warn!(version = model, error = %e, "a held model's gating match cannot be queued; the model is refused");
                    decided.push((model, false));
                }
                Err(SubmitError::Store(e)) => {
                    warn!(version = model, error = %e, "a held model's gating match could not be stored; tried again at the next sweep")
                }
            }
        }
    }
    for (model, passed) in decided {
        release_gate(state, model, passed);
    }
}
