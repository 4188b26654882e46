//! The UCI client against Sjaak II (Debian's `sjaakii` 1.4.1), the other xiangqi engine Debian
//! packages: it numbers ranks 1-10 as Fairy-Stockfish does but writes horses and elephants `h`
//! and `e` in its FEN and refuses `n` and `b`, so every game from a set-up position (the
//! ladder's opening suite) was a forfeit before the client learnt its letters.
//!
//! The engine is `$XQZ_SJAAKII` (`scripts/test` sets it from `scripts/ensure-sjaakii`), else
//! `sjaakii` on the `PATH`, else Debian's `/usr/games/sjaakii` (`ladder::debian_engine`).
#![cfg(unix)]

use std::path::PathBuf;
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use xiangqi::Position;
use xiangqi::game::{Game, GameConfig, Ruleset};
use xqz_arena::ladder::{self, BALANCED_SUITE};
use xqz_arena::player::{EnginePlayer, Player, SearchPlayer};
use xqz_arena::tournament::{MatchPlan, Openings, run_match};
use xqz_arena::uci::{EngineConfig, FenLetters, Limit, UciEngine};
use xqz_mcts::{MaterialEvaluator, SearchConfig};

fn sjaakii_path() -> PathBuf {
    let path = ladder::debian_engine("XQZ_SJAAKII", "sjaakii")
        .expect("no sjaakii: run scripts/ensure-sjaakii (installs Debian's sjaakii)");
    assert!(path.is_file(), "XQZ_SJAAKII={} does not exist: run scripts/ensure-sjaakii", path.display());
    path
}

fn sjaakii_config() -> EngineConfig {
    let mut config = EngineConfig::parse(&format!("sjaakii:{}", sjaakii_path().display())).unwrap();
    config.timeout = Duration::from_secs(20);
    config
}

#[test]
fn the_spec_names_its_dialect() {
    let config = sjaakii_config();
    assert_eq!((config.fen_letters, config.variant.as_deref()), (FenLetters::HorseElephant, Some("xiangqi")));
    let engine = UciEngine::spawn(&config).unwrap();
    assert!(engine.name().starts_with("Sjaak II"), "{}", engine.name());
}

/// Positions given by FEN, reached by random moves (captures and rank 10 included): every reply
/// is legal there, which it is only if the engine read the position we meant.
#[test]
fn replies_are_legal_in_positions_given_by_fen() {
    let mut engine = UciEngine::spawn(&sjaakii_config()).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(0x5A4A);
    let mut asked = 0;
    while asked < 20 {
        let mut game = Game::new(GameConfig::default());
        for _ in 0..rng.random_range(1..=60) {
            if game.outcome().is_over() {
                break;
            }
            let legal = game.legal_moves();
            game.push(legal[rng.random_range(0..legal.len())]).unwrap();
        }
        if game.outcome().is_over() {
            continue;
        }
        let set_up = Game::from_position(game.position().clone(), GameConfig::default());
        engine.new_game().unwrap();
        let reply = engine.go(&set_up, &Limit::depth(2)).unwrap_or_else(|e| panic!("{e} in {}", set_up.position()));
        assert!(set_up.legal_moves().contains(&reply.best), "{} in {}", reply.best, set_up.position());
        asked += 1;
    }
}

/// A match from the ladder's opening suite, as `xqz eval match --b sjaakii:/usr/games/sjaakii`
/// plays it: no game is lost by forfeit.
#[test]
fn a_match_from_the_opening_suite_has_no_forfeits() {
    let plan = MatchPlan {
        pairs: 2,
        played: Default::default(),
        concurrency: 1,
        openings: Openings::parse_suite(BALANCED_SUITE).unwrap(),
        game: GameConfig { ruleset: Ruleset::Wxf, max_plies: Some(40), ..GameConfig::default() },
        sprt: None,
    };
    assert!(matches!(&plan.openings, Openings::Suite(p) if p[0] != Position::startpos()), "set-up positions");
    let material = || -> Result<Box<dyn Player>, _> {
        Ok(Box::new(SearchPlayer::new("material@8", MaterialEvaluator, 8, SearchConfig::default())))
    };
    let sjaakii =
        || -> Result<Box<dyn Player>, _> { Ok(Box::new(EnginePlayer::spawn(sjaakii_config(), Limit::depth(1))?)) };
    let mut forfeits = Vec::new();
    let report = run_match(&plan, &material, &sjaakii, |game, _| forfeits.extend(game.forfeit.clone())).unwrap();
    assert_eq!(report.games.games(), 4);
    assert!(forfeits.is_empty(), "{forfeits:?}");
}
