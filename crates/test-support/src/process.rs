//! Child processes that a failing test must not leave running.

use std::process::Child;

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
