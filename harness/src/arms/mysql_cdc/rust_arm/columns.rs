//! A table's columns as `information_schema` describes them, and what Debezium's MariaDB connector makes of
//! each with its default settings: the Kafka Connect schema of the field (for the envelope) and how its values
//! are written ([`Kind`]). Only the types the lab's tables use, and their close relatives, are mapped; any
//! other column is refused by name rather than written in a way Debezium would not.

use anyhow::{Result, bail};
use mysql_async::Conn;
use mysql_async::prelude::Queryable;

use super::connect_values::Temporal;
use super::row_json::{Kind, write_str};

/// One column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnDef {
    pub name: String,
    /// `DATA_TYPE`, lower case (`int`, `decimal`, `mediumtext`, ...).
    pub data_type: String,
    pub unsigned: bool,
    pub nullable: bool,
    /// The column's default as `information_schema` prints it; `None` for none or NULL.
    pub default: Option<String>,
    pub precision: Option<u32>,
    pub scale: Option<u32>,
    pub datetime_precision: Option<u32>,
    pub primary_key: bool,
}

/// How DECIMAL values are written (Debezium's `decimal.handling.mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decimals {
    /// `string`: the exact text (the unwrapped row JSON).
    Text,
    /// `precise`: base64 of the unscaled bytes, with a `Decimal` schema (the envelope).
    Bytes,
}

/// The columns of `database.table` in table order (the order of row images and `SELECT *`).
pub async fn load(conn: &mut Conn, database: &str, table: &str) -> Result<Vec<ColumnDef>> {
    type Row = (String, String, String, String, Option<String>, Option<u32>, Option<u32>, Option<u32>, String);
    let rows: Vec<Row> = conn
        .exec(
            "SELECT column_name, data_type, column_type, is_nullable, column_default, numeric_precision, \
             numeric_scale, datetime_precision, column_key FROM information_schema.columns \
             WHERE table_schema = ? AND table_name = ? ORDER BY ordinal_position",
            (database, table),
        )
        .await?;
    if rows.is_empty() {
        bail!("{database}.{table} has no columns in information_schema (does it exist?)");
    }
    Ok(rows
        .into_iter()
        .map(|(name, data_type, column_type, nullable, default, precision, scale, dt_precision, key)| ColumnDef {
            name,
            data_type: data_type.to_ascii_lowercase(),
            unsigned: column_type.to_ascii_lowercase().contains("unsigned"),
            nullable: nullable.eq_ignore_ascii_case("YES"),
            // MariaDB prints a NULL default as the word NULL.
            default: default.filter(|d| !d.eq_ignore_ascii_case("NULL")),
            precision,
            scale,
            datetime_precision: dt_precision,
            primary_key: key.eq_ignore_ascii_case("PRI"),
        })
        .collect())
}

/// The Connect type, logical name and parameters of one column.
struct ConnectType {
    ty: &'static str,
    name: Option<&'static str>,
    parameters: Option<String>,
    kind: Kind,
}

impl ColumnDef {
    fn connect(&self, decimals: Decimals) -> Result<ConnectType> {
        let plain = |ty, kind| ConnectType { ty, name: None, parameters: None, kind };
        let temporal =
            |ty, name, how| ConnectType { ty, name: Some(name), parameters: None, kind: Kind::Temporal(how) };
        Ok(match (self.data_type.as_str(), self.unsigned) {
            ("tinyint" | "smallint", false) | ("tinyint", true) => plain("int16", Kind::Number),
            ("smallint" | "mediumint", true) | ("mediumint" | "int" | "integer", false) => plain("int32", Kind::Number),
            ("int" | "integer", true) | ("bigint", _) => plain("int64", Kind::Number),
            ("decimal" | "numeric", _) => {
                let (Some(precision), Some(scale)) = (self.precision, self.scale) else {
                    bail!("column {}: a DECIMAL without precision and scale", self.name)
                };
                match decimals {
                    Decimals::Text => plain("string", Kind::Decimal),
                    // Unscaled values up to 38 digits fit the encoder's i128.
                    Decimals::Bytes if precision <= 38 => ConnectType {
                        ty: "bytes",
                        name: Some("org.apache.kafka.connect.data.Decimal"),
                        parameters: Some(format!(r#"{{"scale":"{scale}","connect.decimal.precision":"{precision}"}}"#)),
                        kind: Kind::DecimalBytes(scale as u8),
                    },
                    Decimals::Bytes => {
                        bail!("column {}: DECIMAL({precision}) is wider than the encoder's 38 digits", self.name)
                    }
                }
            }
            ("char" | "varchar" | "tinytext" | "text" | "mediumtext" | "longtext", _) => plain("string", Kind::Text),
            ("date", _) => temporal("int32", "io.debezium.time.Date", Temporal::EpochDay),
            ("datetime", _) if self.datetime_precision.unwrap_or(0) <= 3 => {
                temporal("int64", "io.debezium.time.Timestamp", Temporal::EpochMilli)
            }
            ("datetime", _) => temporal("int64", "io.debezium.time.MicroTimestamp", Temporal::EpochMicro),
            ("time", _) => temporal("int64", "io.debezium.time.MicroTime", Temporal::MicroTime),
            (other, _) => bail!(
                "column {}: type {other} is not mapped to Debezium's encoding (the arm maps integers, DECIMAL, \
                 character types, DATE, DATETIME and TIME)",
                self.name
            ),
        })
    }

    /// How the column's values are written in Debezium's formats.
    pub fn kind(&self, decimals: Decimals) -> Result<Kind> {
        Ok(self.connect(decimals)?.kind)
    }

    /// The field's schema as JsonConverter writes it (keys in its order: type, optional, name, version,
    /// parameters, field). A column default would add a `default` the encoder does not render: refused.
    pub fn field_schema(&self, decimals: Decimals, out: &mut Vec<u8>) -> Result<()> {
        if let Some(d) = &self.default {
            bail!("column {} has a default ({d}); the envelope encoder does not render schema defaults", self.name);
        }
        let c = self.connect(decimals)?;
        out.extend_from_slice(format!(r#"{{"type":"{}","optional":{}"#, c.ty, self.nullable).as_bytes());
        if let Some(name) = c.name {
            out.extend_from_slice(format!(r#","name":"{name}","version":1"#).as_bytes());
        }
        if let Some(p) = c.parameters {
            out.extend_from_slice(br#","parameters":"#);
            out.extend_from_slice(p.as_bytes());
        }
        out.extend_from_slice(br#","field":"#);
        write_str(out, self.name.as_bytes());
        out.push(b'}');
        Ok(())
    }
}

/// The positions of the primary key's columns (the record key), refused if there are none.
pub fn primary_key(columns: &[ColumnDef]) -> Result<Vec<usize>> {
    let pk: Vec<usize> = columns.iter().enumerate().filter(|(_, c)| c.primary_key).map(|(i, _)| i).collect();
    if pk.is_empty() {
        bail!("the table has no primary key: the record key would be null");
    }
    Ok(pk)
}

#[cfg(test)]
pub mod tests {
    use super::*;

    /// `benchdb.cart` (rig B and C) as information_schema describes it.
    pub fn cart() -> Vec<ColumnDef> {
        let col = |name: &str, data_type: &str, nullable| ColumnDef {
            name: name.into(),
            data_type: data_type.into(),
            unsigned: false,
            nullable,
            default: None,
            precision: None,
            scale: None,
            datetime_precision: None,
            primary_key: false,
        };
        vec![
            ColumnDef { primary_key: true, ..col("id", "int", false) },
            col("user_id", "int", true),
            col("product_id", "int", true),
            col("quantity", "int", true),
            ColumnDef { precision: Some(10), scale: Some(2), ..col("price", "decimal", true) },
            col("status", "varchar", true),
            col("notes", "mediumtext", true),
            ColumnDef { datetime_precision: Some(0), ..col("created_at", "datetime", true) },
        ]
    }

    #[test]
    fn cart_maps_to_the_field_schemas_debezium_wrote() {
        let mut out = Vec::new();
        for c in cart() {
            c.field_schema(Decimals::Bytes, &mut out).unwrap();
            out.push(b',');
        }
        let text = String::from_utf8(out).unwrap();
        // Copied from the schema of a message Debezium 3.5's MariaDB connector wrote for this table.
        assert_eq!(
            text,
            r#"{"type":"int32","optional":false,"field":"id"},{"type":"int32","optional":true,"field":"user_id"},{"type":"int32","optional":true,"field":"product_id"},{"type":"int32","optional":true,"field":"quantity"},{"type":"bytes","optional":true,"name":"org.apache.kafka.connect.data.Decimal","version":1,"parameters":{"scale":"2","connect.decimal.precision":"10"},"field":"price"},{"type":"string","optional":true,"field":"status"},{"type":"string","optional":true,"field":"notes"},{"type":"int64","optional":true,"name":"io.debezium.time.Timestamp","version":1,"field":"created_at"},"#
        );
        assert_eq!(primary_key(&cart()).unwrap(), vec![0]);
        assert_eq!(cart()[4].kind(Decimals::Text).unwrap(), Kind::Decimal);
    }

    #[test]
    fn unmapped_types_and_defaults_are_refused_by_name() {
        let mut json = cart()[1].clone();
        json.data_type = "json".into();
        assert!(json.kind(Decimals::Text).unwrap_err().to_string().contains("user_id"));
        let mut defaulted = cart()[1].clone();
        defaulted.default = Some("0".into());
        assert!(defaulted.field_schema(Decimals::Bytes, &mut Vec::new()).unwrap_err().to_string().contains("default"));
        let wide = ColumnDef { precision: Some(65), ..cart()[4].clone() };
        assert!(wide.kind(Decimals::Bytes).is_err() && wide.kind(Decimals::Text).is_ok());
        let no_pk: Vec<ColumnDef> = cart().into_iter().map(|c| ColumnDef { primary_key: false, ..c }).collect();
        assert!(primary_key(&no_pk).is_err());
    }
}
