//! Types shared by the harness (which measures) and xtask (which provisions, runs and renders).
//!
//! Kept free of client crates so that `cargo xtask` builds quickly on a fresh clone.

pub mod applied;
pub mod arms;
pub mod descriptor;
pub mod fault;
pub mod integrity;
pub mod jsonl;
pub mod paced;
pub mod provenance;
pub mod record;
pub mod run_spec;
pub mod stats;
pub mod tools;

pub use descriptor::EnvDescriptor;
pub use integrity::{Integrity, IntegrityStatus};
pub use record::{
    CPU_BOUND_SHARE, Conditions, HOST_CORES, Measurement, MeasurementId, Metric, PointRef, Record, RunInfo, SCHEMA,
    SCHEMA_V1, Status, Variant,
};
