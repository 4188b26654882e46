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

/// Writes an SVG of each model's Elo against the anchor (at 0), with its 95% interval, over the
/// hours since `started` (Unix seconds; the first model's publication if `None`), from
/// `strength.csv` (an unbounded Elo, from a perfect or a zero score, drawn at ±800).
pub fn strength(csv: &Path, out: &Path, started: Option<u64>) -> Result<()> {
    let text = std::fs::read_to_string(csv).with_context(|| format!("read {}", csv.display()))?;
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().context("empty strength file")?.split(',').collect();
    let column = |name: &str| header.iter().position(|h| *h == name).with_context(|| format!("no {name} column"));
    let (at, opponent, elo, lower, upper) =
        (column("published_unix")?, column("opponent")?, column("elo")?, column("elo_lower")?, column("elo_upper")?);
    let mut anchors = Vec::new();
    let mut rows: Vec<(u64, f64, f64, f64)> = Vec::new();
    for line in lines.filter(|l| !l.trim().is_empty()) {
        let fields: Vec<&str> = line.split(',').collect();
        let get = |i: usize| fields.get(i).copied().with_context(|| format!("short strength line {line:?}"));
        let bounded = |i: usize| -> Result<f64> { Ok(get(i)?.parse::<f64>()?.clamp(-ELO_DRAWN, ELO_DRAWN)) };
        rows.push((get(at)?.parse()?, bounded(elo)?, bounded(lower)?, bounded(upper)?));
        anchors.push(get(opponent)?.to_string());
    }
    anyhow::ensure!(!rows.is_empty(), "no strength matches yet");
    anchors.sort();
    anchors.dedup();
    let start = started.unwrap_or_else(|| rows.iter().map(|r| r.0).min().unwrap_or(0));
    let hours = |t: u64| t.saturating_sub(start) as f64 / 3600.0;
    rows.sort_by_key(|r| r.0);
    let last = rows.iter().map(|r| hours(r.0)).fold(0.0, f64::max).max(0.1);
    let (lo, hi) = rows.iter().fold((0.0f64, 0.0f64), |(lo, hi), r| (lo.min(r.2), hi.max(r.3)));
    let root = SVGBackend::new(out, (900, 500)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(format!("strength (Elo, {} = 0, 95% intervals)", anchors.join(", ")), ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d(0.0..last * 1.05, (lo - 50.0)..(hi + 50.0))?;
    chart.configure_mesh().x_desc("hours").y_desc("Elo").draw()?;
    chart.draw_series(LineSeries::new(rows.iter().map(|r| (hours(r.0), r.1)), BLUE))?;
    chart.draw_series(rows.iter().map(|r| Circle::new((hours(r.0), r.1), 3, BLUE.filled())))?;
    chart.draw_series(rows.iter().map(|r| PathElement::new(vec![(hours(r.0), r.2), (hours(r.0), r.3)], BLUE)))?;
    chart.draw_series(LineSeries::new([(0.0, 0.0), (last * 1.05, 0.0)], BLACK.mix(0.4)))?;
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

/// Plots a run folder's curves: `losses.svg` from the trainer's metrics and `strength.svg` from
/// the strength matches, those it has data for; returns what it did, a line each.
pub fn plot_run(dir: &Path) -> Vec<String> {
    let mut done = Vec::new();
    let matches = dir.join("strength.csv");
    if matches.exists() {
        let plot = dir.join("strength.svg");
        done.push(match strength(&matches, &plot, run_started(dir)) {
            Ok(()) => format!("strength matches in {}, plotted in {}", matches.display(), plot.display()),
            Err(e) => format!("no strength plot: {e:#}"),
        });
    }
    let metrics = dir.join("trainer/metrics.csv");
    if metrics.exists() {
        let plot = dir.join("losses.svg");
        done.push(match losses(&metrics, &plot) {
            Ok(()) => format!("losses plotted in {}", plot.display()),
            Err(e) => format!("no loss plot: {e:#}"),
        });
    }
    done
}

/// When the run began (Unix seconds): when its trainer saved the step-0 checkpoint.
fn run_started(dir: &Path) -> Option<u64> {
    let modified = std::fs::metadata(dir.join("trainer/checkpoints/step-00000000.json")).ok()?.modified().ok()?;
    Some(modified.duration_since(std::time::UNIX_EPOCH).ok()?.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_run_folder_s_curves_are_plotted_from_its_files() {
        let dir = tempfile::tempdir().unwrap();
        assert!(plot_run(dir.path()).is_empty());
        std::fs::create_dir_all(dir.path().join("trainer")).unwrap();
        std::fs::write(
            dir.path().join("trainer/metrics.csv"),
            "step,policy_loss,value_loss,learning_rate\n1,3.5,0.9,0.02\n2,3.4,0.8,0.02\n",
        )
        .unwrap();
        let rows =
            ["4,400,1000,material@32,4,7,9,0.375,-88.7,-268.2,51.8", "8,800,2000,material@32,5,10,5,0.5,0,-85,85"];
        std::fs::write(dir.path().join("strength.csv"), format!("{}\n{}\n", crate::strength::HEADER, rows.join("\n")))
            .unwrap();
        let done = plot_run(dir.path());
        assert_eq!(done.len(), 2, "{done:?}");
        let strength = std::fs::read_to_string(dir.path().join("strength.svg")).unwrap();
        assert!(strength.contains("material@32 = 0"), "the anchor is named in the title");
        assert!(dir.path().join("losses.svg").exists());
    }
}
