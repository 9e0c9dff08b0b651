//! What a lab run writes into provenance.json: the host, the repository, the versions the environment and
//! the harness report, the pins and every matrix as it was used.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Result;
use streamlab_record::RunInfo;
use streamlab_record::descriptor::{BackendKind, DESCRIPTOR_FILE};
use streamlab_record::run_spec::RunSpec;

use super::harness;
use super::matrix::Matrix;
use super::matrix::point_labels;
use super::reproduce::run_command;
use super::results::RunDir;
use crate::env::backend::Environment;
use crate::paths;
use crate::provenance::{self, MatrixInfo, PROVENANCE_FILE, PROVENANCE_SCHEMA, Provenance};

pub fn run_info(run_id: &str, prov: &Provenance) -> RunInfo {
    RunInfo {
        id: run_id.to_owned(),
        ts_ms: prov.started_ts_ms,
        commit: prov.git.commit.clone(),
        dirty: prov.git.dirty,
        host: prov.host.hostname.clone(),
        cpu: prov.host.cpu_brand.clone(),
        cores: prov.host.logical_cores,
        os: prov.host.os.clone(),
        profile: prov.profile.clone(),
        env: prov.env.backend.clone(),
        kafka_version: None,
        mysql_flavour: None,
        mysql_version: None,
        precision_target: None,
        kafka_brokers: None,
        broker_heap: None,
    }
}

pub fn collect_provenance(
    run_id: &str,
    spec: &RunSpec,
    matrices: &[Matrix],
    precision_targets: &BTreeMap<String, f64>,
    env: &dyn Environment,
    harness: &Path,
) -> Result<Provenance> {
    let root = paths::repo_root();
    let mut versions = provenance::collect_tool_versions();
    versions.extend(provenance::crate_versions(&root));
    versions.extend(provenance::harness_build_profile(&root.join("Cargo.toml")).map(|p| ("build:harness".into(), p)));
    if let Some(v) = harness::versions(harness) {
        versions.extend(v);
    }
    versions.extend(env.versions());
    let pins = crate::env::pins::provenance_pins()?;
    let mut env_info = env.info();
    if env.descriptor().backend == BackendKind::External {
        env_info.cluster = Some(harness::cluster(harness, &env.descriptor().dir.join(DESCRIPTOR_FILE))?);
    }
    Ok(Provenance {
        schema: PROVENANCE_SCHEMA.into(),
        run_id: run_id.to_owned(),
        started_ts_ms: streamlab_process::clock::now_ms(),
        finished_ts_ms: None,
        reproduce: run_command(spec),
        profile: spec.profile.to_string(),
        git: provenance::collect_git(&root),
        host: provenance::collect_host(),
        env: env_info,
        versions,
        pins,
        matrices: matrices
            .iter()
            .map(|m| matrix_info(m, precision_targets.get(&m.name).copied()))
            .collect::<Result<_>>()?,
        restarts: Vec::new(),
        kafka_brokers: Default::default(),
        environments: Vec::new(),
        calibration: None,
    })
}

/// The matrix as this run used it, with the precision its points aim for (`None`: fixed reps).
pub fn matrix_info(m: &Matrix, precision_target: Option<f64>) -> Result<MatrixInfo> {
    use sha2::Digest;
    let bytes = std::fs::read(&m.file)?;
    let rel = m.file.strip_prefix(paths::repo_root()).unwrap_or(&m.file);
    Ok(MatrixInfo {
        name: m.name.clone(),
        file: rel.display().to_string(),
        sha256: hex::encode(sha2::Sha256::digest(&bytes)),
        title: m.title.clone(),
        question: m.question.clone(),
        seed: m.seed.clone(),
        default_arm: m.default_arm.clone(),
        arms: m
            .arms
            .iter()
            .map(|a| provenance::ArmInfo {
                name: a.name.clone(),
                title: a.title.clone(),
                description: a.description.clone(),
            })
            .collect(),
        sweeps: m
            .sweeps
            .iter()
            .map(|s| provenance::SweepInfo {
                name: s.name.clone(),
                title: s.title.clone(),
                caption: s.caption.clone(),
                arms: s.arms.clone(),
                knob: s.knob.clone(),
                fixed: s.set.iter().map(|(k, v)| format!("{k} = {v}")).collect(),
                labels: point_labels(m, s),
            })
            .collect(),
        does_not_say: m.does_not_say.clone(),
        precision_target,
    })
}

pub fn write_provenance(run_dir: &RunDir, prov: &Provenance) -> Result<()> {
    let path = run_dir.path.join(PROVENANCE_FILE);
    streamlab_process::files::write_atomic(&path, &serde_json::to_vec_pretty(prov)?)?;
    Ok(())
}
