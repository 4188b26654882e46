//! `xqz run`'s status while the roles run: a line of the coordinator's counts (from gRPC
//! `GetStats`) and the run folder's latest rows (the trainer's step, the last strength match),
//! redrawn on a terminal and logged now and then without one, until the run stops or a role
//! exits.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Result;
use indicatif::{ProgressBar, ProgressStyle};
use xqz_proto::v1::coordinator_client::CoordinatorClient;
use xqz_proto::v1::{GetStatsRequest, Stats};
use xqz_run_folder::{MetricsRow, Row, RowReader, RunFolder, StrengthRow};

use crate::supervisor::{StopSignals, Supervisor};

/// How often `xqz run` prints its status as a plain line when it has no terminal.
const PLAIN_STATUS_EVERY: Duration = Duration::from_secs(30);
/// The status's positions/s is taken over this long: workers upload a batch of games now and
/// then, so the few seconds between two polls mostly see none.
const RATE_WINDOW: Duration = Duration::from_secs(60);

/// A count's rate over the last [`RATE_WINDOW`] of readings.
#[derive(Default)]
struct RateWindow {
    /// (time, count), oldest first; the oldest is the last one at least the window old.
    seen: std::collections::VecDeque<(Instant, u64)>,
}

impl RateWindow {
    /// Adds a reading; returns the rate per second since the window's oldest (0 over no time).
    fn push(&mut self, now: Instant, count: u64) -> f64 {
        self.seen.push_back((now, count));
        while self.seen.len() > 2 && now.duration_since(self.seen[1].0) >= RATE_WINDOW {
            self.seen.pop_front();
        }
        let (t, c) = self.seen[0];
        let secs = now.duration_since(t).as_secs_f64();
        if secs > 0.0 { count.saturating_sub(c) as f64 / secs } else { 0.0 }
    }
}

/// The last row of one of the run folder's CSV files, followed as the file grows.
struct LastRow<R> {
    reader: RowReader<R>,
    row: Option<R>,
}

impl<R: Row> LastRow<R> {
    fn new(path: PathBuf) -> LastRow<R> {
        LastRow { reader: RowReader::new(path), row: None }
    }

    /// Reads what was appended. A file that cannot be read leaves the row as it was: the status
    /// line goes on, and the plots at the end say what is wrong with the file.
    fn update(&mut self) -> Option<&R> {
        if let Ok(appended) = self.reader.read_appended(u64::MAX) {
            let kept = self.row.take().filter(|_| !appended.restarted);
            self.row = appended.rows.into_iter().last().or(kept);
        }
        self.row.as_ref()
    }
}

/// The status line's view of the run folder: the trainer's last step and the last strength match.
struct FolderStatus {
    metrics: LastRow<MetricsRow>,
    strength: LastRow<StrengthRow>,
}

impl FolderStatus {
    fn new(run: &RunFolder) -> FolderStatus {
        FolderStatus { metrics: LastRow::new(run.trainer().metrics_csv()), strength: LastRow::new(run.strength_csv()) }
    }

    /// The trainer's last step and the latest strength match (the model and its Elo against the
    /// anchor), as parts of the status line.
    fn update(&mut self) -> (String, String) {
        let step = self.metrics.update().map_or_else(
            || "waiting for data".into(),
            |r| format!("step {} policy {:.6} value {:.6} lr {}", r.step, r.policy_loss, r.value_loss, r.learning_rate),
        );
        let strength = self
            .strength
            .update()
            .map_or_else(String::new, |m| format!(" | v{} Elo {:.1} vs {}", m.version, m.elo, m.opponent));
        (step, strength)
    }
}

/// The coordinator's counts, if it answers.
fn coordinator_stats(runtime: &tokio::runtime::Runtime, url: &str) -> Option<Stats> {
    runtime.block_on(async {
        let mut client = CoordinatorClient::connect(url.to_string()).await.ok()?;
        client.get_stats(GetStatsRequest {}).await.ok().map(|r| r.into_inner())
    })
}

/// Shows the run's status until a signal asks the run to stop or `deadline` passes (fine), or a
/// role exits (an error naming it).
pub fn watch(
    roles: &mut Supervisor,
    run: &RunFolder,
    url: &str,
    deadline: Option<Instant>,
    signals: &StopSignals,
) -> Result<()> {
    let bar = ProgressBar::new_spinner();
    bar.set_style(ProgressStyle::with_template("{elapsed_precise} {spinner} {msg}").expect("valid template"));
    // Dropped on return, which closes the status connection: the coordinator's graceful stop
    // waits for open connections.
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let start = Instant::now();
    let mut positions = RateWindow::default();
    let mut folder = FolderStatus::new(run);
    // Without a terminal (a log file, CI) the spinner draws nothing: a plain line now and then.
    let mut last_line = Instant::now();
    let outcome = loop {
        if signals.asked() || deadline.is_some_and(|d| Instant::now() >= d) {
            break Ok(());
        }
        if let Some((role, status)) = roles.exited() {
            break Err(anyhow::anyhow!("the {role} exited ({status}); see {}", run.logs_dir().display()));
        }
        if let Some(stats) = coordinator_stats(&runtime, url) {
            let rate = positions.push(Instant::now(), stats.samples);
            let (step, strength) = folder.update();
            if bar.is_hidden() && last_line.elapsed() >= PLAIN_STATUS_EVERY {
                last_line = Instant::now();
                tracing::info!(
                    elapsed_s = start.elapsed().as_secs(),
                    model_version = stats.latest_model_version,
                    games = stats.games,
                    positions = stats.samples,
                    positions_per_s = rate.round(),
                    trainer = %step,
                    strength = %strength.trim_start_matches(" | "),
                    "status"
                );
            }
            bar.set_message(format!(
                "model v{} | {} games, {} positions ({rate:.0}/s) | {step}{strength}",
                stats.latest_model_version, stats.games, stats.samples
            ));
        }
        bar.tick();
        // Two seconds between polls, but a signal is seen at once.
        let poll = Instant::now();
        while poll.elapsed() < Duration::from_secs(2) && !signals.asked() {
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    bar.finish();
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_line_shows_the_last_rows_of_the_run_folder() {
        let dir = tempfile::tempdir().unwrap();
        let run = RunFolder::new(dir.path());
        run.create().unwrap();
        let mut status = FolderStatus::new(&run);
        assert_eq!(status.update(), ("waiting for data".into(), String::new()));
        let mut metrics = xqz_run_folder::RowWriter::open(&run.trainer().metrics_csv()).unwrap();
        for (step, policy_loss) in [(1, 3.5), (2, 3.4)] {
            let row = MetricsRow { step, policy_loss, value_loss: 0.8, learning_rate: 0.02, ..MetricsRow::default() };
            metrics.append(&row).unwrap();
        }
        let row = StrengthRow { version: 7, opponent: "material@32".into(), elo: 120.0, ..StrengthRow::default() };
        xqz_run_folder::RowWriter::open(&run.strength_csv()).unwrap().append(&row).unwrap();
        let (step, strength) = status.update();
        assert_eq!(step, "step 2 policy 3.400000 value 0.800000 lr 0.02");
        assert_eq!(strength, " | v7 Elo 120.0 vs material@32");
        // A file that went bad keeps the last row shown.
        std::fs::write(run.strength_csv(), "version,elo\n7,120\n").unwrap();
        assert_eq!(status.update().1, " | v7 Elo 120.0 vs material@32");
    }

    #[test]
    fn the_positions_rate_spans_the_last_minute_of_polls_not_the_last_two() {
        let t0 = Instant::now();
        let at = |s: u64| t0 + Duration::from_secs(s);
        let mut rate = RateWindow::default();
        assert_eq!(rate.push(at(0), 1000), 0.0);
        assert_eq!(rate.push(at(2), 4000), 1500.0);
        // No upload between these two polls: the rate still counts the one before.
        assert_eq!(rate.push(at(4), 4000), 750.0);
        assert_eq!(rate.push(at(60), 4000), 3000.0 / 60.0);
        // Past the window the oldest readings go: from second 4 on, nothing was stored.
        assert_eq!(rate.push(at(70), 4000), 0.0);
        assert_eq!(rate.push(at(76), 7000), 3000.0 / 72.0);
    }
}
