//! The knobs the Rust arm applies, and the ones it refuses. Debezium's `fetch_size` and `queue_size`, the
//! converters' `schemas` and Redpanda Connect's `cores` are not among them: the matrix never passes them to
//! this arm (their `arms = [...]`), so its records never claim them.

use serde::Deserialize;

use super::super::{CdcLoad, Format, NotRunnable, ProducerProfile, Rig};

/// What the Rust arm reads (the fields of the shared [`super::super::Knobs`] it applies).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Knobs {
    pub rig: Rig,
    pub rows: u64,
    /// The snapshot's page; the sink rig's writer: rows per multi-row INSERT (sent sooner on its linger).
    pub batch_size: u64,
    /// The sink rig's writer: concurrent insert statements, each on a connection of its own.
    pub tasks: u64,
    pub timeout_s: u64,
    pub broker_cores_at_most: u64,
    /// The source rigs' output; the sink rig's writer: the topic it reads (`seed`: bare, `connect_envelope`:
    /// the JDBC sink's).
    pub format: Format,
    pub producer: ProducerProfile,
    pub cdc_load: CdcLoad,
    pub paced_rows_per_s: u64,
}

impl Knobs {
    /// The driver's knobs: what this arm does not apply takes a neutral value nothing of this arm reads.
    pub fn into_driver_knobs(self) -> super::super::Knobs {
        super::super::Knobs {
            rig: self.rig,
            rows: self.rows,
            batch_size: self.batch_size,
            fetch_size: 0,
            queue_size: 0,
            tasks: self.tasks,
            schemas: false,
            cores: 0,
            timeout_s: self.timeout_s,
            broker_cores_at_most: self.broker_cores_at_most,
            format: self.format,
            producer: self.producer,
            cdc_load: self.cdc_load,
            paced_rows_per_s: self.paced_rows_per_s,
            jdbc_batch: Default::default(),
        }
    }
}

/// The knob values the arm cannot apply at this rig, refused with the reason.
pub fn check(k: &super::super::Knobs) -> Result<(), NotRunnable> {
    let refuse = |why: String| Err(NotRunnable(why));
    let rig = k.rig.name();
    if k.cdc_load != CdcLoad::Unpaced && k.rig != Rig::CdcKafka {
        return refuse(format!("cdc_load is rig C's (cdc_kafka); {rig} has no inserting session"));
    }
    match k.rig {
        Rig::SnapshotDrop | Rig::SnapshotKafka | Rig::CdcKafka if k.format == Format::ConnectEnvelope => {
            refuse(format!(
                "connect_envelope is the sink rig's format; a source rig ({rig}) writes row_json or debezium_envelope"
            ))
        }
        Rig::SnapshotDrop if k.producer != ProducerProfile::Seed => {
            refuse("the drop rig produces nothing to Kafka: a producer profile does not apply".into())
        }
        Rig::KafkaToMysql if k.producer != ProducerProfile::Seed => {
            refuse("the sink rig produces nothing: a producer profile does not apply".into())
        }
        // The formats the writer reads: the bare topic or the Connect envelope the JDBC sink reads.
        Rig::KafkaToMysql => super::writer::check(k),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn knobs(rig: Rig) -> super::super::super::Knobs {
        Knobs {
            rig,
            rows: 10,
            batch_size: 5,
            tasks: 1,
            timeout_s: 60,
            broker_cores_at_most: 3,
            format: Format::Seed,
            producer: ProducerProfile::Seed,
            cdc_load: CdcLoad::Unpaced,
            paced_rows_per_s: 0,
        }
        .into_driver_knobs()
    }

    #[test]
    fn the_matrix_passes_the_arm_exactly_the_knobs_it_applies() {
        let path = crate::manifest_dir().join("matrices/mysql_cdc.toml");
        let matrix: toml::Table = toml::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let mut passed: Vec<&str> = matrix["knobs"]
            .as_table()
            .unwrap()
            .iter()
            .filter(|(_, k)| {
                k.get("arms").and_then(|a| a.as_array()).is_none_or(|a| a.iter().any(|x| x.as_str() == Some("rust")))
            })
            .map(|(name, _)| name.as_str())
            .collect();
        let schema = crate::arms::spec::knob_schema::<Knobs>().unwrap();
        let mut read: Vec<&str> = schema.iter().map(|k| k.name).collect();
        passed.sort_unstable();
        read.sort_unstable();
        assert_eq!(passed, read);
        for never in ["schemas", "fetch_size", "queue_size", "cores"] {
            assert!(!read.contains(&never), "{never}");
        }
    }

    #[test]
    fn what_the_arm_cannot_apply_is_refused_with_the_reason() {
        for rig in [Rig::SnapshotDrop, Rig::SnapshotKafka, Rig::CdcKafka, Rig::KafkaToMysql] {
            assert!(check(&knobs(rig)).is_ok(), "the seed's point runs: {rig:?}");
        }
        let with = |rig, f: &dyn Fn(&mut super::super::super::Knobs)| {
            let mut k = knobs(rig);
            f(&mut k);
            check(&k)
        };
        let envelope = with(Rig::SnapshotKafka, &|k| k.format = Format::ConnectEnvelope).unwrap_err();
        assert!(envelope.0.contains("sink rig's format"), "{}", envelope.0);
        assert!(with(Rig::SnapshotKafka, &|k| k.cdc_load = CdcLoad::Backlog).unwrap_err().0.contains("rig C"));
        assert!(with(Rig::SnapshotDrop, &|k| k.producer = ProducerProfile::Rust).is_err());
        assert!(with(Rig::KafkaToMysql, &|k| k.format = Format::RowJson).is_err());
        assert!(with(Rig::KafkaToMysql, &|k| k.format = Format::DebeziumEnvelope).is_err());
        assert!(with(Rig::KafkaToMysql, &|k| k.producer = ProducerProfile::Rust).is_err());
        for ok in [
            with(Rig::SnapshotKafka, &|k| k.format = Format::DebeziumEnvelope),
            with(Rig::CdcKafka, &|k| k.cdc_load = CdcLoad::Paced),
            with(Rig::CdcKafka, &|k| k.producer = ProducerProfile::ConnectDefault),
            with(Rig::SnapshotDrop, &|k| k.format = Format::RowJson),
            with(Rig::KafkaToMysql, &|k| k.format = Format::ConnectEnvelope),
        ] {
            assert!(ok.is_ok(), "{ok:?}");
        }
    }
}
