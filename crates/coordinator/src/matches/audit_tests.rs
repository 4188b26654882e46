//! The board's side of the audits ([`crate::audit`]): copies handed out and held, a worker
//! quarantined, its pairs discarded from the counts and the match table, across restarts.

use xqz_arena::records::read_games;

use super::{Board, CountError};
use crate::audit::tests::{fabricated, honest, ledger_quarantine, spec};

fn take(board: &mut Board, worker: &str) -> Option<u32> {
    board.take(worker, &[], &|_| true).map(|a| a.pair)
}

#[test]
fn a_worker_two_others_contradict_is_quarantined_its_pairs_discarded_and_so_it_stays_after_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let mut board = Board::open_audited(dir.path(), 1.0).unwrap();
    let spec = spec(4);
    board.submit(spec.clone(), None, 1).unwrap();
    // Alone, the forger's pair counts unaudited: nobody could check it.
    assert_eq!(take(&mut board, "forger"), Some(0));
    assert!(board.count(1, 0, "forger", fabricated(&spec, 0)).unwrap().counted);
    assert_eq!(board.get(1).unwrap().workers.len(), 1);
    // Two honest workers join; pair 1 is held for a copy, and the forger is handed it.
    assert_eq!(take(&mut board, "h1"), Some(1));
    assert_eq!(take(&mut board, "h2"), Some(2));
    assert!(board.count(1, 1, "h1", honest(&spec, 1)).unwrap().counted);
    let held = board.get(1).unwrap();
    assert_eq!((held.pairs_held, held.wins + held.draws + held.losses), (1, 2), "held, not counted");
    assert_eq!(take(&mut board, "forger"), Some(1), "the copy goes out unmarked");
    board.count(1, 1, "forger", fabricated(&spec, 1)).unwrap();
    // The copies differ: a third worker decides, and the forger is the odd one out.
    assert_eq!(take(&mut board, "h3"), Some(1));
    board.count(1, 1, "h3", honest(&spec, 1)).unwrap();
    let why = board.quarantined("forger").expect("quarantined");
    assert!(why.contains("pair 1 of match 1 differs from those of h1 and h3"), "{why}");
    let refused = board.count(1, 3, "forger", fabricated(&spec, 3)).unwrap_err();
    assert!(matches!(refused, CountError::Quarantined { .. }), "{refused}");
    let job = board.get(1).unwrap();
    assert_eq!(job.wins + job.draws + job.losses, 2, "pair 0 discarded, pair 1 counted once");
    assert_eq!(job.quarantines.len(), 1);
    assert_eq!((job.quarantines[0].worker_id.as_str(), job.quarantines[0].pairs_discarded), ("forger", 1));
    assert_eq!(job.workers.iter().map(|w| w.worker_id.as_str()).collect::<Vec<_>>(), ["h1"]);
    let rows = read_games(dir.path()).unwrap();
    assert!(rows.iter().all(|r| r.pair == 1) && rows.len() == 2, "the forger's games left the table");
    assert_eq!(take(&mut board, "h1"), Some(0), "the discarded pair is played again");
    drop(board);

    // The ledger rebuilds the quarantine and who played what.
    let mut board = Board::open_audited(dir.path(), 1.0).unwrap();
    assert!(board.quarantined("forger").is_some());
    let job = board.get(1).unwrap();
    assert_eq!((job.wins + job.draws + job.losses, job.quarantines.len()), (2, 1));
    assert_eq!(job.workers[0].worker_id, "h1");
    assert!(board.lift("forger", 2).unwrap());
    assert!(!board.lift("forger", 3).unwrap(), "lifted once");
    drop(board);
    assert!(Board::open_audited(dir.path(), 1.0).unwrap().quarantined("forger").is_none());
}

#[test]
fn a_quarantine_the_table_missed_in_a_crash_is_carried_out_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let mut board = Board::open_audited(dir.path(), 0.0).unwrap();
    let spec = spec(2);
    board.submit(spec.clone(), None, 1).unwrap();
    for pair in 0..2 {
        assert_eq!(take(&mut board, "w"), Some(pair));
        board.count(1, pair, "w", honest(&spec, pair)).unwrap();
    }
    drop(board);
    // The ledger has the verdict; the crash came before the table lost the pair.
    ledger_quarantine(dir.path(), "w", 1, &[0]);
    let board = Board::open_audited(dir.path(), 0.0).unwrap();
    let job = board.get(1).unwrap();
    assert_eq!(job.wins + job.draws + job.losses, 2, "pair 0 no longer counts");
    assert!(read_games(dir.path()).unwrap().iter().all(|r| r.pair == 1));
}
