//! Roles as child processes of this binary: how `xqz run` and `xqz bench ingest` start, watch and
//! stop them, and the one way a coordinator is started and its address learnt (its ready file).

use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use xqz_run_folder::Ready;

/// Where a role's output goes.
pub enum RoleOutput {
    /// Both streams appended to this log file, logged as this process logs (the roles of
    /// `xqz run`, of the full build alone).
    #[cfg(feature = "torch")]
    Log(std::path::PathBuf),
    /// Standard output dropped, errors on ours, and logging at `warn` unless `RUST_LOG` says
    /// otherwise: a load generator's thousand simulated workers would make a thousand lines.
    Quiet,
}

/// A role's process; asked to stop with SIGTERM, killed if it does not, or if it is dropped
/// while it runs.
pub struct Role {
    name: String,
    child: Child,
}

impl Role {
    /// Starts `xqz ARGS` as the role named `name`.
    pub fn spawn(name: &str, args: &[OsString], output: RoleOutput) -> Result<Role> {
        let mut command = Command::new(std::env::current_exe()?);
        command.args(args);
        match output {
            #[cfg(feature = "torch")]
            RoleOutput::Log(log) => {
                let file = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(&log)
                    .with_context(|| format!("open {}", log.display()))?;
                // RUST_LOG passes down by itself; the format is this process's choice.
                command
                    .env(crate::logs::FORMAT_ENV, crate::logs::format().name())
                    .stdout(file.try_clone()?)
                    .stderr(file);
            }
            RoleOutput::Quiet => {
                command.env("RUST_LOG", std::env::var("RUST_LOG").unwrap_or_else(|_| "warn".into()));
                command.stdout(Stdio::null());
            }
        }
        let child = command.spawn().with_context(|| format!("start the {name}"))?;
        Ok(Role { name: name.to_string(), child })
    }

    /// The process id.
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// Sends SIGTERM and waits up to `grace` for the exit, then kills it.
    pub fn stop(&mut self, grace: Duration) {
        let pid = Pid::from_raw(self.child.id() as i32);
        let _ = kill(pid, Signal::SIGTERM);
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        tracing::warn!(role = %self.name, grace_s = grace.as_secs(), "did not stop in time; killing it");
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Role {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Starts `xqz coordinator` on a free loopback port with its HTTP side (metrics, dashboard) at
/// `http`, and `args` for the rest (its data, its settings); waits up to `timeout` for its
/// ready file at `ready_file`, which tells where it listens.
pub fn spawn_coordinator(
    args: Vec<OsString>,
    http: SocketAddr,
    ready_file: &Path,
    output: RoleOutput,
    timeout: Duration,
) -> Result<(Role, Ready)> {
    // A file left by an earlier coordinator would name its ports.
    match std::fs::remove_file(ready_file) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(e).with_context(|| format!("remove {}", ready_file.display()));
        }
        _ => {}
    }
    let mut argv: Vec<OsString> = ["coordinator", "--listen", "127.0.0.1:0", "--metrics"].map(OsString::from).into();
    argv.extend([http.to_string().into(), "--ready-file".into(), ready_file.into()]);
    argv.extend(args);
    let mut coordinator = Role::spawn("coordinator", &argv, output)?;
    let ready = Ready::wait(&mut coordinator.child, ready_file, timeout).context("starting the coordinator")?;
    Ok((coordinator, ready))
}

/// The roles of a run on this machine: a coordinator, workers and a trainer, watched together
/// and stopped in the order that loses nothing.
#[cfg(feature = "torch")]
pub struct Supervisor {
    coordinator: Role,
    workers: Vec<Role>,
    trainer: Option<Role>,
}

#[cfg(feature = "torch")]
impl Supervisor {
    /// Watches `coordinator`; the others join it.
    pub fn new(coordinator: Role) -> Supervisor {
        Supervisor { coordinator, workers: Vec::new(), trainer: None }
    }

    /// Starts a worker.
    pub fn start_worker(&mut self, name: &str, args: &[OsString], log: &Path) -> Result<()> {
        self.workers.push(Role::spawn(name, args, RoleOutput::Log(log.to_path_buf()))?);
        Ok(())
    }

    /// Starts the trainer.
    pub fn start_trainer(&mut self, args: &[OsString], log: &Path) -> Result<()> {
        self.trainer = Some(Role::spawn("trainer", args, RoleOutput::Log(log.to_path_buf()))?);
        Ok(())
    }

    /// The first role found to have exited, and how: none of them should before they are asked.
    pub fn exited(&mut self) -> Option<(String, std::process::ExitStatus)> {
        std::iter::once(&mut self.coordinator)
            .chain(&mut self.workers)
            .chain(&mut self.trainer)
            .find_map(|role| Some((role.name.clone(), role.child.try_wait().ok().flatten()?)))
    }

    /// Stops the workers first (they upload the games they finished), then the trainer (it
    /// saves a checkpoint), then the coordinator, which stores what they sent.
    pub fn stop(mut self) {
        tracing::info!(
            "stopping: workers first (they upload what they finished), then the trainer, then the coordinator"
        );
        for worker in &mut self.workers {
            worker.stop(Duration::from_secs(30));
        }
        if let Some(trainer) = &mut self.trainer {
            trainer.stop(Duration::from_secs(60));
        }
        self.coordinator.stop(Duration::from_secs(30));
    }
}
