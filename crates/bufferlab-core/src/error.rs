//! The engine's one error: a spec it cannot run, named by the offending field's path in the spec
//! (`links[0].rate_bps`) and the reason. Below every other module: the spec's parser, the
//! validator and the samplers all report in it.

use std::fmt;

/// A spec the engine cannot run: `field: reason`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct EngineError {
    pub field: String,
    pub reason: String,
}

impl fmt::Display for EngineError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.reason)
    }
}

/// A number as a person reads it: plain where that is short, in scientific notation where the plain
/// form would run to dozens of digits (`1e39`, not 1 followed by 39 zeros).
pub(crate) fn shown(x: f64) -> String {
    if x != 0.0 && x.is_finite() && !(1e-4..1e15).contains(&x.abs()) {
        format!("{x:e}")
    } else {
        format!("{x}")
    }
}
