//! The engine driven as a GUI drives it: whole sessions through in-memory pipes, checking every
//! reply against the rules core.

use std::io::{BufRead, BufReader, Cursor, Write};
use std::time::{Duration, Instant};

use xiangqi::game::{Game, GameConfig};
use xiangqi::{Move, Position};
use xqz_mcts::{EvalError, Evaluation, Evaluator, MaterialEvaluator};
use xqz_test_support::games::game_after;
use xqz_uci::{Engine, Options};

fn material_engine() -> Engine {
    Engine::new("test", Box::new(|_: &Options| Ok(Box::new(MaterialEvaluator) as Box<dyn Evaluator>)))
}

/// Runs a whole session from a script and returns the engine's lines.
fn session(engine: Engine, script: &str) -> Vec<String> {
    let mut output = Vec::new();
    engine.run(Cursor::new(script.to_string()), &mut output).unwrap();
    String::from_utf8(output).unwrap().lines().map(str::to_string).collect()
}

fn bestmoves(lines: &[String]) -> Vec<String> {
    lines.iter().filter_map(|l| l.strip_prefix("bestmove ")).map(|l| l.split(' ').next().unwrap().to_string()).collect()
}

#[test]
fn handshake_lists_the_options_and_answers_isready() {
    let lines = session(material_engine(), "uci\nisready\nquit\n");
    assert_eq!(lines[0], "id name test");
    assert!(lines[1].starts_with("id author"));
    for option in ["ModelFile", "Device", "Threads", "Playouts", "BatchSize", "MultiPV", "UCI_ShowWDL", "Move Overhead"]
    {
        assert!(lines.iter().any(|l| l.starts_with(&format!("option name {option} type "))), "no option {option}");
    }
    let uciok = lines.iter().position(|l| l == "uciok").unwrap();
    assert_eq!(lines[uciok + 1], "readyok");
    assert_eq!(lines.len(), uciok + 2);
}

#[test]
fn a_position_with_moves_gets_a_legal_bestmove_and_a_legal_pv() {
    let moves = "h2e2 h9g7 h0g2 i9h9";
    let lines = session(material_engine(), &format!("uci\nposition startpos moves {moves}\nd\ngo nodes 200\n"));
    let game = game_after(moves);
    assert!(lines.contains(&format!("info string fen {} plies 4", game.position())));
    let best: Move = bestmoves(&lines)[0].parse().unwrap();
    assert!(game.legal_moves().contains(&best));
    let info = lines.iter().rfind(|l| l.starts_with("info depth")).unwrap();
    let field = |name: &str| -> String {
        let tokens: Vec<&str> = info.split(' ').collect();
        tokens[tokens.iter().position(|&t| t == name).unwrap() + 1].to_string()
    };
    assert_eq!(field("nodes"), "200");
    assert!(field("cp").parse::<i32>().is_ok());
    let pv = &info[info.find(" pv ").unwrap() + 4..];
    let mut line = game.clone();
    for mv in pv.split(' ') {
        line.push_str(mv).unwrap();
    }
    assert_eq!(pv.split(' ').next().unwrap(), best.to_string(), "the bestmove leads the pv");
}

#[test]
fn fen_positions_wdl_and_multipv() {
    // Red wins at once with a1d1 (mate: the kings face on the e-file) or a1a8 (stalemate, which
    // loses in xiangqi too); the search has no reason to prefer either.
    let script = "setoption name UCI_ShowWDL value true\nsetoption name MultiPV value 3\n\
                  position fen 3k5/9/9/9/9/9/9/9/R8/4K4 w - - 0 1\ngo nodes 300\n";
    let lines = session(material_engine(), script);
    let best = bestmoves(&lines);
    assert!(best == ["a1d1"] || best == ["a1a8"], "{best:?}");
    let last: Vec<&String> = lines.iter().filter(|l| l.starts_with("info depth")).collect();
    let last = &last[last.len() - 3..];
    assert!(last[0].ends_with(&format!(" pv {}", best[0])), "the first line leads with the move played: {}", last[0]);
    for (k, line) in last.iter().enumerate() {
        assert!(line.contains(&format!(" multipv {} ", k + 1)), "{line}");
        assert!(line.contains(" wdl "), "{line}");
    }
    assert!(last[0].contains("score mate 1 wdl 1000 0 0"), "{}", last[0]);
}

#[test]
fn a_proven_quiet_mate_is_reported_as_a_mate_in_two() {
    // P e5-f5 opens the e-file, where the kings would face, and each of the black king's two
    // replies is mated at once; no check mates within three moves (checked with pyffish), so only
    // the search's proofs find it.
    let lines = session(material_engine(), "position fen 9/3k5/9/9/4P4/9/9/4K4/9/4R4 w - - 0 1\ngo nodes 400\n");
    assert_eq!(bestmoves(&lines), ["e5f5"]);
    assert!(lines.iter().any(|l| l.contains(" score mate 2 ") && l.contains(" pv e5f5")), "{lines:#?}");
}

#[test]
fn garbage_gets_an_info_string_and_the_session_goes_on() {
    let script = "hello\n\nposition fen not-a-fen\nposition startpos moves h2e2 h2e2\n\
                  setoption name Playouts value -5\nsetoption name NoSuchOption value 1\nsetoption\n\
                  go nodes abc\n\u{fffd}\u{1}\nposition startpos moves h2e2\nposition moves\nd\ngo nodes 50\n";
    let lines = session(material_engine(), script);
    let errors = lines.iter().filter(|l| l.starts_with("info string error")).count();
    assert_eq!(errors, 9, "{lines:#?}");
    assert!(lines.iter().any(|l| l.contains("bad FEN")));
    assert!(lines.iter().any(|l| l.contains("move 2 (h2e2)")));
    // The illegal move list left the previous position (the start) in place; the last good
    // position command set one move.
    assert!(lines.contains(&format!("info string fen {} plies 1", game_after("h2e2").position())));
    // Both searches answered (the garbled go searched with the default limit).
    let best = bestmoves(&lines);
    assert_eq!(best.len(), 2);
    assert!(Game::new(GameConfig::default()).legal_moves().contains(&best[0].parse().unwrap()));
    assert!(game_after("h2e2").legal_moves().contains(&best[1].parse().unwrap()));
}

#[test]
fn stop_ends_an_infinite_search_and_isready_is_answered_during_it() {
    let (reader, mut to_engine) = std::io::pipe().unwrap();
    let (from_engine, writer) = std::io::pipe().unwrap();
    let engine = std::thread::spawn(move || material_engine().run(BufReader::new(reader), writer));
    let mut replies = BufReader::new(from_engine).lines();
    writeln!(to_engine, "position startpos\ngo infinite").unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    writeln!(to_engine, "isready").unwrap();
    let mut seen_info = false;
    loop {
        let line = replies.next().unwrap().unwrap();
        assert!(!line.starts_with("bestmove"), "an infinite search answered before stop");
        seen_info |= line.starts_with("info depth");
        if line == "readyok" {
            break;
        }
    }
    assert!(seen_info, "a long search reports its progress");
    let stop = Instant::now();
    writeln!(to_engine, "stop").unwrap();
    let best = loop {
        let line = replies.next().unwrap().unwrap();
        if let Some(best) = line.strip_prefix("bestmove ") {
            break best.split(' ').next().unwrap().to_string();
        }
    };
    assert!(stop.elapsed() < Duration::from_secs(5));
    assert!(Game::new(GameConfig::default()).legal_moves().contains(&best.parse().unwrap()));
    writeln!(to_engine, "quit").unwrap();
    engine.join().unwrap().unwrap();
}

#[test]
fn the_clock_stops_the_search() {
    let start = Instant::now();
    let lines = session(material_engine(), "position startpos\ngo wtime 3000 btime 3000\n");
    // 3000 / 30 = 100 ms of search; generous room for a loaded machine.
    assert!(start.elapsed() < Duration::from_secs(3), "{:?}", start.elapsed());
    assert_eq!(bestmoves(&lines).len(), 1);
}

/// Puts all its prior on the one move it is told to like, and calls every position even.
struct Insistent(Move);

impl Evaluator for Insistent {
    fn evaluate(&mut self, games: &[&Game]) -> Result<Vec<Evaluation>, EvalError> {
        Ok(games
            .iter()
            .map(|g| {
                let legal = g.legal_moves();
                let priors = legal
                    .iter()
                    .map(|&m| {
                        if m == self.0 {
                            1.0
                        } else if legal.contains(&self.0) {
                            0.0
                        } else {
                            1.0 / legal.len() as f32
                        }
                    })
                    .collect();
                Evaluation { priors, wdl: [0.0, 1.0, 0.0] }
            })
            .collect())
    }
}

#[test]
fn never_plays_a_move_that_loses_by_perpetual_check_when_another_exists() {
    // Red's rook has checked from h9/h8 twice; h8h9 would repeat the cycle a third time and lose
    // by the perpetual check rule. The network wants exactly that move, and one playout is all
    // the search gets.
    let losing: Move = "h8h9".parse().unwrap();
    let fen = "3k5/9/7R1/9/9/9/9/9/9/4K4 w - - 0 1";
    let moves = "h7h9 d9d8 h9h8 d8d9 h8h9 d9d8 h9h8 d8d9";
    let engine =
        Engine::new("test", Box::new(move |_: &Options| Ok(Box::new(Insistent(losing)) as Box<dyn Evaluator>)));
    let lines = session(engine, &format!("position fen {fen} moves {moves}\ngo nodes 1\n"));
    let best: Move = bestmoves(&lines)[0].parse().unwrap();
    assert_ne!(best, losing);
    let mut game = Game::from_position(Position::from_fen(fen).unwrap(), GameConfig::default());
    for mv in moves.split(' ') {
        game.push_str(mv).unwrap();
    }
    assert_ne!(game.push(best).unwrap().winner(), Some(xiangqi::Color::Black));
}

#[test]
fn a_model_that_fails_to_load_is_reported_and_the_engine_still_moves() {
    let engine =
        Engine::new("test", Box::new(|options: &Options| Err(format!("no checkpoint at {:?}", options.model))));
    let lines = session(engine, "setoption name ModelFile value /nowhere.json\nisready\ngo nodes 20\n");
    assert!(lines[0].contains("no checkpoint at \"/nowhere.json\""), "{lines:?}");
    assert_eq!(lines[1], "readyok");
    assert!(Game::new(GameConfig::default()).legal_moves().contains(&bestmoves(&lines)[0].parse().unwrap()));
}

#[test]
fn a_mated_side_has_no_bestmove() {
    // Black to move, checkmated: the rook on d0 and the facing kings leave the king nothing.
    let lines = session(material_engine(), "position fen 3k5/9/9/9/9/9/9/9/9/3RK4 b - - 0 1\ngo nodes 10\n");
    assert_eq!(lines.last().unwrap(), "bestmove (none)");
}
