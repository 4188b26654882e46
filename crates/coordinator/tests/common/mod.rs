//! What the coordinator's test binaries share.

use std::path::Path;

use xqz_mcts::MaterialEvaluator;
use xqz_worker::remote::{InstallError, ModelHost};

/// A worker's network host that plays with a material count, for self-play and for every match
/// player; no model is ever installed.
pub struct MaterialHost;

impl ModelHost for MaterialHost {
    type Evaluator = MaterialEvaluator;

    fn evaluator(&self) -> MaterialEvaluator {
        MaterialEvaluator
    }

    fn install(&self, _: &Path) -> Result<(), InstallError> {
        Ok(())
    }

    type Player = MaterialEvaluator;

    fn load_player(&self, _: &Path) -> Result<MaterialEvaluator, InstallError> {
        Ok(MaterialEvaluator)
    }
}
