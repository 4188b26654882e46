//! The seed corpora of the fuzz targets on this crate's parsers
//! (`fuzz/seeds/{fen,coord_move,notation}/`), replayed through the targets' own checks
//! (`fuzz/src/checks/`) on stable Rust, so that the targets and their seeds cannot rot unseen
//! between fuzzing runs.

use std::path::{Path, PathBuf};

#[path = "../../../fuzz/src/checks/coord_move.rs"]
mod coord_move;
#[path = "../../../fuzz/src/checks/fen.rs"]
mod fen;
#[path = "../../../fuzz/src/checks/notation.rs"]
mod notation;
#[path = "../../../fuzz/src/replay.rs"]
mod replay;

fn seeds(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds").join(target)
}

#[test]
fn fen_seeds() {
    replay::replay(&seeds("fen"), fen::check);
}

#[test]
fn coord_move_seeds() {
    replay::replay(&seeds("coord_move"), coord_move::check);
}

#[test]
fn notation_seeds() {
    replay::replay(&seeds("notation"), notation::check);
}
