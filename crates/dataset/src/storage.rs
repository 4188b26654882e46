//! Where a dataset lives: a local folder (the default) or a prefix in an object store (S3, Google
//! Cloud Storage, Azure Blob), and the few operations that the writer and the readers need from
//! either.
//!
//! # Locations
//!
//! [`DatasetLocation::parse`] takes a local path, `file:///absolute/path`, `s3://bucket/prefix`,
//! `gs://bucket/prefix` or `az://container/prefix`. An object store is configured from the
//! environment variables its usual clients read: for S3 `AWS_ACCESS_KEY_ID`,
//! `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_REGION` (or `AWS_DEFAULT_REGION`),
//! `AWS_ENDPOINT_URL` for an S3-compatible server and `AWS_ALLOW_HTTP=true` for one without TLS;
//! for the others the `GOOGLE_*` and `AZURE_*` variables of `object_store`'s builders.
//!
//! # Crash safety on object storage
//!
//! The folder's protocol carries over with the object store's own guarantees in place of fsync
//! and rename: a single PUT is visible complete or not at all, so a shard's two objects are
//! uploaded first under their final names and only then named by the manifest, which is replaced
//! by a conditional PUT (create if absent, else replace only the version this writer last read or
//! wrote). A writer killed mid-shard leaves at most an unlisted object, which readers ignore and
//! report; two writers can never interleave manifest updates, because the second conditional PUT
//! fails.
//!
//! # One writer per prefix: the lease
//!
//! A folder's writer holds an OS lock on `writer.lock`, which dies with its process. An object
//! store has no such lock, so a writer holds a lease instead: the object `writer.lock`, created
//! with a conditional PUT that fails if it exists, naming its holder and renewed (again
//! conditionally) every third of its time to live by a background thread. A second writer finds
//! the object and refuses with [`DatasetError::Leased`], naming the prefix and the holder; a
//! writer that died leaves a lease that lapses after its time to live (30 s by default), and the
//! next writer then takes it over with a conditional PUT on the version it read. A writer deletes
//! its lease when it is dropped. Lapse is judged by comparing the holder's renewal time with the
//! reader's clock, so the hosts' clocks must agree to well within the time to live; the manifest's
//! conditional PUT keeps two writers from interleaving even if they do not.

use std::fmt;
use std::fs::{self, File, OpenOptions, TryLockError};
use std::future::Future;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{RecvTimeoutError, Sender, channel};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use object_store::aws::AmazonS3Builder;
use object_store::azure::MicrosoftAzureBuilder;
use object_store::gcp::GoogleCloudStorageBuilder;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, ObjectStoreScheme, PutMode, PutOptions, UpdateVersion};
use serde::{Deserialize, Serialize};
use tokio::runtime::Runtime;

use crate::error::{DatasetError, IoContext, LocationError, Result};
use crate::layout::{LOCK_FILE, tmp_name};

/// The time to live of a writer's lease on an object store prefix, unless set with
/// [`ObjectPrefix::with_lease_ttl`].
pub const DEFAULT_LEASE_TTL: Duration = Duration::from_secs(30);

/// The URL schemes of the object stores (S3, Google Cloud Storage, Azure Blob).
const OBJECT_SCHEMES: [&str; 8] = ["s3", "s3a", "gs", "az", "azure", "abfs", "abfss", "adl"];

/// A prefix in an object store that holds a dataset, with the time to live of writers' leases.
#[derive(Clone, Debug)]
pub struct ObjectPrefix {
    store: Arc<dyn ObjectStore>,
    prefix: ObjectPath,
    url: String,
    lease_ttl: Duration,
}

impl ObjectPrefix {
    /// The dataset under `prefix` (objects `prefix/manifest.json`, ...) of `store`; `url` names
    /// it in messages and reports (`s3://bucket/prefix`).
    pub fn new(store: Arc<dyn ObjectStore>, prefix: &str, url: impl Into<String>) -> ObjectPrefix {
        ObjectPrefix { store, prefix: ObjectPath::from(prefix), url: url.into(), lease_ttl: DEFAULT_LEASE_TTL }
    }

    /// The same prefix with writers' leases living `ttl` (renewed every third of it).
    pub fn with_lease_ttl(self, ttl: Duration) -> ObjectPrefix {
        ObjectPrefix { lease_ttl: ttl, ..self }
    }

    /// The URL that names the prefix.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The time to live of a writer's lease.
    pub fn lease_ttl(&self) -> Duration {
        self.lease_ttl
    }

    fn path(&self, name: &str) -> ObjectPath {
        self.prefix.clone().join(name)
    }

    fn error(&self, name: &str) -> impl FnOnce(object_store::Error) -> DatasetError {
        let url = format!("{}/{name}", self.url);
        move |source| DatasetError::ObjectStore { url, source }
    }
}

/// Where a dataset lives: a local folder or a prefix in an object store.
///
/// ```
/// use xqz_dataset::DatasetLocation;
/// assert!(matches!("runs/a/dataset".parse::<DatasetLocation>()?, DatasetLocation::Local(_)));
/// assert!(matches!("file:///tmp/dataset".parse::<DatasetLocation>()?, DatasetLocation::Local(_)));
/// let err = "s3:///no-bucket".parse::<DatasetLocation>().unwrap_err();
/// assert!(err.to_string().contains("names no bucket"), "{err}");
/// let err = "ftp://host/data".parse::<DatasetLocation>().unwrap_err();
/// assert!(err.to_string().contains("unsupported scheme \"ftp\""), "{err}");
/// # Ok::<(), xqz_dataset::LocationError>(())
/// ```
#[derive(Clone, Debug)]
pub enum DatasetLocation {
    /// A folder: files written through a temporary name, fsync and rename; the writer holds an
    /// OS lock on `writer.lock`.
    Local(PathBuf),
    /// A prefix in an object store: see the module documentation for its crash safety and lease.
    Object(ObjectPrefix),
}

impl DatasetLocation {
    /// Parses a local path or a URL (`file://`, `s3://`, `gs://`, `az://`; see the module
    /// documentation for the environment variables an object store's client reads). Building an
    /// object store's client makes no request.
    pub fn parse(text: &str) -> Result<DatasetLocation, LocationError> {
        DatasetLocation::parse_with(text, std::iter::empty::<(&str, &str)>())
    }

    /// Parses like [`DatasetLocation::parse`], with options for the object store's client that
    /// override its environment variables: their names, in either case (`AWS_ENDPOINT_URL`,
    /// `aws_allow_http`, ...). A local location ignores them.
    pub fn parse_with<K: AsRef<str>, V: Into<String>>(
        text: &str,
        options: impl IntoIterator<Item = (K, V)>,
    ) -> Result<DatasetLocation, LocationError> {
        if !text.contains("://") {
            return Ok(DatasetLocation::Local(PathBuf::from(text)));
        }
        let url = url::Url::parse(text).map_err(|source| LocationError::Url { text: text.into(), source })?;
        let scheme = url.scheme().to_string();
        let store_error = |source: object_store::Error| LocationError::Store { text: text.into(), source };
        if scheme == "file" {
            return match url.to_file_path() {
                Ok(path) => Ok(DatasetLocation::Local(path)),
                Err(()) => Err(LocationError::FileUrl { text: text.into() }),
            };
        }
        if !OBJECT_SCHEMES.contains(&scheme.as_str()) {
            return Err(LocationError::Scheme { text: text.into(), scheme });
        }
        if url.host_str().is_none_or(str::is_empty) {
            return Err(LocationError::NoBucket { text: text.into(), scheme });
        }
        let (kind, prefix) = ObjectStoreScheme::parse(&url).map_err(|e| store_error(e.into()))?;
        // The store's HTTP client takes the process's default TLS provider; ring is the one the
        // workspace builds (an error means that one is installed already).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let options: Vec<(String, String)> =
            options.into_iter().map(|(k, v)| (k.as_ref().to_string(), v.into())).collect();
        let store: Arc<dyn ObjectStore> = match kind {
            ObjectStoreScheme::AmazonS3 => {
                let builder = configure(AmazonS3Builder::from_env(), options, text, |b, k, v| b.with_config(k, v))?;
                Arc::new(builder.with_url(text).build().map_err(store_error)?)
            }
            ObjectStoreScheme::GoogleCloudStorage => {
                let from_env = GoogleCloudStorageBuilder::from_env();
                let builder = configure(from_env, options, text, |b, k, v| b.with_config(k, v))?;
                Arc::new(builder.with_url(text).build().map_err(store_error)?)
            }
            ObjectStoreScheme::MicrosoftAzure => {
                let from_env = MicrosoftAzureBuilder::from_env();
                let builder = configure(from_env, options, text, |b, k, v| b.with_config(k, v))?;
                Arc::new(builder.with_url(text).build().map_err(store_error)?)
            }
            _ => return Err(LocationError::Scheme { text: text.into(), scheme }),
        };
        let url = text.trim_end_matches('/').to_string();
        Ok(DatasetLocation::Object(ObjectPrefix { store, prefix, url, lease_ttl: DEFAULT_LEASE_TTL }))
    }

    /// The folder, for a local dataset.
    pub fn as_local(&self) -> Option<&Path> {
        match self {
            DatasetLocation::Local(dir) => Some(dir),
            DatasetLocation::Object(_) => None,
        }
    }

    /// The contents of another role's file `name` kept at this location (a plain name, such as a
    /// trainer's checkpoint backup beside a dataset), or `None` if there is none.
    pub fn get_file(&self, name: &str) -> Result<Option<Vec<u8>>> {
        Ok(self.read_optional(name)?.map(|(bytes, _)| bytes))
    }

    /// Stores other roles' files at this location, in order, each complete or not at all (a
    /// folder is created first): a reader that finds the last file finds the earlier ones too.
    pub fn put_files<N: AsRef<str>>(&self, files: Vec<(N, Vec<u8>)>) -> Result<()> {
        if let DatasetLocation::Local(dir) = self {
            fs::create_dir_all(dir).at(dir)?;
        }
        // One at a time: a folder's fsync after each rename keeps the order through a crash too.
        for (name, bytes) in files {
            self.write(name.as_ref(), bytes)?;
        }
        Ok(())
    }

    /// How the file `name` is named in messages and reports: its path, or its object's URL.
    pub(crate) fn file(&self, name: &str) -> PathBuf {
        match self {
            DatasetLocation::Local(dir) => dir.join(name),
            DatasetLocation::Object(o) => PathBuf::from(format!("{}/{name}", o.url)),
        }
    }

    /// The files directly in the location with their sizes, in name order. An absent folder is
    /// an error; an empty prefix is an empty list.
    pub(crate) fn list(&self) -> Result<Vec<(String, u64)>> {
        let mut files = match self {
            DatasetLocation::Local(dir) => {
                let mut files = Vec::new();
                for entry in fs::read_dir(dir).at(dir)? {
                    let entry = entry.at(dir)?;
                    let Ok(name) = entry.file_name().into_string() else { continue };
                    // A file renamed or deleted since the listing (a writer's rename) is skipped.
                    match entry.metadata() {
                        Ok(meta) if meta.is_file() => files.push((name, meta.len())),
                        Ok(_) => {}
                        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                        Err(source) => return Err(DatasetError::Io { path: dir.join(name), source }),
                    }
                }
                files
            }
            DatasetLocation::Object(o) => {
                let (store, prefix) = (Arc::clone(&o.store), o.prefix.clone());
                let listed = block_on(async move {
                    let at = (!prefix.as_ref().is_empty()).then_some(&prefix);
                    store.list_with_delimiter(at).await
                })?
                .map_err(o.error(""))?;
                listed
                    .objects
                    .into_iter()
                    .filter_map(|meta| Some((meta.location.filename()?.to_string(), meta.size)))
                    .collect()
            }
        };
        files.sort();
        Ok(files)
    }

    /// The contents of file `name` and the version read, or `None` if it does not exist.
    pub(crate) fn read_optional(&self, name: &str) -> Result<Option<(Vec<u8>, Version)>> {
        match self {
            DatasetLocation::Local(dir) => {
                let path = dir.join(name);
                match fs::read(&path) {
                    Ok(bytes) => Ok(Some((bytes, Version::default()))),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                    Err(source) => Err(DatasetError::Io { path, source }),
                }
            }
            DatasetLocation::Object(o) => {
                let (store, path) = (Arc::clone(&o.store), o.path(name));
                let got = block_on(async move {
                    let got = store.get(&path).await?;
                    let version = UpdateVersion { e_tag: got.meta.e_tag.clone(), version: got.meta.version.clone() };
                    Ok((got.bytes().await?, version))
                })?;
                match got {
                    Ok((bytes, version)) => Ok(Some((bytes.into(), Version(Some(version))))),
                    Err(object_store::Error::NotFound { .. }) => Ok(None),
                    Err(e) => Err(o.error(name)(e)),
                }
            }
        }
    }

    /// The contents of file `name`, which must exist.
    pub(crate) fn read(&self, name: &str) -> Result<Vec<u8>> {
        self.read_optional(name)?.map(|(bytes, _)| bytes).ok_or_else(|| DatasetError::Io {
            path: self.file(name),
            source: std::io::Error::new(std::io::ErrorKind::NotFound, "not found"),
        })
    }

    /// Writes file `name` so that it appears complete or not at all, as [`DatasetLocation::write_all`].
    pub(crate) fn write(&self, name: &str, bytes: Vec<u8>) -> Result<()> {
        self.write_all(vec![(name, bytes)])
    }

    /// Writes each file so that it appears complete or not at all: through a temporary file,
    /// fsync and rename, then one fsync of the folder for all of them; or one PUT each.
    pub(crate) fn write_all(&self, files: Vec<(&str, Vec<u8>)>) -> Result<()> {
        match self {
            DatasetLocation::Local(dir) => {
                for (name, bytes) in &files {
                    write_renamed(dir, name, bytes)?;
                }
                sync_dir(dir)
            }
            DatasetLocation::Object(o) => {
                for (name, bytes) in files {
                    let (store, path) = (Arc::clone(&o.store), o.path(name));
                    block_on(async move { store.put(&path, bytes.into()).await })?.map_err(o.error(name))?;
                }
                Ok(())
            }
        }
    }

    /// Replaces file `name` like [`DatasetLocation::write`], but on an object store only if it is
    /// still at `expected` (or still absent, for a default `expected`); returns the new version.
    /// A folder needs no such check: its writer's lock excludes every other writer.
    pub(crate) fn replace(&self, name: &str, bytes: Vec<u8>, expected: &Version) -> Result<Version> {
        let DatasetLocation::Object(o) = self else {
            self.write(name, bytes)?;
            return Ok(Version::default());
        };
        match put_conditionally(o, name, bytes, expected)? {
            Ok(version) => Ok(version),
            Err(()) => Err(DatasetError::ManifestConflict { url: format!("{}/{name}", o.url) }),
        }
    }

    /// Deletes file `name` (a temporary file left by a crash).
    pub(crate) fn remove(&self, name: &str) -> Result<()> {
        match self {
            DatasetLocation::Local(dir) => {
                let path = dir.join(name);
                fs::remove_file(&path).at(&path)
            }
            DatasetLocation::Object(o) => {
                let (store, path) = (Arc::clone(&o.store), o.path(name));
                block_on(async move { store.delete(&path).await })?.map_err(o.error(name))
            }
        }
    }

    /// Deletes file `name`; one that is not there is not an error.
    pub(crate) fn remove_if_present(&self, name: &str) -> Result<()> {
        match self {
            DatasetLocation::Local(dir) => {
                let path = dir.join(name);
                match fs::remove_file(&path) {
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
                    other => other.at(&path),
                }
            }
            DatasetLocation::Object(o) => {
                let (store, path) = (Arc::clone(&o.store), o.path(name));
                match block_on(async move { store.delete(&path).await })? {
                    Err(object_store::Error::NotFound { .. }) => Ok(()),
                    other => other.map_err(o.error(name)),
                }
            }
        }
    }

    /// Takes the single writer's place: creates the folder and locks its `writer.lock`, or takes
    /// the prefix's lease in `holder`'s name. Fails with [`DatasetError::Locked`] or
    /// [`DatasetError::Leased`] while another writer holds it.
    pub(crate) fn lock(&self, holder: &str) -> Result<WriterLock> {
        match self {
            DatasetLocation::Local(dir) => {
                fs::create_dir_all(dir).at(dir)?;
                let path = dir.join(LOCK_FILE);
                let file = OpenOptions::new().create(true).truncate(false).write(true).open(&path).at(&path)?;
                match file.try_lock() {
                    Ok(()) => Ok(WriterLock::File { _file: file }),
                    Err(TryLockError::WouldBlock) => Err(DatasetError::Locked { path: dir.clone() }),
                    Err(TryLockError::Error(source)) => Err(DatasetError::Io { path, source }),
                }
            }
            DatasetLocation::Object(o) => Ok(WriterLock::Lease(Lease::acquire(o, holder)?)),
        }
    }
}

impl fmt::Display for DatasetLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DatasetLocation::Local(dir) => write!(f, "{}", dir.display()),
            DatasetLocation::Object(o) => f.write_str(&o.url),
        }
    }
}

impl FromStr for DatasetLocation {
    type Err = LocationError;

    fn from_str(text: &str) -> Result<DatasetLocation, LocationError> {
        DatasetLocation::parse(text)
    }
}

impl From<PathBuf> for DatasetLocation {
    fn from(dir: PathBuf) -> DatasetLocation {
        DatasetLocation::Local(dir)
    }
}

impl From<&Path> for DatasetLocation {
    fn from(dir: &Path) -> DatasetLocation {
        DatasetLocation::Local(dir.to_path_buf())
    }
}

/// Sets each option on an object store's client `builder` through its `with_config`.
fn configure<B, K: FromStr>(
    builder: B,
    options: Vec<(String, String)>,
    text: &str,
    with_config: impl Fn(B, K, String) -> B,
) -> Result<B, LocationError> {
    options.into_iter().try_fold(builder, |builder, (key, value)| match key.to_ascii_lowercase().parse() {
        Ok(parsed) => Ok(with_config(builder, parsed, value)),
        Err(_) => Err(LocationError::Option { text: text.into(), key }),
    })
}

/// The version of a file as read or written: on an object store its e-tag and version (absent:
/// the file did not exist); a folder's files carry none.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Version(Option<UpdateVersion>);

/// PUTs `bytes` at `name` if the object is still at `expected` (absent for `Version(None)`);
/// `Ok(Err(()))` when it is not.
fn put_conditionally(
    o: &ObjectPrefix,
    name: &str,
    bytes: Vec<u8>,
    expected: &Version,
) -> Result<std::result::Result<Version, ()>> {
    let mode = match &expected.0 {
        Some(version) => PutMode::Update(version.clone()),
        None => PutMode::Create,
    };
    let (store, path) = (Arc::clone(&o.store), o.path(name));
    let put = block_on(async move { store.put_opts(&path, bytes.into(), PutOptions::from(mode)).await })?;
    match put {
        Ok(done) => Ok(Ok(Version(Some(UpdateVersion::from(done))))),
        Err(object_store::Error::Precondition { .. } | object_store::Error::AlreadyExists { .. }) => Ok(Err(())),
        Err(e) => Err(o.error(name)(e)),
    }
}

/// Runs `future` on the crate's object store runtime and waits for it. The runtime is one per
/// process and never dropped, because a runtime may not be dropped (nor blocked on) inside
/// another runtime's task, and the coordinator calls the writer from its own runtime's blocking
/// threads; waiting on a channel works from any thread.
fn block_on<T: Send + 'static>(future: impl Future<Output = T> + Send + 'static) -> Result<T> {
    static RUNTIME: OnceLock<Runtime> = OnceLock::new();
    let runtime = match RUNTIME.get() {
        Some(runtime) => runtime,
        None => {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .thread_name("xqz-object-store")
                .enable_all()
                .build()
                .map_err(|e| DatasetError::Background(format!("cannot start the runtime threads: {e}")))?;
            RUNTIME.get_or_init(|| runtime)
        }
    };
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    runtime.spawn(async move {
        let _ = tx.send(future.await);
    });
    rx.recv().map_err(|_| DatasetError::Background("a request's task ended without an answer".into()))
}

/// The single writer's hold on a dataset, released when dropped.
#[derive(Debug)]
pub(crate) enum WriterLock {
    /// The locked `writer.lock` of a folder (held open: closing it releases the lock).
    File {
        /// The open, locked file.
        _file: File,
    },
    /// The lease on an object store prefix.
    Lease(Lease),
}

impl WriterLock {
    /// Fails if the writer may no longer write: its lease lapsed or was taken over.
    pub(crate) fn check(&self) -> Result<()> {
        match self {
            WriterLock::File { .. } => Ok(()),
            WriterLock::Lease(lease) => lease.check(),
        }
    }
}

/// The contents of a lease object.
#[derive(Debug, Serialize, Deserialize)]
struct LeaseBody {
    /// Who holds it (writer name, process id, host).
    holder: String,
    /// When it was last renewed, Unix milliseconds, by the holder's clock.
    renewed_unix_ms: u64,
    /// How long after that it lapses.
    ttl_ms: u64,
}

impl LeaseBody {
    fn new(holder: &str, ttl: Duration) -> LeaseBody {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
        LeaseBody { holder: holder.to_string(), renewed_unix_ms: now, ttl_ms: ttl.as_millis() as u64 }
    }

    fn bytes(&self) -> Vec<u8> {
        serde_json::to_vec(self).unwrap_or_default()
    }

    /// How long it still runs by this host's clock (zero once lapsed).
    fn remaining(&self) -> Duration {
        let end = UNIX_EPOCH + Duration::from_millis(self.renewed_unix_ms.saturating_add(self.ttl_ms));
        end.duration_since(SystemTime::now()).unwrap_or_default()
    }
}

/// A writer's lease on an object store prefix, renewed by a background thread until dropped.
#[derive(Debug)]
pub(crate) struct Lease {
    prefix: ObjectPrefix,
    state: Arc<LeaseState>,
    stop: Option<Sender<()>>,
    renewer: Option<JoinHandle<()>>,
}

#[derive(Debug)]
struct LeaseState {
    /// The version of the lease object as this writer last wrote it, and when.
    written: Mutex<(Version, Instant)>,
    /// Set when a renewal found the lease taken over.
    lost: AtomicBool,
}

impl Lease {
    /// Creates the lease object, or takes over a lapsed one; refuses while another holds it.
    fn acquire(o: &ObjectPrefix, holder: &str) -> Result<Lease> {
        let holder = format!("{holder}, process {} on {}", std::process::id(), host_name());
        // A few rounds: the object may vanish or change between our requests.
        let mut last = None;
        for _ in 0..3 {
            let current = o.path(LOCK_FILE);
            let expected = match DatasetLocation::Object(o.clone()).read_optional(LOCK_FILE)? {
                None => Version::default(),
                Some((bytes, version)) => {
                    // An unreadable lease is no live writer's: it counts as lapsed.
                    let body: LeaseBody = serde_json::from_slice(&bytes).unwrap_or_else(|_| LeaseBody {
                        holder: format!("an unreadable lease object {current}"),
                        renewed_unix_ms: 0,
                        ttl_ms: 0,
                    });
                    let remaining = body.remaining();
                    if !remaining.is_zero() {
                        return Err(DatasetError::Leased {
                            url: o.url.clone(),
                            holder: body.holder,
                            remaining_s: remaining.as_secs_f64().ceil() as u64,
                        });
                    }
                    last = Some(body);
                    version
                }
            };
            let taken = Instant::now();
            if let Ok(version) =
                put_conditionally(o, LOCK_FILE, LeaseBody::new(&holder, o.lease_ttl).bytes(), &expected)?
            {
                let state =
                    Arc::new(LeaseState { written: Mutex::new((version, taken)), lost: AtomicBool::new(false) });
                let (stop, stopped) = channel();
                let (prefix, renewed) = (o.clone(), Arc::clone(&state));
                let renewer = std::thread::Builder::new()
                    .name("xqz-lease".into())
                    .spawn(move || {
                        while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(prefix.lease_ttl / 3) {
                            if !renew(&prefix, &holder, &renewed) {
                                return;
                            }
                        }
                    })
                    .map_err(|e| DatasetError::Background(format!("cannot start the lease renewal thread: {e}")))?;
                return Ok(Lease { prefix: o.clone(), state, stop: Some(stop), renewer: Some(renewer) });
            }
        }
        let holder = last.map_or_else(|| "another writer".to_string(), |b| b.holder);
        Err(DatasetError::Leased { url: o.url.clone(), holder, remaining_s: o.lease_ttl.as_secs() })
    }

    /// Fails if the lease was taken over, or if it went unrenewed for its whole time to live (a
    /// store that did not answer): another writer may hold it now.
    fn check(&self) -> Result<()> {
        let renewed = self.state.written.lock().unwrap_or_else(|e| e.into_inner()).1;
        if self.state.lost.load(Ordering::SeqCst) || renewed.elapsed() >= self.prefix.lease_ttl {
            return Err(DatasetError::LeaseLost { url: self.prefix.url.clone() });
        }
        Ok(())
    }
}

/// Renews the lease once; returns false when it was taken over (the renewals then stop).
fn renew(prefix: &ObjectPrefix, holder: &str, state: &LeaseState) -> bool {
    let expected = state.written.lock().unwrap_or_else(|e| e.into_inner()).0.clone();
    let started = Instant::now();
    match put_conditionally(prefix, LOCK_FILE, LeaseBody::new(holder, prefix.lease_ttl).bytes(), &expected) {
        Ok(Ok(version)) => {
            *state.written.lock().unwrap_or_else(|e| e.into_inner()) = (version, started);
            true
        }
        Ok(Err(())) => {
            state.lost.store(true, Ordering::SeqCst);
            false
        }
        // A failed request: try again at the next tick; `check` refuses writes once it lapses.
        Err(_) => true,
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.stop = None;
        if let Some(renewer) = self.renewer.take() {
            let _ = renewer.join();
        }
        // A lease taken over belongs to its new holder. (Object stores offer no conditional
        // delete, so a takeover between this check and the delete would lose the new holder its
        // lease; it cannot happen before the lease lapsed, and the manifest's conditional PUT
        // still keeps the two from interleaving.)
        if self.check().is_ok() {
            let _ = DatasetLocation::Object(self.prefix.clone()).remove(LOCK_FILE);
        }
    }
}

/// This host's name, for lease holders (Linux; elsewhere "unknown host").
fn host_name() -> String {
    fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|name| name.trim().to_string())
        .unwrap_or_else(|_| "unknown host".into())
}

/// fsyncs a folder so that renames inside it are durable.
fn sync_dir(dir: &Path) -> Result<()> {
    File::open(dir).and_then(|d| d.sync_all()).at(dir)
}

/// Writes `bytes` to `dir/name` through a temporary file, fsync and rename; the rename is durable
/// once the caller fsyncs `dir`.
fn write_renamed(dir: &Path, name: &str, bytes: &[u8]) -> Result<()> {
    let tmp = dir.join(tmp_name(name));
    let result = (|| {
        let mut file = OpenOptions::new().write(true).create(true).truncate(true).open(&tmp).at(&tmp)?;
        file.write_all(bytes).at(&tmp)?;
        file.sync_all().at(&tmp)?;
        drop(file);
        let target = dir.join(name);
        fs::rename(&tmp, &target).at(&target)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url_of(text: &str) -> String {
        match DatasetLocation::parse(text) {
            Ok(DatasetLocation::Object(o)) => o.url().to_string(),
            other => panic!("{text}: {other:?}"),
        }
    }

    #[test]
    fn locations_parse_to_folders_and_prefixes() {
        assert_eq!(url_of("s3://bucket/runs/a/dataset/"), "s3://bucket/runs/a/dataset");
        assert_eq!(url_of("s3://bucket"), "s3://bucket");
        assert_eq!(url_of("gs://bucket/p"), "gs://bucket/p");
        let local = DatasetLocation::parse("file:///data/set").unwrap();
        assert_eq!(local.as_local(), Some(Path::new("/data/set")));
        assert_eq!(DatasetLocation::parse("rel/dir").unwrap().as_local(), Some(Path::new("rel/dir")));
        let err = DatasetLocation::parse_with("s3://b/p", [("AWS_NO_SUCH_THING", "1")]).unwrap_err();
        assert!(err.to_string().contains("has no option \"AWS_NO_SUCH_THING\""), "{err}");
        let options = [("AWS_ENDPOINT_URL", "http://127.0.0.1:9"), ("aws_allow_http", "true")];
        assert!(matches!(DatasetLocation::parse_with("s3://b/p", options), Ok(DatasetLocation::Object(_))));
        for (text, want) in [
            ("s3://", "names no bucket: write s3://BUCKET/PREFIX"),
            ("gs:///p", "names no bucket"),
            ("http://host/p", "unsupported scheme \"http\""),
            ("file://host/p", "is not a local path"),
            ("s3://bu cket/p", "is not a valid URL"),
        ] {
            let err = DatasetLocation::parse(text).unwrap_err().to_string();
            assert!(err.contains(want) && err.contains(text), "{text}: {err}");
        }
    }
}
