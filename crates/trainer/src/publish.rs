//! Publishing checkpoints to the coordinator over gRPC (`PublishModel`).

use std::path::Path;

use tonic::metadata::MetadataValue;
use tonic::transport::Endpoint;
use xqz_proto::tls::ClientTls;
use xqz_proto::v1::coordinator_client::CoordinatorClient;
use xqz_proto::v1::publish_model_chunk::Part;
use xqz_proto::v1::{PublishHeader, PublishModelChunk};

/// Where published models go (the coordinator, or nowhere in a local test).
pub trait Publisher {
    /// Publishes the checkpoint whose metadata is at `path`; returns its model version.
    fn publish(&mut self, path: &Path) -> Result<u64, PublishError>;
}

/// Bytes per uploaded chunk.
const CHUNK: usize = 1 << 20;

/// Publishes to a coordinator at `url` (`http://HOST:PORT`, or `https://` with TLS settings)
/// with an optional bearer token.
pub struct GrpcPublisher {
    endpoint: Endpoint,
    token: Option<String>,
    name: String,
    runtime: tokio::runtime::Runtime,
}

impl GrpcPublisher {
    /// A publisher that names itself `name` to the coordinator.
    pub fn new(
        url: &str,
        tls: Option<&ClientTls>,
        token: Option<String>,
        name: &str,
    ) -> Result<GrpcPublisher, PublishError> {
        let endpoint = xqz_proto::tls::endpoint(url, tls)?;
        // A worker thread of its own drives the connection between publications too, so that it
        // closes when the client is dropped and answers a stopping coordinator at once (a
        // current-thread runtime left it open and unread, holding the coordinator's shutdown).
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .map_err(PublishError::Runtime)?;
        Ok(GrpcPublisher { endpoint, token, name: name.to_string(), runtime })
    }
}

/// Why a model could not be published.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    /// The checkpoint's files cannot be read.
    #[error("{path}: {source}")]
    Read {
        /// The file.
        path: std::path::PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The checkpoint's metadata is not valid.
    #[error(transparent)]
    Checkpoint(#[from] xqz_net::CheckpointError),
    /// The token cannot be sent as metadata.
    #[error("the token must be printable ASCII")]
    Token,
    /// The coordinator's address or the TLS settings cannot be used.
    #[error(transparent)]
    Endpoint(#[from] xqz_proto::tls::EndpointError),
    /// The publisher's runtime cannot start.
    #[error("starting the publisher's runtime: {0}")]
    Runtime(std::io::Error),
    /// The coordinator cannot be reached.
    #[error("connecting to the coordinator: {0}")]
    Connect(#[from] tonic::transport::Error),
    /// The coordinator refused the model.
    #[error("the coordinator refused the model: {}: {}", .0.code(), .0.message())]
    Refused(Box<tonic::Status>),
}

impl Publisher for GrpcPublisher {
    fn publish(&mut self, path: &Path) -> Result<u64, PublishError> {
        let read = |p: &Path| std::fs::read(p).map_err(|source| PublishError::Read { path: p.to_path_buf(), source });
        let meta_json = String::from_utf8_lossy(&read(path)?).into_owned();
        let meta = xqz_net::checkpoint::read_meta(path)?;
        let weights = read(&path.with_file_name(&meta.weights.file))?;
        let mut chunks = vec![PublishModelChunk {
            part: Some(Part::Header(PublishHeader { metadata_json: meta_json, publisher: self.name.clone() })),
        }];
        chunks.extend(weights.chunks(CHUNK).map(|c| PublishModelChunk { part: Some(Part::Data(c.to_vec())) }));
        let (endpoint, token) = (self.endpoint.clone(), self.token.clone());
        self.runtime.block_on(async move {
            let mut client = CoordinatorClient::new(endpoint.connect().await?);
            let mut request = tonic::Request::new(tokio_stream::iter(chunks));
            if let Some(token) = token {
                let value: MetadataValue<_> = format!("Bearer {token}").parse().map_err(|_| PublishError::Token)?;
                request.metadata_mut().insert("authorization", value);
            }
            let reply = client.publish_model(request).await.map_err(|s| PublishError::Refused(Box::new(s)))?;
            Ok(reply.into_inner().version)
        })
    }
}
