//! What a run says on the terminal: a line as each phase starts, a progress bar over the tasks and lines
//! above it. Phases go to stderr with cargo's progress: stdout stays data for `lab list --json`.

use std::collections::BTreeSet;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use streamlab_record::run_spec::Need;
use streamlab_record::tools::{RedpandaConnect, Tool};

use crate::env::pins;

/// One line as each phase of a run starts, so a long first build or download never looks like a hang.
pub fn phase(name: &str, what: &str) {
    eprintln!("==> {name}: {what}");
}

/// The bar over a run's tasks, ticking on its own so a long task still shows the clock moving.
pub fn progress_bar(len: usize) -> ProgressBar {
    let bar = ProgressBar::new(len as u64);
    bar.set_style(
        ProgressStyle::with_template("[{elapsed_precise}] {bar:30} {pos}/{len} tasks, ~{eta} left  {msg}")
            .expect("a valid template"),
    );
    bar.enable_steady_tick(Duration::from_millis(500));
    bar
}

/// A line above the progress bar, or on stdout when there is no terminal to draw one.
pub fn say(bar: &ProgressBar, line: String) {
    if bar.is_hidden() { println!("{line}") } else { bar.println(line) }
}

/// What the tools phase prepares for the arms' `wanted` programs and Connect if `needs` has it, or `None` when the
/// run needs no tools file.
pub fn tools_phase(
    needs: &[Need],
    wanted: &BTreeSet<Tool>,
    redpanda_connect: Option<&RedpandaConnect>,
) -> Option<String> {
    let mut what: Vec<String> = wanted
        .iter()
        .map(|tool| match tool {
            Tool::RdkafkaPerformance => {
                "rdkafka_performance against librdkafka 2.12.1 and 2.15.0 (built once into the cache)".to_owned()
            }
            Tool::JavaPerfTools => "Kafka's Java perf tools".to_owned(),
            Tool::PartitionlineBench => {
                "partitionline-bench in seed 003's cargo profile (thin LTO, one codegen unit)".to_owned()
            }
            Tool::LedgerProducer => {
                format!(
                    "the Java ledger producer ({}), compiled once by javac",
                    crate::clients::ledger_producer::SOURCE
                )
            }
        })
        .collect();
    if needs.contains(&Need::Connect) {
        what.push(format!(
            "Kafka Connect {} with the Debezium MariaDB source and JDBC sink (pinned jars); Redpanda Connect {}",
            pins::kafka_version(),
            redpanda_connect.map_or_else(
                || format!(
                    "not provided ({} unset: its arms are not run)",
                    crate::clients::redpanda_connect::REDPANDA_CONNECT_ENV
                ),
                |r| format!("{} from {}", r.version, r.path.display()),
            )
        ));
    }
    (!what.is_empty()).then(|| what.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tools_phase_covers_the_arms_programs_and_connect_and_nothing_else() {
        let none = BTreeSet::new();
        assert_eq!(tools_phase(&[Need::Kafka, Need::Mysql], &none, None), None);
        let c_and_bench = [Tool::RdkafkaPerformance, Tool::PartitionlineBench].into();
        let clients = tools_phase(&[Need::Kafka], &c_and_bench, None).unwrap();
        assert!(clients.contains("rdkafka_performance") && !clients.contains("Connect"), "{clients}");
        assert!(clients.contains("partitionline-bench in seed 003's cargo profile"), "{clients}");
        assert!(!clients.contains("Java"), "no arm of the run runs Java: {clients}");
        let cdc = tools_phase(&[Need::Kafka, Need::Mysql, Need::Connect], &none, None).unwrap();
        assert!(cdc.contains("Kafka Connect 4.1.0") && cdc.contains("STREAMLAB_REDPANDA_CONNECT unset"), "{cdc}");
        let named = RedpandaConnect { path: "/opt/rpc".into(), version: "4.99.0".into() };
        let both = tools_phase(&[Need::Connect], &[Tool::LedgerProducer].into(), Some(&named)).unwrap();
        assert!(both.contains("ledger producer") && both.contains("4.99.0 from /opt/rpc"), "{both}");
    }
}
