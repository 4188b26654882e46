//! Datasets in an object store: the writer, the readers and the replay window over an in-memory
//! store and over a real S3-compatible server (moto, started by the test through `$XQZ_PYTHON`
//! or the project's venv, as the pyarrow tests find their Python), which pyarrow then reads
//! straight from the bucket; a writer killed mid-shard leaves nothing half-visible, and a second
//! writer on a prefix is refused.

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use object_store::memory::InMemory;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt};
use xqz_dataset::layout::MANIFEST_FILE;
use xqz_dataset::{
    Batch, Compression, Dataset, DatasetError, DatasetLocation, DatasetWriter, GameRecord, IgnoredReason, ObjectPrefix,
    ReplayConfig, ReplayLoader, ReplayWindow, SampleRecord, WriterConfig,
};
use xqz_test_support::moto::Moto;
use xqz_test_support::process::ChildGuard;
use xqz_test_support::python as support;

use common::*;

const BUCKET: &str = "xqz-test";

/// Writes `games` at `location` with `config`, finishing the writer.
fn write_all_at(location: &DatasetLocation, config: WriterConfig, games: &[(GameRecord, Vec<SampleRecord>)]) {
    let (mut writer, report) = DatasetWriter::open_at(location.clone(), config).unwrap();
    assert!(report.is_clean(), "{report}");
    for (game, samples) in games {
        writer.append(game.clone(), samples.clone()).unwrap();
    }
    writer.finish().unwrap();
}

fn in_memory(prefix: &str) -> (Arc<dyn ObjectStore>, DatasetLocation) {
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let location = ObjectPrefix::new(Arc::clone(&store), prefix, format!("memory://{prefix}"));
    (store, DatasetLocation::Object(location))
}

fn put(store: &Arc<dyn ObjectStore>, path: &str, bytes: Vec<u8>) {
    let (store, path) = (Arc::clone(store), ObjectPath::from(path));
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async move { store.put(&path, bytes.into()).await })
        .unwrap();
}

fn replay_config() -> ReplayConfig {
    ReplayConfig { batch_size: 16, epochs: Some(2), seed: 5, ..ReplayConfig::default() }
}

#[test]
fn an_object_store_dataset_reads_back_like_a_folder() {
    let games = games(21, 0, 12, &short());
    let (_, location) = in_memory("runs/a/dataset");
    write_all_at(&location, small_shards(100, Compression::Zstd), &games[..7]);
    write_all_at(&location, small_shards(100, Compression::Lz4), &games[7..]);
    let dir = tempfile::tempdir().unwrap();
    write_all(dir.path(), small_shards(100, Compression::Zstd), &games[..7]);
    write_all(dir.path(), small_shards(100, Compression::Lz4), &games[7..]);

    let stored = Dataset::open_at(location.clone()).unwrap();
    let local = Dataset::open(dir.path()).unwrap();
    assert!(stored.report().is_clean(), "{}", stored.report());
    assert_eq!(stored.games().unwrap(), games.iter().map(|(g, _)| g.clone()).collect::<Vec<_>>());
    assert_eq!(stored.samples().unwrap(), local.samples().unwrap());
    let ids = |d: &Dataset| d.shards().iter().map(|s| (s.id, s.games, s.samples)).collect::<Vec<_>>();
    assert_eq!(ids(&stored), ids(&local));
    assert_eq!(
        stored.shard_path(&stored.shards()[0], xqz_dataset::ShardKind::Games),
        PathBuf::from("memory://runs/a/dataset/games-00000001.arrow")
    );

    let from_store: Vec<Batch> = ReplayWindow::open_at(location.clone(), replay_config()).unwrap().epoch(1).collect();
    let from_folder: Vec<Batch> = ReplayWindow::open(dir.path(), replay_config()).unwrap().epoch(1).collect();
    assert!(!from_store.is_empty());
    assert_eq!(from_store, from_folder);
    let loaded = ReplayLoader::spawn_at(location, replay_config()).unwrap().collect::<Result<Vec<_>, _>>().unwrap();
    assert_eq!(loaded.len(), 2 * from_store.len());
}

#[test]
fn an_uploaded_shard_file_the_manifest_does_not_name_is_ignored_and_its_id_never_reused() {
    let games = games(28, 0, 4, &short());
    let (store, location) = in_memory("torn");
    write_all_at(&location, small_shards(10_000, Compression::Zstd), &games[..2]);
    // A writer killed between its two PUTs: shard 7's games object, neither its samples nor a
    // manifest naming it.
    put(&store, "torn/games-00000007.arrow", b"ARROW1 cut short".to_vec());
    let dataset = Dataset::open_at(location.clone()).unwrap();
    assert_eq!((dataset.shards().len(), dataset.num_games()), (1, 2));
    assert_eq!(dataset.games().unwrap(), games[..2].iter().map(|(g, _)| g.clone()).collect::<Vec<_>>());
    let ignored: Vec<_> = dataset.report().ignored.iter().map(|f| (f.path.clone(), f.reason.clone())).collect();
    assert_eq!(ignored, vec![(PathBuf::from("memory://torn/games-00000007.arrow"), IgnoredReason::Unlisted)]);
    let (mut writer, report) =
        DatasetWriter::open_at(location.clone(), small_shards(10_000, Compression::Zstd)).unwrap();
    assert_eq!(&report, dataset.report());
    for (g, s) in &games[2..] {
        writer.append(g.clone(), s.clone()).unwrap();
    }
    assert_eq!(writer.finish().unwrap().unwrap().id, 8);
    assert_eq!(Dataset::open_at(location).unwrap().num_games(), 4);
}

#[test]
fn a_second_writer_on_a_prefix_is_refused_until_the_first_is_gone() {
    let games = games(22, 0, 4, &short());
    let (store, location) = in_memory("shared");
    let (mut first, _) = DatasetWriter::open_at(location.clone(), small_shards(100, Compression::Zstd)).unwrap();
    let second = DatasetWriter::open_at(location.clone(), small_shards(100, Compression::Zstd)).unwrap_err();
    assert!(matches!(second, DatasetError::Leased { .. }), "{second:?}");
    let message = second.to_string();
    assert!(message.contains("memory://shared is in use") && message.contains("test, process"), "{message}");
    for (g, s) in &games[..2] {
        first.append(g.clone(), s.clone()).unwrap();
    }
    first.finish().unwrap();
    // Released on drop: the next writer appends after the first one's shard.
    write_all_at(&location, small_shards(100, Compression::Zstd), &games[2..]);
    assert_eq!(Dataset::open_at(location.clone()).unwrap().games().unwrap().len(), 4);
    // A lease whose holder stopped renewing it lapses; an unlapsed one names its holder.
    let lease = |renewed_unix_ms: u128| {
        format!(r#"{{"holder": "a dead writer", "renewed_unix_ms": {renewed_unix_ms}, "ttl_ms": 60000}}"#).into_bytes()
    };
    put(&store, "shared/writer.lock", lease(0));
    let writer = DatasetWriter::open_at(location.clone(), small_shards(100, Compression::Zstd)).unwrap();
    drop(writer);
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis();
    put(&store, "shared/writer.lock", lease(now));
    let refused = DatasetWriter::open_at(location, small_shards(100, Compression::Zstd)).unwrap_err();
    assert!(refused.to_string().contains("a dead writer holds its writer lease for 60 s more"), "{refused}");
}

#[test]
fn a_live_writer_keeps_its_lease_past_its_time_to_live() {
    let games = games(27, 0, 2, &short());
    let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
    let prefix = ObjectPrefix::new(store, "renewed", "memory://renewed").with_lease_ttl(Duration::from_millis(300));
    let location = DatasetLocation::Object(prefix);
    let (mut writer, _) = DatasetWriter::open_at(location.clone(), small_shards(100, Compression::Zstd)).unwrap();
    for (g, s) in &games {
        std::thread::sleep(Duration::from_millis(500));
        let refused = DatasetWriter::open_at(location.clone(), small_shards(100, Compression::Zstd)).unwrap_err();
        assert!(matches!(refused, DatasetError::Leased { .. }), "{refused:?}");
        writer.append(g.clone(), s.clone()).unwrap();
        writer.flush().unwrap().unwrap();
    }
    drop(writer);
    assert_eq!(Dataset::open_at(location).unwrap().num_games(), 2);
}

#[test]
fn a_manifest_replaced_behind_the_writers_back_stops_it() {
    let games = games(23, 0, 4, &short());
    let (store, location) = in_memory("raced");
    let (mut writer, _) = DatasetWriter::open_at(location.clone(), small_shards(100, Compression::Zstd)).unwrap();
    writer.append(games[0].0.clone(), games[0].1.clone()).unwrap();
    writer.flush().unwrap().unwrap();
    // A writer that ignores the lease commits a manifest of its own.
    put(
        &store,
        &format!("raced/{MANIFEST_FILE}"),
        br#"{"format": "xqz-dataset", "schema_version": 3, "next_shard_id": 9, "shards": []}"#.to_vec(),
    );
    writer.append(games[1].0.clone(), games[1].1.clone()).unwrap();
    let err = writer.flush().unwrap_err();
    assert!(matches!(err, DatasetError::ManifestConflict { .. }), "{err:?}");
    assert!(err.to_string().contains("memory://raced/manifest.json was replaced by another writer"), "{err}");
    assert_eq!(writer.pending_games(), 1, "the rows stay buffered");
}

// ---------------------------------------------------------------------------------------------
// Against a real S3-compatible server.

/// `s3://xqz-test/prefix` on `moto`, configured as the environment of [`Moto::env`] would.
fn s3(moto: &Moto, prefix: &str) -> DatasetLocation {
    DatasetLocation::parse_with(&moto.url(prefix), moto.env()).unwrap()
}

const PYARROW_READS_THE_BUCKET: &str = r#"
import json, sys
import pyarrow.fs as pafs, pyarrow.ipc as ipc
endpoint, prefix = sys.argv[1], sys.argv[2]
fs = pafs.S3FileSystem(endpoint_override=endpoint, scheme="http", access_key="test", secret_key="test",
                       region="us-east-1")
with fs.open_input_stream(f"{prefix}/manifest.json") as f:
    manifest = json.load(f)
games = samples = 0
for shard in manifest["shards"]:
    with fs.open_input_file(f"{prefix}/{shard['games_file']}") as f:
        g = ipc.open_file(f).read_all()
    with fs.open_input_file(f"{prefix}/{shard['samples_file']}") as f:
        s = ipc.open_file(f).read_all()
    assert (g.num_rows, s.num_rows) == (shard["games"], shard["samples"]), (shard, g.num_rows, s.num_rows)
    assert g.schema.metadata[b"xqz.shard_id"] == str(shard["id"]).encode()
    assert set(s.column("game_id").to_pylist()) <= set(g.column("game_id").to_pylist())
    games += g.num_rows; samples += s.num_rows
print(json.dumps({"shards": len(manifest["shards"]), "games": games, "samples": samples}))
"#;

#[test]
fn s3_shards_are_read_back_by_the_replay_window_and_by_pyarrow_from_the_bucket() {
    let moto = Moto::start(BUCKET);
    let games = games(24, 0, 15, &short());
    let location = s3(&moto, "runs/r1/dataset");
    write_all_at(&location, small_shards(150, Compression::Zstd), &games[..9]);
    write_all_at(&location, small_shards(150, Compression::Lz4), &games[9..]);
    let dataset = Dataset::open_at(location.clone()).unwrap();
    assert!(dataset.report().is_clean(), "{}", dataset.report());
    assert!(dataset.shards().len() >= 3, "{} shards", dataset.shards().len());
    assert_eq!(dataset.games().unwrap(), games.iter().map(|(g, _)| g.clone()).collect::<Vec<_>>());

    let dir = tempfile::tempdir().unwrap();
    write_all(dir.path(), small_shards(150, Compression::Zstd), &games[..9]);
    write_all(dir.path(), small_shards(150, Compression::Lz4), &games[9..]);
    let from_bucket: Vec<Batch> = ReplayWindow::open_at(location, replay_config()).unwrap().epoch(0).collect();
    let from_folder: Vec<Batch> = ReplayWindow::open(dir.path(), replay_config()).unwrap().epoch(0).collect();
    assert!(!from_bucket.is_empty());
    assert_eq!(from_bucket, from_folder);

    let python = support::python("pyarrow on S3");
    let output = Command::new(&python)
        .args([
            "-c",
            PYARROW_READS_THE_BUCKET,
            &format!("127.0.0.1:{}", moto.port()),
            &format!("{BUCKET}/runs/r1/dataset"),
        ])
        .output()
        .unwrap();
    assert!(output.status.success(), "pyarrow failed:\n{}", String::from_utf8_lossy(&output.stderr));
    let want = format!(
        r#"{{"shards": {}, "games": {}, "samples": {}}}"#,
        dataset.shards().len(),
        dataset.num_games(),
        dataset.num_samples()
    );
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), want);
}

/// Set in the child process of [`an_s3_writer_killed_mid_shard_leaves_nothing_half_visible`]:
/// the dataset's URL, parsed with the endpoint and credentials from the environment.
const CHILD_URL: &str = "XQZ_DATASET_S3_CHILD_URL";
/// The child's lease time to live, short so that the test need not wait long for it to lapse.
const CHILD_LEASE: Duration = Duration::from_secs(2);

/// Not a test of its own: the child process that writes shards to S3 until it is killed.
#[test]
fn s3_crash_child_writer() {
    let Some(url) = std::env::var_os(CHILD_URL) else { return };
    let DatasetLocation::Object(prefix) = DatasetLocation::parse(url.to_str().unwrap()).unwrap() else {
        panic!("{url:?} is not an object store URL");
    };
    let location = DatasetLocation::Object(prefix.with_lease_ttl(CHILD_LEASE));
    let games = games(25, 0, 10, &short());
    let (mut writer, _) = DatasetWriter::open_at(location, small_shards(60, Compression::Zstd)).unwrap();
    append_until_killed(&mut writer, &games);
}

#[test]
fn an_s3_writer_killed_mid_shard_leaves_nothing_half_visible() {
    let moto = Moto::start(BUCKET);
    let location = s3(&moto, "crash");
    for round in 0..2u64 {
        let before = Dataset::open_at(location.clone()).unwrap().shards().len();
        let mut child = ChildGuard(
            Command::new(std::env::current_exe().unwrap())
                .args(["s3_crash_child_writer", "--exact", "--nocapture"])
                .env(CHILD_URL, moto.url("crash"))
                .envs(moto.env())
                .spawn()
                .unwrap(),
        );
        let start = Instant::now();
        while Dataset::open_at(location.clone()).unwrap().shards().len() < before + 2 {
            assert!(start.elapsed() < Duration::from_secs(60), "the child writer made no progress");
            assert!(child.0.try_wait().unwrap().is_none(), "the child writer died");
            std::thread::sleep(Duration::from_millis(5));
        }
        std::thread::sleep(Duration::from_micros(round * 3100 % 7000));
        let killed = Instant::now();
        drop(child);
        // A PUT the child sent just before it died may still be under way in moto: let it land,
        // so that this reader and the writer below see the same objects.
        std::thread::sleep(Duration::from_millis(300));

        let dataset = Dataset::open_at(location.clone()).unwrap();
        let games = dataset.games().unwrap();
        let plies: usize = games.iter().map(|g| g.moves.len()).sum();
        assert_eq!(dataset.samples().unwrap().len(), plies, "round {round}: a game is half-stored");
        for file in &dataset.report().ignored {
            assert_eq!(file.reason, IgnoredReason::Unlisted, "round {round}: {file}");
        }
        // The dead writer's lease holds the prefix until it lapses, then the next writer goes on.
        let config = || small_shards(60, Compression::Zstd);
        let refused = DatasetWriter::open_at(location.clone(), config()).unwrap_err();
        assert!(refused.to_string().contains("dataset s3://xqz-test/crash is in use"), "{refused}");
        std::thread::sleep(CHILD_LEASE.saturating_sub(killed.elapsed()) + Duration::from_millis(200));
        let (mut writer, report) = DatasetWriter::open_at(location.clone(), config()).unwrap();
        assert_eq!(report, dataset.report().clone());
        let (mut game, mut samples) = common::games(26, 0, 1, &short()).remove(0);
        game.game_id = xqz_dataset::GameId::from_u128(1_000_000 + u128::from(round));
        samples.iter_mut().for_each(|s| s.game_id = game.game_id);
        writer.append(game, samples).unwrap();
        let shard = writer.finish().unwrap().unwrap();
        let last_unlisted = report.ignored.iter().filter_map(|f| {
            let name = f.path.file_name()?.to_str()?;
            xqz_dataset::manifest::parse_shard_file_name(name).map(|(_, id)| id)
        });
        assert!(last_unlisted.into_iter().all(|id| id < shard.id), "an unlisted shard's id was reused");
        assert_eq!(Dataset::open_at(location.clone()).unwrap().num_games() as usize, games.len() + 1);
    }
}

#[test]
fn a_compacting_writer_merges_shards_in_an_object_store_and_deletes_them_after_their_grace() {
    let (store, location) = in_memory("run/dataset");
    let games = games(21, 0, 20, &short());
    let config = WriterConfig {
        compaction: Some(xqz_dataset::Compaction { fan_in: 4, max_samples: u64::MAX }),
        ..small_shards(usize::MAX, Compression::Zstd)
    };
    let (mut writer, _) = DatasetWriter::open_at(location.clone(), config.clone()).unwrap();
    for (game, samples) in &games {
        writer.append(game.clone(), samples.clone()).unwrap();
        writer.flush().unwrap();
        writer.compact().unwrap();
    }
    writer.finish().unwrap();
    let dataset = Dataset::open_at(location.clone()).unwrap();
    // 20 = 16 + 4.
    assert_eq!(dataset.shards().iter().map(|s| s.level).collect::<Vec<_>>(), [2, 1]);
    assert_eq!(dataset.games().unwrap(), games.iter().map(|(g, _)| g.clone()).collect::<Vec<_>>());
    assert!(dataset.report().is_clean(), "{}", dataset.report());
    let retired: Vec<String> = dataset.manifest().retired.iter().flat_map(|r| r.files()).collect();
    // Merged: the 16 first shards, 4 by 4, their 4 merges, and the 4 last shards.
    assert_eq!(retired.len(), 2 * (16 + 4 + 4));
    assert!(retired.iter().all(|name| location.get_file(name).unwrap().is_some()));

    // Their grace passes.
    let mut manifest = dataset.manifest().clone();
    manifest.retired.iter_mut().for_each(|r| r.retired_unix_ms -= xqz_dataset::manifest::RETIRED_GRACE_MS);
    put(&store, &format!("run/dataset/{MANIFEST_FILE}"), serde_json::to_vec(&manifest).unwrap());
    let (mut writer, _) = DatasetWriter::open_at(location.clone(), config).unwrap();
    writer.compact().unwrap();
    writer.finish().unwrap();
    let dataset = Dataset::open_at(location.clone()).unwrap();
    assert!(dataset.manifest().retired.is_empty());
    assert!(retired.iter().all(|name| location.get_file(name).unwrap().is_none()));
    assert_eq!(dataset.games().unwrap().len(), 20);
}
