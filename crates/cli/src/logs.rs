//! Logs: every crate emits `tracing` events; `xqz` installs the one subscriber, which writes them
//! to stderr with a timestamp and a level, as text or as JSON lines (`--log-format`, or the
//! `XQZ_LOG_FORMAT` variable), filtered by `RUST_LOG` (`info` when unset).
//!
//! ```sh
//! RUST_LOG=warn,xqz_coordinator=debug xqz coordinator --listen 127.0.0.1:0 --data d --log-format json
//! ```

use std::io::IsTerminal;
use std::sync::OnceLock;

use anyhow::{Context, Result, anyhow};
use clap::ValueEnum;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::filter::LevelFilter;

/// The variable that picks the log format when `--log-format` is not given.
pub const FORMAT_ENV: &str = "XQZ_LOG_FORMAT";

/// How log lines are written.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    /// One line per event: time, level, target, message, then the fields as `name=value`.
    #[default]
    Text,
    /// One JSON object per event: `timestamp`, `level`, `target`, `message` and the fields.
    Json,
}

impl LogFormat {
    /// The name the flag and the variable take.
    #[cfg(feature = "torch")]
    pub fn name(self) -> &'static str {
        match self {
            LogFormat::Text => "text",
            LogFormat::Json => "json",
        }
    }
}

/// The format this process logs in, once [`init`] has run; the roles `xqz run` starts log in it too
/// (`xqz run` is of the full build alone).
static CHOSEN: OnceLock<LogFormat> = OnceLock::new();

/// The format [`init`] chose (text before it ran).
#[cfg(feature = "torch")]
pub fn format() -> LogFormat {
    CHOSEN.get().copied().unwrap_or_default()
}

/// Installs the subscriber: `flag` if given, else [`FORMAT_ENV`], else text; `RUST_LOG` filters,
/// `info` when unset. A value of either variable that cannot be used is an error naming it.
pub fn init(flag: Option<LogFormat>) -> Result<()> {
    let format = match flag {
        Some(format) => format,
        None => match std::env::var(FORMAT_ENV) {
            Ok(text) => LogFormat::from_str(text.trim(), true)
                .map_err(|_| anyhow!("{FORMAT_ENV}={text:?} is not a log format: text or json"))?,
            Err(std::env::VarError::NotPresent) => LogFormat::Text,
            Err(std::env::VarError::NotUnicode(text)) => {
                return Err(anyhow!("{FORMAT_ENV}={text:?} is not a log format: text or json"));
            }
        },
    };
    let filter =
        EnvFilter::builder().with_default_directive(LevelFilter::INFO.into()).from_env().with_context(|| {
            format!(
                "RUST_LOG={:?} is not a log filter (say `info`, `warn` or `warn,xqz_coordinator=debug`)",
                std::env::var_os(EnvFilter::DEFAULT_ENV).unwrap_or_default()
            )
        })?;
    let builder = tracing_subscriber::fmt().with_env_filter(filter).with_writer(std::io::stderr);
    match format {
        LogFormat::Text => builder.with_ansi(std::io::stderr().is_terminal()).init(),
        LogFormat::Json => builder.json().flatten_event(true).with_current_span(false).with_span_list(false).init(),
    }
    let _ = CHOSEN.set(format);
    Ok(())
}
