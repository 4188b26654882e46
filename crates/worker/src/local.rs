//! Self-play on this machine into a dataset folder (`xqz selfplay`).

use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::AtomicBool;

use xqz_dataset::{DatasetError, DatasetWriter, WriterConfig};
use xqz_mcts::{EvalError, Evaluator, SelfPlayConfig, SelfPlayGame, SelfPlayStats, self_play};

/// What to play.
#[derive(Clone, Debug)]
pub struct LocalSelfPlay {
    /// Games to play.
    pub games: u64,
    /// Model version recorded with the games.
    pub model_version: u64,
    /// Worker name recorded with the games.
    pub worker_id: String,
}

/// What a local run did.
#[derive(Clone, Debug, Default)]
pub struct LocalReport {
    /// Search totals.
    pub stats: SelfPlayStats,
    /// Samples written.
    pub samples: u64,
    /// Games in which resigning was off and a side would have resigned, and of those the ones
    /// that side did not lose.
    pub resign_checks: (u64, u64),
}

/// Why a local run failed.
#[derive(Debug, thiserror::Error)]
pub enum WorkerError {
    /// The search's evaluator failed.
    #[error(transparent)]
    Eval(#[from] EvalError),
    /// The dataset could not be written.
    #[error(transparent)]
    Dataset(#[from] DatasetError),
}

/// Plays `run.games` games and appends them to the dataset in `dir` as they finish; `progress`
/// sees each finished game. Games are flushed to shards as the writer's config says and at the end.
pub fn play_into<E: Evaluator + Clone + Send>(
    dir: &Path,
    config: &SelfPlayConfig,
    evaluator: E,
    run: &LocalSelfPlay,
    mut progress: impl FnMut(&SelfPlayGame) + Send,
) -> Result<LocalReport, WorkerError> {
    let writer_config = WriterConfig { writer_name: run.worker_id.clone(), ..WriterConfig::default() };
    let (writer, _) = DatasetWriter::open(dir, writer_config)?;
    let state = Mutex::new((writer, LocalReport::default(), None::<DatasetError>));
    let stop = AtomicBool::new(false);
    let stats = self_play(config, evaluator, run.games, &stop, |game| {
        progress(&game);
        let mut guard = state.lock().unwrap_or_else(|e| e.into_inner());
        let (writer, report, failure) = &mut *guard;
        if failure.is_some() {
            return;
        }
        if let Some(false_positive) = game.resign_false_positive() {
            report.resign_checks.0 += 1;
            report.resign_checks.1 += u64::from(false_positive);
        }
        let written =
            crate::record::to_records(&game, run.model_version, &run.worker_id).and_then(|(record, samples)| {
                report.samples += samples.len() as u64;
                writer.append(record, samples)?;
                writer.flush_if_due()
            });
        if let Err(e) = written {
            *failure = Some(e);
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
        }
    })?;
    let (writer, mut report, failure) = state.into_inner().unwrap_or_else(|e| e.into_inner());
    if let Some(e) = failure {
        return Err(e.into());
    }
    writer.finish()?;
    report.stats = stats;
    Ok(report)
}
