//! Counting a match's pairs stays cheap however long the match: the cost per pair of a match
//! played through a coordinator (`TakePair`, then `SubmitPair`: the pair replayed, both games
//! appended to the match table and fsynced, the job's standing rebuilt), for the first and the
//! last thousand pairs of a 10,000-pair match, and their ratio (1 when the cost is flat): the
//! median wall time per pair (robust to other processes' bursts on a shared machine) and this
//! process's CPU time per pair (client and coordinator together), then the median of every block.
//!
//! Run with `cargo bench -p xqz-coordinator --bench counting`; `XQZ_BENCH_PAIRS` sets the pairs
//! (10,000 by default; the blocks compared are a tenth of them, at most a thousand). The
//! coordinator runs in this process on a data folder under `$TMPDIR` (set it to choose the disk).
//! Every pair plays the same two games (a match from the starting position, two plies a game), so
//! that what is timed is the coordinator's work and not the players'.

use std::time::{Duration, Instant};

use tokio::sync::oneshot;
use xqz_arena::job::{Contestant, MatchSpec, OpeningChoice, play_pair};
use xqz_arena::player::SearchPlayer;
use xqz_coordinator::{CoordinatorConfig, serve};
use xqz_mcts::{MaterialEvaluator, SearchConfig, UniformEvaluator};
use xqz_proto::matches::{pair_to_wire, spec_to_wire};
use xqz_proto::v1::coordinator_client::CoordinatorClient;
use xqz_proto::v1::{ListMatchesRequest, RegisterRequest, SubmitMatchRequest, SubmitPairRequest, TakePairRequest};

fn micros(total: Duration, n: usize) -> f64 {
    total.as_secs_f64() * 1e6 / n as f64
}

/// The median of `times`, in µs.
fn median_micros(times: &[Duration]) -> f64 {
    let mut sorted = times.to_vec();
    sorted.sort();
    micros(sorted[sorted.len() / 2], 1)
}

/// This process's CPU time (user and system, all threads) from `/proc/self/stat`.
fn cpu_time() -> Result<Duration, Box<dyn std::error::Error>> {
    let stat = std::fs::read_to_string("/proc/self/stat")?;
    // The fields after the command's name, which is in parentheses: utime and stime are the
    // 14th and 15th fields of the line, the 12th and 13th after it.
    let after = stat.rsplit_once(')').ok_or("no command name in /proc/self/stat")?.1;
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks: u64 =
        fields.get(11).ok_or("no utime")?.parse::<u64>()? + fields.get(12).ok_or("no stime")?.parse::<u64>()?;
    // Linux reports them in clock ticks of 1/100 s (USER_HZ) on every platform Rust targets.
    Ok(Duration::from_millis(ticks * 10))
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let pairs: u32 = std::env::var("XQZ_BENCH_PAIRS").ok().and_then(|v| v.parse().ok()).unwrap_or(10_000);
    let block = (pairs as usize / 10).clamp(1, 1000);
    let data = tempfile::tempdir()?;
    let (stop, stopped) = oneshot::channel::<()>();
    let config = CoordinatorConfig::new("127.0.0.1:0".parse()?, data.path());
    let running = serve(config, async move { drop(stopped.await) }).await?;
    let mut client = CoordinatorClient::connect(format!("http://{}", running.addr())).await?;
    let worker = client.register(RegisterRequest::default()).await?.into_inner().worker_id;

    let spec = MatchSpec {
        openings: OpeningChoice::Random { plies: 0, seed: 0 },
        max_plies: 2,
        ..MatchSpec::new(Contestant::Material { playouts: 1 }, Contestant::Uniform { playouts: 1 }, pairs)
    };
    client.submit_match(SubmitMatchRequest { spec: Some(spec_to_wire(&spec)) }).await?;
    let search = SearchConfig::default();
    let mut a = SearchPlayer::new(&spec.a.name(), MaterialEvaluator, 1, search);
    let mut b = SearchPlayer::new(&spec.b.name(), UniformEvaluator, 1, search);
    let games = pair_to_wire(&play_pair(&spec, 0, &mut a, &mut b).map_err(|f| f.reason)?);

    let mut times = Vec::with_capacity(pairs as usize);
    // This process's CPU time at the start of each block, and at the end.
    let mut cpu = Vec::new();
    for n in 0..pairs as usize {
        if n % block == 0 {
            cpu.push(cpu_time()?);
        }
        let started = Instant::now();
        let request = TakePairRequest { worker_id: worker.clone(), ..Default::default() };
        let assignment = client.take_pair(request).await?.into_inner().pair.ok_or("no pair handed out")?;
        let request = SubmitPairRequest {
            worker_id: worker.clone(),
            match_id: assignment.match_id,
            pair: assignment.pair,
            games: games.clone(),
        };
        if !client.submit_pair(request).await?.into_inner().counted {
            return Err(format!("pair {} was not counted", assignment.pair).into());
        }
        times.push(started.elapsed());
    }
    cpu.push(cpu_time()?);
    let started = Instant::now();
    let listed = client.list_matches(ListMatchesRequest::default()).await?.into_inner();
    let list = started.elapsed();
    let job = listed.jobs.first().ok_or("no job listed")?;
    assert_eq!(job.wins + job.draws + job.losses, 2 * pairs, "every pair counted");

    let blocks: Vec<f64> = times.chunks_exact(block).map(median_micros).collect();
    let (first, last) = (blocks[0], blocks[blocks.len() - 1]);
    // The last whole block's CPU time: the one before the end if the pairs are not a multiple.
    let whole = times.len() / block;
    let cpu_of = |i: usize| micros(cpu[i + 1] - cpu[i], block);
    let (cpu_first, cpu_last) = (cpu_of(0), cpu_of(whole - 1));
    let table = std::fs::metadata(data.path().join("eval/games.arrow"))?.len();
    println!("counting: {pairs} pairs through TakePair + SubmitPair, table {:.1} MB at the end", table as f64 / 1e6);
    println!(
        "  median wall per pair: first {block} {first:.0} µs, last {block} {last:.0} µs, last/first {:.2}",
        last / first
    );
    println!(
        "  CPU per pair: first {block} {cpu_first:.0} µs, last {block} {cpu_last:.0} µs, last/first {:.2}",
        cpu_last / cpu_first
    );
    let all: Vec<String> = blocks.iter().map(|b| format!("{b:.0}")).collect();
    println!("  median wall per pair of each block of {block}, µs: {}", all.join(" "));
    println!("  ListMatches after the match: {:.0} µs", micros(list, 1));
    stop.send(()).map_err(|()| "the coordinator stopped early")?;
    running.wait().await?;
    Ok(())
}
