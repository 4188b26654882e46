//! Child processes that a failing test must not leave running.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

/// A child process killed (and reaped) when dropped, so that a test that fails before it stops
/// the child does not leave it behind.
///
/// ```
/// use std::process::Command;
/// use xqz_test_support::process::ChildGuard;
///
/// let mut sleeper = ChildGuard(Command::new("sleep").arg("60").spawn()?);
/// assert!(sleeper.0.try_wait()?.is_none());
/// drop(sleeper); // killed here
/// # Ok::<(), std::io::Error>(())
/// ```
pub struct ChildGuard(pub Child);

impl Drop for ChildGuard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `command` (an `xqz coordinator` on port 0), reads the address it prints first
/// (`listening on ADDR`) and drains the rest of its output; returns the guarded child and ADDR.
pub fn start_listening(command: &mut Command) -> (ChildGuard, String) {
    let mut child = ChildGuard(command.stdout(Stdio::piped()).spawn().expect("start the coordinator"));
    let mut lines = BufReader::new(child.0.stdout.take().expect("piped stdout")).lines();
    let line = lines.next().expect("a first line").expect("readable output");
    let addr = line.trim().strip_prefix("listening on ").unwrap_or_else(|| panic!("unexpected first line {line:?}"));
    let addr = addr.to_string();
    std::thread::spawn(move || lines.for_each(drop));
    (child, addr)
}
