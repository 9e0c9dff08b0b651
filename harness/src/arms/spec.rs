//! The arm contract: what an arm is called, which knobs it reads and of what type, and how to run it.
//! The knob list is written next to the arm's `Knobs` struct; a test holds the two together (names from
//! the struct's own serde field list, types and required-ness by deserializing samples).

use anyhow::Result;
use serde::Serialize;
use serde::de::{self, DeserializeOwned, Deserializer, Visitor};
use streamlab_record::Measurement;
pub use streamlab_record::arms::KnobType;

use super::ArmContext;

#[derive(Debug, Clone, Copy, Serialize)]
pub struct KnobSpec {
    pub name: &'static str,
    #[serde(rename = "type")]
    pub ty: KnobType,
    /// Whether the arm refuses to run without it (otherwise the arm has a default).
    pub required: bool,
    /// The only values a string knob takes (empty: any).
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub choices: &'static [&'static str],
}

impl KnobSpec {
    pub const fn required(name: &'static str, ty: KnobType) -> Self {
        KnobSpec { name, ty, required: true, choices: &[] }
    }

    pub const fn optional(name: &'static str, ty: KnobType) -> Self {
        KnobSpec { name, ty, required: false, choices: &[] }
    }

    /// A required string knob that takes only `choices`.
    pub const fn choice(name: &'static str, choices: &'static [&'static str]) -> Self {
        KnobSpec { name, ty: KnobType::String, required: true, choices }
    }
}

/// One arm of one bench.
#[derive(Serialize)]
pub struct ArmSpec {
    pub bench: &'static str,
    pub arm: &'static str,
    pub knobs: &'static [KnobSpec],
    #[serde(skip)]
    pub run: fn(&ArmContext) -> Result<Measurement>,
    #[serde(skip)]
    pub knob_struct: KnobStruct,
}

/// The arm's typed knob struct, seen through serde (for the contract test).
#[derive(Clone, Copy)]
pub struct KnobStruct {
    fields: fn() -> &'static [&'static str],
    accepts: fn(&serde_json::Map<String, serde_json::Value>) -> Result<()>,
}

impl KnobStruct {
    pub const fn of<T: DeserializeOwned>() -> Self {
        KnobStruct { fields: field_names::<T>, accepts: accepts::<T> }
    }
}

/// The knobs as an arm's typed struct; unknown or mistyped knobs are refused by name.
pub fn parse_knobs<T: DeserializeOwned>(knobs: &serde_json::Map<String, serde_json::Value>) -> Result<T> {
    serde_json::from_value(serde_json::Value::Object(knobs.clone()))
        .map_err(|e| anyhow::anyhow!("bad knobs for this arm: {e}"))
}

fn accepts<T: DeserializeOwned>(knobs: &serde_json::Map<String, serde_json::Value>) -> Result<()> {
    parse_knobs::<T>(knobs).map(drop)
}

/// What `harness arms --json` prints.
pub fn registry_json() -> String {
    serde_json::json!({ "schema": 1, "arms": super::REGISTRY }).to_string()
}

impl ArmSpec {
    /// The declared knobs must be exactly the struct's fields, with the declared types and required-ness.
    pub fn check_against_struct(&self) -> Result<(), String> {
        let mut declared: Vec<&str> = self.knobs.iter().map(|k| k.name).collect();
        let mut fields: Vec<&str> = (self.knob_struct.fields)().to_vec();
        declared.sort_unstable();
        fields.sort_unstable();
        if declared != fields {
            return Err(format!("declared knobs {declared:?} but the Knobs struct reads {fields:?}"));
        }
        let sample = |k: &KnobSpec| match k.ty {
            KnobType::Integer => serde_json::json!(1),
            KnobType::Float => serde_json::json!(1.5),
            KnobType::Bool => serde_json::json!(true),
            KnobType::String => serde_json::json!(k.choices.first().copied().unwrap_or("x")),
        };
        let all: serde_json::Map<_, _> = self.knobs.iter().map(|k| (k.name.to_owned(), sample(k))).collect();
        (self.knob_struct.accepts)(&all).map_err(|e| format!("a sample of every declared knob is refused: {e}"))?;
        for k in self.knobs {
            let mut without = all.clone();
            without.remove(k.name);
            let accepted = (self.knob_struct.accepts)(&without).is_ok();
            if accepted == k.required {
                return Err(format!("{} is declared required={} but the struct disagrees", k.name, k.required));
            }
            if !k.choices.is_empty() {
                let outside = "not-one-of-the-choices";
                let mut other = all.clone();
                other.insert(k.name.to_owned(), serde_json::json!(outside));
                if (self.knob_struct.accepts)(&other).is_ok() {
                    return Err(format!(
                        "{} declares choices {:?} but the struct takes {outside:?}",
                        k.name, k.choices
                    ));
                }
            }
            if k.ty == KnobType::Integer {
                let mut fractional = all.clone();
                fractional.insert(k.name.to_owned(), serde_json::json!(1.5));
                if (self.knob_struct.accepts)(&fractional).is_ok() {
                    return Err(format!("{} is declared integer but the struct takes 1.5", k.name));
                }
            }
        }
        Ok(())
    }
}

/// The field names serde knows for `T` (what `deserialize_struct` is handed), without a value.
fn field_names<T: DeserializeOwned>() -> &'static [&'static str] {
    let mut probe = FieldProbe(&[]);
    let _ = T::deserialize(&mut probe);
    probe.0
}

struct FieldProbe(&'static [&'static str]);

#[derive(Debug)]
struct Probed;

impl std::fmt::Display for Probed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("field names probed")
    }
}

impl std::error::Error for Probed {}

impl de::Error for Probed {
    fn custom<M: std::fmt::Display>(_: M) -> Self {
        Probed
    }
}

impl<'de> Deserializer<'de> for &mut FieldProbe {
    type Error = Probed;

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Probed> {
        self.0 = fields;
        Err(Probed)
    }

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, Probed> {
        Err(Probed)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
        unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)] // read through serde only
    struct Sample {
        rows: u64,
        seconds: f64,
        #[serde(default)]
        label: String,
    }

    fn spec(knobs: &[KnobSpec]) -> ArmSpec {
        ArmSpec {
            bench: "b",
            arm: "a",
            knobs: Vec::leak(knobs.to_vec()),
            run: |_| anyhow::bail!("not run in this test"),
            knob_struct: KnobStruct::of::<Sample>(),
        }
    }

    #[test]
    fn serde_reveals_the_struct_fields() {
        assert_eq!(field_names::<Sample>(), &["rows", "seconds", "label"]);
    }

    #[test]
    fn a_spec_that_disagrees_with_its_struct_is_caught() {
        use KnobType::*;
        let good = &[
            KnobSpec::required("rows", Integer),
            KnobSpec::required("seconds", Float),
            KnobSpec::optional("label", String),
        ];
        assert_eq!(spec(good).check_against_struct(), Ok(()));
        let missing = &[KnobSpec::required("rows", Integer), KnobSpec::required("seconds", Float)];
        assert!(spec(missing).check_against_struct().unwrap_err().contains("struct reads"));
        let float_as_int = &[
            KnobSpec::required("rows", Float),
            KnobSpec::required("seconds", Float),
            KnobSpec::optional("label", String),
        ];
        assert!(spec(float_as_int).check_against_struct().unwrap_err().contains("refused"));
        let wrong_required = &[
            KnobSpec::required("rows", Integer),
            KnobSpec::optional("seconds", Float),
            KnobSpec::optional("label", String),
        ];
        assert!(spec(wrong_required).check_against_struct().unwrap_err().contains("seconds"));
        let int_as_float = &[
            KnobSpec::required("rows", Integer),
            KnobSpec::required("seconds", Integer),
            KnobSpec::optional("label", String),
        ];
        assert!(spec(int_as_float).check_against_struct().unwrap_err().contains("takes 1.5"));
    }
}
