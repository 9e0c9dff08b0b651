//! `lab run` on the docker backend end to end: its containers brought up from images built here, a quick arm's
//! records verified, and Ctrl-C and the end of the run leaving no container behind. A file of its own so that the
//! test command runs it on the lane of the other docker tests (xtask's env::docker ones), one engine user at a time.

use std::collections::HashMap;
use std::time::Duration;

use streamlab_record::IntegrityStatus;

mod common;
use common::*;

/// The label every container of the lab carries, its value the environment's id.
const LABEL: &str = "org.streamlab.env";

/// Names of the containers (running or not) of run `run_id`'s environments.
fn containers_of(run_id: &str) -> Vec<String> {
    use bollard::query_parameters::ListContainersOptions;
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let docker = bollard::Docker::connect_with_local_defaults().unwrap();
    let filters = HashMap::from([("label".to_owned(), vec![LABEL.to_owned()])]);
    let options = ListContainersOptions { all: true, filters: Some(filters), ..Default::default() };
    let prefix = format!("lab-{run_id}");
    runtime
        .block_on(docker.list_containers(Some(options)))
        .unwrap()
        .into_iter()
        .filter(|c| c.labels.as_ref().and_then(|l| l.get(LABEL)).is_some_and(|id| id.starts_with(&prefix)))
        .map(|c| c.names.unwrap_or_default().join(","))
        .collect()
}

#[test]
#[ignore = "starts Kafka in Docker and runs arms: cargo xtask test"]
fn a_quick_arm_runs_on_docker_verified_and_sigint_leaves_no_container() {
    let out = tempfile::tempdir().unwrap();
    let jsonl = interrupted_raw_run("docker", 1, Duration::from_secs(600), out.path());
    let run_id = run_id_of(&jsonl);
    assert!(containers_of(&run_id).is_empty(), "containers left after Ctrl-C: {:?}", containers_of(&run_id));
    assert!(processes_of(&run_id).is_empty(), "a broker was left running");

    // The run finishes on Docker, and every record of it is verified.
    resume(&run_id, out.path());
    let records = streamlab_record::jsonl::read_records(&jsonl).unwrap();
    assert_eq!(records.len(), 3, "the raw arm's three quick points");
    for r in &records {
        assert_eq!(r.run.env, "docker");
        assert_eq!(r.measurement.integrity.status, IntegrityStatus::Verified, "{r:?}");
        assert!(r.measurement.metrics["records_per_s"].value > 0.0);
    }
    let prov = provenance(jsonl.parent().unwrap());
    assert_eq!(prov.env.backend, "docker");
    assert!(prov.env.images.contains_key("kafka"), "{:?}", prov.env);
    assert!(prov.env.cpu_caps.values().any(|c| c.contains("read back by inspect")), "{:?}", prov.env.cpu_caps);
    assert!(containers_of(&run_id).is_empty(), "containers left after the run: {:?}", containers_of(&run_id));
}
