//! `xqz uci` driven as a GUI drives it, through its stdin and stdout, with a real checkpoint:
//! handshake, options, a position with moves, `go nodes`, `stop` during `go infinite`, garbage.

mod common;

use std::io::{BufRead, BufReader, Lines, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::mpsc::{self, Receiver};
use std::time::Duration;

use xiangqi::Move;
use xiangqi::game::{Game, GameConfig};
use xqz_test_support::games::game_after;

/// A running `xqz uci`, killed when dropped; its lines arrive through a channel so every wait
/// has a timeout.
struct Gui {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
}

impl Gui {
    fn start(args: &[&str]) -> Gui {
        let mut child = Command::new(env!("CARGO_BIN_EXE_xqz"))
            .arg("uci")
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout: Lines<BufReader<ChildStdout>> = BufReader::new(child.stdout.take().unwrap()).lines();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in stdout.map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        Gui { child, stdin, lines }
    }

    fn send(&mut self, line: &str) {
        writeln!(self.stdin, "{line}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Lines up to and including the first for which `last` holds.
    fn until(&self, last: impl Fn(&str) -> bool) -> Vec<String> {
        let mut seen = Vec::new();
        loop {
            let line =
                self.lines.recv_timeout(Duration::from_secs(60)).unwrap_or_else(|e| panic!("{e}; got {seen:#?}"));
            let done = last(&line);
            seen.push(line);
            if done {
                return seen;
            }
        }
    }

    fn bestmove(&self) -> (Vec<String>, String) {
        let lines = self.until(|l| l.starts_with("bestmove "));
        let best = lines.last().unwrap()["bestmove ".len()..].split(' ').next().unwrap().to_string();
        (lines, best)
    }
}

impl Drop for Gui {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_gui_session_with_a_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let model = common::tiny_checkpoint(dir.path());
    let mut gui = Gui::start(&["--device", "cpu", "--model", ""]);

    gui.send("uci");
    let hello = gui.until(|l| l == "uciok");
    assert!(hello[0].starts_with("id name xqz "));
    assert!(hello.iter().any(|l| l.starts_with("option name ModelFile type string")));
    assert!(hello.iter().any(|l| l == "option name UCI_Variant type combo default xiangqi var xiangqi"), "{hello:?}");

    // No model (not even the shipped one): isready says so and the engine stays up.
    gui.send("isready");
    let ready = gui.until(|l| l == "readyok");
    assert!(ready[0].starts_with("info string error: no model loaded"), "{ready:?}");
    gui.send(&format!("setoption name ModelFile value {}", model.display()));
    gui.send("setoption name UCI_ShowWDL value true");
    gui.send("setoption name MultiPV value 2");
    gui.send("isready");
    assert_eq!(gui.until(|l| l == "readyok"), ["readyok"], "the model loads without complaint");

    gui.send("ucinewgame");
    let moves = "h2e2 h9g7 h0g2";
    gui.send(&format!("position startpos moves {moves}"));
    gui.send("go nodes 64");
    let (lines, best) = gui.bestmove();
    let game = game_after(moves);
    assert!(game.legal_moves().contains(&best.parse::<Move>().unwrap()), "{best} is not legal");
    let infos: Vec<&String> = lines.iter().filter(|l| l.starts_with("info depth")).collect();
    assert!(infos.len() >= 2, "{lines:?}");
    let first = infos[infos.len() - 2];
    assert!(first.contains(" multipv 1 ") && first.contains(" wdl ") && first.contains(" nodes 64 "), "{first}");
    assert!(infos[infos.len() - 1].contains(" multipv 2 "));

    // Garbage, an illegal move list and a bad option value: each an info string, nothing else.
    gui.send("setoption name UCI_Variant value xiangqi");
    gui.send("isready");
    assert_eq!(gui.until(|l| l == "readyok"), ["readyok"], "the engine's own variant is accepted");
    for line in [
        "garbage",
        "position startpos moves h2e2 e2e2",
        "setoption name Threads value many",
        "setoption name UCI_Variant value chess",
        "go sideways",
    ] {
        gui.send(line);
        if line.starts_with("go") {
            let (lines, best) = gui.bestmove();
            assert!(lines[0].starts_with("info string error"), "{lines:?}");
            assert!(game.legal_moves().contains(&best.parse::<Move>().unwrap()), "the position is unchanged");
        } else {
            gui.send("isready");
            let reply = gui.until(|l| l == "readyok");
            assert_eq!(reply.len(), 2, "{reply:?}");
            assert!(reply[0].starts_with("info string error"), "{reply:?}");
        }
    }

    // `go infinite` runs until `stop`.
    gui.send("position startpos");
    gui.send("go infinite");
    std::thread::sleep(Duration::from_millis(500));
    assert!(gui.lines.try_iter().all(|l| !l.starts_with("bestmove")), "an infinite search answered before stop");
    gui.send("stop");
    let (_, best) = gui.bestmove();
    assert!(Game::new(GameConfig::default()).legal_moves().contains(&best.parse::<Move>().unwrap()));

    gui.send("quit");
    let status = gui.child.wait().unwrap();
    assert!(status.success());
}

#[test]
fn with_no_arguments_it_plays_the_shipped_model() {
    let mut gui = Gui::start(&[]);
    gui.send("uci");
    let hello = gui.until(|l| l == "uciok");
    assert!(hello.iter().any(|l| l == "option name ModelFile type string default shipped"), "{hello:?}");
    gui.send("isready");
    assert_eq!(gui.until(|l| l == "readyok"), ["readyok"], "the shipped model loads without complaint");

    // One playout: the move is the network's favourite, which it clearly prefers (so that the
    // test tells a network from uniform priors).
    let moves = "h2e2 h9g7";
    gui.send(&format!("position startpos moves {moves}"));
    gui.send("go nodes 1");
    let (_, best) = gui.bestmove();
    let game = game_after(moves);
    let shipped = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../models/shipped.json");
    let (net, _) = xqz_net::checkpoint::load(&shipped, xqz_net::Device::Cpu, None).unwrap();
    let mut input = vec![0.0; xqz_net::encoding::INPUT_SIZE];
    xqz_net::encoding::encode_game(&game, &mut input);
    let logits = net.predict(&input).unwrap().policy_logits;
    let legal = game.legal_moves();
    let logit = |mv: Move| logits[xqz_net::policy::index_for(mv, game.position().turn()).unwrap()];
    let favourite = legal.iter().copied().max_by(|a, b| logit(*a).total_cmp(&logit(*b))).unwrap();
    assert_eq!(best, favourite.to_string());
    let total: f32 = legal.iter().map(|&mv| (logit(mv) - logit(favourite)).exp()).sum();
    assert!(1.0 / total > 2.0 / legal.len() as f32, "the favourite's prior {} is near uniform", 1.0 / total);
    gui.send("quit");
    assert!(gui.child.wait().unwrap().success());
}
