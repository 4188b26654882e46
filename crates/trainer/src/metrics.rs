//! The trainer's Prometheus metrics: the latest row of `metrics.csv` ([`MetricsRow`]) as gauges, for `xqz train
//! --metrics ADDR` (served by [`xqz_metrics::Server`]).
//!
//! ```
//! use xqz_metrics::Registry;
//! use xqz_run_folder::MetricsRow;
//! use xqz_trainer::TrainerMetrics;
//!
//! let mut registry = Registry::default();
//! let metrics = TrainerMetrics::register(&mut registry);
//! metrics.observe(&MetricsRow {
//!     step: 12, samples_seen: 3072, dataset_samples: 9000, window: 9000, policy_loss: 2.5,
//!     value_loss: 0.75, learning_rate: 0.02, samples_per_second: 640.0, model_version: 3,
//! });
//! let text = xqz_metrics::render(&registry);
//! assert!(text.contains("xqz_trainer_step 12\n") && text.contains("xqz_trainer_policy_loss 2.5\n"));
//! ```

use xqz_metrics::{FloatGauge, Gauge, Registry, register};

use xqz_run_folder::MetricsRow;

/// Gauges of the trainer's progress (gauges, not counters: a resumed run starts at its
/// checkpoint's step, not at 0).
#[derive(Clone, Debug)]
pub struct TrainerMetrics {
    step: Gauge,
    samples_seen: Gauge,
    dataset_samples: Gauge,
    window: Gauge,
    policy_loss: FloatGauge,
    value_loss: FloatGauge,
    learning_rate: FloatGauge,
    samples_per_second: FloatGauge,
    model_version: Gauge,
}

impl TrainerMetrics {
    /// Registers the trainer's series (`xqz_trainer_*`) in `registry`.
    pub fn register(registry: &mut Registry) -> TrainerMetrics {
        let r = registry;
        TrainerMetrics {
            step: register(r, "xqz_trainer_step", "Training steps taken in all (resumed ones included)."),
            samples_seen: register(r, "xqz_trainer_samples_seen", "Samples trained on in all."),
            dataset_samples: register(r, "xqz_trainer_dataset_samples", "Samples in the dataset."),
            window: register(r, "xqz_trainer_window_samples", "Samples in the replay window."),
            policy_loss: register(r, "xqz_trainer_policy_loss", "Policy loss of the last step."),
            value_loss: register(r, "xqz_trainer_value_loss", "Value loss of the last step."),
            learning_rate: register(r, "xqz_trainer_learning_rate", "Learning rate of the last step."),
            samples_per_second: register(
                r,
                "xqz_trainer_samples_per_second",
                "Training samples per second over the last step.",
            ),
            model_version: register(r, "xqz_trainer_model_version", "Latest model version this trainer published."),
        }
    }

    /// Shows `report`.
    pub fn observe(&self, report: &MetricsRow) {
        let int = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        self.step.set(int(report.step));
        self.samples_seen.set(int(report.samples_seen));
        self.dataset_samples.set(int(report.dataset_samples));
        self.window.set(int(report.window));
        self.policy_loss.set(report.policy_loss);
        self.value_loss.set(report.value_loss);
        self.learning_rate.set(report.learning_rate);
        self.samples_per_second.set(report.samples_per_second);
        self.model_version.set(int(report.model_version));
    }
}
