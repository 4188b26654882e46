//! Where a run's state is kept so that the run outlives its machine: a folder or an object store
//! prefix, named by the text a user gives `xqz run --state` and noted in the run folder.

/// A run's state location and the places of its parts in it:
///
/// ```text
/// coordinator/   the coordinator's backup: published models, registry, settings history, worker-id key
/// dataset/       the coordinator's dataset itself: a game is acknowledged once it is stored here
/// trainer/       the trainer's backup: its checkpoints (weights, optimizer, counters), latest, metrics.csv
/// run/           the run's own files: settings.toml, strength.csv
/// ```
///
/// A light state (`xqz state light`) has the same layout without `dataset/`, and with the weights
/// of the latest model and checkpoint alone. Each part is a location of its own, in the syntax of
/// the whole (a path, or a URL such as `s3://bucket/prefix`).
///
/// ```
/// use xqz_run_folder::RunState;
/// let state = RunState::new("s3://bucket/runs/long/");
/// assert_eq!(state.dataset(), "s3://bucket/runs/long/dataset");
/// assert_eq!(RunState::new("/tmp/state").trainer(), "/tmp/state/trainer");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunState {
    location: String,
}

impl RunState {
    /// The run's own files kept in `run/`, by their names in the run folder.
    pub const RUN_FILES: [&str; 2] = ["settings.toml", "strength.csv"];

    /// The state at `location` (nothing is read or made).
    pub fn new(location: &str) -> RunState {
        RunState { location: location.trim_end_matches('/').to_string() }
    }

    /// The location as given, without a trailing slash.
    pub fn location(&self) -> &str {
        &self.location
    }

    fn part(&self, name: &str) -> String {
        format!("{}/{name}", self.location)
    }

    /// The coordinator's backup.
    pub fn coordinator(&self) -> String {
        self.part("coordinator")
    }

    /// The coordinator's dataset.
    pub fn dataset(&self) -> String {
        self.part("dataset")
    }

    /// The trainer's backup.
    pub fn trainer(&self) -> String {
        self.part("trainer")
    }

    /// The run's own files.
    pub fn run(&self) -> String {
        self.part("run")
    }
}
