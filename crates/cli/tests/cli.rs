//! The `xqz` command line as a user runs it.

use std::process::{Command, Output};

fn xqz(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_xqz")).args(args).output().expect("xqz runs")
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).unwrap()
}

#[test]
fn perft_prints_nodes_and_nps() {
    let out = xqz(&["perft", "--depth", "3"]);
    assert!(out.status.success());
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "nodes 79666");
    assert!(lines[1].starts_with("nps ") && lines[1][4..].parse::<u64>().is_ok(), "{text}");
}

#[test]
fn simulate_gate_prints_the_gates_pass_rate_and_length_for_each_true_elo() {
    let args = ["eval", "simulate-gate", "--gate", "0,50", "--elo", "-60,150", "--matches", "40", "--seed", "3"];
    let out = xqz(&args);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    // 3 × the 69.2 pairs SPRT(0, 50) takes on average at 50 Elo, rounded up.
    assert!(lines[0].starts_with("gate SPRT(0, 50) logistic Elo") && lines[0].contains("cut at 208 pairs"), "{text}");
    let row = |line: &str| line.split_whitespace().map(String::from).collect::<Vec<_>>();
    assert_eq!(row(lines[1])[..3], ["true", "Elo", "pass"]);
    assert_eq!(row(lines[2])[..3], ["-60", "0.0%", "100.0%"], "{text}");
    assert_eq!(row(lines[3])[..3], ["+150", "100.0%", "0.0%"], "{text}");
    assert_eq!(lines.len(), 4);
    let out = xqz(&["eval", "simulate-gate", "--shape", "0,0,5,0,0"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("more than one bin"));
}

#[test]
fn perft_divide_lists_each_root_move_in_coordinates() {
    let out = xqz(&["perft", "--depth", "2", "--divide"]);
    let text = stdout(&out);
    let rows: Vec<&str> = text.lines().filter(|l| !l.starts_with("nodes") && !l.starts_with("nps")).collect();
    assert_eq!(rows.len(), 44);
    assert!(rows.contains(&"h2e2 45"), "{text}");
    assert!(text.contains("nodes 1920\n"));
}

#[test]
fn perft_rejects_a_bad_fen_with_a_message() {
    let out = xqz(&["perft", "--fen", "rnbakabnr/9 w", "--depth", "1"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("10"), "names the expected rank count");
}

#[test]
fn adjudicate_prints_one_json_line() {
    let out = xqz(&[
        "adjudicate",
        "--fen",
        "3k5/9/7R1/9/9/9/9/9/9/4K4 w - - 0 1",
        "--moves",
        "h7h9 d9d8 h9h8 d8d9 h8h9 d9d8 h9h8 d8d9 h8h9",
    ]);
    assert!(out.status.success());
    assert_eq!(
        stdout(&out),
        "{\"status\":\"win\",\"winner\":\"black\",\"reason\":\"perpetual_check\",\"article\":\"25.1\",\"ruleset\":\"chinese2011\"}\n"
    );
    let ongoing = xqz(&["adjudicate", "--moves", "h2e2 h9g7", "--ruleset", "wxf"]);
    assert!(stdout(&ongoing).starts_with("{\"status\":\"ongoing\",\"winner\":null"));
}

/// `moves` (a cycle, or any sequence) repeated to `plies` plies, as `--moves` takes them.
fn repeated(moves: &[&str], plies: usize) -> String {
    moves.iter().cycle().take(plies).copied().collect::<Vec<_>>().join(" ")
}

/// `xqz adjudicate`'s line for `plies` plies of `moves` from `fen` under `ruleset`.
fn adjudicated(fen: &str, moves: &[&str], plies: usize, ruleset: &str) -> String {
    let out = xqz(&["adjudicate", "--fen", fen, "--moves", &repeated(moves, plies), "--ruleset", ruleset]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    stdout(&out).trim_end().to_string()
}

fn win(winner: &str, reason: &str, article: &str, ruleset: &str) -> String {
    format!(r#"{{"status":"win","winner":"{winner}","reason":"{reason}","article":"{article}","ruleset":"{ruleset}"}}"#)
}

fn draw(reason: &str, article: &str, ruleset: &str) -> String {
    format!(r#"{{"status":"draw","winner":null,"reason":"{reason}","article":"{article}","ruleset":"{ruleset}"}}"#)
}

/// The articles of the rule books that the rules core models beyond the basic repetition rulings,
/// each in a game whose verdict it decides (the positions are those of crates/xiangqi's
/// rules2011.rs and rules1999.rs, where each is explained).
#[test]
fn adjudicate_cites_the_article_that_decides_each_game() {
    const CN: &str = "chinese2011";
    // 23.4: a rook's tour of chases over three points makes a pending position after nine rounds,
    // at ply 17, before any position occurred three times; it is ruled with the rook's second
    // move after it (23.5), at ply 21.
    let tour = ["a1a3", "e9e8", "a3a5", "e8e9", "a5a1", "e9e8", "a1a3", "e8e9", "a3a5", "e9e8", "a5a1", "e8e9"];
    let fen = "4k4/9/9/9/7n1/9/7c1/9/R6n1/3K5 w - - 0 1";
    assert_eq!(
        adjudicated(fen, &tour, 16, CN),
        r#"{"status":"ongoing","winner":null,"reason":null,"article":null,"ruleset":null}"#
    );
    let lost = win("black", "perpetual_chase", "23.4", CN);
    assert_eq!(adjudicated(fen, &tour, 17, CN), format!(r#"{{"status":"pending","ruling":{lost}}}"#));
    assert_eq!(adjudicated(fen, &tour, 21, CN), lost);

    // 23.5: Red's rook perpetually chases an unprotected horse. At the third occurrence (ply 8,
    // Red's move) the ruling is pending: Red has two rounds to vary, and loses with its second
    // move in the cycle (ply 12) unless it varies.
    let chase = ["a5c6", "i5i6", "c6a5", "i6i5"];
    let fen = "5k3/4a4/9/9/n7R/9/9/9/9/3AKA3 b - - 0 1";
    let lost = win("black", "perpetual_chase", "25.3", CN);
    let pending = format!(r#"{{"status":"pending","ruling":{lost}}}"#);
    assert_eq!(
        adjudicated(fen, &chase, 7, CN),
        r#"{"status":"ongoing","winner":null,"reason":null,"article":null,"ruleset":null}"#
    );
    for plies in 8..12 {
        assert_eq!(adjudicated(fen, &chase, plies, CN), pending, "ply {plies}");
    }
    assert_eq!(adjudicated(fen, &chase, 12, CN), lost);
    let varied = format!("{} i5i4", repeated(&chase, 9));
    let out = xqz(&["adjudicate", "--fen", fen, "--moves", &varied]);
    assert!(stdout(&out).starts_with(r#"{"status":"ongoing""#), "a side that varies plays on: {}", stdout(&out));

    // 26.4: Red's lone rook, the defending side, attacks unprotected elephants with every move: idle,
    // a draw two rounds after the third occurrence. Horses are no advisors or elephants: a
    // perpetual chase, lost with Red's second move after the third occurrence (ply 11).
    let rook = ["a5a9", "e8f8", "a9a5", "f8e8"];
    assert_eq!(
        adjudicated("2b6/4k4/9/9/R5b2/9/9/8r/9/3K5 w - - 0 1", &rook, 12, CN),
        draw("allowed_repetition", "25.2", CN)
    );
    assert_eq!(
        adjudicated("2n6/4k4/9/9/R5n2/9/9/8r/9/3K5 w - - 0 1", &rook, 11, CN),
        win("black", "perpetual_chase", "25.3", CN)
    );

    // 26.5: Black's block of the rook's check leaves a mate threat that Red's check brought on
    // itself: idle, so Black's idle move and chase are allowed, a draw.
    let self_inflicted = ["c3f3", "e8f7", "f3c3", "f7e8"];
    assert_eq!(
        adjudicated("3N1k3/4a4/1n7/9/2r6/9/2R6/9/3NC4/4K4 w - - 0 1", &self_inflicted, 12, CN),
        draw("allowed_repetition", "25.2", CN)
    );

    // 26.10: a horse's offer that cannot be taken without being mated is a chase, so Red, whose
    // other move chases an unprotected cannon, chases perpetually; without the mate (no pawn on
    // e7) the offer is an exchange and the cycle a draw.
    let horse = ["c6b8", "e9f9", "b8c6", "f9e9"];
    let lost = win("black", "perpetual_chase", "25.3", CN);
    assert_eq!(adjudicated("3nk4/2P6/4P4/2N6/4c4/9/9/9/9/R2K5 w - - 0 1", &horse, 11, CN), lost);
    let drawn = draw("allowed_repetition", "25.2", CN);
    assert_eq!(adjudicated("3nk4/2P6/9/2N6/4c4/9/9/9/9/R2K5 w - - 0 1", &horse, 12, CN), drawn);
    // 26.11: rook and horse against an unprotected horse chase it; against one that both elephants
    // guard they offer an exchange.
    let rook = ["a1a5", "e9e8", "a5a1", "e8e9"];
    assert_eq!(adjudicated("4k4/9/9/9/2n6/4N4/9/9/R5c2/3K5 w - - 0 1", &rook, 11, CN), lost);
    assert_eq!(adjudicated("4k4/9/b3b4/9/2n6/4N4/9/9/R5c2/3K5 w - - 0 1", &rook, 12, CN), drawn);

    // Both sides forbidden: a perpetual rook chase against chases of protected pieces must vary
    // under 2011 (26.9), and is a draw at once under the 1999 book (its 26.3).
    let mutual = ["g1h1", "b6d6", "h1g1", "d6b6"];
    let fen = "3k2rr1/4P4/N3N4/Pc2P4/2b3PP1/9/9/9/4A1C2/4K4 w - - 0 1";
    assert_eq!(adjudicated(fen, &mutual, 11, CN), win("black", "perpetual_chase", "26.9", CN));
    assert_eq!(adjudicated(fen, &mutual, 8, "chinese1999"), draw("mutual_forbidden", "26.3", "chinese1999"));
    // Both sides chase unprotected pieces, so both must vary: a draw, of forbidden moves (26.9).
    let both = ["g1h1", "b6d6", "h1g1", "d6b6"];
    let fen = "3k2rr1/4P4/N3N4/1c7/2b3PP1/9/9/9/4A1C2/4K4 w - - 0 1";
    assert_eq!(adjudicated(fen, &both, 12, CN), draw("mutual_forbidden", "26.9", CN));
    // One side forbidden under 1999: the chaser loses once it has repeated one more cycle (24.3).
    let fen = "5k3/4a4/9/9/n7R/9/9/9/9/3AKA3 b - - 0 1";
    assert_eq!(adjudicated(fen, &chase, 12, "chinese1999"), win("black", "perpetual_chase", "26.4", "chinese1999"));
}

#[test]
fn adjudicate_names_an_illegal_move_and_its_index_and_prints_nothing_else() {
    let out = xqz(&["adjudicate", "--moves", "h2e2 h9g7 a0a5"]);
    assert!(!out.status.success());
    assert!(out.stdout.is_empty());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("a0a5") && err.contains("ply 2"), "{err}");
}

#[test]
fn adjudicate_treats_a_move_after_the_end_as_illegal() {
    let out = xqz(&["adjudicate", "--fen", "4k4/R8/9/9/9/9/9/9/9/1R1K5 w - - 0 1", "--moves", "b0b9 e9e8"]);
    assert!(!out.status.success());
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("e9e8"));
}

#[test]
fn bench_net_prints_raw_and_service_throughput() {
    let out = xqz(&[
        "bench",
        "net",
        "--model",
        "tiny",
        "--device",
        "cpu",
        "--batches",
        "1,8",
        "--callers",
        "4",
        "--seconds",
        "0.2",
    ]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("model tiny (2 blocks x 16 channels"), "{text}");
    let sgemm: f64 = lines[1]
        .strip_prefix("reference: sgemm 1024x1024 through libtorch: ")
        .and_then(|r| r.strip_suffix(" GFLOP/s"))
        .unwrap_or_else(|| panic!("{text}"))
        .parse()
        .unwrap();
    assert!(sgemm > 0.0);
    let rows = [(1, "inference"), (1, "training"), (8, "inference"), (8, "training")];
    for (line, (batch, graph)) in lines[2..6].iter().zip(rows) {
        let rest =
            line.strip_prefix(&format!("raw batch {batch:>4}, {graph:>9} graph:")).unwrap_or_else(|| panic!("{line}"));
        let fields: Vec<&str> = rest.split(',').map(str::trim).collect();
        let number = |field: &str, unit: &str| -> f64 {
            field.strip_suffix(unit).unwrap_or_else(|| panic!("{line}")).trim().parse().unwrap()
        };
        let (rate, gflops) = (number(fields[0], "positions/s"), number(fields[1], "GFLOP/s"));
        // GFLOP/s are printed to a tenth: tiny's few MFLOP a position can round to 0.0 on a
        // loaded machine, so the figure is checked against the rate rather than against 0.
        let flops = xqz_net::inference::flops_per_position(&xqz_net::ModelConfig::builtin("tiny").unwrap()) as f64;
        // Both figures are rounded as printed: the rate to a whole position, GFLOP/s to a tenth.
        let slack = 0.05 + 0.5 * flops / 1e9 + 1e-6;
        assert!(rate > 0.0 && (gflops - rate * flops / 1e9).abs() <= slack, "{line}");
        assert!(fields[2].ends_with("% of sgemm"), "{line}");
    }
    assert!(lines[6].starts_with("service, 4 callers:") && lines[6].contains("mean batch"), "{text}");
}

/// The JSON lines of a `--json` benchmark, each checked to name `bench` and `measurement`.
fn json_lines(out: &Output) -> Vec<serde_json::Value> {
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<serde_json::Value> =
        stdout(out).lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}"))).collect();
    assert!(lines.iter().all(|l| l["bench"].is_string() && l["measurement"].is_string()), "{lines:?}");
    lines
}

#[test]
fn bench_net_json_prints_one_object_per_measurement() {
    let args = ["bench", "net", "--model", "tiny", "--device", "cpu", "--batches", "1,128", "--callers", "4"];
    let lines = json_lines(&xqz(&[&args[..], &["--seconds", "0.2", "--json"]].concat()));
    let kinds: Vec<(&str, Option<u64>, Option<&str>)> =
        lines.iter().map(|l| (l["measurement"].as_str().unwrap(), l["batch"].as_u64(), l["graph"].as_str())).collect();
    assert_eq!(
        kinds,
        [
            ("sgemm", None, None),
            ("raw", Some(1), Some("inference")),
            ("raw", Some(1), Some("training")),
            ("raw", Some(128), Some("inference")),
            ("raw", Some(128), Some("training")),
            ("service", None, None)
        ]
    );
    let sgemm = lines[0]["gflops"].as_f64().unwrap();
    for raw in &lines[1..5] {
        let gflops = raw["gflops"].as_f64().unwrap();
        // GFLOP/s are positions/s times the operations of one forward pass of tiny.
        let flops = xqz_net::inference::flops_per_position(&xqz_net::ModelConfig::builtin("tiny").unwrap()) as f64;
        assert!((gflops - raw["positions_per_s"].as_f64().unwrap() * flops / 1e9).abs() < 1e-6 * gflops, "{raw}");
        assert!((raw["share_of_sgemm"].as_f64().unwrap() - gflops / sgemm).abs() < 1e-9, "{raw}");
    }
    let lines = &lines[1..];
    for l in lines {
        assert_eq!(
            (l["bench"].as_str(), l["model"].as_str(), l["device"].as_str(), l["precision"].as_str()),
            (Some("net"), Some("tiny"), Some("Cpu"), Some("f32")),
            "measured in f32 unless told"
        );
        assert!(l["positions_per_s"].as_f64().unwrap() > 0.0 && l["parameters"].as_u64().unwrap() > 0, "{l}");
    }
    let service = &lines[4];
    assert_eq!(service["callers"], 4);
    let share = service["share_of_raw_128"].as_f64().unwrap();
    let expected = service["positions_per_s"].as_f64().unwrap() / lines[2]["positions_per_s"].as_f64().unwrap();
    assert!((share - expected).abs() < 1e-9 && service["mean_batch"].as_f64().unwrap() >= 1.0, "{service}");
}

#[test]
fn bench_selfplay_json_counts_the_games_it_played() {
    let args = ["bench", "selfplay", "--model", "tiny", "--device", "cpu", "--games", "2", "--games-per-thread", "2"];
    let lines = json_lines(&xqz(&[&args[..], &["--max-plies", "12", "--playouts", "8", "--json"]].concat()));
    assert_eq!(lines.len(), 1, "{lines:?}");
    let l = &lines[0];
    assert_eq!(
        (l["bench"].as_str(), l["model"].as_str(), l["games"].as_u64()),
        (Some("selfplay"), Some("tiny"), Some(2))
    );
    let (moves, secs) = (l["moves"].as_f64().unwrap(), l["seconds"].as_f64().unwrap());
    assert!(moves > 0.0 && moves <= 24.0, "two games of at most 12 plies: {l}");
    assert!((l["moves_per_s"].as_f64().unwrap() - moves / secs).abs() < 1e-6 * moves / secs, "{l}");
    assert!(l["mean_batch"].as_f64().unwrap() >= 1.0, "{l}");
    // Self-play's precision is `auto`, resolved on this machine's CPU.
    assert_eq!(l["precision"].as_str(), Some(auto_precision()), "{l}");
    let busy = l["busy_share_of_cores"].as_f64().unwrap();
    let cores = l["cores"].as_f64().unwrap();
    assert!(busy > 0.0 && (busy - l["cpu_s"].as_f64().unwrap() / (secs * cores)).abs() < 1e-9, "{l}");
}

/// The precision `auto` must resolve to on this machine, read from the kernel's CPU flags rather
/// than from the feature detection the binary itself uses.
fn auto_precision() -> &'static str {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let bf16 = cpuinfo.lines().any(|l| l.starts_with("flags") && l.split_whitespace().any(|f| f == "avx512_bf16"));
    if bf16 { "bf16" } else { "f32" }
}

#[test]
fn bench_precision_compares_bf16_with_f32_on_positions_of_a_dataset() {
    // Real positions: the shipped model's own self-play, where its policy and value mean something.
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_str().unwrap();
    let selfplay = ["selfplay", "--model", "shipped", "--device", "cpu", "--games", "3", "--playouts", "16"];
    let played =
        xqz(&[&selfplay[..], &["--full-search-probability", "1", "--max-plies", "60", "--out", data]].concat());
    assert!(played.status.success(), "{}", String::from_utf8_lossy(&played.stderr));
    let args = ["bench", "precision", "--model", "shipped", "--data", data, "--device", "cpu", "--batch", "8"];
    let lines = json_lines(&xqz(&[&args[..], &["--positions", "100", "--json"]].concat()));
    assert_eq!(lines.len(), 1, "{lines:?}");
    let l = &lines[0];
    assert_eq!((l["bench"].as_str(), l["positions"].as_u64()), (Some("precision"), Some(100)), "{l}");
    let (agreement, diff) = (l["top_move_agreement"].as_f64().unwrap(), l["value_diff_mean"].as_f64().unwrap());
    assert!(diff <= l["value_diff_max"].as_f64().unwrap(), "{l}");
    // bf16 keeps the model's choices: the same top move on nearly every position, values within 0.02.
    assert!(agreement >= 0.95 && diff < 0.02, "bf16 strays from f32 on the shipped model's positions: {l}");
    assert_eq!(l["gate_met"].as_bool(), Some(agreement >= 0.99 && diff < 0.02), "{l}");
    assert!(l["f32_positions_per_s"].as_f64().unwrap() > 0.0 && l["bf16_positions_per_s"].as_f64().unwrap() > 0.0);
    // It compares f32 with bf16 and nothing else.
    let out = xqz(&[&args[..], &["--precision", "f32"]].concat());
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("--precision does not apply"));
    // A folder without a dataset is refused by name.
    let empty = tempfile::tempdir().unwrap();
    let out = xqz(&["bench", "precision", "--model", "shipped", "--data", empty.path().to_str().unwrap()]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("dataset"), "{}", String::from_utf8_lossy(&out.stderr));
}

/// `scripts/bench-compare` with one binary as both sides: every figure of the inference graph
/// and of the service is matched, with a ratio per round.
#[test]
fn bench_compare_runs_two_binaries_in_alternation_and_prints_their_ratios() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/bench-compare");
    let bin = env!("CARGO_BIN_EXE_xqz");
    let bench = ["bench", "net", "--model", "tiny", "--device", "cpu", "--batches", "1", "--callers", "2"];
    let out = Command::new(script)
        .args([bin, bin, "2", "--"])
        .args(bench)
        .args(["--seconds", "0.1"])
        .output()
        .expect("bench-compare runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = stdout(&out);
    let kinds: Vec<&str> = text.lines().filter(|l| !l.starts_with(' ')).collect();
    assert_eq!(
        kinds,
        [
            "bench=net measurement=raw batch=1 positions_per_s",
            "bench=net measurement=service callers=2 positions_per_s"
        ],
        "{text}"
    );
    let ratios: Vec<&str> = text.lines().filter(|l| l.starts_with("  new/old per round: ")).collect();
    assert_eq!(ratios.len(), 2, "{text}");
    assert!(ratios.iter().all(|l| l.matches(", ").count() == 1 && l.contains("(geometric mean ")), "{text}");
    // The command after `--` must be a benchmark.
    let out = Command::new(script).args([bin, bin, "--", "perft"]).output().expect("bench-compare runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("must be 'bench ...'"));
}

/// The match records committed under docs/learning-evidence recount to the totals and ratings
/// committed beside them (what the docs quote), and the ladder built into `xqz` is the ladder
/// folder's.
#[test]
fn the_committed_evidence_recounts_to_the_numbers_the_docs_quote() {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/recount-evidence");
    let out = Command::new(script).env("XQZ", env!("CARGO_BIN_EXE_xqz")).output().expect("recount-evidence runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}\n{stderr}", stdout(&out));
    assert!(stderr.contains("recounted docs/learning-evidence/ladder"), "{stderr}");
}

#[test]
fn bench_ingest_json_reports_every_game_accepted_with_latencies_and_the_coordinators_memory() {
    let args = ["bench", "ingest", "--workers", "3", "--games", "4", "--batch", "2", "--max-plies", "40", "--json"];
    let lines = json_lines(&xqz(&args));
    let l = lines.iter().find(|l| l["measurement"] == "ingest").unwrap_or_else(|| panic!("{lines:?}"));
    assert_eq!((l["games"].as_u64(), l["accepted"].as_u64(), l["requests"].as_u64()), (Some(12), Some(12), Some(6)));
    let (p50, p99, max) = (
        l["latency_p50_ms"].as_f64().unwrap(),
        l["latency_p99_ms"].as_f64().unwrap(),
        l["latency_max_ms"].as_f64().unwrap(),
    );
    assert!(0.0 < p50 && p50 <= p99 && p99 <= max, "{l}");
    let commits = l["commits"].as_f64().unwrap();
    assert!((1.0..=6.0).contains(&commits), "six requests in one to six group commits: {l}");
    assert!(l["coordinator_peak_rss_bytes"].as_u64().unwrap() > 1 << 20, "{l}");
    assert!(l["dataset"].is_null() && l["games_per_s"].as_f64().unwrap() > 0.0, "{l}");
    assert!(l["coordinator_cpu_seconds"].as_f64().unwrap() >= 0.0, "{l}");
    assert!(l["dashboard_poll_cpu_ms"].is_null() && l["dashboard_polls"].is_null(), "not polled: {l}");
    // One shard per commit while fewer than 16 are waiting to be merged.
    assert_eq!(l["shards"].as_f64(), Some(commits), "{l}");
    // A second coordinator over the stored games started and served.
    assert!(l["restart_ready_ms"].as_f64().unwrap() > 0.0, "{l}");
    assert!(l["restart_rss_bytes"].as_u64().unwrap() > 1 << 20, "{l}");
}

#[test]
fn the_coordinator_takes_its_request_limits_only_in_range() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_str().unwrap();
    let bad = [
        ("--max-concurrent-requests", ["0", "257", "many"]),
        ("--max-request-mib-in-flight", ["0", "4096", "64k"]),
        ("--max-connections", ["0", "65537", "many"]),
        ("--max-calls-per-connection", ["0", "257", "many"]),
        ("--max-request-mib-per-connection", ["0", "4096", "16k"]),
        ("--idle-seconds", ["0.5", "0", "long"]),
        ("--upload-seconds", ["0", "0.5", "long"]),
    ];
    for (flag, values) in bad {
        for value in values {
            let out = xqz(&["coordinator", "--listen", "127.0.0.1:0", flag, value, "--data", data]);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(!out.status.success() && stderr.contains(flag), "{flag} {value}: {stderr}");
        }
    }
}

#[test]
fn bench_ingest_measures_what_polling_the_dashboard_costs_the_coordinator() {
    let args = ["bench", "ingest", "--workers", "2", "--games", "4", "--max-plies", "40", "--poll-dashboard", "0.2"];
    let lines = json_lines(&xqz(&[&args[..], &["--json"]].concat()));
    let l = lines.iter().find(|l| l["measurement"] == "ingest").unwrap_or_else(|| panic!("{lines:?}"));
    assert_eq!(l["accepted"].as_u64(), Some(8), "{l}");
    assert!(l["dashboard_polls"].as_u64().unwrap() >= 1, "{l}");
    // 200 polls back to back cost the coordinator some CPU, but far less than a second each.
    let poll = l["dashboard_poll_cpu_ms"].as_f64().unwrap();
    assert!(poll > 0.0 && poll < 1000.0, "{l}");
    // The share of the load's CPU that polling every 0.2 s takes; none if the load took less than
    // the clock's tick.
    let (load, secs) = (l["coordinator_cpu_seconds"].as_f64().unwrap(), l["seconds"].as_f64().unwrap());
    if load > 0.0 {
        let share = l["dashboard_cpu_share"].as_f64().unwrap();
        assert!((share - poll / 1e3 / 0.2 / (load / secs)).abs() < 1e-9 * share.max(1.0), "{l}");
    } else {
        assert!(l["dashboard_cpu_share"].is_null(), "{l}");
    }
}

#[test]
fn bench_net_refuses_a_missing_gpu_and_unknown_models() {
    let out = xqz(&["bench", "net", "--model", "nope", "--device", "cpu"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unknown model \"nope\""));
    if !tch::Cuda::is_available() {
        let out = xqz(&["bench", "net", "--model", "tiny", "--device", "cuda:0"]);
        assert!(!out.status.success());
        assert!(String::from_utf8_lossy(&out.stderr).contains("CUDA is not available"));
    }
}

#[test]
fn selfplay_writes_games_that_the_data_tools_read() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("games");
    let out_str = out.to_str().unwrap();
    for source in [&["--uniform"][..], &["--init", "tiny", "--device", "cpu"][..]] {
        let mut args =
            vec!["selfplay", "--games", "3", "--playouts", "8", "--cheap-playouts", "4", "--max-plies", "20"];
        args.extend_from_slice(source);
        args.extend_from_slice(&["--out", out_str]);
        let run = xqz(&args);
        assert!(run.status.success(), "{}", String::from_utf8_lossy(&run.stderr));
        assert!(stdout(&run).starts_with("3 games, "), "{}", stdout(&run));
        // A network's precision is said: `auto`, resolved on this CPU.
        let said = stdout(&run).contains(&format!("convolutions ran in {}\n", auto_precision()));
        assert_eq!(said, source[0] != "--uniform", "{}", stdout(&run));
    }
    let stats = xqz(&["data", "stats", out_str]);
    assert!(stats.status.success(), "{}", String::from_utf8_lossy(&stats.stderr));
    assert!(stdout(&stats).contains(" games 6 "), "{}", stdout(&stats));
}

#[test]
fn selfplay_needs_exactly_one_model_source() {
    let out = xqz(&["selfplay", "--games", "1", "--out", "/tmp/never", "--uniform", "--init", "tiny"]);
    assert!(!out.status.success());
    let out = xqz(&["selfplay", "--games", "1", "--out", "/tmp/never", "--model", "/no/such/checkpoint.json"]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("/no/such/checkpoint.json"));
}

#[test]
fn run_refuses_a_bad_learning_rate_schedule_before_starting_anything() {
    let runs = tempfile::tempdir().unwrap();
    let out = xqz(&[
        "run",
        "--name",
        "bad",
        "--runs",
        runs.path().to_str().unwrap(),
        "--lr-schedule",
        "100:0.1",
        "--minutes",
        "1",
    ]);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("step 0"), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(!runs.path().join("bad").exists(), "no run folder for a run that never started");
}

#[test]
fn the_coordinator_refuses_to_start_on_invalid_settings() {
    let dir = tempfile::tempdir().unwrap();
    let start = |flags: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_xqz"))
            .args(["coordinator", "--listen", "127.0.0.1:0", "--data"])
            .arg(dir.path())
            .args(flags)
            .output()
            .unwrap()
    };
    for (flags, message) in [
        (&["--playouts", "0"][..], "playouts = 0"),
        (&["--cheap-playouts", "0"][..], "cheap_playouts = 0"),
        (&["--full-search-probability", "1.5"][..], "full_search_probability = 1.5"),
        (&["--late-temperature=-1"][..], "late_temperature = -1"),
        (&["--resign-threshold", "-2"][..], "resign_threshold = -2"),
        (&["--mate-moves", "9"][..], "mate_moves = 9"),
        (&["--policy-target", "best"][..], "unknown policy target"),
    ] {
        let out = start(flags);
        let error = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && error.contains(message), "{flags:?}: {error}");
    }
    // A settings file is checked the same way, and flags override it.
    let file = dir.path().join("settings.toml");
    std::fs::write(&file, "[play]\nplayouts = 0\n").unwrap();
    let out = start(&["--settings", file.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("playouts = 0"));
    std::fs::write(&file, "[play]\nplayout = 10\n").unwrap();
    let out = start(&["--settings", file.to_str().unwrap()]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("unknown field `playout`"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn the_coordinator_needs_a_token_off_loopback() {
    let dir = tempfile::tempdir().unwrap();
    // Each start is cut short by --playouts 0 once past the token check, so nothing listens.
    let start = |flags: &[&str], env: Option<&str>| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_xqz"));
        command.args(["coordinator", "--listen", "0.0.0.0:0", "--playouts", "0", "--data"]).arg(dir.path()).args(flags);
        command.env_remove("XQZ_TOKEN");
        if let Some(token) = env {
            command.env("XQZ_TOKEN", token);
        }
        let out = command.output().unwrap();
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let refused = start(&[], None);
    assert!(refused.contains("refusing to serve on 0.0.0.0:0 without a token"), "{refused}");
    assert!(start(&["--insecure"], None).contains("playouts = 0"));
    assert!(start(&[], Some("s3cret")).contains("playouts = 0"));
    let file = dir.path().join("token");
    std::fs::write(&file, "s3cret\n").unwrap();
    assert!(start(&["--token-file", file.to_str().unwrap()], None).contains("playouts = 0"));
    let missing = start(&["--token-file", "/no/such/token"], None);
    assert!(missing.contains("/no/such/token"), "{missing}");
    assert!(start(&["--token", "a", "--token-file", file.to_str().unwrap()], None).contains("cannot be used with"));
    assert!(start(&["--token", "two words"], None).contains("printable ASCII"));

    // The dashboard shows the run to whoever reaches its address: the same rule holds for it.
    let dashboard = |flags: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_xqz"))
            .args(["coordinator", "--listen", "127.0.0.1:0", "--metrics", "0.0.0.0:0", "--playouts", "0", "--data"])
            .arg(dir.path())
            .args(flags)
            .env_remove("XQZ_TOKEN")
            .output()
            .unwrap();
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let refused = dashboard(&[]);
    assert!(refused.contains("refusing to serve the dashboard and metrics on 0.0.0.0:0 without a token"), "{refused}");
    assert!(dashboard(&["--insecure"]).contains("playouts = 0"));
    assert!(dashboard(&["--token-file", file.to_str().unwrap()]).contains("playouts = 0"));
}
