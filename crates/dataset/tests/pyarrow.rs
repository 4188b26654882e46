//! pyarrow, an independent Arrow implementation, reads our shards and Parquet export with the
//! expected row counts, column types and metadata.

mod common;

use std::process::Command;

use xqz_dataset::{Compression, Dataset, export};
use xqz_test_support::python as support;

use common::*;

const CHECK: &str = r#"
import json, sys
import pyarrow as pa, pyarrow.ipc as ipc, pyarrow.parquet as pq
folder, parquet_dir, want = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
games_type = {
    "game_id": pa.binary(16), "start_fen": pa.string(), "moves": pa.list_(pa.field("item", pa.string(), False)),
    "result": pa.string(), "reason": pa.string(), "article": pa.string(), "ruleset": pa.string(),
    "length": pa.uint32(), "model_version": pa.uint64(), "worker_id": pa.string(), "seed": pa.uint64(),
    "start_time": pa.timestamp("ms", tz="UTC"), "end_time": pa.timestamp("ms", tz="UTC"),
    "settings_version": pa.uint64(),
}
entry = pa.struct([pa.field("move", pa.uint16(), False), pa.field("p", pa.float32(), False)])
samples_type = {
    "game_id": pa.binary(16), "ply": pa.uint32(), "board": pa.binary(90), "side_to_move": pa.uint8(),
    "policy": pa.list_(pa.field("item", entry, False)), "root_wdl": pa.list_(pa.field("item", pa.float32(), False), 3),
    "result": pa.int8(), "plies_to_end": pa.uint32(), "model_version": pa.uint64(), "full_search": pa.bool_(),
    "quiet_plies": pa.uint16(), "repetitions": pa.uint8(),
}
manifest = json.load(open(f"{folder}/manifest.json"))
def check(table, types, kind, rows):
    got = {f.name: f.type for f in table.schema}
    assert list(got) == list(types), (kind, list(got))
    for name, t in types.items():
        assert got[name] == t, (kind, name, str(got[name]), str(t))
        assert not table.schema.field(name).nullable, (kind, name)
    meta = {k.decode(): v.decode() for k, v in table.schema.metadata.items()}
    assert meta["xqz.schema_version"] == "3" and meta["xqz.kind"] == kind, meta
    assert meta["xqz.ruleset"] == "chinese2011", meta
    assert table.num_rows == rows, (kind, table.num_rows, rows)
games = samples = quiet_max = 0
for shard in manifest["shards"]:
    g = ipc.open_file(f"{folder}/{shard['games_file']}").read_all()
    s = ipc.open_file(f"{folder}/{shard['samples_file']}").read_all()
    check(g, games_type, "games", shard["games"])
    check(s, samples_type, "samples", shard["samples"])
    assert g.schema.metadata[b"xqz.shard_id"] == str(shard["id"]).encode()
    # Every game's samples are in its shard, and lengths agree.
    lengths = dict(zip(g.column("game_id").to_pylist(), g.column("length").to_pylist()))
    for gid, to_end, ply in zip(s.column("game_id").to_pylist(), s.column("plies_to_end").to_pylist(), s.column("ply").to_pylist()):
        assert lengths[gid] == to_end + ply
    games += g.num_rows; samples += s.num_rows
    for row in s.column("policy").to_pylist():
        assert abs(sum(e["p"] for e in row) - 1) < 1e-4
    # quiet_plies is the halfmove clock: it starts at 0 and grows by one per ply or resets to 0.
    last = {}
    for gid, ply, quiet, reps in zip(s.column("game_id").to_pylist(), s.column("ply").to_pylist(),
                                     s.column("quiet_plies").to_pylist(), s.column("repetitions").to_pylist()):
        assert quiet in (0, last[gid] + 1) if gid in last else quiet == ply == 0, (gid, ply, quiet, last.get(gid))
        assert 4 * reps <= quiet, (gid, ply, quiet, reps)
        last[gid] = quiet
        quiet_max = max(quiet_max, quiet)
assert [games, samples] == [want["games"], want["samples"]], (games, samples, want)
assert quiet_max > 0, quiet_max
check(pq.read_table(f"{parquet_dir}/games.parquet"), games_type, "games", games)
check(pq.read_table(f"{parquet_dir}/samples.parquet"), samples_type, "samples", samples)
print("ok", len(manifest["shards"]), games, samples)
"#;

#[test]
fn pyarrow_reads_our_shards_and_parquet_export() {
    let python = support::python("pyarrow");
    let games = games(30, 0, 8, &short());
    let dir = tempfile::tempdir().unwrap();
    write_all(dir.path(), small_shards(100, Compression::Zstd), &games[..5]);
    write_all(dir.path(), small_shards(100, Compression::Lz4), &games[5..]);
    let dataset = Dataset::open(dir.path()).unwrap();
    let out = tempfile::tempdir().unwrap();
    export::export_parquet(&dataset, out.path()).unwrap();
    let want = format!(r#"{{"games": {}, "samples": {}}}"#, dataset.num_games(), dataset.num_samples());
    let output = Command::new(&python)
        .args(["-c", CHECK])
        .arg(dir.path())
        .arg(out.path())
        .arg(&want)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e} (run scripts/python-env)", python.display()));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !stderr.contains("No module named 'pyarrow'"),
        "pyarrow is not installed for {}: run scripts/python-env (it installs scripts/requirements-test.txt)",
        python.display()
    );
    assert!(output.status.success(), "pyarrow check failed:\n{stderr}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(stdout.starts_with("ok "), "{stdout}");
}
