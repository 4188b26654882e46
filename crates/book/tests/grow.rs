//! Growing books with the material searcher: the start position first, then the candidate the
//! priority rule names, resumption from the file alone, and books built from games.

use std::path::Path;

use xiangqi::game::{Game, GameConfig};
use xiangqi::{Move, Position};
use xqz_book::{Book, BookBuilder, BookError, BuildConfig, GrowConfig, Grower};
use xqz_dataset::{GameId, GameRecord};
use xqz_mcts::MaterialEvaluator;

fn config() -> GrowConfig {
    GrowConfig { playouts: 48, ..GrowConfig::default() }
}

fn grow(path: &Path, config: GrowConfig, steps: usize) -> Vec<Vec<Move>> {
    let mut grower = Grower::open(path, config).unwrap();
    (0..steps).map(|_| grower.step(&mut MaterialEvaluator).unwrap().expect("a candidate").line).collect()
}

#[test]
fn the_start_position_is_searched_first_and_gets_valued_moves() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("book.sqlite");
    let mut grower = Grower::open(&path, config()).unwrap();
    let first = grower.step(&mut MaterialEvaluator).unwrap().unwrap();
    assert!(first.line.is_empty());
    assert_eq!(first.priority, 1.0);
    assert!((1..=config().max_moves).contains(&first.moves), "{first:?}");

    let entry = Book::open(&path).unwrap().probe(&Position::startpos()).unwrap().unwrap();
    assert_eq!(entry.moves.len(), first.moves);
    let visits: u64 = entry.moves.iter().map(|m| m.visits.unwrap()).sum();
    assert!((48 / 10..=48).contains(&visits), "{entry:?}");
    for m in &entry.moves {
        assert_eq!((m.games, m.min_ply), (0, 0));
        assert!(m.value.unwrap().abs() <= 1.0 && m.prior.unwrap() > 0.0, "{m:?}");
    }
}

#[test]
fn growing_resumes_from_the_file_and_never_searches_a_position_twice() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("book.sqlite");
    let mut lines = grow(&path, config(), 5);
    assert_eq!(Grower::open(&path, config()).unwrap().searched().unwrap(), 5);
    lines.extend(grow(&path, config(), 4));
    assert_eq!(Grower::open(&path, config()).unwrap().searched().unwrap(), 9);

    let book = Book::open(&path).unwrap();
    let mut fens: Vec<String> = lines
        .iter()
        .map(|line| {
            let mut pos = Position::startpos();
            for &mv in line {
                pos.play(mv).unwrap();
            }
            let entry = book.probe(&pos).unwrap().expect("a searched position is in the book");
            assert!(entry.moves.iter().any(|m| m.visits.is_some()));
            entry.fen
        })
        .collect();
    fens.sort();
    fens.dedup();
    assert_eq!(fens.len(), 9, "{lines:?}");
}

#[test]
fn the_second_search_is_the_root_move_of_highest_priority() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("book.sqlite");
    grow(&path, config(), 1);
    let entry = Book::open(&path).unwrap().probe(&Position::startpos()).unwrap().unwrap();
    let total: u64 = entry.moves.iter().map(|m| m.visits.unwrap()).sum();
    let priority = |m: &xqz_book::BookMove| {
        let (n, q) = (m.visits.unwrap() as f64, m.value.unwrap());
        n / total as f64 * ((1.0 - q * q).max(1e-4) / (1.0 + n)).sqrt()
    };
    let expected = entry.moves.iter().max_by(|a, b| priority(a).total_cmp(&priority(b))).unwrap();

    let second = Grower::open(&path, config()).unwrap().step(&mut MaterialEvaluator).unwrap().unwrap();
    assert_eq!(second.line, [expected.mv]);
    assert!((second.priority - priority(expected)).abs() < 1e-9, "{second:?}");
}

#[test]
fn growing_stops_at_max_ply() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("book.sqlite");
    let config = GrowConfig { max_ply: 1, max_moves: 2, ..config() };
    let mut grower = Grower::open(&path, config).unwrap();
    let mut steps = 0;
    while let Some(grown) = grower.step(&mut MaterialEvaluator).unwrap() {
        assert!(grown.line.len() <= 1, "{grown:?}");
        steps += 1;
        assert!(steps <= 3, "the root and at most its two moves");
    }
    assert!(steps >= 2, "the root and at least one child");
}

#[test]
fn values_are_backed_up_as_a_minimax_over_the_searched_positions() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("book.sqlite");
    // Two plies: the root, its moves and theirs, every line searched (no transpositions yet).
    let config = GrowConfig { max_ply: 2, max_moves: 2, ..config() };
    let mut grower = Grower::open(&path, config).unwrap();
    let mut searched = Vec::new();
    while let Some(grown) = grower.step(&mut MaterialEvaluator).unwrap() {
        searched.push(grown);
    }
    assert!(searched.len() >= 4, "{searched:?}");
    let book = Book::open(&path).unwrap();
    let best = |pos: &Position| {
        let entry = book.probe(pos).unwrap()?;
        entry
            .moves
            .iter()
            .any(|m| m.visits.is_some())
            .then(|| entry.moves.iter().filter_map(|m| m.value).fold(f64::MIN, f64::max))
    };
    let mut checked = 0;
    for grown in searched.iter().filter(|g| g.line.len() < 2) {
        let mut pos = Position::startpos();
        for &mv in &grown.line {
            pos.play(mv).unwrap();
        }
        for m in book.probe(&pos).unwrap().unwrap().moves {
            let mut child = pos.clone();
            child.play(m.mv).unwrap();
            if let Some(best) = best(&child) {
                assert!(
                    (m.value.unwrap() + best).abs() < 1e-9,
                    "{} after {:?}: {:?} against {best}",
                    m.mv,
                    grown.line,
                    m.value
                );
                checked += 1;
            }
        }
    }
    assert!(checked >= 3, "moves into searched positions: {checked}");
}

#[test]
fn a_book_built_from_games_keeps_its_counts_and_gets_search_statistics() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("book.sqlite");
    let mut game = Game::new(GameConfig { max_plies: Some(2), ..GameConfig::default() });
    for mv in ["h2e2", "h9g7"] {
        game.push_str(mv).unwrap();
    }
    let mut builder = BookBuilder::new(BuildConfig::default());
    builder.add_game(&GameRecord::from_game(&game, GameId::from_u128(1)).unwrap()).unwrap();
    builder.write(&path, false).unwrap();

    grow(&path, GrowConfig { min_share: 1.0, max_moves: 1, ..config() }, 1);
    let entry = Book::open(&path).unwrap().probe(&Position::startpos()).unwrap().unwrap();
    let played = entry.moves.iter().find(|m| m.games == 1).expect("the game's move stays");
    assert_eq!(played.mv.to_string(), "b2e2");
    assert!(played.visits.is_some(), "the game's move gets the search's statistics: {entry:?}");
    assert!(entry.moves.len() <= 2, "the game's move and the search's best: {entry:?}");
}

#[test]
fn a_search_adds_its_most_visited_moves_up_to_min_moves_whatever_their_share() {
    // min_share 1 admits no move besides the best on its share: the rest come from min_moves.
    for (min_moves, max_moves, want) in [(1, 4, 1), (3, 4, 3), (3, 2, 2)] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("book.sqlite");
        let grown = grow(&path, GrowConfig { min_share: 1.0, min_moves, max_moves, ..config() }, 1);
        assert!(grown[0].is_empty());
        let entry = Book::open(&path).unwrap().probe(&Position::startpos()).unwrap().unwrap();
        assert_eq!(entry.moves.len(), want, "min_moves {min_moves}, max_moves {max_moves}: {entry:?}");
        let visits: Vec<u64> = entry.moves.iter().map(|m| m.visits.unwrap()).collect();
        assert!(visits.iter().all(|&v| v > 0), "{visits:?}");
    }
}

#[test]
fn settings_that_cannot_work_are_refused_before_the_file_is_touched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("book.sqlite");
    for (config, needle) in [
        (GrowConfig { playouts: 0, ..config() }, "playouts"),
        (GrowConfig { max_moves: 0, ..config() }, "max_moves"),
        (GrowConfig { min_share: 1.5, ..config() }, "min_share 1.5"),
    ] {
        let err = Grower::open(&path, config).err().expect("refused");
        assert!(matches!(err, BookError::InvalidConfig { .. }) && err.to_string().contains(needle), "{err}");
    }
    assert!(!path.exists());
}

#[test]
fn a_file_that_is_not_a_book_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.txt");
    std::fs::write(&path, "not sqlite").unwrap();
    let err = Grower::open(&path, config()).err().expect("refused");
    assert!(err.to_string().contains("notes.txt"), "{err}");
}

#[test]
fn a_grown_book_exports_as_linked_pages_within_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("book.sqlite");
    grow(&path, config(), 6);
    let html = dir.path().join("html");
    let summary = Book::open(&path).unwrap().export_html(&html, xqz_book::HtmlConfig { max_positions: 4 }).unwrap();
    assert_eq!(summary.pages, 4);
    assert!(summary.left_out > 0, "six searched positions and their moves' children: {summary:?}");
    let files: Vec<_> = std::fs::read_dir(&html).unwrap().map(|f| f.unwrap().path()).collect();
    assert_eq!(files.len(), 4);
    let start = std::fs::read_to_string(html.join("index.html")).unwrap();
    assert!(start.contains("<svg") && start.contains("楚 河") && start.contains("Red to move"), "{start}");
    assert!(start.contains("class=\"v\""), "the searched values are drawn: {start}");
    for file in &files {
        let page = std::fs::read_to_string(file).unwrap();
        for link in page.split("href=\"").skip(1) {
            let target = &link[..link.find('"').unwrap()];
            assert!(html.join(target).is_file(), "{} links to missing {target}", file.display());
        }
    }
}
