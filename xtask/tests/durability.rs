//! The durability matrix end to end on a real 3-broker cluster: faults injected by the runner at the arm's
//! request, a broker killed behind the lab's back (the lab's one test of a task that loses its environment: the
//! task in flight fails with the broker's log, the dead broker is reaped, the run goes on in a fresh
//! environment), and Ctrl-C while a fault has a broker stopped.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use streamlab_process::procfs::{self, Sig};
use streamlab_process::{Child, Cmd};
use streamlab_record::{EnvDescriptor, IntegrityStatus, Record, Status};

mod common;
use common::*;

/// `lab run` of the durability matrix at the quick profile, rdkafka only, at `points`.
fn quick_run(out: &Path, points: &[&str]) -> Cmd {
    let mut cmd = xtask().args([
        "lab",
        "run",
        "--env",
        "native",
        "--profile",
        "quick",
        "--matrix",
        "durability",
        "--arm",
        "rdkafka",
    ]);
    for p in points {
        cmd = cmd.args(["--point", p]);
    }
    cmd.arg("--out").arg(out)
}

fn run_dir(out: &Path) -> Option<PathBuf> {
    std::fs::read_dir(out).ok()?.filter_map(|e| e.ok()).map(|e| e.path()).next()
}

fn records(run: &Path) -> Vec<Record> {
    let path = run.join("durability.jsonl");
    if path.exists() { streamlab_record::jsonl::read_records(&path).unwrap() } else { Vec::new() }
}

fn assert_nothing_left(run_id: &str) {
    assert!(envs_of(run_id).is_empty(), "environment directories left: {:?}", envs_of(run_id));
    assert!(processes_of(run_id).is_empty(), "brokers left running: {:?}", processes_of(run_id));
}

/// Wait (bounded) until `ready` gives a value, failing if the run ends first.
fn wait_for<T>(child: &mut Child, what: &str, within: Duration, mut ready: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + within;
    loop {
        if let Some(v) = ready() {
            return v;
        }
        assert!(child.try_wait().unwrap().is_none(), "the run ended before {what}");
        assert!(Instant::now() < deadline, "no {what} after {} s", within.as_secs());
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn detail<'r>(r: &'r Record, key: &str) -> &'r str {
    let details = &r.measurement.details;
    details.get(key).map(String::as_str).unwrap_or_else(|| panic!("no {key} in {details:?}"))
}

#[test]
#[ignore = "starts a 3-broker cluster and runs arms: cargo xtask test"]
fn a_killed_leader_shows_its_unavailability_the_cluster_heals_and_ctrl_c_while_a_broker_is_stopped_leaves_nothing() {
    let out = tempfile::tempdir().unwrap();
    // Three faults on one cluster: a kill, a stop, then a second stop that Ctrl-C interrupts while its broker is
    // stopped (one cluster brought up, not two: these tests' cost is the brokers' start-up).
    let points =
        ["fault_idempotent=kill -9 leader", "fault_idempotent=SIGSTOP leader", "fault_acks_all=SIGSTOP leader"];
    let mut child = quick_run(out.path(), &points).spawn().unwrap();
    let run_id = wait_for(&mut child, "the third task's stopped broker", Duration::from_secs(600), || {
        let run = run_dir(out.path())?;
        let run_id = run.file_name()?.to_string_lossy().into_owned();
        let d = EnvDescriptor::load(&envs_of(&run_id).pop()?.join("env.json")).ok()?;
        let stopped = d.kafka.pids().into_iter().any(|pid| procfs::state(pid) == Some('T'));
        (records(&run).len() == 2 && stopped).then_some(run_id)
    });
    ctrl_c(&mut child);
    assert_nothing_left(&run_id);
    let run = run_dir(out.path()).unwrap();
    let rs = records(&run);
    assert_eq!(rs.len(), 2, "the interrupted task wrote no record: {rs:#?}");
    let (kill, stop) = (&rs[0], &rs[1]);
    for r in &rs {
        let m = &r.measurement;
        assert_eq!((r.status, m.integrity.status), (Status::Ok, IntegrityStatus::Verified), "{r:#?}");
        assert_eq!(m.metrics["lost"].value, 0.0, "acks=all, RF 3: nothing acknowledged is lost");
        assert!(m.metrics["records_per_s"].value > 0.0);
        assert_eq!(m.applied["topic.replication.factor"], "3");
        assert!(!detail(r, "acks_per_100ms").is_empty());
        assert!(!detail(r, "isr_during_fault").is_empty());
    }
    // kill -9 fences the leader: a replica leaves the ISR and comes back once the broker is started again.
    assert!(kill.measurement.metrics.contains_key("isr_full_after_ms"), "{:?}", detail(kill, "isr_during_fault"));
    let fault = detail(kill, "fault");
    assert!(fault.contains("SIGKILL sent at +0 ms") && fault.contains("started again (pid"), "{fault}");
    assert!(detail(kill, "fault_target").contains("the leader of partition 0"));
    let gap = kill.measurement.metrics["max_ack_gap_ms"].value;
    eprintln!("kill -9: longest gap between acknowledgements {gap:.0} ms; {}", detail(kill, "isr_during_fault"));
    assert!(gap > 0.0);
    let stopped = detail(stop, "fault");
    assert!(stopped.contains("SIGSTOP sent at +0 ms") && stopped.contains("SIGCONT sent at +"), "{stopped}");
    // The killed broker came back in place: the environment was never replaced.
    assert!(provenance(&run).restarts.is_empty(), "{:?}", provenance(&run).restarts);
}

#[test]
#[ignore = "starts one broker, then a 3-broker cluster twice, and runs arms: cargo xtask test"]
fn a_run_brings_each_matrix_up_on_its_seed_s_environment_and_a_broker_killed_behind_its_back_fails_only_its_task() {
    let out = tempfile::tempdir().unwrap();
    // kafka_sink's raw point on the single broker its seed ran, then durability's two RF 3 points on a cluster of
    // three (the plan's order: the single broker first).
    let args = ["lab", "run", "--env", "native", "--profile", "quick", "--matrix", "kafka_sink", "--matrix"];
    let arms = ["durability", "--arm", "raw", "--arm", "rdkafka", "--point", "mode=raw rdkafka"];
    let points = ["--point", "rf_idempotent=RF 3", "--point", "rf_acks_1=RF 3", "--out"];
    let mut child = xtask().args(args).args(arms).args(points).arg(out.path()).spawn().unwrap();
    // Once the first durability task's harness runs, kill broker 2 of the cluster from outside (no fault asked).
    let (run_id, env) = wait_for(&mut child, "a running durability task", Duration::from_secs(600), || {
        let run_id = run_dir(out.path())?.file_name()?.to_string_lossy().into_owned();
        let logs = repo_root().join("target/streamlab/runs").join(&run_id);
        let started = std::fs::read_dir(&logs).ok()?.filter_map(|e| e.ok()).any(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.starts_with("durability-") && name.ends_with(".log")
        });
        let cluster = envs_of(&run_id)
            .into_iter()
            .filter_map(|dir| EnvDescriptor::load(&dir.join("env.json")).ok())
            .find(|d| d.kafka.broker_count() == 3);
        started.then_some((run_id, cluster?))
    });
    std::thread::sleep(Duration::from_secs(3));
    let broker = env.kafka.brokers[1].pid.unwrap();
    let killed_at = streamlab_process::clock::now_ms();
    procfs::signal(broker, Sig::SIGKILL);
    // The dead broker is reaped when its environment is torn down, while the run goes on: not left a zombie of
    // the runner until it exits.
    let dead = PathBuf::from(format!("/proc/{broker}"));
    wait_for(&mut child, "the killed broker reaped", Duration::from_secs(300), || (!dead.exists()).then_some(()));
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(1), "a run with a failed record exits 1");
    let run = out.path().join(&run_id);
    let sink = streamlab_record::jsonl::read_records(&run.join("kafka_sink.jsonl")).unwrap();
    let rs = records(&run);
    assert_eq!((sink.len(), rs.len()), (1, 2), "{sink:#?}\n{rs:#?}");
    // Each matrix ran on the environment its seed ran, and its records say so.
    for (r, brokers) in [(&sink[0], 1), (&rs[1], 3)] {
        let verified = (r.status, r.measurement.integrity.status);
        assert_eq!(verified, (Status::Ok, IntegrityStatus::Verified), "{r:#?}");
        assert_eq!(r.run.kafka_brokers, Some(brokers), "{} ran on the environment its seed ran", r.bench);
        assert_eq!(r.run.broker_heap.as_deref(), Some("1g"));
    }
    // The killed broker failed the task in flight, and only that one: a fresh cluster ran the next.
    let reason = rs[0].reason.as_deref().unwrap_or("");
    assert_eq!(rs[0].status, Status::Failed, "{:#?}", rs[0]);
    assert!(reason.starts_with("the kafka broker 2 was killed by SIGKILL during the task"), "{reason}");
    assert!(rs[0].log_tail.as_deref().unwrap_or("").contains("--- the kafka broker 2's log:"), "{:#?}", rs[0]);
    let prov = provenance(&run);
    assert_eq!(prov.restarts.len(), 1, "{:?}", prov.restarts);
    let restart = &prov.restarts[0];
    assert_eq!(restart.failed_env, env.id);
    assert!(restart.new_env.as_deref().is_some_and(|id| id != env.id));
    eprintln!(
        "noticed the dead broker {} ms after the kill; the fresh environment was ready {} ms later",
        restart.ts_ms.saturating_sub(killed_at),
        restart.ready_after_ms.unwrap_or(0)
    );
    // One environment per shape in the plan's order, then the replacement; each brought down.
    let shapes: Vec<Option<u32>> = prov.environments.iter().map(|e| e.brokers).collect();
    assert_eq!(shapes, [Some(1), Some(3), Some(3)], "{:?}", prov.environments);
    assert_nothing_left(&run_id);
}

#[test]
#[ignore = "starts a 3-broker cluster and runs arms: cargo xtask test"]
fn a_secured_external_cluster_runs_the_durability_and_clients_matrices_through_kafka_config() {
    let cluster = HandMadeCluster::up(3);
    let scram = &cluster.descriptor.kafka.listeners["scram512"];
    let password = streamlab_record::descriptor::read_secret(scram.password_file.as_ref().unwrap()).unwrap();
    let user = scram.username.as_deref().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("client.properties");
    std::fs::write(
        &config,
        format!(
            "# the lab's own cluster on its SCRAM listener, as a user's secured cluster\n\
             bootstrap.servers={}\nsecurity.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n\
             sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \
             username=\"{user}\" password=\"{password}\";\n",
            scram.bootstrap
        ),
    )
    .unwrap();
    let out = dir.path().join("results");
    let arms = ["rdkafka", "partitionline", "java", "c_2_12"].into_iter().flat_map(|a| ["--arm", a]);
    let points = [
        "rf_idempotent=RF 3",
        "fault_idempotent=kill -9 leader",
        "idempotent=rust-rdkafka 0.39",
        "idempotent=partitionline 0.1.0",
        "idempotent=Java perf tools (Kafka 4.1.0)",
        "idempotent=librdkafka 2.12.1 C tool",
    ];
    let run = xtask()
        .args(["lab", "run", "--kafka-config"])
        .arg(&config)
        .args(["--profile", "quick", "--matrix", "durability", "--matrix", "clients"])
        // What is checked is where each client connects and what it applied, not its rate: a 3 s window will do.
        // It opens at the producer's first acknowledgement, however long a cold JVM, SCRAM, an idempotent producer
        // id and three brokers' metadata take on a busy machine.
        .args(["--set", "warmup_s=0.5", "--set", "window_s=3"])
        .args(arms)
        .args(points.iter().flat_map(|p| ["--point", p]))
        .arg("--out")
        .arg(&out)
        .output(RUN_TIMEOUT)
        .unwrap();
    assert!(run.status.success(), "the run failed:\n{}", run.tail(40));
    assert!(!run.stdout.contains(&password) && !run.stderr.contains(&password), "the password was echoed");
    let run_dir = run_dir(&out).unwrap();
    for file in ["durability.jsonl", "clients.jsonl", "provenance.json", "run.json"] {
        let text = std::fs::read_to_string(run_dir.join(file)).unwrap();
        assert!(!text.contains(&password), "{file} holds the password");
    }
    let prov = provenance(&run_dir);
    assert_eq!(prov.env.backend, "external");
    assert_eq!(prov.env.cluster.as_ref().map(|c| c.broker_ids.clone()), Some(vec![1, 2, 3]), "{:?}", prov.env);
    assert_eq!(
        prov.env.kafka_settings,
        ["bootstrap.servers", "security.protocol", "sasl.mechanism", "sasl.jaas.config"]
    );

    let durability = records(&run_dir);
    let find = |rs: &[Record], arm: &str, sweep: &str| {
        rs.iter().find(|r| r.arm == arm && r.variant.sweeps.iter().any(|s| s == sweep)).cloned().unwrap_or_else(|| {
            panic!("no {arm} record of {sweep} in {rs:#?}");
        })
    };
    for arm in ["rdkafka", "partitionline", "java"] {
        let r = find(&durability, arm, "rf_idempotent");
        let m = &r.measurement;
        assert_eq!((r.status, m.integrity.status), (Status::Ok, IntegrityStatus::Verified), "{r:#?}");
        assert_eq!(m.applied["topic.replication.factor"], "3", "replication runs on the user's brokers");
    }
    let fault = find(&durability, "rdkafka", "fault_idempotent");
    assert_eq!(fault.status, Status::NotRun, "{fault:#?}");
    assert!(fault.reason.as_deref().unwrap().contains("never kills, stops or restarts what it did not start"));
    let clients = streamlab_record::jsonl::read_records(&run_dir.join("clients.jsonl")).unwrap();
    assert_eq!(clients.len(), 4, "{clients:#?}");
    for r in &clients {
        let m = &r.measurement;
        assert_eq!((r.status, m.integrity.status), (Status::Ok, IntegrityStatus::Verified), "{r:#?}");
        let protocol = m.applied.get("producer.security.protocol").map(String::as_str);
        assert_eq!(protocol, Some("SASL_PLAINTEXT"), "{} applied {:?}", r.arm, m.applied);
    }
}
