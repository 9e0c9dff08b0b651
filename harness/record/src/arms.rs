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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_are_named_as_the_registry_json_names_them() {
        assert_eq!(serde_json::to_string(&KnobType::Float).unwrap(), "\"float\"");
        assert_eq!(serde_json::from_str::<KnobType>("\"bool\"").unwrap(), KnobType::Bool);
    }
}
