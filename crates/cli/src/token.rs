//! Credentials from the command line: where a bearer token comes from (`--token`, visible in
//! `ps`; `--token-file`, a mounted secret; or the `XQZ_TOKEN` environment variable, in that
//! order), the coordinator's publisher token, and the TLS files of the coordinator and its
//! clients.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Args;

/// The environment variable that holds the token when no flag gives it.
pub const TOKEN_ENV: &str = "XQZ_TOKEN";

/// The environment variable that holds the coordinator's publisher token when no flag gives it.
pub const PUBLISHER_TOKEN_ENV: &str = "XQZ_PUBLISHER_TOKEN";

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
        resolve(self.token.as_deref(), self.token_file.as_deref(), TOKEN_ENV)
    }
}

/// The coordinator's publisher token flag: the trainer's credential, the only one that may
/// publish models when it is set.
#[derive(Args, Clone, Debug, Default)]
pub struct PublisherTokenArgs {
    /// A file whose content is the token that alone may publish models (the trainer's; workers
    /// get --token-file's). Also the XQZ_PUBLISHER_TOKEN variable. Without one, any caller that
    /// passes the token check may publish.
    #[arg(long)]
    publisher_token_file: Option<PathBuf>,
}

impl PublisherTokenArgs {
    /// The publisher token, if any is given.
    pub fn resolve(&self) -> Result<Option<String>> {
        resolve(None, self.publisher_token_file.as_deref(), PUBLISHER_TOKEN_ENV)
    }
}

/// A token from the flag, else the file, else the environment variable `env`; checked.
fn resolve(flag: Option<&str>, file: Option<&Path>, env: &str) -> Result<Option<String>> {
    let token = match (flag, file) {
        (Some(token), _) => token.to_string(),
        (None, Some(path)) => std::fs::read_to_string(path)
            .with_context(|| format!("read the token file {}", path.display()))?
            .trim_end()
            .to_string(),
        (None, None) => std::env::var(env).unwrap_or_default(),
    };
    anyhow::ensure!(token.bytes().all(|b| b.is_ascii_graphic()), "the token must be printable ASCII without spaces");
    Ok(Some(token).filter(|t| !t.is_empty()))
}

/// Reads a PEM file named by a flag.
fn read_pem(flag: &str, path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("read {flag} {}", path.display()))
}

/// A client's TLS flags (workers, the trainer): for an `https://` coordinator.
#[derive(Args, Clone, Debug, Default)]
pub struct ClientTlsArgs {
    /// PEM file of the CA that signed the coordinator's certificate (with an https:// address).
    #[arg(long)]
    tls_ca: Option<PathBuf>,
    /// PEM file of this client's certificate, for a coordinator that checks clients.
    #[arg(long, requires_all = ["tls_ca", "tls_key"])]
    tls_cert: Option<PathBuf>,
    /// PEM file of this client's private key.
    #[arg(long, requires = "tls_cert")]
    tls_key: Option<PathBuf>,
}

impl ClientTlsArgs {
    /// The TLS settings, if a CA is given.
    pub fn resolve(&self) -> Result<Option<xqz_proto::tls::ClientTls>> {
        let Some(ca) = &self.tls_ca else { return Ok(None) };
        let identity = match (&self.tls_cert, &self.tls_key) {
            (Some(cert), Some(key)) => Some((read_pem("--tls-cert", cert)?, read_pem("--tls-key", key)?)),
            _ => None,
        };
        Ok(Some(xqz_proto::tls::ClientTls { ca_pem: read_pem("--tls-ca", ca)?, identity }))
    }
}

/// The coordinator's TLS flags.
#[derive(Args, Clone, Debug, Default)]
pub struct ServerTlsArgs {
    /// PEM file of the coordinator's certificate chain: serve TLS (clients then use https://).
    #[arg(long, requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// PEM file of the coordinator's private key.
    #[arg(long, requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// PEM file of the CA that client certificates must chain to: clients without one are refused.
    #[arg(long, requires = "tls_cert")]
    tls_client_ca: Option<PathBuf>,
}

impl ServerTlsArgs {
    /// The TLS material, if a certificate is given.
    pub fn resolve(&self) -> Result<Option<xqz_coordinator::ServerTls>> {
        let (Some(cert), Some(key)) = (&self.tls_cert, &self.tls_key) else { return Ok(None) };
        Ok(Some(xqz_coordinator::ServerTls {
            cert_pem: read_pem("--tls-cert", cert)?,
            key_pem: read_pem("--tls-key", key)?,
            client_ca_pem: self.tls_client_ca.as_deref().map(|ca| read_pem("--tls-client-ca", ca)).transpose()?,
        }))
    }
}
