//! `xqz run`'s roles watched together and stopped in the order that loses nothing, on the
//! signals that ask for it. The first signal (Ctrl-C, SIGTERM, SIGHUP) stops the workers (they
//! finish or drop the games in progress and upload what they finished), then the trainer (it
//! saves a checkpoint), then the coordinator (it has stored what they sent), each stage with a
//! bounded wait before it is killed; the next signal kills every role's process group at once.
//! Each role leads a process group of its own ([`Group::Own`]), so the terminal's Ctrl-C reaches
//! the supervisor alone.
//!
//! What happened to each role (started, asked to stop, killed, exited, and when) is noted in the
//! run folder's `logs/roles.csv`, a [`RoleRow`] a line.

use std::ffi::OsString;
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::ExitStatus;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::Result;
use xqz_run_folder::{RoleEvent, RoleRow, RowWriter};

use crate::roles::{Group, Role, RoleOutput};

/// The signals that stop `xqz run` (SIGINT, SIGTERM, SIGHUP), counted as they come.
pub struct StopSignals {
    count: Arc<AtomicUsize>,
}

impl StopSignals {
    /// Catches the signals from now on, on a thread of its own that counts them.
    pub fn catch() -> Result<StopSignals> {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP])?;
        let count = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&count);
        std::thread::spawn(move || {
            for _ in signals.forever() {
                counted.fetch_add(1, Ordering::SeqCst);
            }
        });
        Ok(StopSignals { count })
    }

    /// Whether a signal has asked the run to stop.
    pub fn asked(&self) -> bool {
        self.count.load(Ordering::SeqCst) > 0
    }

    /// A stop that begins now: a signal asked for it, or the clock, or a role's exit.
    pub fn stopping(&self) -> Stopping {
        let seen = self.count.load(Ordering::SeqCst);
        Stopping { count: Arc::clone(&self.count), at_once_from: seen.min(1) + 1 }
    }
}

/// A stop under way, which a further signal turns into a stop of everything at once: the second
/// signal of a stop that a signal began, the first of one that the clock or a role's exit began.
pub struct Stopping {
    count: Arc<AtomicUsize>,
    at_once_from: usize,
}

impl Stopping {
    /// Whether a signal has asked for everything to stop at once.
    pub fn at_once(&self) -> bool {
        self.count.load(Ordering::SeqCst) >= self.at_once_from
    }
}

/// The stages of a stop, in order, by index into [`Supervisor::stages`].
const WORKERS: usize = 0;
const TRAINER: usize = 1;
const COORDINATOR: usize = 2;

/// How long each stage has to stop before its roles are killed: a worker's games in progress
/// have 15 s to finish and its uploads 10 s more (`xqz worker --drain-seconds`,
/// [`xqz_worker::remote::SHUTDOWN_GRACE`]); the trainer saves a checkpoint; the coordinator
/// finishes the requests under way.
const GRACE: [Duration; 3] = [Duration::from_secs(30), Duration::from_secs(60), Duration::from_secs(30)];

/// How often a stop looks at its roles and the signals.
const POLL: Duration = Duration::from_millis(50);

/// A role, and whether its end has been noted.
struct Member {
    role: Role,
    ended: bool,
}

/// How the roles stopped.
#[derive(Debug, PartialEq, Eq)]
pub enum Stopped {
    /// In order, each stage when the one before had ended.
    InOrder,
    /// At once: a signal asked for it, and every role still running was killed.
    AtOnce,
}

/// The roles of a run on this machine: a coordinator, workers and a trainer, watched together
/// and stopped in the order that loses nothing.
pub struct Supervisor {
    /// The roles by the stage they stop in: the workers, the trainer, the coordinator.
    stages: [Vec<Member>; 3],
    /// `logs/roles.csv`.
    record: RowWriter<RoleRow>,
}

impl Supervisor {
    /// Watches `coordinator` (started in a group of its own); the others join it. What happens to
    /// the roles is appended to `record`.
    pub fn new(coordinator: Role, record: &Path) -> Result<Supervisor> {
        let mut supervisor = Supervisor { stages: Default::default(), record: RowWriter::open(record)? };
        supervisor.join(COORDINATOR, coordinator);
        Ok(supervisor)
    }

    fn join(&mut self, stage: usize, role: Role) {
        note(&mut self.record, &role, RoleEvent::Started, None);
        self.stages[stage].push(Member { role, ended: false });
    }

    /// Starts a worker.
    pub fn start_worker(&mut self, name: &str, args: &[OsString], log: &Path) -> Result<()> {
        let role = Role::spawn(name, args, RoleOutput::Log(log.to_path_buf()), Group::Own)?;
        self.join(WORKERS, role);
        Ok(())
    }

    /// Starts the trainer.
    pub fn start_trainer(&mut self, args: &[OsString], log: &Path) -> Result<()> {
        let role = Role::spawn("trainer", args, RoleOutput::Log(log.to_path_buf()), Group::Own)?;
        self.join(TRAINER, role);
        Ok(())
    }

    /// The first role found to have exited, and how: none of them should before they are asked.
    pub fn exited(&mut self) -> Option<(String, ExitStatus)> {
        self.stages.iter_mut().flatten().find_map(|m| Some((m.role.name().to_string(), m.role.exit_status()?)))
    }

    /// Stops the workers first, then the trainer, then the coordinator, each stage once the one
    /// before has ended or been killed for taking longer than its [`GRACE`]; everything at once
    /// as soon as `stopping` says so.
    pub fn stop(mut self, stopping: &Stopping) -> Stopped {
        tracing::info!(
            "stopping in order: the workers (they upload what they finished), then the trainer (it saves a \
             checkpoint), then the coordinator; a second Ctrl-C kills them all at once"
        );
        for stage in [WORKERS, TRAINER, COORDINATOR] {
            if !self.stop_stage(stage, stopping) {
                tracing::warn!("asked to stop at once: killing every role");
                self.kill_from(stage);
                return Stopped::AtOnce;
            }
        }
        Stopped::InOrder
    }

    /// Asks the roles of `stage` to stop and waits for them, killing those still running when
    /// the stage's grace is up. False, leaving them as they are, once `stopping` asks for
    /// everything at once.
    fn stop_stage(&mut self, stage: usize, stopping: &Stopping) -> bool {
        let Supervisor { stages, record } = self;
        let members = &mut stages[stage];
        for member in members.iter_mut() {
            if member.role.ask_to_stop() {
                note(record, &member.role, RoleEvent::AskedToStop, None);
            }
        }
        let deadline = Instant::now() + GRACE[stage];
        loop {
            for member in members.iter_mut().filter(|m| !m.ended) {
                if let Some(status) = member.role.exit_status() {
                    note(record, &member.role, RoleEvent::Exited, Some(status));
                    member.ended = true;
                }
            }
            if members.iter().all(|m| m.ended) {
                return true;
            }
            if stopping.at_once() {
                return false;
            }
            if Instant::now() >= deadline {
                for member in members.iter_mut().filter(|m| !m.ended) {
                    let grace_s = GRACE[stage].as_secs();
                    tracing::warn!(role = member.role.name(), grace_s, "did not stop in time; killing it");
                    member.role.kill();
                    note(record, &member.role, RoleEvent::KilledLate, None);
                    let status = member.role.reap();
                    note(record, &member.role, RoleEvent::Exited, status);
                    member.ended = true;
                }
                return true;
            }
            std::thread::sleep(POLL);
        }
    }

    /// Kills the process group of every role of `stage` and the stages after it that still runs,
    /// all before waiting for any, then reaps them.
    fn kill_from(&mut self, stage: usize) {
        let Supervisor { stages, record } = self;
        let mut left: Vec<&mut Member> = stages[stage..].iter_mut().flatten().filter(|m| !m.ended).collect();
        for member in left.iter_mut() {
            if member.role.exit_status().is_none() {
                member.role.kill();
                note(record, &member.role, RoleEvent::Killed, None);
            }
        }
        for member in left {
            let status = member.role.reap();
            note(record, &member.role, RoleEvent::Exited, status);
            member.ended = true;
        }
    }
}

/// Appends what happened to `role` to the record; a record that cannot be written is logged, and
/// the stop goes on.
fn note(record: &mut RowWriter<RoleRow>, role: &Role, event: RoleEvent, status: Option<ExitStatus>) {
    let unix_ms = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
    let row = RoleRow {
        unix_ms,
        role: role.name().to_string(),
        pid: role.id(),
        event,
        code: status.and_then(|s| s.code()),
        signal: status.and_then(|s| s.signal()),
    };
    if let Err(e) = record.append(&row) {
        tracing::warn!(error = %e, role = role.name(), ?event, "noting what happened to a role");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signals(count: usize) -> StopSignals {
        StopSignals { count: Arc::new(AtomicUsize::new(count)) }
    }

    #[test]
    fn a_stop_begun_by_a_signal_goes_at_once_on_the_next_and_one_begun_otherwise_on_the_first() {
        let by_signal = signals(1);
        let stopping = by_signal.stopping();
        assert!(!stopping.at_once());
        by_signal.count.fetch_add(1, Ordering::SeqCst);
        assert!(stopping.at_once());

        let by_clock = signals(0);
        let stopping = by_clock.stopping();
        assert!(!stopping.at_once());
        by_clock.count.fetch_add(1, Ordering::SeqCst);
        assert!(stopping.at_once());

        // Two signals before the stop began: the second already asked for everything at once.
        assert!(signals(2).stopping().at_once());
    }
}
