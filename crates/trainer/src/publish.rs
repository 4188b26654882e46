//! Publishing checkpoints to the coordinator over gRPC (`PublishModel`).

use std::path::Path;

use tonic::metadata::MetadataValue;
use xqz_proto::v1::coordinator_client::CoordinatorClient;
use xqz_proto::v1::publish_model_chunk::Part;
use xqz_proto::v1::{PublishHeader, PublishModelChunk};

use crate::run::Publisher;

/// Bytes per uploaded chunk.
const CHUNK: usize = 1 << 20;

/// Publishes to a coordinator at `url` (`http://HOST:PORT`) with an optional bearer token.
pub struct GrpcPublisher {
    url: String,
    token: Option<String>,
    name: String,
    runtime: tokio::runtime::Runtime,
}

impl GrpcPublisher {
    /// A publisher that names itself `name` to the coordinator.
    pub fn new(url: &str, token: Option<String>, name: &str) -> std::io::Result<GrpcPublisher> {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        Ok(GrpcPublisher { url: url.to_string(), token, name: name.to_string(), runtime })
    }
}

impl Publisher for GrpcPublisher {
    fn publish(&mut self, path: &Path) -> Result<u64, String> {
        let meta_json = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let meta = xqz_net::checkpoint::read_meta(path).map_err(|e| e.to_string())?;
        let weights_path = path.with_file_name(&meta.weights.file);
        let weights = std::fs::read(&weights_path).map_err(|e| format!("{}: {e}", weights_path.display()))?;
        let mut chunks = vec![PublishModelChunk {
            part: Some(Part::Header(PublishHeader { metadata_json: meta_json, publisher: self.name.clone() })),
        }];
        chunks.extend(weights.chunks(CHUNK).map(|c| PublishModelChunk { part: Some(Part::Data(c.to_vec())) }));
        let (url, token) = (self.url.clone(), self.token.clone());
        self.runtime.block_on(async move {
            let mut client = CoordinatorClient::connect(url).await.map_err(|e| e.to_string())?;
            let mut request = tonic::Request::new(tokio_stream::iter(chunks));
            if let Some(token) = token {
                let value: MetadataValue<_> = format!("Bearer {token}").parse().map_err(|_| "bad token".to_string())?;
                request.metadata_mut().insert("authorization", value);
            }
            let reply = client.publish_model(request).await.map_err(|s| format!("{}: {}", s.code(), s.message()))?;
            Ok(reply.into_inner().version)
        })
    }
}
