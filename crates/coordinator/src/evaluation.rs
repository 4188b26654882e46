//! Evaluation as a cluster job: the match RPCs (`SubmitMatch`, `ListMatches`, `TakePair`,
//! `SubmitPair`) over the [`Board`](crate::matches::Board), and the release of a model that a gate
//! held back from self-play once its match decides.

use std::collections::HashSet;
use std::sync::Arc;

use tonic::{Request, Status};
use tracing::{info, warn};
use xqz_arena::job::replay_pair;
use xqz_dataset::GameResult;
use xqz_proto::matches::{pair_from_wire, spec_from_wire};
use xqz_proto::v1::*;

use crate::matches::{Assignment, CountError, SubmitError, Taken};
use crate::service::{CoordinatorService, State, lock, now_ms, publisher_only};
use crate::validate::check_worker_id;

/// Most capabilities a `TakePair` may list, and the longest each may be.
const MAX_CAPABILITIES: usize = 16;
const MAX_CAPABILITY_BYTES: usize = 64;

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

    pub(crate) fn list_matches(&self) -> ListMatchesResponse {
        ListMatchesResponse { jobs: lock(&self.state.matches).list() }
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
        state.touch(&request.worker_id);
        if let Some(why) = lock(&state.matches).quarantined(&request.worker_id) {
            return Err(Status::permission_denied(why));
        }
        let live: HashSet<String> = state.live_workers().into_iter().map(|(id, _)| id).collect();
        let state = self.state.clone();
        let Taken { assignment, failed_gates } = tokio::task::spawn_blocking(move || {
            let mut board = lock(&state.matches);
            if let Some(PairRef { match_id, pair }) = request.give_back {
                board.give_back(&request.worker_id, match_id, pair);
            }
            board.take(&request.worker_id, &request.can_play, &|w| live.contains(w))
        })
        .await
        .map_err(|e| internal("match task", e))?
        .map_err(|e| internal("storing the matches", e))?;
        for (model, passed) in failed_gates {
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

/// Ends the hold of models whose gating match decided while the gate's decision could not be
/// stored, and of models held by a match that no longer runs (both only after a failure).
pub(crate) fn settle_gates(state: &Arc<State>) {
    let (running, jobs): (HashSet<u64>, _) = {
        let board = lock(&state.matches);
        (board.gating().collect(), board.list())
    };
    for job in jobs {
        let model = job.gates_model;
        if model == 0 || running.contains(&model) {
            continue;
        }
        if state.registry.gate(model) == Some(crate::registry::Gate::Held) {
            release_gate(state, model, job.state == MatchState::H1 as i32);
        }
    }
}
