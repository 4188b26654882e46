//! The match table: matches recorded into one folder append to one table that `read_games`
//! returns whole, interrupted matches keep their games, a batch torn by a crash is skipped and
//! cut off, a table in the IPC file format of earlier versions is read and appended to, the
//! listing keeps every game, and a file of other columns or an unfinished game is refused with
//! its own error.

use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use arrow_array::{RecordBatch, StringArray};
use arrow_ipc::reader::StreamReader;
use arrow_ipc::writer::FileWriter;
use arrow_schema::{DataType, Field, Schema};

use xiangqi::Color;
use xiangqi::game::{Game, GameConfig, Outcome};
use xqz_arena::player::{Player, SearchPlayer};
use xqz_arena::records::{MatchLog, RecordsError, discard_pairs, finished_pairs, pairings, read_games};
use xqz_arena::tournament::{MatchGame, MatchPlan, MatchReport, Openings, run_match};
use xqz_mcts::{MaterialEvaluator, SearchConfig, UniformEvaluator};

fn plan(pairs: u32, seed: u64) -> MatchPlan {
    MatchPlan {
        pairs,
        played: std::collections::BTreeSet::new(),
        concurrency: 2,
        openings: Openings::Random { plies: 4, seed },
        game: GameConfig { max_plies: Some(40), ..GameConfig::default() },
        sprt: None,
    }
}

/// Plays material against uniform for `pairs` pairs and records the match in `out`.
fn recorded_match(out: &Path, a: &str, b: &str, pairs: u32, steps: (Option<u64>, Option<u64>)) -> MatchReport {
    let search = SearchConfig::default();
    let material = || Ok(Box::new(SearchPlayer::new(a, MaterialEvaluator, 8, search)) as Box<dyn Player>);
    let uniform = || Ok(Box::new(SearchPlayer::new(b, UniformEvaluator, 8, search)) as Box<dyn Player>);
    let mut log = MatchLog::open(out, a, b, steps.0, steps.1).unwrap();
    let report = run_match(&plan(pairs, 7), &material, &uniform, |game, _| log.append(game).unwrap()).unwrap();
    assert_eq!(log.terminations().map(|(_, n)| n).sum::<u32>(), 2 * pairs);
    report
}

#[test]
fn matches_append_to_one_table() {
    let dir = tempfile::tempdir().unwrap();
    assert_eq!(read_games(dir.path()).unwrap(), vec![], "no table yet: no games");
    let first = recorded_match(dir.path(), "material", "uniform", 2, (None, None));
    let second = recorded_match(dir.path(), "v2", "v1", 1, (Some(200), Some(100)));
    let rows = read_games(dir.path()).unwrap();
    assert_eq!(rows.len(), 6);
    let (one, two) = rows.split_at(4);
    assert!(one.iter().all(|r| r.a == "material" && r.b == "uniform" && r.a_steps.is_none()));
    assert!(two.iter().all(|r| r.a == "v2" && r.b == "v1" && r.a_steps == Some(200) && r.b_steps == Some(100)));
    assert!(one.iter().all(|r| r.match_id == one[0].match_id) && two[0].match_id != one[0].match_id);
    // The table's scores are the report's.
    let score = |rows: &[xqz_arena::records::GameRow]| rows.iter().map(|r| r.a_score).sum::<f64>();
    let wins = |r: &MatchReport| f64::from(r.games.wins) + f64::from(r.games.draws) / 2.0;
    assert_eq!(score(one), wins(&first));
    assert_eq!(score(two), wins(&second));
    let pgn = std::fs::read_to_string(dir.path().join("eval/games.pgn")).unwrap();
    assert_eq!(pgn.matches("[Event ").count(), 6);
}

#[test]
fn pairs_discarded_leave_the_table_and_only_those_of_their_match() {
    let dir = tempfile::tempdir().unwrap();
    let pairs = |set: &[u32]| set.iter().copied().collect::<std::collections::BTreeSet<u32>>();
    assert_eq!(discard_pairs(dir.path(), "none", &pairs(&[0])).unwrap(), 0, "no table: nothing to discard");
    recorded_match(dir.path(), "material", "uniform", 3, (None, None));
    recorded_match(dir.path(), "v2", "v1", 3, (None, None));
    let rows = read_games(dir.path()).unwrap();
    let first = rows[0].match_id.clone();
    assert_eq!(discard_pairs(dir.path(), &first, &pairs(&[1, 7])).unwrap(), 2);
    let rows = read_games(dir.path()).unwrap();
    assert_eq!(rows.len(), 10);
    let mut kept: Vec<u32> = rows.iter().filter(|r| r.match_id == first).map(|r| r.pair).collect();
    kept.sort_unstable();
    assert_eq!(kept, [0, 0, 2, 2], "pair 1 left");
    assert_eq!(rows.iter().filter(|r| r.match_id != first).count(), 6, "the other match keeps all");
    assert_eq!(discard_pairs(dir.path(), &first, &pairs(&[1])).unwrap(), 0, "gone already");
}

#[test]
fn an_interrupted_match_keeps_its_games() {
    let dir = tempfile::tempdir().unwrap();
    recorded_match(dir.path(), "material", "uniform", 1, (None, None));
    let mut log = MatchLog::open(dir.path(), "uniform", "material", None, None).unwrap();
    log.append(&resigned(0, "uniform", "material")).unwrap();
    // Dropped before its second game: the first is in the table all the same.
    drop(log);
    let rows = read_games(dir.path()).unwrap();
    assert_eq!(rows.len(), 3);
    assert_eq!((rows[2].a.as_str(), rows[2].a_score), ("uniform", 1.0));
    // Pooled, the lone game counts as a game (a loss of material's) but not as a pair.
    let pooled = pairings(&rows);
    assert_eq!(pooled.len(), 1);
    let first = &pooled[0];
    assert_eq!((first.a.as_str(), first.b.as_str(), first.matches), ("material", "uniform", 2));
    assert_eq!((first.games.games(), first.pairs.pairs()), (3, 1));
    let points = rows[..2].iter().map(|r| r.a_score).sum::<f64>();
    assert_eq!(first.pairs.score() * 2.0, points);
    assert_eq!(f64::from(first.games.wins) + f64::from(first.games.draws) / 2.0, points);
    let lost = rows[..2].iter().filter(|r| r.a_score == 0.0).count() as u32;
    assert_eq!(first.games.losses, lost + 1);
}

/// A game of `red` against `black` that Black resigns after one move, as pair `pair` of a match.
fn resigned(pair: u32, red: &str, black: &str) -> MatchGame {
    let mut game = Game::new(GameConfig::default());
    game.push_str("h2e2").unwrap();
    game.resign(Color::Black).unwrap();
    MatchGame {
        pair,
        first: Color::Red,
        red: red.into(),
        black: black.into(),
        start: game.start().clone(),
        opening_plies: 0,
        moves: game.moves().collect(),
        outcome: game.outcome(),
        forfeit: None,
    }
}

#[test]
fn each_append_adds_one_batch_to_a_stream_and_a_torn_last_batch_is_skipped_then_cut_off() {
    let dir = tempfile::tempdir().unwrap();
    let table = dir.path().join("eval/games.arrow");
    let mut log = MatchLog::open(dir.path(), "a", "b", None, None).unwrap();
    log.append(&resigned(0, "a", "b")).unwrap();
    let one = std::fs::metadata(&table).unwrap().len();
    log.append_all(&[resigned(1, "a", "b"), resigned(1, "b", "a")]).unwrap();
    // An Arrow IPC stream: one batch per append.
    let bytes = std::fs::read(&table).unwrap();
    let batches: Vec<RecordBatch> = StreamReader::try_new(&bytes[..], None).unwrap().map(Result::unwrap).collect();
    assert_eq!(batches.iter().map(RecordBatch::num_rows).collect::<Vec<_>>(), [1, 2]);
    // A crash in the middle of the next append leaves part of its batch.
    let torn = &bytes[one as usize..bytes.len() - 10];
    let mut crashed = bytes.clone();
    crashed.extend_from_slice(torn);
    std::fs::write(&table, &crashed).unwrap();
    assert_eq!(read_games(dir.path()).unwrap().len(), 3, "the torn batch is skipped");
    // Another log's next append cuts it off; so does this one's, though it did not write it.
    let mut other = MatchLog::open(dir.path(), "c", "d", None, None).unwrap();
    other.append(&resigned(0, "c", "d")).unwrap();
    std::fs::OpenOptions::new().append(true).open(&table).unwrap().write_all(torn).unwrap();
    log.append(&resigned(2, "a", "b")).unwrap();
    let rows = read_games(dir.path()).unwrap();
    let pairs: Vec<(&str, u32)> = rows.iter().map(|r| (r.a.as_str(), r.pair)).collect();
    assert_eq!(pairs, [("a", 0), ("a", 1), ("a", 1), ("c", 0), ("a", 2)]);
    let whole = std::fs::read(&table).unwrap();
    assert_eq!(StreamReader::try_new(&whole[..], None).unwrap().count(), 4, "no torn batch is left inside");
}

#[test]
fn a_table_in_the_ipc_file_format_of_earlier_versions_is_read_and_appended_to() {
    let dir = tempfile::tempdir().unwrap();
    recorded_match(dir.path(), "material", "uniform", 1, (None, None));
    let before = read_games(dir.path()).unwrap();
    // The same rows as earlier versions wrote them: an IPC file.
    let table = dir.path().join("eval/games.arrow");
    let bytes = std::fs::read(&table).unwrap();
    let batches: Vec<RecordBatch> = StreamReader::try_new(&bytes[..], None).unwrap().map(Result::unwrap).collect();
    let mut writer = FileWriter::try_new(File::create(&table).unwrap(), &batches[0].schema()).unwrap();
    batches.iter().for_each(|b| writer.write(b).unwrap());
    writer.finish().unwrap();
    assert!(std::fs::read(&table).unwrap().starts_with(b"ARROW1"));
    assert_eq!(read_games(dir.path()).unwrap(), before);
    // The next append keeps its rows and turns the table into a stream.
    let mut log = MatchLog::open(dir.path(), "a", "b", None, None).unwrap();
    log.append(&resigned(0, "a", "b")).unwrap();
    let rows = read_games(dir.path()).unwrap();
    assert_eq!(rows[..2], before[..]);
    assert_eq!((rows.len(), rows[2].a.as_str()), (3, "a"));
    assert!(!std::fs::read(&table).unwrap().starts_with(b"ARROW1"));
}

#[test]
fn an_unfinished_game_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = MatchLog::open(dir.path(), "a", "b", None, None).unwrap();
    let game = Game::new(GameConfig::default());
    let unfinished = MatchGame {
        pair: 3,
        first: Color::Black,
        red: "b".into(),
        black: "a".into(),
        start: game.start().clone(),
        opening_plies: 0,
        moves: Vec::new(),
        outcome: Outcome::Ongoing,
        forfeit: None,
    };
    assert!(matches!(log.append(&unfinished), Err(RecordsError::Unfinished { pair: 3 })));
    assert_eq!(read_games(dir.path()).unwrap(), vec![]);
}

#[test]
fn a_file_of_other_columns_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("eval")).unwrap();
    std::fs::write(dir.path().join("eval/games.arrow"), b"not a table").unwrap();
    let err = read_games(dir.path()).unwrap_err();
    assert!(matches!(err, RecordsError::Arrow { .. }), "{err}");
    assert!(err.to_string().contains("games.arrow"), "{err}");

    // A valid Arrow file, of other columns.
    let schema = Arc::new(Schema::new(vec![Field::new("a", DataType::Utf8, false)]));
    let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(StringArray::from(vec!["x"]))]).unwrap();
    let mut writer = FileWriter::try_new(File::create(dir.path().join("eval/games.arrow")).unwrap(), &schema).unwrap();
    writer.write(&batch).unwrap();
    writer.finish().unwrap();
    assert!(matches!(read_games(dir.path()), Err(RecordsError::Schema { .. })));
    // And a match recorded there fails rather than dropping the file's rows.
    let mut log = MatchLog::open(dir.path(), "a", "b", None, None).unwrap();
    let mut game = Game::new(GameConfig::default());
    game.resign(Color::Red).unwrap();
    let lost = MatchGame {
        pair: 0,
        first: Color::Red,
        red: "a".into(),
        black: "b".into(),
        start: game.start().clone(),
        opening_plies: 0,
        moves: Vec::new(),
        outcome: game.outcome(),
        forfeit: None,
    };
    assert!(matches!(log.append(&lost), Err(RecordsError::Schema { .. })));
}

#[test]
fn a_match_cut_short_goes_on_with_the_pairs_it_had_not_played() {
    let search = SearchConfig::default();
    let material = || Ok(Box::new(SearchPlayer::new("material", MaterialEvaluator, 8, search)) as Box<dyn Player>);
    let uniform = || Ok(Box::new(SearchPlayer::new("uniform", UniformEvaluator, 8, search)) as Box<dyn Player>);
    let play_seed = |out: &Path, seed: u64, played: std::collections::BTreeSet<u32>| {
        let mut log = MatchLog::open(out, "material", "uniform", None, None).unwrap();
        let plan = MatchPlan { played, ..plan(4, seed) };
        let mut games = Vec::new();
        run_match(&plan, &material, &uniform, |game, _| {
            log.append(game).unwrap();
            games.push((game.pair, game.first == Color::Red, game.start.to_string(), game.moves.clone()));
        })
        .unwrap();
        games
    };
    let play = |out: &Path, played| play_seed(out, 3, played);
    let (whole, parts) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut expected = play(whole.path(), Default::default());
    // Cut short with pairs 1 and 3 done (the threads finish pairs out of order), then gone on
    // with: the second part plays pairs 0 and 2 only.
    let mut games = play(parts.path(), [0, 2].into());
    let done = finished_pairs(&read_games(parts.path()).unwrap(), "material", "uniform", &plan(4, 3));
    assert_eq!(done, [1, 3].into());
    assert!(finished_pairs(&read_games(parts.path()).unwrap(), "uniform", "material", &plan(4, 3)).is_empty());
    // The same players' match from other openings (another seed) in the same folder played
    // pairs 0 to 3 of its own: none of them is a pair of this match.
    let other = play_seed(parts.path(), 4, Default::default());
    assert_eq!(other.len(), 8);
    let rows = read_games(parts.path()).unwrap();
    assert_eq!(finished_pairs(&rows, "material", "uniform", &plan(4, 3)), done);
    assert_eq!(finished_pairs(&rows, "material", "uniform", &plan(4, 4)), [0, 1, 2, 3].into());
    let rest = play(parts.path(), done);
    let rows = read_games(parts.path()).unwrap();
    assert_eq!(rest.iter().map(|g| g.0).collect::<std::collections::BTreeSet<_>>(), [0, 2].into());
    games.extend(rest);
    games.sort();
    expected.sort();
    assert_eq!(games, expected, "the parts played the whole match's games");
    assert_eq!(finished_pairs(&rows, "material", "uniform", &plan(4, 3)), [0, 1, 2, 3].into());
}
