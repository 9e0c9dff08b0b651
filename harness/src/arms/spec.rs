//! The arm contract: what an arm is called, which knobs it reads and of what type, and how to run it.
//! The knob schema is read off the arm's `Knobs` struct through serde, so it cannot drift from what the arm
//! parses: the field names and types from one probing pass (an enum's variants are its choices), and
//! whether each knob is required by parsing a sample without it.

use anyhow::Result;
use serde::Serialize;
use serde::de::value::{Error as ProbeError, StrDeserializer};
use serde::de::{self, DeserializeOwned, Deserializer, Error as _, IntoDeserializer, MapAccess, Visitor};
use streamlab_record::Measurement;
pub use streamlab_record::arms::KnobType;

use super::ArmContext;
use crate::drivers::contract::{KafkaDriver, Tool};

#[derive(Debug, Clone, PartialEq, Serialize)]
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

/// One arm of one bench.
#[derive(Clone, Copy)]
pub struct ArmSpec {
    pub bench: &'static str,
    pub arm: &'static str,
    pub runs: Runs,
    /// The programs the arm runs, which xtask prepares before a run that has it.
    pub tools: &'static [Tool],
    /// The schema of the arm's `Knobs` struct ([`knob_schema`]).
    schema: fn() -> Result<Vec<KnobSpec>, String>,
}

/// What runs an arm: its own program, or a Kafka client's driver in one of the benches that drive clients.
#[derive(Clone, Copy)]
pub enum Runs {
    Own(fn(&ArmContext) -> Result<Measurement>),
    /// The driver in the bench `ArmSpec::bench` names.
    Driver(&'static dyn KafkaDriver),
}

impl ArmSpec {
    /// The arm `bench/arm`, run by `run`, reading its knobs as `Knobs`.
    pub const fn new<Knobs: DeserializeOwned>(
        bench: &'static str,
        arm: &'static str,
        run: fn(&ArmContext) -> Result<Measurement>,
    ) -> Self {
        ArmSpec { bench, arm, runs: Runs::Own(run), tools: &[], schema: knob_schema::<Knobs> }
    }

    /// `driver`'s arm in `bench`, whose knobs are `Knobs`, running `tools`.
    pub fn driver<Knobs: DeserializeOwned>(
        bench: &'static str,
        driver: &'static dyn KafkaDriver,
        tools: &'static [Tool],
    ) -> Self {
        ArmSpec { bench, arm: driver.name(), runs: Runs::Driver(driver), tools, schema: knob_schema::<Knobs> }
    }

    /// The knobs the arm reads (its registry test holds every registered arm to a schema that can be read).
    pub fn knobs(&self) -> Vec<KnobSpec> {
        (self.schema)().unwrap_or_else(|e| panic!("{}/{}: {e}", self.bench, self.arm))
    }
}

/// The knobs as an arm's typed struct; unknown or mistyped knobs are refused by name.
pub fn parse_knobs<T: DeserializeOwned>(knobs: &serde_json::Map<String, serde_json::Value>) -> Result<T> {
    serde_json::from_value(serde_json::Value::Object(knobs.clone()))
        .map_err(|e| anyhow::anyhow!("bad knobs for this arm: {e}"))
}

/// The schema of `T`: each field's name, type and choices as serde sees them, and whether `T` parses without it.
pub fn knob_schema<T: DeserializeOwned>() -> Result<Vec<KnobSpec>, String> {
    let mut fields = Vec::new();
    T::deserialize(StructProbe { fields: &mut fields }).map_err(|e| format!("cannot read the knob schema: {e}"))?;
    let sample = |k: &KnobSpec| match k.ty {
        KnobType::Integer => serde_json::json!(1),
        KnobType::Float => serde_json::json!(1.5),
        KnobType::Bool => serde_json::json!(true),
        KnobType::String => serde_json::json!(k.choices.first().copied().unwrap_or("x")),
    };
    let all: serde_json::Map<_, _> = fields.iter().map(|k| (k.name.to_owned(), sample(k))).collect();
    parse_knobs::<T>(&all).map_err(|e| format!("a sample of every knob is refused: {e}"))?;
    for k in &mut fields {
        let mut without = all.clone();
        without.remove(k.name);
        k.required = parse_knobs::<T>(&without).is_err();
    }
    Ok(fields)
}

/// Hands a struct's visitor every field the struct names, each value probed by [`ValueProbe`].
struct StructProbe<'a> {
    fields: &'a mut Vec<KnobSpec>,
}

impl<'de> Deserializer<'de> for StructProbe<'_> {
    type Error = ProbeError;

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        names: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, ProbeError> {
        visitor.visit_map(FieldsAccess { names, next: 0, fields: self.fields })
    }

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, ProbeError> {
        Err(ProbeError::custom("a Knobs type must be a struct with named fields"))
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf option unit
        unit_struct newtype_struct seq tuple tuple_struct map enum identifier ignored_any
    }
}

struct FieldsAccess<'a> {
    names: &'static [&'static str],
    next: usize,
    fields: &'a mut Vec<KnobSpec>,
}

impl<'de> MapAccess<'de> for FieldsAccess<'_> {
    type Error = ProbeError;

    fn next_key_seed<K: de::DeserializeSeed<'de>>(&mut self, seed: K) -> Result<Option<K::Value>, ProbeError> {
        let Some(&name) = self.names.get(self.next) else { return Ok(None) };
        self.next += 1;
        let key: StrDeserializer<'_, ProbeError> = name.into_deserializer();
        seed.deserialize(key).map(Some)
    }

    fn next_value_seed<V: de::DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, ProbeError> {
        let name = self.names[self.next - 1];
        let mut probe = ValueProbe { ty: None, choices: &[] };
        let value = seed.deserialize(&mut probe).map_err(|e| ProbeError::custom(format!("knob {name}: {e}")))?;
        let ty = probe.ty.ok_or_else(|| ProbeError::custom(format!("knob {name}: no type")))?;
        self.fields.push(KnobSpec { name, ty, required: true, choices: probe.choices });
        Ok(value)
    }
}

/// Records which kind of value a field asks serde for, and answers with a sample of it.
struct ValueProbe {
    ty: Option<KnobType>,
    choices: &'static [&'static str],
}

impl ValueProbe {
    fn saw(&mut self, ty: KnobType) {
        self.ty = Some(ty);
    }
}

/// Deserializer methods that note the knob type they stand for and answer with a sample of it.
macro_rules! sample_of {
    ($($($method:ident)+ => $ty:ident, $visit:ident($sample:expr);)+) => {
        $($(
            fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
                self.saw(KnobType::$ty);
                visitor.$visit($sample)
            }
        )+)+
    };
}

impl<'de> Deserializer<'de> for &mut ValueProbe {
    type Error = ProbeError;

    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, ProbeError> {
        Err(ProbeError::custom("only integers, numbers, booleans, strings and unit-variant enums are knob types"))
    }

    sample_of! {
        deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64
        deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64 => Integer, visit_u64(1);
        deserialize_f32 deserialize_f64 => Float, visit_f64(1.5);
        deserialize_bool => Bool, visit_bool(true);
        deserialize_str => String, visit_str("x");
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
        self.deserialize_str(visitor)
    }

    /// An `Option<T>` knob is a `T` the arm can do without (the required test says so).
    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, ProbeError> {
        visitor.visit_some(self)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, ProbeError> {
        visitor.visit_newtype_struct(self)
    }

    /// A unit-variant enum is a string knob whose choices are its variants' serde names.
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, ProbeError> {
        let first = variants.first().ok_or_else(|| ProbeError::custom("an enum without variants"))?;
        self.saw(KnobType::String);
        self.choices = variants;
        let variant: StrDeserializer<'_, ProbeError> = first.into_deserializer();
        visitor.visit_enum(variant)
    }

    serde::forward_to_deserialize_any! {
        i128 u128 char bytes byte_buf unit unit_struct seq tuple tuple_struct map struct identifier ignored_any
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Deserialize)]
    #[serde(rename_all = "snake_case")]
    #[allow(dead_code)] // read through serde only
    enum Mode {
        Fast,
        SlowAndSteady,
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    #[allow(dead_code)] // read through serde only
    struct Sample {
        rows: u64,
        acks: i32,
        seconds: f64,
        idempotence: bool,
        mode: Mode,
        #[serde(default)]
        label: String,
        cap: Option<u32>,
    }

    #[test]
    fn the_schema_is_read_off_the_struct() {
        use KnobType::*;
        let spec = |name, ty, required, choices| KnobSpec { name, ty, required, choices };
        assert_eq!(
            knob_schema::<Sample>().unwrap(),
            vec![
                spec("rows", Integer, true, &[]),
                spec("acks", Integer, true, &[]),
                spec("seconds", Float, true, &[]),
                spec("idempotence", Bool, true, &[]),
                spec("mode", String, true, &["fast", "slow_and_steady"]),
                spec("label", String, false, &[]),
                spec("cap", Integer, false, &[]),
            ]
        );
    }

    #[test]
    fn a_knob_of_a_type_a_matrix_cannot_write_is_refused_by_name() {
        #[derive(Deserialize)]
        #[allow(dead_code)]
        struct Nested {
            rows: u64,
            inner: Vec<u64>,
        }
        let e = knob_schema::<Nested>().unwrap_err();
        assert!(e.contains("knob inner"), "{e}");
    }
}
