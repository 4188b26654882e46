//! Where a bearer token comes from: `--token` (visible in `ps`), `--token-file` (a mounted
//! secret) or the `XQZ_TOKEN` environment variable, in that order.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;

/// The environment variable that holds the token when no flag gives it.
pub const TOKEN_ENV: &str = "XQZ_TOKEN";

/// The token flags of every role that speaks to (or is) the coordinator.
#[derive(Args, Clone, Debug, Default)]
pub struct TokenArgs {
    /// Bearer token (shown in process listings: prefer --token-file or the XQZ_TOKEN variable).
    #[arg(long)]
    token: Option<String>,
    /// A file whose content (without trailing white space) is the bearer token.
    #[arg(long, conflicts_with = "token")]
    token_file: Option<PathBuf>,
}

impl TokenArgs {
    /// The token, if any is given; an empty one counts as none.
    pub fn resolve(&self) -> Result<Option<String>> {
        let token = match (&self.token, &self.token_file) {
            (Some(token), _) => token.clone(),
            (None, Some(path)) => std::fs::read_to_string(path)
                .with_context(|| format!("read the token file {}", path.display()))?
                .trim_end()
                .to_string(),
            (None, None) => std::env::var(TOKEN_ENV).unwrap_or_default(),
        };
        anyhow::ensure!(
            token.bytes().all(|b| b.is_ascii_graphic()),
            "the token must be printable ASCII without spaces"
        );
        Ok(Some(token).filter(|t| !t.is_empty()))
    }
}
