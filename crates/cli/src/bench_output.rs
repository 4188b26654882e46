//! How every `xqz bench` benchmark prints what it measured: a module of its own, below the
//! benchmarks and the command that dispatches to them.

use clap::Args;

/// How a benchmark prints its measurements (`--json`, shared by every benchmark).
#[derive(Args, Clone, Copy, Debug)]
pub struct Output {
    /// Print one JSON object per measurement (JSON lines) instead of text; every object names its
    /// `bench` and `measurement` and carries what was measured, so that a line stands alone.
    #[arg(long)]
    pub json: bool,
}

impl Output {
    /// Prints a measurement: `text` as a line, or `fields` as one JSON line with `--json`.
    pub fn measurement(self, text: impl FnOnce() -> String, fields: serde_json::Value) {
        if self.json {
            println!("{fields}");
        } else {
            println!("{}", text());
        }
    }

    /// Prints a line that says what is measured; with `--json` the measurements carry it instead.
    pub fn context(self, text: impl FnOnce() -> String) {
        if !self.json {
            println!("{}", text());
        }
    }
}
