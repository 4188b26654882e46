//! The seed corpus of the `spool` fuzz target (`fuzz/seeds/spool/`), replayed through the target's
//! own check (`fuzz/src/checks/spool.rs`: damaged upload logs opened, pushed to and drained) on
//! stable Rust, so that the target and its seeds cannot rot unseen between fuzzing runs.

use std::path::Path;

#[path = "../../../fuzz/src/replay.rs"]
mod replay;
#[path = "../../../fuzz/src/checks/spool.rs"]
mod spool;

#[test]
fn spool_seeds() {
    replay::replay(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds/spool"), spool::check);
}
