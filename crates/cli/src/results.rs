//! Recorded matches: the one way the CLI plays a match (`xqz eval match`, the strength tracker
//! of `xqz run`), so that every match it plays lands in the same table
//! ([`xqz_arena::records`]) and is scored by the same statistics ([`MatchReport`]).

use anyhow::Result;
use xqz_arena::records::MatchLog;
use xqz_arena::tournament::{MatchGame, MatchPlan, MatchReport, PlayerFactory, run_match};

/// Plays `plan` between the players `a` and `b` make with [`run_match`], appending every game to
/// `log`, and hands each game with the totals so far to `on_game`.
///
/// # Errors
/// The first failure to make a player, or else the first failure to write the records (the
/// match still plays to its end, so that its totals are not cut short by a full disk).
pub fn play_recorded(
    plan: &MatchPlan,
    a: &PlayerFactory<'_>,
    b: &PlayerFactory<'_>,
    log: &mut MatchLog,
    mut on_game: impl FnMut(&MatchGame, &MatchReport),
) -> Result<MatchReport> {
    let mut write_error = None;
    let report = run_match(plan, a, b, |game, report| {
        if let Err(e) = log.append(game) {
            write_error.get_or_insert(e);
        }
        on_game(game, report);
    })?;
    match write_error {
        Some(e) => Err(anyhow::Error::new(e).context("writing the match records")),
        None => Ok(report),
    }
}
