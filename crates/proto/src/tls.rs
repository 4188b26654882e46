//! How every client reaches the coordinator: plain gRPC on `http://`, or TLS (rustls) on
//! `https://` with the CA that signed the coordinator's certificate and, for a coordinator that
//! asks for one, the client's own certificate.
//!
//! ```
//! use xqz_proto::tls::{ClientTls, endpoint};
//!
//! assert!(endpoint("http://127.0.0.1:50051", None).is_ok());
//! // TLS needs an https address, and an https address needs TLS settings.
//! let tls = ClientTls { ca_pem: b"-----BEGIN CERTIFICATE-----".to_vec(), identity: None };
//! assert!(endpoint("http://127.0.0.1:50051", Some(&tls)).is_err());
//! assert!(endpoint("https://127.0.0.1:50051", None).is_err());
//! ```

use tonic::transport::{Certificate, ClientTlsConfig, Endpoint, Identity};

/// A client's TLS settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClientTls {
    /// PEM of the CA certificate(s) the coordinator's certificate must chain to.
    pub ca_pem: Vec<u8>,
    /// PEM of the client's certificate and of its key, for a coordinator that checks clients.
    pub identity: Option<(Vec<u8>, Vec<u8>)>,
}

/// Why there is no endpoint for an address.
#[derive(Debug, thiserror::Error)]
pub enum EndpointError {
    /// The address is not a URL tonic can use.
    #[error("coordinator address {address:?}: {source}")]
    Address {
        /// The address.
        address: String,
        /// Why.
        source: tonic::transport::Error,
    },
    /// The scheme and the TLS settings disagree.
    #[error(
        "coordinator address {0:?}: TLS settings (--tls-ca) go with an https:// address, and an https:// address \
         needs them"
    )]
    Scheme(String),
    /// The TLS settings cannot be used.
    #[error("TLS settings for {address:?}: {source}")]
    Tls {
        /// The address.
        address: String,
        /// Why.
        source: tonic::transport::Error,
    },
}

/// The endpoint for `address`: TLS with `tls` for an `https://` address, plain for `http://`.
pub fn endpoint(address: &str, tls: Option<&ClientTls>) -> Result<Endpoint, EndpointError> {
    let endpoint = Endpoint::from_shared(address.to_string())
        .map_err(|source| EndpointError::Address { address: address.to_string(), source })?;
    let https = address.starts_with("https://");
    match tls {
        None if !https => Ok(endpoint),
        Some(tls) if https => {
            let mut config = ClientTlsConfig::new().ca_certificate(Certificate::from_pem(&tls.ca_pem));
            if let Some((cert, key)) = &tls.identity {
                config = config.identity(Identity::from_pem(cert, key));
            }
            endpoint.tls_config(config).map_err(|source| EndpointError::Tls { address: address.to_string(), source })
        }
        _ => Err(EndpointError::Scheme(address.to_string())),
    }
}
