//! WRITE_ROWS row images read straight from the event's bytes. mysql_common's `RowsEventRows` builds a
//! `Column` (schema, table and column names, flags) for every column of every row and re-reads the table
//! map's optional metadata per row: at the seed's 10,000-row commits that was most of the arm's CPU, and it
//! came all at once, at each commit. Here the table's layout is read once per TABLE_MAP, and each value still
//! goes through mysql_common's own per-type decoder (`BinlogValue`), so values decode exactly as before.
//!
//! Layout (MySQL's and MariaDB's rows events): per row, a NULL bitmap with one bit per column present in the
//! image (least significant bit first), then the non-NULL values in column order.

use anyhow::{Context, Result, bail, ensure};
use mysql_async::Value;
use mysql_async::binlog::events::{OptionalMetaExtractor, TableMapEvent};
use mysql_async::binlog::value::BinlogValue;
use mysql_async::consts::ColumnType;
use mysql_common::io::ParseBuf;

/// One column as the row image encodes it.
#[derive(Debug, Clone)]
struct Column {
    ty: ColumnType,
    meta: Vec<u8>,
    unsigned: bool,
}

/// How one table's row images are laid out, from its TABLE_MAP.
#[derive(Debug, Clone)]
pub struct RowImage {
    columns: Vec<Column>,
}

impl RowImage {
    pub fn of(tme: &TableMapEvent<'_>) -> Result<RowImage> {
        let meta = OptionalMetaExtractor::new(tme.iter_optional_meta())?;
        // Signedness comes one bit per numeric column (none without binlog_row_metadata; then signed).
        let mut signedness = meta.iter_signedness();
        let mut columns = Vec::with_capacity(tme.columns_count() as usize);
        for i in 0..tme.columns_count() as usize {
            let ty = tme.get_column_type(i)?.with_context(|| format!("the TABLE_MAP has no type for column {i}"))?;
            let unsigned = ty.is_numeric_type() && signedness.next().unwrap_or(false);
            columns.push(Column { ty, meta: tme.get_column_metadata(i).unwrap_or(&[]).to_vec(), unsigned });
        }
        Ok(RowImage { columns })
    }

    pub fn columns(&self) -> usize {
        self.columns.len()
    }

    /// Decode every row of a WRITE_ROWS event's `data` whose image holds every column (`all_present`), handing
    /// each row's values, in column order, to `each`. `values` is reused from row to row.
    pub fn for_each_row(
        &self,
        all_present: bool,
        data: &[u8],
        values: &mut Vec<Value>,
        mut each: impl FnMut(&[Value]) -> Result<()>,
    ) -> Result<()> {
        ensure!(all_present, "the row image leaves columns out: the arm needs binlog_row_image=FULL");
        let bitmap_len = self.columns.len().div_ceil(8);
        let mut buf = ParseBuf(data);
        while !buf.is_empty() {
            let nulls = buf.checked_eat(bitmap_len).context("a row image cut off in its NULL bitmap")?;
            values.clear();
            for (i, c) in self.columns.iter().enumerate() {
                if nulls[i / 8] & (1 << (i % 8)) != 0 {
                    values.push(Value::NULL);
                    continue;
                }
                let value: BinlogValue<'_> = buf
                    .parse((c.ty, c.meta.as_slice(), c.unsigned, false))
                    .with_context(|| format!("decoding column {i} ({:?}) of a row image", c.ty))?;
                match value {
                    BinlogValue::Value(v) => values.push(v),
                    other => bail!("column {i} holds {other:?}: JSON columns are not decoded by the arm"),
                }
            }
            each(values)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn image(columns: &[(ColumnType, &[u8], bool)]) -> RowImage {
        RowImage {
            columns: columns.iter().map(|&(ty, meta, unsigned)| Column { ty, meta: meta.to_vec(), unsigned }).collect(),
        }
    }

    #[test]
    fn rows_decode_with_their_null_bitmaps_and_a_short_image_is_an_error() {
        use ColumnType::*;
        // id INT, status VARCHAR(20) utf8mb4 (max 80 bytes: a 1-byte length), notes MEDIUMTEXT (3-byte length).
        let img = image(&[
            (MYSQL_TYPE_LONG, &[], false),
            (MYSQL_TYPE_VARCHAR, &[80, 0], false),
            (MYSQL_TYPE_BLOB, &[3], false),
        ]);
        let mut data = vec![0b000];
        data.extend(7i32.to_le_bytes());
        data.extend([7]);
        data.extend(b"pending");
        data.extend([5, 0, 0]);
        data.extend(b"note_");
        // Second row: status NULL (bit 1), and an unsigned-looking id read as signed.
        data.push(0b010);
        data.extend((-1i32).to_le_bytes());
        data.extend([0, 0, 0]);
        let mut rows = Vec::new();
        img.for_each_row(true, &data, &mut Vec::new(), |v| {
            rows.push(v.to_vec());
            Ok(())
        })
        .unwrap();
        assert_eq!(
            rows,
            vec![
                vec![Value::Int(7), Value::Bytes(b"pending".to_vec()), Value::Bytes(b"note_".to_vec())],
                vec![Value::Int(-1), Value::NULL, Value::Bytes(vec![])],
            ]
        );

        let err = img.for_each_row(true, &data[..data.len() - 2], &mut Vec::new(), |_| Ok(())).unwrap_err();
        assert!(format!("{err:#}").contains("column 2"), "{err:#}");
        let err = img.for_each_row(false, &data, &mut Vec::new(), |_| Ok(())).unwrap_err();
        assert!(err.to_string().contains("binlog_row_image=FULL"), "{err}");
    }
}
