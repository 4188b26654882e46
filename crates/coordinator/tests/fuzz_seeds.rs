//! The seed corpus of the `submission` fuzz target (`fuzz/seeds/submission/`), replayed through
//! the target's own check (`fuzz/src/checks/submission.rs`: `check_request` and `validate_games`)
//! on stable Rust, so that the target and its seeds cannot rot unseen between fuzzing runs.

use std::path::Path;

#[path = "../../../fuzz/src/replay.rs"]
mod replay;
#[path = "../../../fuzz/src/checks/submission.rs"]
mod submission;

#[test]
fn submission_seeds() {
    replay::replay(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds/submission"), submission::check);
}
