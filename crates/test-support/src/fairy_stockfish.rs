//! Debian's Fairy-Stockfish, the reference engine of the tests (legal moves, matches).

use std::path::PathBuf;

/// How to get the engine, for error messages.
pub const HOW_TO_INSTALL: &str = "run scripts/ensure-fairy-stockfish (installs Debian's fairy-stockfish package) or \
                              scripts/test (sets XQZ_FAIRY_STOCKFISH)";

/// The Fairy-Stockfish binary, where [`xqz_arena::ladder::fairy_stockfish`] finds it; a test
/// without it fails, saying how to get it.
pub fn engine_path() -> PathBuf {
    let path = xqz_arena::ladder::fairy_stockfish().unwrap_or_else(|| {
        panic!(
            "fairy-stockfish not found: XQZ_FAIRY_STOCKFISH is unset, there is none on PATH and no \
             /usr/games/fairy-stockfish; {HOW_TO_INSTALL}"
        )
    });
    assert!(path.is_file(), "XQZ_FAIRY_STOCKFISH={} does not exist; {HOW_TO_INSTALL}", path.display());
    path
}
