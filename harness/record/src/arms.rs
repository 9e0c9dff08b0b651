//! The arm contract's shared vocabulary: the value types a knob can have, as the harness declares them
//! (`harness arms --json`) and xtask checks matrices against them.

use serde::{Deserialize, Serialize};

/// A knob's value type as the matrices write it (TOML); a float knob also takes an integer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KnobType {
    Integer,
    Float,
    Bool,
    String,
}

impl KnobType {
    /// How an error message names the type.
    pub fn describe(self) -> &'static str {
        match self {
            KnobType::Integer => "an integer",
            KnobType::Float => "a number",
            KnobType::Bool => "true or false",
            KnobType::String => "a string",
        }
    }
}

/// The harness process's exit status for "this arm cannot run this point"; the reason is its last stderr line,
/// after [`NOT_RUNNABLE_PREFIX`]. The runner records such a point as not run, with the reason: it does not
/// fail the run.
pub const NOT_RUNNABLE_EXIT: i32 = 3;
pub const NOT_RUNNABLE_PREFIX: &str = "not runnable: ";

/// A point an arm cannot run, and why (e.g. partitionline has no zstd).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct NotRunnable(pub String);

impl NotRunnable {
    /// The stderr line the harness ends with.
    pub fn line(&self) -> String {
        format!("{NOT_RUNNABLE_PREFIX}{}", self.0)
    }

    /// The reason in a harness's stderr tail, if it ended not runnable.
    pub fn reason_in(stderr_tail: &str) -> Option<&str> {
        stderr_tail.lines().rev().find_map(|l| l.trim().strip_prefix(NOT_RUNNABLE_PREFIX))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_are_named_as_the_registry_json_names_them() {
        assert_eq!(serde_json::to_string(&KnobType::Float).unwrap(), "\"float\"");
        assert_eq!(serde_json::from_str::<KnobType>("\"bool\"").unwrap(), KnobType::Bool);
    }
}
