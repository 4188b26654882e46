//! Roles as child processes of this binary: how `xqz run` and `xqz bench ingest` start, watch and
//! stop them, and the one way a coordinator is started and its address learnt (its ready file).
//!
//! `xqz run`'s roles each lead a process group of their own ([`Group::Own`]), so that the
//! terminal's Ctrl-C reaches the supervisor alone, which stops them in order (`supervisor`).

use std::ffi::OsString;
use std::net::SocketAddr;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use nix::sys::signal::{Signal, kill, killpg};
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

/// Which process group a role runs in, and so which of the terminal's signals reach it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Group {
    /// Ours: a Ctrl-C reaches it as it reaches us. For a role whose starter stops it on no
    /// signal (`xqz bench ingest`'s coordinator goes with the benchmark).
    Shared,
    /// One of its own, which it leads: only the signals its supervisor sends reach it, so that
    /// the supervisor can stop the roles in order (`xqz run`).
    Own,
}

/// A role's process; asked to stop with SIGTERM, killed if it does not, or if it is dropped
/// while it runs.
pub struct Role {
    name: String,
    child: Child,
    group: Group,
}

impl Role {
    /// Starts `xqz ARGS` as the role named `name`, in `group`, reading nothing (a role in a
    /// group of its own that read the terminal would be stopped by it).
    pub fn spawn(name: &str, args: &[OsString], output: RoleOutput, group: Group) -> Result<Role> {
        let mut command = Command::new(std::env::current_exe()?);
        command.args(args).stdin(Stdio::null());
        if group == Group::Own {
            command.process_group(0);
        }
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
        Ok(Role { name: name.to_string(), child, group })
    }

    /// Its name.
    #[cfg(feature = "torch")]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The process id (and, in a group of its own, the group's).
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// How it ended, once it has (it is reaped then).
    pub fn exit_status(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Sends SIGTERM, unless it has ended; whether it was sent.
    pub fn ask_to_stop(&mut self) -> bool {
        // Checked first: a reaped child's id may be another process's by now. (One that ends
        // after the check stays a zombie, its id still its own, until it is reaped.)
        let running = self.exit_status().is_none();
        if running {
            let _ = kill(Pid::from_raw(self.child.id() as i32), Signal::SIGTERM);
        }
        running
    }

    /// Sends SIGKILL (to its process group when it has its own), unless it has ended.
    pub fn kill(&mut self) {
        if self.exit_status().is_none() {
            match self.group {
                Group::Own => drop(killpg(Pid::from_raw(self.child.id() as i32), Signal::SIGKILL)),
                Group::Shared => drop(self.child.kill()),
            }
        }
    }

    /// Waits for it to end.
    pub fn reap(&mut self) -> Option<ExitStatus> {
        self.child.wait().ok()
    }

    /// Sends SIGTERM and waits up to `grace` for the exit, then kills it.
    pub fn stop(&mut self, grace: Duration) {
        self.ask_to_stop();
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if self.exit_status().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        tracing::warn!(role = %self.name, grace_s = grace.as_secs(), "did not stop in time; killing it");
        self.kill();
        self.reap();
    }
}

impl Drop for Role {
    fn drop(&mut self) {
        if self.exit_status().is_none() {
            self.kill();
            self.reap();
        }
    }
}

/// Starts `xqz coordinator` on a free loopback port with its HTTP side (metrics, dashboard) at
/// `http`, and `args` for the rest (its data, its settings), in `group`; waits up to `timeout`
/// for its ready file at `ready_file`, which tells where it listens.
pub fn spawn_coordinator(
    args: Vec<OsString>,
    http: SocketAddr,
    ready_file: &Path,
    output: RoleOutput,
    group: Group,
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
    let mut coordinator = Role::spawn("coordinator", &argv, output, group)?;
    let ready = Ready::wait(&mut coordinator.child, ready_file, timeout).context("starting the coordinator")?;
    Ok((coordinator, ready))
}
