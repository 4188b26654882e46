//! `xqz run` started as a terminal starts it, with its roles, none of which a failing test
//! leaves behind: each role leads a process group of its own, which killing the run's alone
//! would not reach.
#![allow(dead_code)] // each test binary uses a different subset

use std::os::unix::process::CommandExt;
use std::process::{Child, Command};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use xqz_run_folder::{RoleEvent, RoleRow, RowReader, RunFolder};

/// A running `xqz run` and its run folder; it and its roles are killed when dropped.
pub struct RunGuard {
    /// The `xqz run` process.
    pub child: Child,
    /// Its run folder, whose `logs/roles.csv` names the roles.
    pub folder: RunFolder,
    /// When it started, Unix milliseconds: the record's earlier rows are an earlier sitting's.
    started_ms: u64,
    /// Whether it and its roles were killed already.
    killed: bool,
}

fn now_ms() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64
}

impl RunGuard {
    /// Starts `command`, an `xqz run` whose run folder is `folder`, leading a process group, as
    /// a terminal starts a command.
    pub fn start(command: &mut Command, folder: RunFolder) -> RunGuard {
        let started_ms = now_ms();
        RunGuard { child: command.process_group(0).spawn().unwrap(), folder, started_ms, killed: false }
    }

    /// A Ctrl-C at the terminal: SIGINT to the run's process group.
    pub fn ctrl_c(&self) {
        killpg(Pid::from_raw(self.child.id() as i32), Signal::SIGINT).unwrap();
    }

    /// Kills the run and, at the same moment, every role the record does not show ended (SIGKILL
    /// to each process group); reaps the run. Returns the groups killed.
    pub fn kill_everything(&mut self) -> Vec<Pid> {
        let mut groups = Vec::new();
        // Once reaped, the run's id may be another process's.
        if self.child.try_wait().unwrap().is_none() {
            groups.push(Pid::from_raw(self.child.id() as i32));
        }
        let mut rows = RowReader::<RoleRow>::new(self.folder.roles_csv()).read_all().unwrap_or_default();
        rows.retain(|r| r.unix_ms >= self.started_ms);
        for started in rows.iter().filter(|r| r.event == RoleEvent::Started) {
            let ended = rows.iter().any(|r| r.pid == started.pid && r.event == RoleEvent::Exited);
            if !ended {
                groups.push(Pid::from_raw(started.pid as i32));
            }
        }
        for &group in &groups {
            let _ = killpg(group, Signal::SIGKILL);
        }
        let _ = self.child.wait();
        self.killed = true;
        groups
    }
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        if !self.killed {
            self.kill_everything();
        }
    }
}
