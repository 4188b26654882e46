//! Plots of a run: the training losses from `metrics.csv`, as SVG (no fonts or system libraries
//! needed).

use std::path::Path;

use anyhow::{Context, Result};
use plotters::prelude::*;

/// One step's (step, policy loss, value loss).
type LossRow = (u64, f64, f64);

/// A plotted line: its name, colour and value per row.
type Series = (&'static str, RGBColor, fn(&LossRow) -> f64);

/// Reads `step`, `policy_loss` and `value_loss` columns of a trainer's metrics file.
fn read_losses(metrics: &Path) -> Result<Vec<LossRow>> {
    let text = std::fs::read_to_string(metrics).with_context(|| format!("read {}", metrics.display()))?;
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().context("empty metrics file")?.split(',').collect();
    let column = |name: &str| header.iter().position(|h| *h == name).with_context(|| format!("no {name} column"));
    let (step, policy, value) = (column("step")?, column("policy_loss")?, column("value_loss")?);
    lines
        .filter(|l| !l.trim().is_empty())
        .map(|line| {
            let fields: Vec<&str> = line.split(',').collect();
            let get = |i: usize| fields.get(i).with_context(|| format!("short metrics line {line:?}"));
            Ok((get(step)?.parse()?, get(policy)?.parse()?, get(value)?.parse()?))
        })
        .collect()
}

/// Writes an SVG of the policy, value and total losses over training steps.
pub fn losses(metrics: &Path, out: &Path) -> Result<()> {
    let rows = read_losses(metrics)?;
    anyhow::ensure!(!rows.is_empty(), "no training steps yet");
    let max_step = rows.iter().map(|r| r.0).max().unwrap_or(1).max(1);
    let max_loss = rows.iter().map(|r| r.1 + r.2).fold(0.0, f64::max).max(1e-3);
    let root = SVGBackend::new(out, (900, 500)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption("training losses", ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d(0u64..max_step, 0.0..max_loss * 1.05)?;
    chart.configure_mesh().x_desc("step").y_desc("cross-entropy").draw()?;
    let series: [Series; 3] = [("policy", BLUE, |r| r.1), ("value", RED, |r| r.2), ("total", BLACK, |r| r.1 + r.2)];
    for (name, color, value) in series {
        chart
            .draw_series(LineSeries::new(rows.iter().map(|r| (r.0, value(r))), color))?
            .label(name)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
    }
    chart.configure_series_labels().background_style(WHITE.mix(0.8)).border_style(BLACK).draw()?;
    root.present()?;
    Ok(())
}

/// The Elo drawn for a perfect score's unbounded estimate (as `xqz_arena::MatchResult` reports it).
const ELO_DRAWN: f64 = 800.0;

/// Writes an SVG of the models' Elo over versions, chained from each model's match against the
/// one before it (the first against a random network, at 0), from `strength.csv` (an unbounded
/// Elo, from a perfect score, drawn at ±800).
pub fn strength(csv: &Path, out: &Path) -> Result<()> {
    let text = std::fs::read_to_string(csv).with_context(|| format!("read {}", csv.display()))?;
    let mut chain: Vec<(u64, f64)> = Vec::new();
    for line in text.lines().skip(1) {
        let fields: Vec<&str> = line.split(',').collect();
        let (Some(version), Some(opponent), Some(elo)) = (fields.first(), fields.get(1), fields.get(6)) else {
            continue;
        };
        let (version, opponent, elo): (u64, u64, f64) = (version.parse()?, opponent.parse()?, elo.parse()?);
        let elo = elo.clamp(-ELO_DRAWN, ELO_DRAWN);
        let base = chain.iter().find(|(v, _)| *v == opponent).map_or(0.0, |&(_, e)| e);
        if chain.iter().all(|(v, _)| *v != version) && (opponent == 0 || chain.iter().any(|(v, _)| *v == opponent)) {
            chain.push((version, base + elo));
        }
    }
    anyhow::ensure!(!chain.is_empty(), "no strength matches yet");
    let last = chain.iter().map(|c| c.0).max().unwrap_or(1).max(1);
    let (lo, hi) = chain.iter().fold((0.0f64, 0.0f64), |(lo, hi), c| (lo.min(c.1), hi.max(c.1)));
    let root = SVGBackend::new(out, (900, 500)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption("strength (Elo, chained match results)", ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d(0u64..last, (lo - 50.0)..(hi + 50.0))?;
    chart.configure_mesh().x_desc("model version").y_desc("Elo").draw()?;
    chart.draw_series(LineSeries::new(std::iter::once((0, 0.0)).chain(chain.iter().copied()), BLUE))?;
    chart.draw_series(chain.iter().map(|&(v, e)| Circle::new((v, e), 3, BLUE.filled())))?;
    root.present()?;
    Ok(())
}

/// Writes an SVG of ratings (Elo with one standard error) against training steps.
pub fn ladder(points: &[(u64, f64, f64)], out: &Path) -> Result<()> {
    let last = points.iter().map(|p| p.0).max().unwrap_or(1).max(1);
    let finite = |x: f64| if x.is_finite() { x } else { 0.0 };
    let lo = points.iter().map(|p| p.1 - finite(p.2)).fold(0.0f64, f64::min);
    let hi = points.iter().map(|p| p.1 + finite(p.2)).fold(0.0f64, f64::max);
    let root = SVGBackend::new(out, (900, 500)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption("ladder (Bradley-Terry Elo of every checkpoint)", ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d(0u64..last, (lo - 50.0)..(hi + 50.0))?;
    chart.configure_mesh().x_desc("training steps").y_desc("Elo").draw()?;
    let mut sorted = points.to_vec();
    sorted.sort_by_key(|p| p.0);
    chart.draw_series(LineSeries::new(sorted.iter().map(|p| (p.0, p.1)), BLUE))?;
    chart.draw_series(sorted.iter().map(|&(s, e, _)| Circle::new((s, e), 3, BLUE.filled())))?;
    // One standard error above and below each rating.
    chart.draw_series(
        sorted.iter().map(|&(s, e, err)| PathElement::new(vec![(s, e - finite(err)), (s, e + finite(err))], BLUE)),
    )?;
    root.present()?;
    Ok(())
}
