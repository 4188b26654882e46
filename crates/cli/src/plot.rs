//! Plots of a run: the training losses from `metrics.csv`, the strength matches from
//! `strength.csv` and the ladder, as SVG (no fonts or system libraries needed).

use std::path::Path;

use anyhow::Result;
use plotters::prelude::*;
use xqz_run_folder::{MetricsRow, RowReader, RunFolder, StrengthRow};

/// One step's (step, policy loss, value loss).
type LossRow = (u64, f64, f64);

/// A plotted line: its name, colour and value per row.
type Series = (&'static str, RGBColor, fn(&LossRow) -> f64);

/// Writes an SVG of the policy, value and total losses over training steps.
pub fn losses(metrics: &Path, out: &Path) -> Result<()> {
    let rows: Vec<LossRow> = RowReader::<MetricsRow>::new(metrics)
        .read_all()?
        .into_iter()
        .map(|r| (r.step, r.policy_loss, r.value_loss))
        .collect();
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

/// The Elo drawn for a perfect or a zero score, whose estimate is unbounded (`inf` in `strength.csv`).
const ELO_DRAWN: f64 = 800.0;

/// Writes an SVG of each model's Elo against the anchor (at 0), with its 95% interval, over the
/// hours since `started` (Unix seconds; the first model's publication if `None`), from
/// `strength.csv` (an unbounded Elo, from a perfect or a zero score, drawn at ±800).
pub fn strength(csv: &Path, out: &Path, started: Option<u64>) -> Result<()> {
    let matches = RowReader::<StrengthRow>::new(csv).read_all()?;
    let bounded = |elo: f64| elo.clamp(-ELO_DRAWN, ELO_DRAWN);
    let mut rows: Vec<(u64, f64, f64, f64)> = matches
        .iter()
        .map(|m| (m.published_unix, bounded(m.elo), bounded(m.elo_lower), bounded(m.elo_upper)))
        .collect();
    let mut anchors: Vec<String> = matches.into_iter().map(|m| m.opponent).collect();
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

/// One run's places on the ladder: its name and, per player, (hours of training, Elo, standard
/// error).
pub type LadderCurve = (String, Vec<(f64, f64, f64)>);

/// Writes an SVG of places on the ladder (Elo with its 95% interval; R0 = 0) against hours of
/// training, over dashed lines at the ratings of the rungs in range: one curve per run, the
/// first the run in question, with a legend naming them when there are more.
pub fn ladder_hours(curves: &[LadderCurve], rungs: &[(&str, f64)], out: &Path) -> Result<()> {
    let interval = |p: &(f64, f64, f64)| (p.1 - 1.96 * p.2, p.1 + 1.96 * p.2);
    let points = || curves.iter().flat_map(|c| c.1.iter());
    let lo = points().map(|p| interval(p).0).fold(f64::INFINITY, f64::min) - 60.0;
    let hi = points().map(|p| interval(p).1).fold(f64::NEG_INFINITY, f64::max) + 60.0;
    let last = points().map(|p| p.0).fold(1.0, f64::max) * 1.1;
    let root = SVGBackend::new(out, (900, 500)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = ChartBuilder::on(&root)
        .caption("place on the ladder of Fairy-Stockfish rungs", ("sans-serif", 22))
        .margin(15)
        .x_label_area_size(40)
        .y_label_area_size(50)
        .build_cartesian_2d(0.0..last, lo..hi)?;
    chart
        .configure_mesh()
        .x_desc("hours of training")
        .y_desc("ladder Elo (R0 = 0)")
        .y_label_formatter(&|elo| format!("{elo:+.0}"))
        .light_line_style(WHITE)
        .draw()?;
    for &(name, elo) in rungs.iter().filter(|r| (lo..hi).contains(&r.1)) {
        let gray = BLACK.mix(0.35);
        chart.draw_series(DashedLineSeries::new([(0.0, elo), (last, elo)], 6, 4, gray.into()))?;
        chart.draw_series(std::iter::once(Text::new(
            name.to_string(),
            (last * 0.01, elo + 4.0),
            ("sans-serif", 14),
        )))?;
    }
    // The run in question in blue, the others in orange and then green.
    let colors = [BLUE, RGBColor(230, 120, 0), RGBColor(0, 150, 60)];
    for ((name, points), &color) in curves.iter().zip(colors.iter().cycle()) {
        let mut sorted = points.to_vec();
        sorted.sort_by(|x, y| x.0.total_cmp(&y.0));
        chart
            .draw_series(LineSeries::new(sorted.iter().map(|p| (p.0, p.1)), color))?
            .label(name.as_str())
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        chart.draw_series(sorted.iter().map(|&(h, e, _)| Circle::new((h, e), 4, color.filled())))?;
        chart.draw_series(sorted.iter().map(|p| {
            let (low, high) = interval(p);
            PathElement::new(vec![(p.0, low), (p.0, high)], color)
        }))?;
    }
    if curves.len() > 1 {
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerRight)
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK.mix(0.35))
            .label_font(("sans-serif", 14))
            .draw()?;
    }
    root.present()?;
    Ok(())
}

/// Plots a run folder's curves: `losses.svg` from the trainer's metrics and `strength.svg` from
/// the strength matches, those it has data for; returns what it did, a line each.
pub fn plot_run(run: &RunFolder) -> Vec<String> {
    let mut done = Vec::new();
    let matches = run.strength_csv();
    if matches.exists() {
        let plot = run.strength_svg();
        done.push(match strength(&matches, &plot, run.started()) {
            Ok(()) => format!("strength matches in {}, plotted in {}", matches.display(), plot.display()),
            Err(e) => format!("no strength plot: {e:#}"),
        });
    }
    let metrics = run.trainer().metrics_csv();
    if metrics.exists() {
        let plot = run.losses_svg();
        done.push(match losses(&metrics, &plot) {
            Ok(()) => format!("losses plotted in {}", plot.display()),
            Err(e) => format!("no loss plot: {e:#}"),
        });
    }
    done
}

#[cfg(test)]
mod tests {
    use xqz_run_folder::RowWriter;

    use super::*;

    #[test]
    fn a_run_folder_s_curves_are_plotted_from_its_files() {
        let dir = tempfile::tempdir().unwrap();
        let run = RunFolder::new(dir.path());
        assert!(plot_run(&run).is_empty());
        run.create().unwrap();
        let mut metrics = RowWriter::open(&run.trainer().metrics_csv()).unwrap();
        for (step, policy_loss) in [(1, 3.5), (2, 3.4)] {
            metrics.append(&MetricsRow { step, policy_loss, value_loss: 0.9, ..MetricsRow::default() }).unwrap();
        }
        let mut matches = RowWriter::open(&run.strength_csv()).unwrap();
        for (version, elo) in [(4, -88.7), (8, f64::INFINITY)] {
            let at = 1000 * version;
            let row = StrengthRow {
                version,
                published_unix: at,
                opponent: "material@32".into(),
                elo,
                ..StrengthRow::default()
            };
            matches.append(&row).unwrap();
        }
        let done = plot_run(&run);
        assert_eq!(done.len(), 2, "{done:?}");
        let strength = std::fs::read_to_string(run.strength_svg()).unwrap();
        assert!(strength.contains("material@32 = 0"), "the anchor is named in the title");
        assert!(run.losses_svg().exists());
    }
}
