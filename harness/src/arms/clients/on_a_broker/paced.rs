//! The paced workload against the test environment's broker: every record through, timed from its intended send,
//! and a broker stopped for 200 ms in the middle of a run showing in the intended-time tail.

use std::time::Duration;

use streamlab_process::procfs::{Sig, signal};
use streamlab_record::{IntegrityStatus, Measurement};

use crate::arms::ArmContext;
use crate::drivers::contract::KafkaDriver;
use crate::drivers::partitionline::tests::knobs_json;

fn run(arm: &str, overrides: serde_json::Value) -> Measurement {
    let knobs = knobs_json(serde_json::json!({"workload": "paced", "connections": 1}));
    let mut knobs = serde_json::Value::Object(knobs);
    for (k, v) in overrides.as_object().unwrap() {
        knobs[k] = v.clone();
    }
    let ctx = ArmContext { env: crate::test_env(), knobs: knobs.as_object().unwrap().clone() };
    crate::arms::run("clients", arm, &ctx).unwrap()
}

/// On a quiet loopback broker a paced record's publish median was 3.3-3.5 ms at 5,000 records/s here (rdkafka and
/// partitionline, linger 5 ms: each record waits for its batch to close); 50 ms is far above that, far below a stall.
const IDLE_P50_BOUND_US: f64 = 50_000.0;

#[test]
#[ignore = "needs a broker and partitionline-bench: cargo xtask test"]
fn every_paced_record_lands_once_and_is_timed_from_its_intended_send_to_ack_and_to_receipt() {
    for arm in ["rdkafka", "partitionline"] {
        // 4 s: the 2% a run may fall short of its rate is 80 ms of lateness at its end on a busy machine.
        let m = run(arm, serde_json::json!({"rate": 5000, "paced_seconds": 4}));
        eprintln!("{arm}: {}", summary(&m));
        assert_eq!(m.kind, "paced");
        assert_eq!(m.integrity.status, IntegrityStatus::Verified, "{arm}: {:?} {:?}", m.integrity, m.note);
        assert_eq!(m.metrics["high_watermark"].value, 20_000.0, "{arm}");
        assert_eq!(m.metrics["consumed"].value, 20_000.0, "{arm}");
        assert_eq!(m.applied["offered_load"], "5000 records/s", "{arm}");
        let achieved = m.metrics["achieved_rate"].value;
        assert!((4_900.0..5_100.0).contains(&achieved), "{arm}: achieved {achieved}");
        let (p50, p99, e2e_p50) = (
            m.metrics["publish_p50_us"].value,
            m.metrics["publish_p99_us"].value,
            m.metrics["end_to_end_p50_us"].value,
        );
        assert!(p50 > 0.0 && p50 <= p99, "{arm}: {:?}", m.metrics);
        assert!(p50 < IDLE_P50_BOUND_US, "{arm}: an idle loopback run's publish p50 was {p50} µs");
        assert!(e2e_p50 >= p50 * 0.5, "{arm}: a receipt comes after most acknowledgements ({e2e_p50} vs {p50})");
        for name in ["publish_histogram", "publish_from_send_histogram", "end_to_end_histogram"] {
            let h = streamlab_record::paced::Latencies::from_base64(&m.details[name]).unwrap();
            assert_eq!(h.len(), 20_000, "{arm}: {name} holds every record");
        }
    }
}

/// The figures a failing run's reader wants first, in ms.
fn summary(m: &Measurement) -> String {
    let keys =
        ["publish_p50_us", "publish_p99_us", "publish_p99_9_us", "publish_from_send_p99_9_us", "end_to_end_p50_us"];
    let ms: Vec<String> = keys
        .iter()
        .map(|k| format!("{k} {}", m.metrics.get(*k).map_or("—".into(), |v| format!("{:.2} ms", v.value / 1e3))))
        .collect();
    format!("{} ({:?})", ms.join(", "), m.note)
}

/// SIGCONT on drop, so a failing test never leaves the shared broker stopped.
struct Stopped(Vec<u32>);

impl Drop for Stopped {
    fn drop(&mut self) {
        for &pid in &self.0 {
            signal(pid, Sig::SIGCONT);
        }
    }
}

/// The coordinated-omission test, on the driver's loop itself (the bench's held-rate rule is the measurement's
/// business, tested apart: on a loaded CI machine 10 records outstanding may not catch up after the stop). With at
/// most 10 records outstanding (queue.buffering.max.messages counts the records in flight), a 200 ms stop of the
/// broker blocks the sender: the ~1,000 records due during the stop wait to be sent, and only the few outstanding
/// wait after their send. Timed from the intended send, the tail holds the stop; timed from the actual send (as a
/// tool that times its send call reports), p99.9 of 30,000 records hides it.
#[test]
#[ignore = "needs a broker: cargo xtask test"]
fn a_broker_stopped_for_200_ms_shows_in_the_intended_time_tail_and_hides_from_the_send_time() {
    let env = crate::test_env();
    let knobs = crate::drivers::partitionline::tests::knobs(serde_json::json!({"workload": "paced", "connections": 1,
        "rate": 5000, "paced_seconds": 6, "queue_messages": 10, "linger_ms": 0, "partitions": 1}));
    let topic = "streamlab-test-paced-stop";
    crate::kafka::admin::fresh_topic(&crate::arms::clients::admin_config(&env).unwrap(), topic, 1, &[]).unwrap();
    let pids = env.kafka.pids();
    assert!(!pids.is_empty(), "the test environment's brokers");
    let stopper = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_secs(2));
        let stopped = Stopped(pids.clone());
        for &pid in &pids {
            signal(pid, Sig::SIGSTOP);
        }
        std::thread::sleep(Duration::from_millis(200));
        drop(stopped);
    });
    let ran = crate::drivers::rdkafka::Rdkafka.paced(&env, &knobs, topic);
    stopper.join().unwrap();
    let run = ran.unwrap().measured;
    assert_eq!((run.sent, run.acked, run.failed), (30_000, 30_000, 0));
    let histogram = |text: &str| streamlab_record::paced::Latencies::from_base64(text).unwrap();
    let intended = histogram(&run.publish).percentile_us(99.9).unwrap();
    let from_send = histogram(&run.publish_from_send).percentile_us(99.9).unwrap();
    eprintln!(
        "rdkafka, broker stopped 200 ms: publish p99.9 {:.1} ms from the intended send, {:.1} ms from the actual \
         send; achieved {:?} records/s",
        intended / 1e3,
        from_send / 1e3,
        run.achieved_rate()
    );
    assert!(intended >= 150_000.0, "the stop is in the intended-time p99.9: {intended} µs");
    assert!(from_send < 150_000.0, "timed from the send, p99.9 hides the stop: {from_send} µs");
}
