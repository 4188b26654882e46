//! The fuzz targets' checks, one module each, so that both the cargo-fuzz targets
//! (`fuzz_targets/*.rs`, one `fuzz_target!` line each) and the main workspace's tests compile
//! them: `crates/xiangqi/tests/fuzz_seeds.rs` (`fen`, `coord_move`, `notation`),
//! `crates/coordinator/tests/fuzz_seeds.rs` (`submission`) and `crates/worker/tests/fuzz_seeds.rs`
//! (`spool`) include a check with `#[path]` and run it on every file of `seeds/<target>/`, through
//! [`replay`], on stable Rust under `scripts/test`. So a check must build with the dependencies
//! of the crate whose test includes it.

pub mod checks {
    pub mod coord_move;
    pub mod fen;
    pub mod notation;
    pub mod spool;
    pub mod submission;
}

pub mod replay;
