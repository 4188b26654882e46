//! An S3-compatible server (PyPI `moto[server]`) for the tests of datasets on object storage.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::process::ChildGuard;
use crate::python;

/// A moto S3 server on a free local port with one bucket, killed when dropped.
///
/// Its Python is [`python::python`]'s (`$XQZ_PYTHON`, else the project's venv, which
/// `scripts/python-env` fills from `scripts/requirements-test.txt`).
pub struct Moto {
    child: ChildGuard,
    port: u16,
    bucket: String,
}

impl Moto {
    /// Starts moto, waits until it answers and creates `bucket` (a valid S3 bucket name).
    pub fn start(bucket: &str) -> Moto {
        let python = python::python("object store (moto)");
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let child = Command::new(&python)
            .args(["-m", "moto.server", "-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {}: {e} (run scripts/python-env)", python.display()));
        let mut moto = Moto { child: ChildGuard(child), port, bucket: bucket.to_string() };
        // Creating the bucket is also the readiness check.
        let start = Instant::now();
        loop {
            if let Some(status) = moto.child.0.try_wait().unwrap() {
                let mut stderr = String::new();
                moto.child.0.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
                panic!(
                    "moto exited ({status}): {stderr}\nis moto[server] installed for {}? run scripts/python-env",
                    python.display()
                );
            }
            if let Some(reply) = moto.request(&format!("PUT /{bucket} HTTP/1.1")) {
                assert!(reply.starts_with("HTTP/1.1 200"), "creating the bucket {bucket}: {reply}");
                // moto logs a line per request: unread, the pipe fills and moto stops answering.
                let mut stderr = moto.child.0.stderr.take().expect("piped stderr");
                std::thread::spawn(move || std::io::copy(&mut stderr, &mut std::io::sink()));
                return moto;
            }
            assert!(start.elapsed() < Duration::from_secs(60), "moto did not answer on port {port}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Sends one bodiless request; `None` while nothing listens.
    fn request(&self, line: &str) -> Option<String> {
        let mut stream = TcpStream::connect(("127.0.0.1", self.port)).ok()?;
        let request =
            format!("{line}\r\nHost: 127.0.0.1:{}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", self.port);
        stream.write_all(request.as_bytes()).ok()?;
        let mut reply = String::new();
        stream.read_to_string(&mut reply).ok()?;
        Some(reply)
    }

    /// The port it listens on (127.0.0.1).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `s3://BUCKET/prefix`.
    pub fn url(&self, prefix: &str) -> String {
        format!("s3://{}/{prefix}", self.bucket)
    }

    /// The environment variables that point an S3 client at this server (plain HTTP, dummy
    /// credentials), as a process would be given them.
    pub fn env(&self) -> [(&'static str, String); 5] {
        [
            ("AWS_ENDPOINT_URL", format!("http://127.0.0.1:{}", self.port)),
            ("AWS_ALLOW_HTTP", "true".into()),
            ("AWS_ACCESS_KEY_ID", "test".into()),
            ("AWS_SECRET_ACCESS_KEY", "test".into()),
            ("AWS_REGION", "us-east-1".into()),
        ]
    }
}
