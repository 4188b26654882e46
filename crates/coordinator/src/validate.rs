//! The checks of a `SubmitGames` request: its own fields first ([`check_request`]), then each
//! game, decoded ([`xqz_proto::wire::decode_game`]), replayed through the rules core and turned
//! into dataset records ([`validate_games`]), or a status that says precisely what is wrong.

use tonic::Status;
use xiangqi::Color;
use xiangqi::game::{Game, Outcome};
use xqz_dataset::{GameRecord, GameResult, PlySearch, SampleRecord};
use xqz_mcts::{OpeningSuite, PlaySettings};
use xqz_proto::v1::{GameSubmission, SubmitGamesRequest};
use xqz_proto::wire::{decode_game, decode_game_id, quote};

use crate::Limits;
use crate::settings::SettingsHistory;
use crate::worker_ids::WorkerIds;

/// Longest idempotency key, in bytes (printable ASCII).
const MAX_KEY_BYTES: usize = 128;

/// Longest worker id a client may send (Register issues ids of at most 78 characters); it is
/// stored with every game the worker submits.
const MAX_WORKER_ID_BYTES: usize = 80;

/// Refuses a worker id that is too long, not printable ASCII, or not one that Register issued
/// under `ids`' key (the message quotes at most a short prefix of it).
pub(crate) fn check_worker_id(ids: &WorkerIds, worker_id: &str) -> Result<(), Status> {
    if worker_id.len() > MAX_WORKER_ID_BYTES || !worker_id.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(Status::invalid_argument(format!(
            "the worker id must be at most {MAX_WORKER_ID_BYTES} printable ASCII characters ({} bytes given)",
            worker_id.len()
        )));
    }
    if !ids.check(worker_id) {
        let prefix: String = worker_id.chars().take(24).collect();
        return Err(Status::unauthenticated(format!(
            "unknown worker id {prefix:?}: this coordinator did not issue it (call Register for one)"
        )));
    }
    Ok(())
}

/// Checks what the service checks of a `SubmitGames` request before it looks at the games: an
/// idempotency key of at most 128 printable ASCII characters, a worker id that `worker_ids`
/// issued, and no more games and moves than `limits` allow.
pub fn check_request(req: &SubmitGamesRequest, limits: &Limits, worker_ids: &WorkerIds) -> Result<(), Status> {
    let key = &req.idempotency_key;
    if key.len() > MAX_KEY_BYTES || !key.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(Status::invalid_argument(format!(
            "the idempotency key must be at most {MAX_KEY_BYTES} printable ASCII characters ({} bytes given)",
            key.len()
        )));
    }
    check_worker_id(worker_ids, &req.worker_id)?;
    let moves: usize = req.games.iter().map(|g| g.moves.len()).sum();
    if req.games.len() > limits.max_games_per_request || moves > limits.max_moves_per_request {
        return Err(Status::resource_exhausted(format!(
            "{} games with {moves} moves in one request; the limits are {} games and {} moves",
            req.games.len(),
            limits.max_games_per_request,
            limits.max_moves_per_request
        )));
    }
    Ok(())
}

/// What a game is validated against besides itself.
#[derive(Copy, Clone, Debug)]
pub struct Against<'a> {
    /// Every settings version: a game is replayed under the one it names.
    pub settings: &'a SettingsHistory,
    /// The only starts besides the standard one that games may have.
    pub openings: Option<&'a OpeningSuite>,
    /// The newest published model (0: none).
    pub latest_model: u64,
    /// The coordinator's clock (Unix ms), which a game's times may not run ahead of.
    pub now_ms: i64,
}

/// Replays every game of a request that passed [`check_request`], as the service does before
/// storing them, and returns each game's record and samples in order; a game that fails makes
/// the whole request `INVALID_ARGUMENT`, naming the game and the problem.
pub fn validate_games(
    req: &SubmitGamesRequest,
    against: &Against<'_>,
) -> Result<Vec<(GameRecord, Vec<SampleRecord>)>, Status> {
    req.games
        .iter()
        .enumerate()
        .map(|(i, game)| validate_game(i, game, against, &req.worker_id))
        .collect::<Result<_, _>>()
        .map_err(Status::invalid_argument)
}

fn result_of(outcome: Outcome) -> Option<(GameResult, &'static str)> {
    Some((GameResult::from_outcome(outcome)?, outcome.verdict()?.reason.name()))
}

/// Checks that every move a search's policy names is legal where `game` is now (the policy's
/// form was checked when it was decoded).
fn check_policy(game: &Game, search: &PlySearch, ply: usize) -> Result<(), String> {
    // The legal moves, one bit per destination for each origin: a policy may name every legal
    // move, and searching the move list for each would be quadratic.
    let mut legal = [0u128; 90];
    for mv in game.legal_moves() {
        legal[mv.from().index()] |= 1 << mv.to().index();
    }
    match search.policy.iter().find(|e| legal[e.mv.from().index()] & (1 << e.mv.to().index()) == 0) {
        Some(e) => Err(format!("ply {ply}: policy on illegal move {}", e.mv)),
        None => Ok(()),
    }
}

/// Checks a resignation claim against the rule self-play resigns by: the side to move resigns
/// (so `winner` is its opponent), resigning is on, and the side's own recorded searches before
/// this one (`resign_consecutive - 1` of them; the resigning search itself is not recorded) all
/// valued its position below the threshold.
fn check_resignation(
    settings: &PlaySettings,
    game: &Game,
    winner: Color,
    samples: &[SampleRecord],
) -> Result<(), String> {
    let loser = game.position().turn();
    if winner == loser {
        return Err(format!(
            "claims that {winner}, the side to move, won by resignation: only the side to move resigns"
        ));
    }
    let Some(rule) = settings.resign_config() else {
        return Err("claims a resignation, but resigning is off under its settings".into());
    };
    let own = samples.iter().rev().skip(1).step_by(2).take(rule.consecutive.saturating_sub(1) as usize);
    let values: Vec<f32> = own.map(|s| s.root_wdl[0] - s.root_wdl[2]).collect();
    if values.len() + 1 < rule.consecutive as usize || values.iter().any(|&v| v >= rule.threshold) {
        return Err(format!(
            "{loser} resigned, but its last searches valued its position at {values:?}: resigning needs {} searches \
             in a row below {}",
            rule.consecutive, rule.threshold
        ));
    }
    Ok(())
}

/// 2020-01-01 in Unix milliseconds: no game of this program is older.
const EARLIEST_MS: i64 = 1_577_836_800_000;

/// How far ahead of the coordinator's clock a worker's may run.
const CLOCK_SKEW_MS: i64 = 10 * 60 * 1000;

/// A game's start and end times (Unix ms) are plausible at `now`: from 2020 on, the end not
/// before the start, neither in the future (beyond a little clock skew). Both 0 means the
/// worker did not say.
fn check_times(start: i64, end: i64, now: i64) -> Result<(), String> {
    if (start, end) == (0, 0) {
        return Ok(());
    }
    let latest = now.saturating_add(CLOCK_SKEW_MS);
    if !(EARLIEST_MS..=latest).contains(&start) || !(start..=latest).contains(&end) {
        return Err(format!(
            "implausible times: started at {start}, ended at {end} (Unix ms; now {now}, the end must follow the \
             start, both from 2020 on and not in the future)"
        ));
    }
    Ok(())
}

/// Replays `sub` under the settings version it names (0: the version in force) and returns its
/// records; the error names the game (by index and hex id) and the problem. A game starts from
/// the standard start or, if its settings start games from `against.openings`, one of the
/// suite's positions.
fn validate_game(
    index: usize,
    sub: &GameSubmission,
    against: &Against<'_>,
    worker_id: &str,
) -> Result<(GameRecord, Vec<SampleRecord>), String> {
    let id = decode_game_id(&sub.game_id).map_err(|e| format!("game #{index}: {e}"))?;
    let name = format!("game #{index} ({id})");
    let fail = |msg: String| format!("{name}: {msg}");
    let played = decode_game(sub).map_err(|e| fail(e.to_string()))?;
    let (history, openings, latest_model) = (against.settings, against.openings, against.latest_model);
    if played.model_version > latest_model {
        return Err(fail(format!("unknown model version {} (latest published: {latest_model})", played.model_version)));
    }
    check_times(played.start_time_ms, played.end_time_ms, against.now_ms).map_err(&fail)?;
    let settings_version = match played.settings_version {
        0 => history.current().0,
        version => version,
    };
    let settings = history.get(settings_version).ok_or_else(|| {
        fail(format!("unknown settings version {settings_version} (in force: {})", history.current().0))
    })?;
    let start = played.start;
    // Self-play starts from the standard position or the suite's; any other start is a claim
    // nobody can check.
    if start.to_string() != xiangqi::START_FEN {
        let suite = openings.filter(|suite| suite.contains(&start));
        match suite {
            Some(_) if settings.opening_share > 0.0 => {}
            Some(suite) => {
                return Err(fail(format!(
                    "starts from {}, a position of opening suite {:016x}, but under settings version \
                     {settings_version} no game starts from it (opening_share 0)",
                    quote(&sub.start_fen),
                    suite.id()
                )));
            }
            None => {
                let besides = openings.map_or(String::new(), |s| format!(" nor one of opening suite {:016x}", s.id()));
                return Err(fail(format!(
                    "starts from {}, not the standard start position{besides}",
                    quote(&sub.start_fen)
                )));
            }
        }
    }
    let claimed = played.result;
    let mut game = Game::from_position(start, settings.game_config());
    let mut samples = Vec::with_capacity(played.moves.len());
    for (ply, (mv, search)) in played.moves.into_iter().zip(played.searches).enumerate() {
        if let Some((result, reason)) = result_of(game.outcome()) {
            return Err(fail(format!("ply {ply}: move {mv} after the game ended ({result} by {reason})")));
        }
        check_policy(&game, &search, ply).map_err(&fail)?;
        samples.push(SampleRecord::before_move(&game, id, search));
        game.push(mv).map_err(|e| fail(e.to_string()))?;
    }
    match result_of(game.outcome()) {
        Some((result, reason)) => {
            if (result, reason) != (claimed, played.reason.as_str()) {
                return Err(fail(format!(
                    "claims {claimed} by {} but the replay gives {result} by {reason}",
                    quote(&played.reason)
                )));
            }
        }
        None => match claimed.winner() {
            Some(winner) if played.reason == "resignation" => {
                check_resignation(settings, &game, winner, &samples).map_err(&fail)?;
                game.resign(!winner).map_err(|e| fail(e.to_string()))?;
            }
            _ => {
                return Err(fail(format!(
                    "claims {claimed} by {} but the game is not over after {} plies (only a resignation can end it)",
                    quote(&played.reason),
                    samples.len()
                )));
            }
        },
    }
    let mut record = GameRecord::from_game(&game, id).map_err(|e| fail(e.to_string()))?;
    record.model_version = played.model_version;
    record.worker_id = worker_id.to_string();
    record.seed = played.seed;
    record.start_time_ms = played.start_time_ms;
    record.end_time_ms = played.end_time_ms;
    record.settings_version = settings_version;
    SampleRecord::set_outcome(&mut samples, record.result);
    Ok((record, samples))
}

#[cfg(test)]
mod tests {
    use super::*;
    use xqz_mcts::PlaySettings;
    use xqz_proto::v1;

    fn code(text: &str) -> u32 {
        u32::from(text.parse::<xiangqi::Move>().unwrap().to_u16())
    }

    fn two_move_draw() -> GameSubmission {
        let moves = vec![code("h2e2"), code("h9g7")];
        GameSubmission {
            game_id: vec![7; 16],
            start_fen: xiangqi::START_FEN.into(),
            plies: moves
                .iter()
                .map(|&m| v1::PlySearch {
                    policy_moves: vec![m],
                    policy_probs: vec![1.0],
                    root_wdl: vec![0.2, 0.6, 0.2],
                    full_search: true,
                })
                .collect(),
            moves,
            result: "draw".into(),
            reason: "max_length".into(),
            ..Default::default()
        }
    }

    /// A submission of `moves`, each searched with all visits on the move played.
    fn game_of(moves: &[&str]) -> GameSubmission {
        let mut sub = two_move_draw();
        sub.moves = moves.iter().map(|&m| code(m)).collect();
        sub.plies =
            sub.moves.iter().map(|&m| v1::PlySearch { policy_moves: vec![m], ..sub.plies[0].clone() }).collect();
        sub
    }

    /// 2027-01-15 in Unix ms: any test game's times are before it.
    const NOW_MS: i64 = 1_800_000_000_000;

    fn against<'a>(settings: &'a SettingsHistory, openings: Option<&'a OpeningSuite>) -> Against<'a> {
        Against { settings, openings, latest_model: 0, now_ms: NOW_MS }
    }

    fn settings() -> SettingsHistory {
        SettingsHistory::single(PlaySettings { max_plies: 2, ..PlaySettings::default() })
    }

    #[test]
    fn accepts_a_complete_game_and_rejects_tampering() {
        let (record, samples) = validate_game(0, &two_move_draw(), &against(&settings(), None), "w").unwrap();
        assert_eq!((record.moves.len(), samples.len(), record.reason.as_str()), (2, 2, "max_length"));

        let mut sub = two_move_draw();
        sub.result = "red".into();
        assert!(validate_game(3, &sub, &against(&settings(), None), "w").unwrap_err().contains("game #3 (0707"));

        let mut sub = two_move_draw();
        sub.moves.push(code("a0a1"));
        sub.plies.push(sub.plies[0].clone());
        assert!(validate_game(0, &sub, &against(&settings(), None), "w").unwrap_err().contains("after the game ended"));

        let mut sub = two_move_draw();
        sub.plies[1].root_wdl.pop();
        assert!(validate_game(0, &sub, &against(&settings(), None), "w").unwrap_err().contains("root_wdl"));

        let mut sub = two_move_draw();
        sub.game_id.pop();
        assert!(validate_game(0, &sub, &against(&settings(), None), "w").unwrap_err().contains("15 bytes"));

        let mut sub = two_move_draw();
        sub.start_fen = "nonsense".into();
        assert!(validate_game(0, &sub, &against(&settings(), None), "w").unwrap_err().contains("bad FEN"));
    }

    #[test]
    fn a_validated_game_has_the_samples_its_record_and_searches_give() {
        use rand::SeedableRng;
        use xqz_dataset::synthetic::{SyntheticConfig, random_game};
        // Random games capture, check and repeat; the validating replay records their samples as
        // it goes, and must record what the dataset's own replay of the record makes of them.
        let config = SyntheticConfig { max_plies: 160, model_version: 0, ..SyntheticConfig::default() };
        let rules =
            PlaySettings { max_plies: 160, material_adjudication: 0, repeater_loses: false, ..PlaySettings::default() };
        let history = SettingsHistory::single(rules);
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for id in 0..20 {
            let (game, samples) = random_game(&mut rng, id, &config);
            let sub = xqz_proto::wire::encode_game(&game, &samples);
            let (record, checked) = validate_game(0, &sub, &against(&history, None), "w").unwrap();
            assert_eq!((&record.moves, record.result), (&game.moves, game.result));
            assert_eq!(checked, samples, "game {id}");
        }
    }

    /// The position after 1. h2e2 (a central cannon), Black to move.
    const CANNON: &str = "rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C2C4/9/RNBAKABNR b - - 1 1";

    #[test]
    fn a_game_may_start_from_the_opening_suite_only_when_its_settings_say_so() {
        let suite = OpeningSuite::parse(CANNON).unwrap();
        let sharing =
            SettingsHistory::single(PlaySettings { max_plies: 2, opening_share: 0.5, ..PlaySettings::default() });
        let mut sub = game_of(&["h9g7", "h0g2"]);
        sub.start_fen = CANNON.into();
        let (record, samples) = validate_game(0, &sub, &against(&sharing, Some(&suite)), "w").unwrap();
        assert_eq!((record.start_fen.as_str(), record.moves.len(), samples.len()), (CANNON, 2, 2));

        let error = validate_game(0, &sub, &against(&settings(), Some(&suite)), "w").unwrap_err();
        assert!(error.contains("opening_share 0"), "{error}");
        let error = validate_game(0, &sub, &against(&sharing, None), "w").unwrap_err();
        assert!(error.contains("not the standard start position"), "{error}");

        // Another non-standard start, even one move on from the suite's, is nobody's claim to make.
        let mut sub = game_of(&["h0g2", "h7h0"]);
        sub.start_fen = "rnbakab1r/9/1c4nc1/p1p1p1p1p/9/9/P1P1P1P1P/1C2C4/9/RNBAKABNR w - - 2 2".into();
        let error = validate_game(0, &sub, &against(&sharing, Some(&suite)), "w").unwrap_err();
        assert!(
            error.contains(&format!("not the standard start position nor one of opening suite {:016x}", suite.id())),
            "{error}"
        );

        // Suite games are replayed move by move like any other.
        let mut sub = game_of(&["h9g7", "h0h5"]);
        sub.start_fen = CANNON.into();
        assert!(validate_game(0, &sub, &against(&sharing, Some(&suite)), "w").is_err());
    }

    /// `moves` end in a draw by `draw` under `rules` and in a Red win by `win` under `adjudicating`;
    /// each claim is accepted only under its own settings.
    fn assert_adjudication(moves: &[&str], rules: PlaySettings, draw: &str, adjudicating: PlaySettings, win: &str) {
        let (rules, adjudicating) = (&SettingsHistory::single(rules), &SettingsHistory::single(adjudicating));
        let mut sub = game_of(moves);
        sub.reason = draw.into();
        let (record, _) = validate_game(0, &sub, &against(rules, None), "w").unwrap();
        assert_eq!((record.result, record.reason.as_str()), (GameResult::Draw, draw));
        assert!(validate_game(0, &sub, &against(adjudicating, None), "w").unwrap_err().contains(win));
        (sub.result, sub.reason) = ("red".into(), win.into());
        let (record, samples) = validate_game(0, &sub, &against(adjudicating, None), "w").unwrap();
        assert_eq!((record.result, record.reason.as_str()), (GameResult::RedWin, win));
        let results: Vec<i8> = samples.iter().map(|s| s.result).collect();
        assert_eq!(results, (0..moves.len()).map(|i| if i % 2 == 0 { 1 } else { -1 }).collect::<Vec<i8>>());
        assert!(validate_game(0, &sub, &against(rules, None), "w").unwrap_err().contains(draw));
    }

    #[test]
    fn material_adjudication_follows_the_coordinator_settings() {
        // Red's cannon takes a pawn; the game reaches the 4-ply cap a pawn up.
        let capped = PlaySettings { max_plies: 4, ..PlaySettings::default() };
        let adjudicating = PlaySettings { material_adjudication: 1, ..capped.clone() };
        let moves = ["h2e2", "h9g7", "e2e6", "i9h9"];
        assert_adjudication(&moves, capped, "max_length", adjudicating, "material_adjudication");
    }

    /// Red, to move after four plies, resigns; its two recorded searches saw it lost.
    fn resigned_game() -> GameSubmission {
        let mut sub = game_of(&["h2e2", "h9g7", "h0g2", "i9h9"]);
        for ply in [0, 2] {
            sub.plies[ply].root_wdl = vec![0.02, 0.03, 0.95];
        }
        (sub.result, sub.reason) = ("black".into(), "resignation".into());
        sub
    }

    #[test]
    fn an_unfinished_game_needs_a_resignation() {
        // A cap of 0 is no cap, as workers read it.
        for max_plies in [300, 0] {
            let long = &SettingsHistory::single(PlaySettings { max_plies, ..PlaySettings::default() });
            let mut sub = resigned_game();
            let (record, _) = validate_game(0, &sub, &against(long, None), "w").unwrap();
            assert_eq!((record.result, record.reason.as_str()), (GameResult::BlackWin, "resignation"));
            sub.result = "draw".into();
            assert!(validate_game(0, &sub, &against(long, None), "w").unwrap_err().contains("not over"));
        }
    }

    #[test]
    fn a_resignation_is_only_what_self_play_would_have_done() {
        let settings = &SettingsHistory::single(PlaySettings::default());
        validate_game(0, &resigned_game(), &against(settings, None), "w").unwrap();
        // The side to move cannot claim that its opponent resigned.
        let mut sub = resigned_game();
        sub.result = "red".into();
        assert!(
            validate_game(0, &sub, &against(settings, None), "w")
                .unwrap_err()
                .contains("only the side to move resigns")
        );
        // A side that did not see itself lost does not resign.
        let mut sub = resigned_game();
        sub.plies[2].root_wdl = vec![0.2, 0.3, 0.5];
        let error = validate_game(0, &sub, &against(settings, None), "w").unwrap_err();
        assert!(error.contains("red resigned") && error.contains("below -0.9"), "{error}");
        // Nor where resigning is off.
        let off = &SettingsHistory::single(PlaySettings { resign: false, ..PlaySettings::default() });
        assert!(validate_game(0, &resigned_game(), &against(off, None), "w").unwrap_err().contains("resigning is off"));
    }

    #[test]
    fn values_and_starts_are_checked_and_client_text_is_quoted_short() {
        let settings = &settings();
        for wdl in [vec![-5.0, 7.0, -1.0], vec![3e38, -3e38, 1.0], vec![0.5, 0.5, 0.5], vec![f32::NAN, 0.5, 0.5]] {
            let mut sub = two_move_draw();
            sub.plies[1].root_wdl = wdl.clone();
            let error = validate_game(0, &sub, &against(settings, None), "w").unwrap_err();
            assert!(error.contains("ply 1: root_wdl") && error.contains("win/draw/loss"), "{wdl:?}: {error}");
        }
        let mut sub = two_move_draw();
        sub.start_fen = "rnbakabnr/9/1c5c1/p1p1p1p1p/9/9/P1P1P1P1P/1C5C1/9/RNBAKABN1 w - - 0 1".into();
        assert!(
            validate_game(0, &sub, &against(settings, None), "w")
                .unwrap_err()
                .contains("not the standard start position")
        );
        let mut sub = two_move_draw();
        sub.start_fen = "x".repeat(100_000);
        let error = validate_game(0, &sub, &against(settings, None), "w").unwrap_err();
        assert!(error.len() < 300 && error.contains("(100000 bytes)"), "{} bytes: {}", error.len(), &error[..100]);
        let mut sub = two_move_draw();
        sub.result = "y".repeat(5000);
        assert!(validate_game(0, &sub, &against(settings, None), "w").unwrap_err().len() < 300);
    }

    #[test]
    fn times_must_be_plausible() {
        let now = 1_800_000_000_000;
        assert_eq!(check_times(0, 0, now), Ok(()), "not given");
        assert_eq!(check_times(now - 60_000, now, now), Ok(()));
        assert_eq!(check_times(now, now + 60_000, now), Ok(()), "a little clock skew");
        for (start, end) in [(now, now - 1), (-5, now), (1, 2), (now, now + 86_400_000), (i64::MAX, i64::MAX)] {
            assert!(check_times(start, end, now).unwrap_err().contains("implausible times"), "{start} {end}");
        }
    }

    #[test]
    fn repeater_loses_follows_the_coordinator_settings() {
        // Both sides idle; Black's eighth move makes the third occurrence of the start position,
        // its twelfth ends the two rounds either side had to vary in (23.5).
        let moves = ["b0c2", "b9c7", "c2b0", "c7b9", "b0c2", "b9c7", "c2b0", "c7b9", "b0c2", "b9c7", "c2b0", "c7b9"];
        let adjudicating = PlaySettings { repeater_loses: true, ..PlaySettings::default() };
        assert_adjudication(
            &moves,
            PlaySettings { repeater_loses: false, ..PlaySettings::default() },
            "allowed_repetition",
            adjudicating,
            "repetition_adjudication",
        );
    }

    #[test]
    fn a_game_is_validated_under_the_settings_version_it_names() {
        let dir = tempfile::tempdir().unwrap();
        // Version 1 caps games at 2 plies, version 2 (in force) at 300.
        let fixed = xqz_mcts::PlaySchedule { cap_growth: 0, cap_limit: 0 };
        SettingsHistory::open(dir.path(), &PlaySettings { max_plies: 2, ..PlaySettings::default() }, fixed, 0).unwrap();
        let history =
            SettingsHistory::open(dir.path(), &PlaySettings { max_plies: 300, ..PlaySettings::default() }, fixed, 0)
                .unwrap();
        let mut sub = two_move_draw();
        sub.settings_version = 1;
        let (record, _) = validate_game(0, &sub, &against(&history, None), "w").unwrap();
        assert_eq!(record.settings_version, 1);
        // Under the version in force (named, or 0 from an older worker) the game is not over.
        for version in [2, 0] {
            sub.settings_version = version;
            assert!(validate_game(0, &sub, &against(&history, None), "w").unwrap_err().contains("not over"));
        }
        sub.settings_version = 3;
        let error = validate_game(0, &sub, &against(&history, None), "w").unwrap_err();
        assert!(error.contains("unknown settings version 3 (in force: 2)"), "{error}");
    }
}
