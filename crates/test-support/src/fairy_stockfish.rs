//! Debian's Fairy-Stockfish, the reference engine of the tests (legal moves, matches).

use std::path::PathBuf;

const DEFAULT_ENGINE: &str = "/usr/games/fairy-stockfish";
/// How to get the engine, for error messages.
pub const HOW_TO_INSTALL: &str = "run scripts/ensure-fairy-stockfish (installs Debian's fairy-stockfish package) or \
                              scripts/test (sets XQZ_FAIRY_STOCKFISH)";

/// The Fairy-Stockfish binary: `$XQZ_FAIRY_STOCKFISH`, else `fairy-stockfish` on `PATH`, else
/// Debian's `/usr/games/fairy-stockfish`.
pub fn engine_path() -> PathBuf {
    if let Some(p) = std::env::var_os("XQZ_FAIRY_STOCKFISH").filter(|p| !p.is_empty()) {
        let p = PathBuf::from(p);
        assert!(p.is_file(), "XQZ_FAIRY_STOCKFISH={} does not exist; {HOW_TO_INSTALL}", p.display());
        return p;
    }
    let on_path = std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .map(|dir| dir.join("fairy-stockfish"))
        .find(|p| p.is_file());
    on_path.or_else(|| Some(PathBuf::from(DEFAULT_ENGINE)).filter(|p| p.is_file())).unwrap_or_else(|| {
        panic!(
            "fairy-stockfish not found: XQZ_FAIRY_STOCKFISH is unset, there is none on PATH and no \
             {DEFAULT_ENGINE}; {HOW_TO_INSTALL}"
        )
    })
}
