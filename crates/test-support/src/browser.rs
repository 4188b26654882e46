//! The headless browser of the tests that look at a page as a person would: Debian's Chromium and
//! its chromedriver, driven by Python's selenium.
//!
//! `scripts/test` installs them, sets `XQZ_CHROMIUM`, `XQZ_CHROMEDRIVER` and `XQZ_PYTHON`, and sets
//! `XQZ_REQUIRE_BROWSER`, under which a missing variable fails the test: a suite that says it
//! checked every page must not pass by skipping them. A plain `cargo test` without the variables
//! skips the browser part and says so.

use std::path::PathBuf;

/// What a browser check runs: Python with selenium, Chromium and its chromedriver.
#[derive(Clone, Debug)]
pub struct Browser {
    /// `$XQZ_PYTHON`.
    pub python: PathBuf,
    /// `$XQZ_CHROMIUM`.
    pub chromium: PathBuf,
    /// `$XQZ_CHROMEDRIVER`.
    pub chromedriver: PathBuf,
}

/// The browser, or `None` (with a line saying that `what` was skipped) when its variables are
/// unset outside `scripts/test`.
///
/// # Panics
/// When `XQZ_REQUIRE_BROWSER` is set and a variable is missing.
pub fn browser(what: &str) -> Option<Browser> {
    let names = ["XQZ_PYTHON", "XQZ_CHROMIUM", "XQZ_CHROMEDRIVER"];
    let [python, chromium, chromedriver] = names.map(|name| std::env::var_os(name).map(PathBuf::from));
    if let (Some(python), Some(chromium), Some(chromedriver)) = (python, chromium, chromedriver) {
        return Some(Browser { python, chromium, chromedriver });
    }
    let missing: Vec<&str> = names.into_iter().filter(|name| std::env::var_os(name).is_none()).collect();
    assert!(
        std::env::var_os("XQZ_REQUIRE_BROWSER").is_none(),
        "{what} needs a browser and XQZ_REQUIRE_BROWSER is set, but {} unset (scripts/test sets them from \
         scripts/ensure-chromium and scripts/python-env)",
        missing.join(", ")
    );
    eprintln!("SKIPPED {what}: {} unset (scripts/test sets them)", missing.join(", "));
    None
}
