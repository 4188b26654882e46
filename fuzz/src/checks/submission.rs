//! The coordinator's submission path: bytes -> `SubmitGamesRequest` -> `check_request` ->
//! `validate_games`, the checks the service runs before it stores a batch.
//!
//! The first byte picks the form of the rest. Raw: a protobuf request, decoded as the service
//! decodes it; its worker id is sometimes replaced by one the coordinator issued (which the
//! fuzzer cannot forge) so that raw requests reach the game checks. Structured: play settings,
//! and valid games played under them with moves picked by the bytes, encoded as a worker encodes
//! them; then a few mutations of the request, some of them on its encoded bytes.
//!
//! Checks: nothing panics; only the issued worker id passes `check_request`; an unmutated
//! structured request is accepted; and every accepted game replays legally from an allowed start
//! to exactly the claimed end, and its records carry exactly what was submitted.

use std::sync::OnceLock;

use arbitrary::{Result, Unstructured};
use prost::Message;
use xiangqi::Position;
use xiangqi::game::{Game, Ruleset};
use xqz_coordinator::{Against, Limits, SettingsHistory, WorkerIds, check_request, validate_games};
use xqz_dataset::{GameId, GameRecord, GameResult, PlySearch, PolicyEntry, SampleRecord};
use xqz_mcts::{OpeningSuite, PlaySettings};
use xqz_proto::v1::{GameSubmission, SubmitGamesRequest};

/// A position one move from the start (after h2e2): the opening suite's only position.
const CANNON: &str = "rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C2C4/9/RNBAKABNR b - - 1 1";

/// What every input is checked against: a coordinator's worker ids, one id they issued, and the
/// opening suite.
struct Context {
    ids: WorkerIds,
    worker: String,
    suite: OpeningSuite,
}

fn context() -> &'static Context {
    static CONTEXT: OnceLock<Context> = OnceLock::new();
    CONTEXT.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("xqz-fuzz-submission-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let ids = WorkerIds::open(&dir).unwrap();
        // The key is in memory now; the folder would only be litter.
        std::fs::remove_dir_all(&dir).unwrap();
        let worker = ids.issue("fuzz");
        Context { ids, worker, suite: OpeningSuite::parse(CANNON).unwrap() }
    })
}

/// Play settings in which games end soon: a cap of at most 24 plies.
fn settings(u: &mut Unstructured) -> Result<PlaySettings> {
    Ok(PlaySettings {
        ruleset: *u.choose(&[Ruleset::Chinese2011, Ruleset::Wxf, Ruleset::Simple])?,
        max_plies: u.int_in_range(1..=24)?,
        material_adjudication: u.int_in_range(0..=3)?,
        repeater_loses: u.arbitrary()?,
        resign: u.arbitrary()?,
        resign_threshold: *u.choose(&[-0.9, -0.5, 0.0])?,
        resign_consecutive: u.int_in_range(1..=3)?,
        opening_share: *u.choose(&[0.0, 0.5])?,
        ..PlaySettings::default()
    })
}

/// A [win, draw, loss] triple of small integer weights, normalised.
fn wdl(u: &mut Unstructured) -> Result<[f32; 3]> {
    let w: [u8; 3] = [u.int_in_range(0..=4)?, u.int_in_range(0..=4)?, u.int_in_range(1..=4)?];
    let sum = f32::from(w[0] + w[1] + w[2]);
    Ok(w.map(|x| f32::from(x) / sum))
}

/// A game played to its end under `settings` (or resigned where they allow it), with moves and
/// policies picked by the bytes, as the worker submits it.
fn valid_game(u: &mut Unstructured, settings: &PlaySettings, latest_model: u64) -> Result<GameSubmission> {
    let start = if settings.opening_share > 0.0 && u.arbitrary()? {
        Position::from_fen(CANNON).unwrap()
    } else {
        Position::startpos()
    };
    let mut game = Game::from_position(start, settings.game_config());
    let mut searches: Vec<PlySearch> = Vec::new();
    let model_version = u.int_in_range(0..=latest_model)?;
    while !game.outcome().is_over() {
        let side = game.position().turn();
        // Self-play resigns once the side's own last `consecutive - 1` searches saw it lost
        // (the resigning search itself is not recorded): here, all of them.
        let own = game.len() / 2;
        if let Some(rule) = settings.resign_config()
            && own + 1 >= rule.consecutive as usize
            && u.ratio(1, 8)?
        {
            for search in searches.iter_mut().rev().skip(1).step_by(2) {
                search.root_wdl = [0.0, 0.0, 1.0];
            }
            game.resign(side).unwrap();
            break;
        }
        let legal = game.legal_moves().clone();
        let first = u.choose_index(legal.len())?;
        let k = u.int_in_range(1..=legal.len().min(4))?;
        let policy = (0..k).map(|j| PolicyEntry { mv: legal[(first + j) % legal.len()], p: 1.0 / k as f32 }).collect();
        searches.push(PlySearch { policy, root_wdl: wdl(u)?, model_version, full_search: u.arbitrary()? });
        game.push(*u.choose(&legal)?).unwrap();
    }
    let mut record = GameRecord::from_game(&game, GameId(u.arbitrary()?)).unwrap();
    record.model_version = model_version;
    record.seed = u.arbitrary()?;
    record.settings_version = u.int_in_range(0..=1)?;
    if u.arbitrary()? {
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
        (record.start_time_ms, record.end_time_ms) = (now - 60_000, now);
    }
    let samples = SampleRecord::from_game(&record, &searches).unwrap();
    Ok(xqz_proto::wire::encode_game(&record, &samples))
}

/// Changes one thing in `req`, picked by the bytes (possibly to what it was).
fn mutate(u: &mut Unstructured, req: &mut SubmitGamesRequest) -> Result<()> {
    if u.ratio(1, 6)? {
        // Bytes of the encoded request, changed in place; a request that no longer decodes is
        // not one the service would see.
        let mut bytes = req.encode_to_vec();
        if !bytes.is_empty() {
            let at = u.choose_index(bytes.len())?;
            bytes[at] = u.arbitrary()?;
        }
        if let Ok(decoded) = SubmitGamesRequest::decode(bytes.as_slice()) {
            *req = decoded;
        }
        return Ok(());
    }
    if req.games.is_empty() {
        return Ok(());
    }
    let i = u.choose_index(req.games.len())?;
    match u.int_in_range(0..=7)? {
        0 => req.idempotency_key = u.arbitrary()?,
        1 => req.worker_id = u.arbitrary()?,
        2 => req.games.push(req.games[i].clone()),
        3 => drop(req.games.remove(i)),
        _ => {}
    }
    let Some(game) = req.games.get_mut(i) else { return Ok(()) };
    let n = game.moves.len();
    match u.int_in_range(0..=12)? {
        0 if n > 0 => game.moves[u.choose_index(n)?] = u.arbitrary()?,
        1 => game.result = u.choose(&["red", "black", "draw", ""])?.to_string(),
        2 => game.reason = u.arbitrary()?,
        3 => {
            game.moves.pop();
            game.plies.pop();
        }
        4 => {
            game.moves.push(u.arbitrary()?);
            game.plies.push(game.plies.last().cloned().unwrap_or_default());
        }
        5 if !game.plies.is_empty() => {
            let at = u.choose_index(game.plies.len())?;
            let ply = &mut game.plies[at];
            match u.int_in_range(0..=3)? {
                0 => ply.policy_probs.iter_mut().for_each(|p| *p = u.arbitrary().unwrap_or(*p)),
                1 => ply.policy_moves.push(u.arbitrary()?),
                2 => ply.policy_moves = ply.policy_moves.iter().map(|_| ply.policy_moves[0]).collect(),
                _ => ply.root_wdl = u.arbitrary()?,
            }
        }
        6 => game.game_id = u.arbitrary()?,
        7 => game.start_fen = u.choose(&[xiangqi::START_FEN, CANNON, "4k4/9/9/9/9/9/9/9/9/4K4 w", "x"])?.to_string(),
        8 => game.settings_version = u.arbitrary()?,
        9 => game.model_version = u.arbitrary()?,
        10 => (game.start_time_ms, game.end_time_ms) = u.arbitrary()?,
        11 => drop(game.plies.pop()),
        _ => {}
    }
    Ok(())
}

/// The request, its settings and whether it is as the worker made it (then it must be accepted).
fn structured(u: &mut Unstructured) -> Result<(SubmitGamesRequest, PlaySettings, u64, bool)> {
    let settings = settings(u)?;
    let latest_model = u.int_in_range(0..=3)?;
    let mut req = SubmitGamesRequest {
        idempotency_key: format!("batch-{:08x}", u.arbitrary::<u32>()?),
        worker_id: context().worker.clone(),
        games: Vec::new(),
    };
    for _ in 0..u.int_in_range(1..=3)? {
        req.games.push(valid_game(u, &settings, latest_model)?);
    }
    let mutations = u.int_in_range(0..=3)?;
    for _ in 0..mutations {
        mutate(u, &mut req)?;
    }
    Ok((req, settings, latest_model, mutations == 0))
}

/// Every accepted game replays legally from an allowed start to its claimed end, and its records
/// encode back to the submission (with the start FEN and the settings version resolved).
fn check_accepted(
    req: &SubmitGamesRequest,
    records: &[(GameRecord, Vec<SampleRecord>)],
    settings: &PlaySettings,
    suite: &OpeningSuite,
    latest_model: u64,
) {
    assert_eq!(records.len(), req.games.len());
    for (sub, (record, samples)) in req.games.iter().zip(records) {
        assert_eq!(samples.len(), sub.moves.len(), "one sample per ply");
        assert_eq!(record.worker_id, req.worker_id);
        assert!(record.model_version <= latest_model, "a game of unpublished model {}", record.model_version);
        let start = Position::from_fen(&sub.start_fen).expect("an accepted game's start FEN parses");
        assert!(
            start == Position::startpos() || (settings.opening_share > 0.0 && suite.contains(&start)),
            "accepted start {}",
            sub.start_fen
        );
        let mut game = Game::from_position(start, settings.game_config());
        for (sample, mv) in samples.iter().zip(&record.moves) {
            assert_eq!(sample.side_to_move, game.position().turn());
            assert_eq!(sample.result, record.result.score_for(sample.side_to_move));
            assert!(sample.policy.iter().all(|e| game.legal_moves().contains(&e.mv)), "policy on an illegal move");
            game.push(*mv).unwrap_or_else(|e| panic!("accepted game does not replay: {e}"));
        }
        match (game.outcome().verdict(), record.reason.as_str()) {
            (Some(verdict), reason) => {
                assert_eq!(GameResult::from_outcome(game.outcome()), Some(record.result));
                assert_eq!(verdict.reason.name(), reason);
            }
            (None, "resignation") => {
                let winner = record.result.winner().expect("a resignation has a winner");
                assert_ne!(winner, game.position().turn(), "only the side to move resigns");
                assert!(settings.resign);
            }
            (None, reason) => panic!("accepted game is not over, yet claims {reason}"),
        }
        let mut expected = sub.clone();
        expected.start_fen = record.start_fen.clone();
        expected.settings_version = sub.settings_version.max(1);
        assert_eq!(xqz_proto::wire::encode_game(record, samples), expected, "the records differ from the submission");
    }
}

/// The target's check of one input: panics where a property fails.
pub fn check(data: &[u8]) {
    let Some((&form, rest)) = data.split_first() else { return };
    let ctx = context();
    let (req, settings, latest_model, pristine) = if form & 1 == 0 {
        let Ok(mut req) = SubmitGamesRequest::decode(rest) else { return };
        if form & 2 != 0 {
            req.worker_id = ctx.worker.clone();
        }
        let settings = PlaySettings { max_plies: u32::from(form >> 2), ..PlaySettings::default() };
        (req, settings, u64::from(form >> 6), false)
    } else {
        let Ok(built) = structured(&mut Unstructured::new(rest)) else { return };
        built
    };
    let history = SettingsHistory::single(settings.clone());
    let checked = check_request(&req, &Limits::default(), &ctx.ids);
    if checked.is_ok() {
        assert_eq!(req.worker_id, ctx.worker, "a worker id the coordinator did not issue passed");
    }
    let now_ms = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64;
    let against = Against { settings: &history, openings: Some(&ctx.suite), latest_model, now_ms };
    let validated = validate_games(&req, &against);
    if let Ok(records) = &validated {
        check_accepted(&req, records, &settings, &ctx.suite, latest_model);
    }
    if pristine {
        assert!(checked.is_ok(), "{checked:?}");
        assert!(validated.is_ok(), "a valid request was refused: {:?}", validated.err());
    }
}
