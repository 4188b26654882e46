//! Helpers shared by the crates' integration tests, as a dev-dependency (`xqz-test-support`),
//! so that every test finds the reference engine, the reference Python and its games the same
//! way.

pub mod browser;
pub mod certificates;
pub mod fairy_stockfish;
pub mod forger;
pub mod games;
pub mod moto;
pub mod process;
pub mod python;
