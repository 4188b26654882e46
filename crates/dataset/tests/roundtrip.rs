//! Writing and reading back: same rows, shard layout, metadata, locking, validation.

mod common;

use std::time::Duration;

use xiangqi::Position;
use xiangqi::game::{Game, GameConfig};
use xqz_dataset::schema::{self, meta};
use xqz_dataset::{
    Compression, Dataset, DatasetError, DatasetWriter, GameId, GameRecord, PlySearch, PolicyEntry, ReplayConfig,
    ReplayWindow, SampleRecord, ShardKind, WindowSize, read_ipc_file,
};

use common::*;

#[test]
fn write_then_read_gives_the_same_rows() {
    let games = games(1, 100, 12, &short());
    for compression in [Compression::Zstd, Compression::Lz4, Compression::None] {
        let dir = tempfile::tempdir().unwrap();
        write_all(dir.path(), small_shards(120, compression), &games);
        let dataset = Dataset::open(dir.path()).unwrap();
        assert!(dataset.report().is_clean(), "{}", dataset.report());
        assert!(dataset.shards().len() > 1, "small shards should give several");
        let expected_games: Vec<_> = games.iter().map(|(g, _)| g.clone()).collect();
        let expected_samples: Vec<_> = games.iter().flat_map(|(_, s)| s.clone()).collect();
        assert_eq!(dataset.games().unwrap(), expected_games, "{compression:?}");
        assert_eq!(dataset.samples().unwrap(), expected_samples, "{compression:?}");
        assert_eq!(dataset.num_games(), 12);
        assert_eq!(dataset.num_samples(), expected_samples.len() as u64);
    }
}

#[test]
fn a_game_and_its_samples_share_a_shard() {
    let games = games(2, 0, 10, &short());
    let dir = tempfile::tempdir().unwrap();
    write_all(dir.path(), small_shards(50, Compression::Zstd), &games);
    let dataset = Dataset::open(dir.path()).unwrap();
    for shard in dataset.shards() {
        let ids: std::collections::BTreeSet<_> = dataset.read_games(shard).unwrap().iter().map(|g| g.game_id).collect();
        let samples = dataset.read_samples(shard).unwrap();
        assert!(samples.iter().all(|s| ids.contains(&s.game_id)));
        let expected: usize = games.iter().filter(|(g, _)| ids.contains(&g.game_id)).map(|(_, s)| s.len()).sum();
        assert_eq!(samples.len(), expected);
        // A shard holds at most shard_rows samples plus one game's.
        assert!(shard.samples < 50 + 40, "shard {} has {} samples", shard.id, shard.samples);
    }
}

#[test]
fn shards_describe_themselves() {
    let games = games(3, 0, 3, &short());
    let dir = tempfile::tempdir().unwrap();
    write_all(dir.path(), small_shards(10_000, Compression::Zstd), &games);
    let dataset = Dataset::open(dir.path()).unwrap();
    let shard = &dataset.shards()[0];
    for (kind, base) in [(ShardKind::Games, schema::games_schema()), (ShardKind::Samples, schema::samples_schema())] {
        let data = read_ipc_file(&dataset.shard_path(shard, kind), &base, Some(shard.id)).unwrap();
        let m = data.schema.metadata();
        assert_eq!(m[meta::SCHEMA_VERSION], "3");
        assert_eq!(m[meta::KIND], kind.name());
        assert_eq!(m[meta::RULESET], "chinese2011");
        assert_eq!(m[meta::MODEL_VERSION_MIN], "1");
        assert_eq!(m[meta::MODEL_VERSION_MAX], "1");
        assert!(m[meta::WRITER].starts_with("xqz-dataset ") && m[meta::WRITER].ends_with("(test)"));
        assert!(m[meta::BOARD_ENCODING].contains("rank*9+file"));
        assert_eq!(m[meta::SHARD_ID], shard.id.to_string());
    }
}

#[test]
fn reopening_appends_new_shards() {
    let games = games(4, 0, 6, &short());
    let dir = tempfile::tempdir().unwrap();
    write_all(dir.path(), small_shards(10_000, Compression::Zstd), &games[..3]);
    write_all(dir.path(), small_shards(10_000, Compression::Zstd), &games[3..]);
    let dataset = Dataset::open(dir.path()).unwrap();
    assert_eq!(dataset.shards().iter().map(|s| s.id).collect::<Vec<_>>(), vec![1, 2]);
    assert_eq!(dataset.games().unwrap(), games.iter().map(|(g, _)| g.clone()).collect::<Vec<_>>());
}

#[test]
fn a_second_writer_is_locked_out() {
    let dir = tempfile::tempdir().unwrap();
    let (writer, _) = DatasetWriter::open(dir.path(), small_shards(10, Compression::Zstd)).unwrap();
    let second = DatasetWriter::open(dir.path(), small_shards(10, Compression::Zstd));
    assert!(matches!(second, Err(DatasetError::Locked { .. })), "{second:?}");
    drop(writer);
    DatasetWriter::open(dir.path(), small_shards(10, Compression::Zstd)).unwrap();
}

#[test]
fn flush_interval_and_explicit_flushes() {
    let games = games(5, 0, 3, &short());
    let dir = tempfile::tempdir().unwrap();
    let mut config = small_shards(10_000, Compression::Zstd);
    config.flush_interval = Some(Duration::ZERO);
    let (mut writer, _) = DatasetWriter::open(dir.path(), config).unwrap();
    for (g, s) in &games {
        let shard = writer.append(g.clone(), s.clone()).unwrap();
        assert!(shard.is_some(), "a zero interval flushes every game");
        assert_eq!(writer.pending_games(), 0);
    }
    assert_eq!(writer.flush().unwrap(), None, "nothing buffered");
    assert_eq!(writer.manifest().shards.len(), 3);
}

#[test]
fn inconsistent_records_are_rejected() {
    let games = games(6, 0, 2, &short());
    let dir = tempfile::tempdir().unwrap();
    let (mut writer, _) = DatasetWriter::open(dir.path(), small_shards(10_000, Compression::Zstd)).unwrap();
    let (g0, s0) = &games[0];
    let (_, s1) = &games[1];
    let cases = [
        ("foreign sample", s1.clone()),
        ("bad plies_to_end", {
            let mut s = s0.clone();
            s[0].plies_to_end += 1;
            s
        }),
        ("bad result", {
            let mut s = s0.clone();
            s[0].result = if s[0].result == 1 { -1 } else { 1 };
            s
        }),
        ("duplicate ply", {
            let mut s = s0.clone();
            s.push(s[0].clone());
            s
        }),
        ("NaN policy", {
            let mut s = s0.clone();
            s[0].policy[0].p = f32::NAN;
            s
        }),
        ("repetitions without quiet plies", {
            let mut s = s0.clone();
            s[0].quiet_plies = 3;
            s[0].repetitions = 1;
            s
        }),
    ];
    for (what, samples) in cases {
        let err = writer.append(g0.clone(), samples).unwrap_err();
        assert!(matches!(err, DatasetError::InvalidRecord(_)), "{what}: {err}");
    }
    assert_eq!(writer.pending_games(), 0, "rejected games are not buffered");
}

#[test]
fn quiet_plies_and_repetitions_follow_the_game() {
    // Two quiet plies, a capture (ply 2), then both sides shuffle a piece back and forth so that
    // the position after the capture comes back at plies 7 and 11. The 2011 rules do not count
    // the position right after a capture as an occurrence: the position after ply 4's move comes
    // back a third time at ply 12, and the game ends with the two rounds either side had to vary
    // in (23.5), at ply 16.
    let moves = [
        "a3a4", "a6a5", "h2h9", "i9i8", "b2b1", "i8i9", "b1b2", "i9i8", "b2b1", "i8i9", "b1b2", "i9i8", "b2b1", "i8i9",
        "b1b2", "i9i8",
    ];
    let mut game = Game::new(GameConfig::default());
    let mut expected_repetitions = Vec::new();
    for mv in moves {
        expected_repetitions.push(game.repetitions());
        game.push_str(mv).unwrap();
    }
    assert!(game.outcome().is_over(), "{:?}", game.outcome());
    let record = GameRecord::from_game(&game, GameId::from_u128(7)).unwrap();
    let searches: Vec<PlySearch> = record
        .moves
        .iter()
        .enumerate()
        .map(|(i, &mv)| PlySearch::full(vec![PolicyEntry { mv, p: 1.0 }], [i as f32, 0.0, 0.0], 1))
        .collect();
    let samples = SampleRecord::from_game(&record, &searches).unwrap();
    let quiet: Vec<u16> = samples.iter().map(|s| s.quiet_plies).collect();
    let repetitions: Vec<u8> = samples.iter().map(|s| s.repetitions).collect();
    assert_eq!(quiet, [0, 1, 2, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
    assert_eq!(repetitions, [0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3]);
    assert_eq!(repetitions.iter().map(|&r| u32::from(r)).collect::<Vec<_>>(), expected_repetitions);

    // Stored and read back unchanged, and carried into replay batches, mirrored or not.
    let dir = tempfile::tempdir().unwrap();
    write_all(dir.path(), small_shards(10_000, Compression::Zstd), &[(record, samples.clone())]);
    assert_eq!(Dataset::open(dir.path()).unwrap().samples().unwrap(), samples);
    for mirror_probability in [0.0, 1.0] {
        let config = ReplayConfig {
            window: WindowSize::Fixed(usize::MAX),
            batch_size: 5,
            drop_last: false,
            epochs: Some(1),
            mirror_probability,
            ..ReplayConfig::default()
        };
        let window = ReplayWindow::open(dir.path(), config).unwrap();
        let mut seen = 0;
        for batch in window.epoch(0) {
            assert_eq!((batch.quiet_plies.len(), batch.repetitions.len()), (batch.size, batch.size));
            for i in 0..batch.size {
                let ply = batch.root_wdl[i * 3] as usize;
                assert_eq!(batch.mirrored[i], mirror_probability as u8);
                assert_eq!((batch.quiet_plies[i], batch.repetitions[i]), (quiet[ply], repetitions[ply]), "ply {ply}");
                seen += 1;
            }
        }
        assert_eq!(seen, samples.len());
    }
}

/// The termination column names a draw of forbidden moves on both sides `mutual_forbidden` (26.9:
/// 除上述情况外，双方不变作和). Files written before that reason existed call the same draw
/// `allowed_repetition`; the column is a plain string, so rows of both kinds read back as written,
/// side by side.
#[test]
fn terminations_read_back_as_written_the_older_name_of_a_mutual_draw_included() {
    // Red's cannon chases the black rooks, Black's elephant the unprotected red horses: both must
    // vary, a draw after the third occurrence's two rounds (crates/xiangqi/tests/rules2011.rs).
    let fen = "3k2rr1/4P4/N3N4/1c7/2b3PP1/9/9/9/4A1C2/4K4 w - - 0 1";
    let mut game = Game::from_position(Position::from_fen(fen).unwrap(), GameConfig::default());
    for mv in ["g1h1", "b6d6", "h1g1", "d6b6"].iter().cycle().take(12) {
        game.push_str(mv).unwrap();
    }
    let new = GameRecord::from_game(&game, GameId::from_u128(1)).unwrap();
    assert_eq!((new.reason.as_str(), new.article.as_str()), ("mutual_forbidden", "26.9"));
    let old = GameRecord { game_id: GameId::from_u128(2), reason: "allowed_repetition".into(), ..new.clone() };
    let with_samples = |record: &GameRecord| {
        let searches: Vec<PlySearch> =
            record.moves.iter().map(|&mv| PlySearch::full(vec![PolicyEntry { mv, p: 1.0 }], [0.0; 3], 1)).collect();
        (record.clone(), SampleRecord::from_game(record, &searches).unwrap())
    };
    let dir = tempfile::tempdir().unwrap();
    write_all(dir.path(), small_shards(10_000, Compression::Zstd), &[with_samples(&new), with_samples(&old)]);
    assert_eq!(Dataset::open(dir.path()).unwrap().games().unwrap(), [new, old]);
}

#[test]
fn shards_of_the_previous_schema_version_are_refused() {
    let games = games(7, 0, 1, &short());
    let dir = tempfile::tempdir().unwrap();
    write_all(dir.path(), small_shards(10_000, Compression::Zstd), &games);
    // The manifest of an older dataset.
    let manifest = dir.path().join(xqz_dataset::layout::MANIFEST_FILE);
    let text = std::fs::read_to_string(&manifest).unwrap();
    let old = text.replace(&format!("\"schema_version\": {}", schema::SCHEMA_VERSION), "\"schema_version\": 1");
    assert_ne!(old, text);
    std::fs::write(&manifest, old).unwrap();
    let err = Dataset::open(dir.path()).unwrap_err();
    assert!(matches!(err, DatasetError::Manifest { .. }), "{err}");
    assert!(err.to_string().contains("schema version 1 (this build reads 3)"), "{err}");
    // A version-1 samples schema (without the two columns) is refused by the shard check.
    let mut fields: Vec<_> = schema::samples_schema().fields().iter().cloned().collect();
    fields.truncate(fields.len() - 2);
    let mut metadata = schema::samples_schema().metadata().clone();
    metadata.insert(meta::SCHEMA_VERSION, "1");
    let v1 = arrow_schema::Schema::new_with_metadata(fields, metadata);
    let err = schema::check_compatible(&schema::samples_schema(), &v1).unwrap_err();
    assert!(matches!(err, schema::SchemaMismatch::Metadata { key: meta::SCHEMA_VERSION, .. }), "{err}");
}
