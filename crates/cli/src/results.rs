//! Recorded matches: the one way the CLI plays a match (`xqz eval match`, the strength tracker
//! of `xqz run`), so that every match it plays lands in the same table
//! ([`xqz_arena::records`]); and the one way it reports a match's totals ([`MatchReport`]), for
//! a match as it plays and for a folder's games pooled by pairing (`xqz eval results`).

use std::path::Path;

use anyhow::Result;
use xqz_arena::records::{Pairing, pairings, read_games};
use xqz_arena::stats::{Sprt, SprtState};
use xqz_arena::tournament::MatchReport;
#[cfg(feature = "torch")]
use xqz_arena::{
    records::MatchLog,
    tournament::{MatchGame, MatchPlan, PlayerFactory, run_match_until},
};

use crate::ladder::finite;

/// The exit status of a match whose SPRT accepted H0.
pub const EXIT_H0: u8 = 10;
/// The exit status of a match whose SPRT had not decided when its pairs ran out.
pub const EXIT_UNDECIDED: u8 = 11;

/// Plays `plan` between the players `a` and `b` make with [`run_match_until`], until its end or
/// until `halt` is set (then between games: the pair in play is dropped), appending every game to
/// `log`, and hands each game with the totals so far to `on_game`.
///
/// # Errors
/// The first failure to make a player, or else the first failure to write the records (the
/// match still plays to its end, so that its totals are not cut short by a full disk).
#[cfg(feature = "torch")]
pub fn play_recorded(
    plan: &MatchPlan,
    a: &PlayerFactory<'_>,
    b: &PlayerFactory<'_>,
    halt: &std::sync::atomic::AtomicBool,
    log: &mut MatchLog,
    mut on_game: impl FnMut(&MatchGame, &MatchReport),
) -> Result<MatchReport> {
    let mut write_error = None;
    let report = run_match_until(plan, a, b, halt, |game, report| {
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

/// A match's totals as one JSON object, for other tools (the fields are in docs/CLI.md).
pub fn report_json(a: &str, b: &str, report: &MatchReport, sprt: Option<&Sprt>) -> serde_json::Value {
    let (elo, nelo) = (report.pairs.elo(), report.pairs.normalized_elo());
    let sprt = sprt.map(|sprt| {
        let (lower, upper) = sprt.bounds();
        serde_json::json!({
            "elo0": sprt.elo0,
            "elo1": sprt.elo1,
            "model": sprt.model.to_string(),
            "llr": finite(sprt.llr(&report.pairs)),
            "lower": lower,
            "upper": upper,
            "state": report.sprt.unwrap_or(SprtState::Continue).to_string(),
            "decided_after_pairs": report.decided_after,
        })
    });
    serde_json::json!({
        "a": a,
        "b": b,
        "games": report.games.games(),
        "wins": report.games.wins,
        "draws": report.games.draws,
        "losses": report.games.losses,
        "score": report.games.score(),
        "pairs": report.pairs.counts,
        "elo": { "elo": finite(elo.elo), "lower": finite(elo.lower), "upper": finite(elo.upper) },
        "nelo": { "elo": finite(nelo.elo), "lower": finite(nelo.lower), "upper": finite(nelo.upper) },
        "los": elo.los,
        "sprt": sprt,
    })
}

/// A match's totals on one line: games, W/D/L, score, pair counts, Elo and normalized Elo with
/// their 95% intervals, LOS, and the SPRT's state where there is a test.
pub fn summary(report: &MatchReport, sprt: Option<&Sprt>) -> String {
    let elo = report.pairs.elo();
    let nelo = report.pairs.normalized_elo();
    let mut text = format!(
        "{} games: +{} ={} -{} | score {:.1}% | pairs {:?} | Elo {:+.1} [{:+.1}, {:+.1}] | nElo {:+.1} [{:+.1}, {:+.1}] | LOS {:.1}%",
        report.games.games(),
        report.games.wins,
        report.games.draws,
        report.games.losses,
        100.0 * report.games.score(),
        report.pairs.counts,
        elo.elo,
        elo.lower,
        elo.upper,
        nelo.elo,
        nelo.lower,
        nelo.upper,
        100.0 * elo.los
    );
    if let (Some(sprt), Some(state)) = (sprt, report.sprt) {
        let (lower, upper) = sprt.bounds();
        text.push_str(&format!(
            " | SPRT({}, {}, {}) LLR {:.2} [{lower:.2}, {upper:.2}] {state}",
            sprt.elo0,
            sprt.elo1,
            sprt.model,
            sprt.llr(&report.pairs)
        ));
        if let Some(pairs) = report.decided_after {
            text.push_str(&format!(" after {pairs} pairs"));
        }
    }
    text
}

/// The games of `a` against `b` in `out`'s records, pooled over every match between them (either
/// way round) and scored from `a`'s side; `None` if they never met.
///
/// # Errors
/// If the table cannot be read.
#[cfg(feature = "torch")]
pub fn pairing(out: &Path, a: &str, b: &str) -> Result<Option<Pairing>> {
    Ok(pairings(&read_games(out)?).into_iter().find_map(|p| {
        if (p.a.as_str(), p.b.as_str()) == (a, b) {
            Some(p)
        } else if (p.a.as_str(), p.b.as_str()) == (b, a) {
            Some(p.reversed())
        } else {
            None
        }
    }))
}

/// A pairing's totals as JSON: [`report_json`]'s fields, `matches` and `endings` (games by who
/// won and why).
pub fn pairing_json(pairing: &Pairing) -> serde_json::Value {
    let mut json = report_json(&pairing.a, &pairing.b, &pairing.report(), None);
    json["matches"] = pairing.matches.into();
    json["endings"] = serde_json::json!(pairing.endings);
    json
}

/// `xqz eval results`: every pairing of `run`'s games pooled over its matches, one line each with
/// how its games ended under it (a JSON object per line with `json`: [`pairing_json`]'s fields).
///
/// # Errors
/// If the table cannot be read, or holds no games.
pub fn pooled(run: &Path, json: bool) -> Result<()> {
    let pairings = pairings(&read_games(run)?);
    anyhow::ensure!(!pairings.is_empty(), "no games in {} (eval/games.arrow)", run.display());
    for p in &pairings {
        if json {
            println!("{}", pairing_json(p));
        } else {
            println!("{} vs {} ({} matches): {}", p.a, p.b, p.matches, summary(&p.report(), None));
            for (ending, count) in &p.endings {
                println!("  {count:>5} {ending}");
            }
        }
    }
    Ok(())
}
