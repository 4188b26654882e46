//! `xqz eval ladder`: every player of a folder's games rated jointly by Bradley-Terry (draws as
//! half wins, a small prior of virtual draws), from `eval/games.arrow`, which holds both
//! `xqz eval match`'s games and a run's strength matches; Elo against training steps plotted to
//! `ladder.svg`.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context, Result};
use xqz_arena::records::{Pairing, pairings, read_games};
use xqz_arena::stats::{Encounter, fit_bradley_terry};

/// A rated player's name and training steps (if a checkpoint).
type Entrant = (String, Option<u64>);

/// Rates every player of `run`'s games, one line per player (a JSON object per line with
/// `json`), and plots the checkpoints against training steps.
pub fn run(run: &Path, prior_draws: f64, anchor: Option<&str>, json: bool) -> Result<()> {
    let pairings = pairings(&read_games(run)?);
    anyhow::ensure!(!pairings.is_empty(), "no games in {} (eval/games.arrow)", run.display());
    // Players ordered by training steps (untrained and external players last), so the anchor at 0
    // is the least trained checkpoint.
    let mut entrants: Vec<Entrant> =
        pairings.iter().flat_map(|p| [(p.a.clone(), p.a_steps), (p.b.clone(), p.b_steps)]).collect();
    entrants.sort_by(|x, y| (x.1.is_none(), x.1, &x.0).cmp(&(y.1.is_none(), y.1, &y.0)));
    entrants.dedup_by(|x, y| x.0 == y.0);
    if let Some(anchor) = anchor {
        let at = entrants.iter().position(|e| e.0 == anchor).with_context(|| {
            let names: Vec<&str> = entrants.iter().map(|e| e.0.as_str()).collect();
            format!("no player {anchor:?} to anchor the ladder; the players are {names:?}")
        })?;
        let pinned = entrants.remove(at);
        entrants.insert(0, pinned);
    }
    // Ratings mean something only between players that games connect, directly or through
    // others: those the anchor's games never reach are left out, and said so.
    let reached = connected(&pairings, &entrants[0].0);
    let (entrants, apart): (Vec<Entrant>, Vec<Entrant>) = entrants.into_iter().partition(|e| reached.contains(&e.0));
    if !apart.is_empty() {
        let names: Vec<&str> = apart.iter().map(|e| e.0.as_str()).collect();
        eprintln!(
            "left out of the ladder: {} (no games connect them to {}): {}",
            names.len(),
            entrants[0].0,
            names.join(", ")
        );
    }
    let index: BTreeMap<&str, usize> = entrants.iter().enumerate().map(|(i, e)| (e.0.as_str(), i)).collect();
    let mut encounters = Vec::new();
    let mut played = vec![0u32; entrants.len()];
    for p in pairings.iter().filter(|p| reached.contains(&p.a)) {
        let (first, second) = (index[p.a.as_str()], index[p.b.as_str()]);
        if first == second {
            continue;
        }
        let games = &p.games;
        encounters.push(Encounter { first, second, wins: games.wins, draws: games.draws, losses: games.losses });
        played[first] += games.games();
        played[second] += games.games();
    }
    let ratings = fit_bradley_terry(entrants.len(), &encounters, prior_draws);
    if json {
        for (i, (name, steps)) in entrants.iter().enumerate() {
            let line = serde_json::json!({
                "player": name,
                "steps": steps,
                "elo": finite(ratings.elo[i]),
                "stderr": finite(ratings.stderr[i]),
                "games": played[i],
                "anchor": entrants[0].0,
            });
            println!("{line}");
        }
    } else {
        println!("Elo relative to {} (rated 0)", entrants[0].0);
        println!("{:<28} {:>8} {:>8} {:>7} {:>6}", "player", "steps", "Elo", "±1σ", "games");
        for (i, (name, steps)) in entrants.iter().enumerate() {
            let steps = steps.map_or("-".to_string(), |s| s.to_string());
            println!("{name:<28} {steps:>8} {:>+8.1} {:>7.1} {:>6}", ratings.elo[i], ratings.stderr[i], played[i]);
        }
    }
    let points: Vec<(u64, f64, f64)> = entrants
        .iter()
        .zip(ratings.elo.iter().zip(&ratings.stderr))
        .filter_map(|((_, steps), (&elo, &err))| Some(((*steps)?, elo, err)))
        .filter(|p| p.1.is_finite())
        .collect();
    if !points.is_empty() {
        let plot = xqz_run_folder::RunFolder::new(run).ladder_svg();
        crate::plot::ladder(&points, &plot)?;
        eprintln!("plotted in {}", plot.display());
    }
    Ok(())
}

/// The players that games connect to `anchor`, directly or through others, the anchor included.
fn connected(pairings: &[Pairing], anchor: &str) -> std::collections::BTreeSet<String> {
    let mut reached = std::collections::BTreeSet::from([anchor.to_string()]);
    loop {
        let before = reached.len();
        for p in pairings {
            if reached.contains(&p.a) || reached.contains(&p.b) {
                reached.insert(p.a.clone());
                reached.insert(p.b.clone());
            }
        }
        if reached.len() == before {
            return reached;
        }
    }
}

/// A number for JSON: `null` where it is not finite (JSON has no infinity).
pub fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_players_that_games_connect_to_the_anchor_are_rated_together() {
        let game = |a: &str, b: &str, a_score: f64| xqz_arena::records::GameRow {
            match_id: format!("{a}-{b}"),
            a: a.to_string(),
            b: b.to_string(),
            a_steps: None,
            b_steps: None,
            pair: 0,
            opening: String::new(),
            a_score,
            reason: "checkmate".to_string(),
        };
        let games = pairings(&[game("a", "b", 1.0), game("b", "c", 0.5), game("x", "y", 1.0), game("y", "x", 0.0)]);
        let reached: Vec<String> = connected(&games, "c").into_iter().collect();
        assert_eq!(reached, ["a", "b", "c"]);
        assert_eq!(connected(&games, "y").len(), 2);
    }
}
