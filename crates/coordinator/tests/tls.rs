//! The coordinator over TLS, with certificates made by OpenSSL's command line: a client that trusts its CA is served; a plain-text client and one that trusts another
//! CA are not; with a client CA, only clients with a certificate it signed are served; a socket
//! that never starts its handshake cannot hold a connection slot.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::sync::oneshot;
use tonic::transport::Channel;
use xqz_coordinator::{CoordinatorConfig, Limits, Running, ServerTls, serve};
use xqz_proto::tls::{ClientTls, endpoint};
use xqz_proto::v1::GetStatsRequest;
use xqz_proto::v1::coordinator_client::CoordinatorClient;
use xqz_test_support::certificates::{ca, leaf};

fn read(dir: &Path, file: &str) -> Vec<u8> {
    std::fs::read(dir.join(file)).unwrap()
}

struct Server {
    running: Running,
    stop: oneshot::Sender<()>,
}

async fn start(data: PathBuf, tls: ServerTls, limits: Limits) -> Server {
    let mut config = CoordinatorConfig::new("127.0.0.1:0".parse().unwrap(), data);
    config.tls = Some(tls);
    config.limits = limits;
    let (stop, rx) = oneshot::channel::<()>();
    Server { running: serve(config, async move { drop(rx.await) }).await.unwrap(), stop }
}

/// Whether a client at `address` with `tls` gets the coordinator's stats.
async fn served(address: &str, tls: Option<&ClientTls>) -> bool {
    let Ok(channel): Result<Channel, _> = endpoint(address, tls).unwrap().connect().await else { return false };
    CoordinatorClient::new(channel).get_stats(GetStatsRequest {}).await.is_ok()
}

#[tokio::test]
async fn clients_that_trust_the_coordinator_s_ca_are_served_over_tls() {
    let dir = tempfile::tempdir().unwrap();
    let certs = dir.path();
    ca(certs, "ca");
    ca(certs, "other-ca");
    leaf(certs, "server", "ca");
    let tls =
        ServerTls { cert_pem: read(certs, "server.pem"), key_pem: read(certs, "server.key"), client_ca_pem: None };
    let server = start(certs.join("data"), tls, Limits::default()).await;
    let port = server.running.addr().port();
    let https = format!("https://127.0.0.1:{port}");
    let trusting = ClientTls { ca_pem: read(certs, "ca.pem"), identity: None };
    assert!(served(&https, Some(&trusting)).await, "a client that trusts the CA is served");
    let doubting = ClientTls { ca_pem: read(certs, "other-ca.pem"), identity: None };
    assert!(!served(&https, Some(&doubting)).await, "a client that trusts another CA is not");
    assert!(!served(&format!("http://127.0.0.1:{port}"), None).await, "plain text is not served");
    server.stop.send(()).unwrap();
    server.running.wait().await.unwrap();
}

#[tokio::test]
async fn with_a_client_ca_only_clients_it_signed_are_served() {
    let dir = tempfile::tempdir().unwrap();
    let certs = dir.path();
    ca(certs, "ca");
    ca(certs, "other-ca");
    leaf(certs, "server", "ca");
    leaf(certs, "worker", "ca");
    leaf(certs, "intruder", "other-ca");
    let tls = ServerTls {
        cert_pem: read(certs, "server.pem"),
        key_pem: read(certs, "server.key"),
        client_ca_pem: Some(read(certs, "ca.pem")),
    };
    let server = start(certs.join("data"), tls, Limits::default()).await;
    let https = format!("https://127.0.0.1:{}", server.running.addr().port());
    let client = |name: Option<&str>| ClientTls {
        ca_pem: read(certs, "ca.pem"),
        identity: name.map(|n| (read(certs, &format!("{n}.pem")), read(certs, &format!("{n}.key")))),
    };
    assert!(served(&https, Some(&client(Some("worker")))).await, "a client the CA signed is served");
    assert!(!served(&https, Some(&client(Some("intruder")))).await, "one another CA signed is not");
    assert!(!served(&https, Some(&client(None))).await, "nor one without a certificate");
    server.stop.send(()).unwrap();
    server.running.wait().await.unwrap();
}

#[tokio::test]
async fn a_socket_that_never_starts_its_handshake_cannot_hold_the_only_connection() {
    let dir = tempfile::tempdir().unwrap();
    let certs = dir.path();
    ca(certs, "ca");
    leaf(certs, "server", "ca");
    let tls =
        ServerTls { cert_pem: read(certs, "server.pem"), key_pem: read(certs, "server.key"), client_ca_pem: None };
    let limits = Limits { max_connections: 1, idle_timeout: Duration::from_millis(300), ..Limits::default() };
    let server = start(certs.join("data"), tls, limits).await;
    let _mute = tokio::net::TcpStream::connect(server.running.addr()).await.unwrap();
    let https = format!("https://127.0.0.1:{}", server.running.addr().port());
    let trusting = ClientTls { ca_pem: read(certs, "ca.pem"), identity: None };
    assert!(served(&https, Some(&trusting)).await, "served once the mute socket is closed");
    server.stop.send(()).unwrap();
    server.running.wait().await.unwrap();
}
