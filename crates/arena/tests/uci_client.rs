//! The UCI client against Fairy-Stockfish (Debian's `fairy-stockfish` 11.1, ranks 1-10) and
//! against tiny fake engines written as shell scripts: handshakes, replies checked for legality,
//! and every failure (no program, early exit, silence, illegal or missing moves) reported as its
//! own error within the configured timeout.
//!
//! The engine is `$XQZ_FAIRY_STOCKFISH` (`scripts/test` sets it from
//! `scripts/ensure-fairy-stockfish`), else `fairy-stockfish` on `PATH`, else
//! `/usr/games/fairy-stockfish`, as in the `xiangqi` crate's differential test.
#![cfg(unix)]

use std::path::PathBuf;
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use xiangqi::game::{Game, GameConfig};
use xiangqi::{Move, Position};
use xqz_arena::uci::{EngineConfig, EngineError, Limit, Ranks, Score, UciEngine};
use xqz_test_support::fairy_stockfish;
use xqz_test_support::games::game_after;

fn fairy_stockfish() -> UciEngine {
    let mut config = EngineConfig::fairy_stockfish(fairy_stockfish::engine_path().to_string_lossy());
    config.timeout = Duration::from_secs(20);
    UciEngine::spawn(&config).unwrap_or_else(|e| panic!("{e}; {}", fairy_stockfish::HOW_TO_INSTALL))
}

fn assert_legal(game: &Game, best: Move) {
    assert!(game.legal_moves().contains(&best), "{best} is not legal in {}", game.position());
}

#[test]
fn fairy_stockfish_handshake() {
    let mut engine = fairy_stockfish();
    assert!(engine.name().starts_with("Fairy-Stockfish"), "{}", engine.name());
    assert_eq!(engine.config().ranks, Ranks::FromOne);
    engine.new_game().unwrap();
    engine.new_game().unwrap();
}

#[test]
fn fairy_stockfish_moves_from_the_start() {
    let mut engine = fairy_stockfish();
    let game = Game::new(GameConfig::default());
    let reply = engine.go(&game, &Limit::depth(1)).unwrap();
    assert_legal(&game, reply.best);
    assert_eq!(reply.depth, Some(1));
    assert!(matches!(reply.score, Some(Score::Cp(_))), "{reply:?}");
    assert!(reply.nodes.is_some_and(|n| n > 0), "{reply:?}");

    // Fairy-Stockfish checks the node limit only now and then: `go nodes 500` can end at 1815.
    let reply = engine.go(&game, &Limit::nodes(500)).unwrap();
    assert_legal(&game, reply.best);
    assert!(reply.nodes.is_some_and(|n| n < 20_000), "{reply:?}");
}

#[test]
fn fairy_stockfish_moves_after_moves() {
    let mut engine = fairy_stockfish();
    // Both sides develop, then the red cannon takes the central pawn: moves to and from ranks 0
    // and 9 (ranks 1 and 10 for the engine) and a capture.
    let game = game_after("h2e2 h9g7 h0g2 i9h9 i0h0 b9c7 e2e6");
    for limit in [Limit::depth(1), Limit::nodes(500), Limit { depth: Some(3), nodes: Some(2000), movetime: None }] {
        let reply = engine.go(&game, &limit).unwrap();
        assert_legal(&game, reply.best);
    }
}

#[test]
fn fairy_stockfish_replies_are_legal_in_random_positions() {
    let mut engine = fairy_stockfish();
    let mut rng = ChaCha8Rng::seed_from_u64(0x0AC1);
    let mut asked = 0;
    while asked < 30 {
        let mut game = Game::new(GameConfig::default());
        let plies = rng.random_range(0..=80);
        for _ in 0..plies {
            let legal = game.legal_moves();
            if game.outcome().is_over() {
                break;
            }
            let mv = legal[rng.random_range(0..legal.len())];
            game.push(mv).unwrap();
        }
        if game.outcome().is_over() {
            continue;
        }
        let limit = if asked % 2 == 0 { Limit::depth(1) } else { Limit::nodes(500) };
        engine.new_game().unwrap();
        let reply = engine.go(&game, &limit).unwrap_or_else(|e| panic!("{e} after {} plies", game.len()));
        assert_legal(&game, reply.best);
        asked += 1;
    }
}

#[test]
fn fairy_stockfish_plays_itself() {
    let mut engine = fairy_stockfish();
    let mut game = Game::new(GameConfig { max_plies: Some(60), ..GameConfig::default() });
    while !game.outcome().is_over() {
        let reply = engine.go(&game, &Limit::depth(2)).unwrap_or_else(|e| panic!("{e} at ply {}", game.len()));
        game.push(reply.best).unwrap();
    }
    assert!(game.len() > 10, "{:?} after {} plies", game.outcome(), game.len());
}

#[test]
fn fairy_stockfish_has_no_move_when_mated() {
    let mut engine = fairy_stockfish();
    // The rook gives check down the d-file; e9 and e8 face the red king.
    let mated = Position::from_fen("3k5/9/9/9/9/9/9/9/9/3RK4 b - - 0 1").unwrap();
    assert!(mated.is_checkmate());
    let game = Game::from_position(mated, GameConfig::default());
    assert!(matches!(engine.go(&game, &Limit::depth(3)), Err(EngineError::NoMove)));
    // The engine is still usable.
    let game = Game::new(GameConfig::default());
    assert_legal(&game, engine.go(&game, &Limit::depth(1)).unwrap().best);
}

#[test]
fn fairy_stockfish_movetime() {
    let mut engine = fairy_stockfish();
    let game = game_after("h2e2");
    let started = Instant::now();
    let reply = engine.go(&game, &Limit::movetime(Duration::from_millis(100))).unwrap();
    assert_legal(&game, reply.best);
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
}

#[test]
fn fairy_stockfish_from_a_spec_with_options() {
    let spec = format!("fairy-stockfish:{};Hash=8;Skill Level=0", fairy_stockfish::engine_path().display());
    let mut engine = UciEngine::spawn(&EngineConfig::parse(&spec).unwrap()).unwrap();
    let game = game_after("b0c2");
    assert_legal(&game, engine.go(&game, &Limit::depth(1)).unwrap().best);
}

#[test]
fn fairy_stockfish_rejects_an_unknown_variant() {
    let mut config = EngineConfig::fairy_stockfish(fairy_stockfish::engine_path().to_string_lossy());
    config.variant = Some("xiangqi-without-rivers".to_string());
    assert!(matches!(UciEngine::spawn(&config), Err(EngineError::Protocol(_))));
}

/// A fake engine: `sh -c SCRIPT` with a short timeout.
fn shell(script: &str, timeout_ms: u64) -> EngineConfig {
    let mut config = EngineConfig::new(vec!["sh".to_string(), "-c".to_string(), script.to_string()]);
    config.timeout = Duration::from_millis(timeout_ms);
    config
}

/// A fake engine that handshakes properly, logs every command to `log` (if any) and runs
/// `on_go` for `go`.
fn fake(on_go: &str, log: Option<&PathBuf>) -> EngineConfig {
    let log = log.map_or_else(|| "/dev/null".to_string(), |p| p.display().to_string());
    shell(
        &format!(
            r#"echo "Fake engine, ready"
while read -r cmd rest; do
  echo "$cmd $rest" >> '{log}'
  case "$cmd" in
    uci) echo "id name Fake Engine 1.0"; echo "option name Hash type spin default 16 min 1 max 64"; echo uciok ;;
    isready) echo readyok ;;
    go) {on_go} ;;
    quit) exit 0 ;;
  esac
done"#
        ),
        2000,
    )
}

fn temp_log(name: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("xqz-uci-client-{name}-{}.log", std::process::id()));
    let _ = std::fs::remove_file(&path);
    path
}

#[test]
fn fake_engine_sees_the_expected_commands() {
    let log = temp_log("commands");
    let mut config = fake(
        r#"echo "info depth 2 seldepth 3 multipv 1 score cp -35 nodes 1234 pv h3e3 h10g8"; echo "info string hello"; echo "bestmove h2e2 ponder h9g7""#,
        Some(&log),
    );
    config.options = vec![("Hash".to_string(), "32".to_string())];
    let game = game_after("h2e2 h9g7 i0i1");
    {
        let mut engine = UciEngine::spawn(&config).unwrap();
        assert_eq!(engine.name(), "Fake Engine 1.0");
        engine.new_game().unwrap();
        // The fake always answers h2e2, legal from the start only.
        let start = Game::new(GameConfig::default());
        let reply = engine.go(&start, &Limit::depth(2)).unwrap();
        assert_eq!(
            (reply.best, reply.score, reply.depth, reply.nodes),
            ("h2e2".parse().unwrap(), Some(Score::Cp(-35)), Some(2), Some(1234))
        );
        let limit = Limit { nodes: Some(100), depth: Some(3), movetime: Some(Duration::from_millis(20)) };
        assert!(matches!(engine.go(&game, &limit), Err(EngineError::IllegalMove { .. })));
        // A game from any other position goes as its FEN.
        let elsewhere = Game::from_position(game.position().clone(), GameConfig::default());
        assert!(matches!(engine.go(&elsewhere, &Limit::depth(1)), Err(EngineError::IllegalMove { .. })));
    }
    let sent = std::fs::read_to_string(&log).unwrap();
    let _ = std::fs::remove_file(&log);
    // Games from the standard start go as `startpos`, as GUIs send them.
    let expected = [
        "uci ".to_string(),
        "setoption name Hash value 32".to_string(),
        "isready ".to_string(),
        "ucinewgame ".to_string(),
        "isready ".to_string(),
        "position startpos".to_string(),
        "go depth 2".to_string(),
        "position startpos moves h2e2 h9g7 i0i1".to_string(),
        "go depth 3 nodes 100 movetime 20".to_string(),
        format!("position fen {}", game.position()),
        "go depth 1".to_string(),
        "quit ".to_string(),
    ];
    assert_eq!(sent.lines().collect::<Vec<_>>(), expected);
}

#[test]
fn fake_engine_in_the_one_based_dialect_gets_ranks_1_to_10() {
    let log = temp_log("ranks");
    let mut config = fake(r#"echo "bestmove a10a9""#, Some(&log));
    config.ranks = Ranks::FromOne;
    let game = game_after("h2e2 h9g7 a3a4");
    {
        let mut engine = UciEngine::spawn(&config).unwrap();
        let reply = engine.go(&game, &Limit::nodes(1)).unwrap();
        assert_eq!(reply.best, "a9a8".parse().unwrap());
        assert_eq!((reply.score, reply.depth, reply.nodes), (None, None, None));
    }
    let sent = std::fs::read_to_string(&log).unwrap();
    let _ = std::fs::remove_file(&log);
    assert!(sent.contains(" moves h3e3 h10g8 a4a5\n"), "{sent}");
}

#[test]
fn fake_engine_with_an_illegal_move() {
    let mut engine = UciEngine::spawn(&fake(r#"echo "bestmove e0e5""#, None)).unwrap();
    let game = Game::new(GameConfig::default());
    match engine.go(&game, &Limit::depth(1)) {
        Err(EngineError::IllegalMove { text, fen }) => {
            assert_eq!(text, "e0e5");
            assert_eq!(fen, game.position().to_string());
        }
        other => panic!("expected IllegalMove, got {other:?}"),
    }
    // Still usable afterwards.
    engine.new_game().unwrap();
}

#[test]
fn fake_engine_with_an_unreadable_move() {
    let mut engine = UciEngine::spawn(&fake(r#"echo "bestmove h2-e2""#, None)).unwrap();
    let game = Game::new(GameConfig::default());
    assert!(
        matches!(engine.go(&game, &Limit::depth(1)), Err(EngineError::IllegalMove { text, .. }) if text == "h2-e2")
    );
}

#[test]
fn fake_engine_without_a_move() {
    for answer in ["bestmove (none)", "bestmove 0000"] {
        let mut engine =
            UciEngine::spawn(&fake(&format!("echo 'info depth 0 score mate 0'; echo '{answer}'"), None)).unwrap();
        let game = Game::new(GameConfig::default());
        assert!(matches!(engine.go(&game, &Limit::depth(1)), Err(EngineError::NoMove)), "{answer}");
    }
    let mut engine = UciEngine::spawn(&fake("echo bestmove", None)).unwrap();
    let game = Game::new(GameConfig::default());
    assert!(matches!(engine.go(&game, &Limit::depth(1)), Err(EngineError::Protocol(_))));
}

#[test]
fn missing_program_is_a_spawn_error() {
    let config = EngineConfig::new(vec!["/nonexistent/xqz-no-such-engine".to_string(), "--uci".to_string()]);
    match UciEngine::spawn(&config) {
        Err(EngineError::Spawn { command, source }) => {
            assert_eq!(command, "/nonexistent/xqz-no-such-engine --uci");
            assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
        }
        other => panic!("expected Spawn, got {other:?}"),
    }
    assert!(matches!(UciEngine::spawn(&EngineConfig::new(Vec::new())), Err(EngineError::Spawn { .. })));
}

#[test]
fn engine_that_exits_at_once() {
    let started = Instant::now();
    match UciEngine::spawn(&shell("exit 3", 5000)) {
        Err(EngineError::Exited { status, .. }) => assert!(status.contains('3'), "{status}"),
        other => panic!("expected Exited, got {other:?}"),
    }
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
}

#[test]
fn engine_that_exits_while_searching() {
    let mut engine = UciEngine::spawn(&fake("exit 0", None)).unwrap();
    let game = Game::new(GameConfig::default());
    assert!(matches!(engine.go(&game, &Limit::depth(1)), Err(EngineError::Exited { .. })));
}

#[test]
fn silent_engine_times_out() {
    let started = Instant::now();
    match UciEngine::spawn(&shell("while read -r line; do :; done", 300)) {
        Err(EngineError::Timeout { waiting_for, after }) => {
            assert_eq!(waiting_for, "uciok");
            assert!(after >= Duration::from_millis(300), "{after:?}");
        }
        other => panic!("expected Timeout, got {other:?}"),
    }
    // Spawn, the wait and the drop's `quit` (the script ends at the end of its input).
    assert!(started.elapsed() < Duration::from_secs(3), "{:?}", started.elapsed());
}

#[test]
fn engine_that_never_finishes_its_search_times_out() {
    let mut config = fake("echo 'info depth 1 score cp 0'", None);
    config.timeout = Duration::from_millis(300);
    let mut engine = UciEngine::spawn(&config).unwrap();
    let game = Game::new(GameConfig::default());
    let started = Instant::now();
    let result = engine.go(&game, &Limit::movetime(Duration::from_millis(200)));
    let waited = started.elapsed();
    assert!(
        matches!(result, Err(EngineError::Timeout { ref waiting_for, .. }) if waiting_for == "bestmove"),
        "{result:?}"
    );
    // movetime + timeout.
    assert!(waited >= Duration::from_millis(500) && waited < Duration::from_secs(3), "{waited:?}");
}

#[test]
fn engine_without_the_variant_is_refused() {
    let mut config = fake("echo 'bestmove h2e2'", None);
    config.variant = Some("xiangqi".to_string());
    match UciEngine::spawn(&config) {
        Err(EngineError::Protocol(message)) => assert!(message.contains("UCI_Variant"), "{message}"),
        other => panic!("expected Protocol, got {other:?}"),
    }
}

#[test]
fn drop_kills_an_engine_that_ignores_quit() {
    // Answers the handshake, then ignores everything, even the end of its input.
    let config = shell(
        r#"read -r cmd; echo uciok; read -r cmd; echo readyok; while :; do read -r cmd || sleep 0.05; done"#,
        2000,
    );
    let engine = UciEngine::spawn(&config).unwrap();
    let started = Instant::now();
    drop(engine);
    let took = started.elapsed();
    assert!(took >= Duration::from_millis(900) && took < Duration::from_secs(3), "{took:?}");
}

#[test]
fn unbounded_timeouts_do_not_overflow() {
    let mut config = fake("echo 'bestmove h2e2'", None);
    config.timeout = Duration::MAX;
    let mut engine = UciEngine::spawn(&config).unwrap();
    let game = Game::new(GameConfig::default());
    let reply = engine.go(&game, &Limit::movetime(Duration::MAX)).unwrap();
    assert_eq!(reply.best, "h2e2".parse().unwrap());
}

#[test]
fn an_engine_player_is_named_by_its_settings() {
    use xqz_arena::player::{EnginePlayer, Player};
    let mut config = fake(r#"echo "bestmove h2e2""#, None);
    config.options = vec![("Hash".to_string(), "32".to_string())];
    let shallow = EnginePlayer::spawn(config.clone(), Limit::depth(1)).unwrap();
    let deeper = EnginePlayer::spawn(config, Limit::depth(2)).unwrap();
    assert_eq!(shallow.name(), "Fake Engine 1.0 [Hash=32] depth 1");
    assert_ne!(shallow.name(), deeper.name(), "one engine at two settings is two players");
}
