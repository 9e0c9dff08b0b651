//! The paced loop: a plain thread offers each record when the [`Schedule`] says it is due (the same pacer every
//! client's paced loop runs), handing it to a task on the runtime that awaits its acknowledgement, so the loop
//! never waits on the client and each record is timed from its intended send.

use std::sync::{Arc, Mutex};

use anyhow::{Result, bail};
use partitionline::{ProduceRecord, ProducerConfig};
use streamlab_process::clock::monotonic_ns;
use streamlab_record::paced::{PacedLoop, Schedule, Sent, Tally, stamped_value};

use crate::{CLOSE_TIMEOUT, FLUSH_TIMEOUT, new_producer};

/// `records` records of `value_bytes` to `topic`, offered at `rate` a second.
pub(crate) fn paced(
    rt: &tokio::runtime::Runtime,
    cfg: ProducerConfig,
    topic: &str,
    rate: u64,
    records: u64,
    value_bytes: usize,
) -> Result<(PacedLoop, Option<String>)> {
    let (producer, setup_note) = rt.block_on(new_producer(cfg))?;
    // Metadata before the first record is due, as every client's paced loop has it.
    rt.block_on(producer.partitions_for(topic))?;
    let topic: Arc<str> = topic.into();
    let tally = Arc::new(Mutex::new(Tally::default()));
    let cpu_before = streamlab_process::procfs::self_cpu_seconds();
    let schedule = Schedule::starting_now(rate);
    let mut last_send_ns = schedule.start_ns;
    let mut tasks = Vec::with_capacity(records as usize);
    for seq in 0..records {
        let wait = schedule.until(seq);
        if !wait.is_zero() {
            std::thread::sleep(wait);
        }
        let intended_ns = schedule.intended_ns(seq);
        let actual_ns = monotonic_ns();
        let record = ProduceRecord::to(topic.clone()).value(stamped_value(value_bytes, seq, intended_ns));
        let (producer, tally) = (producer.clone(), tally.clone());
        tasks.push(rt.spawn(async move {
            let acked = producer.send(record).await;
            let now = monotonic_ns();
            let mut tally = tally.lock().expect("no task panics holding the tally");
            match acked {
                Ok(_) => tally.acked(Sent { intended_ns, actual_ns }, now),
                Err(_) => tally.failed(),
            }
        }));
        last_send_ns = actual_ns;
    }
    let waited = rt.block_on(async {
        tokio::time::timeout(FLUSH_TIMEOUT, async {
            for task in tasks {
                let _ = task.await;
            }
        })
        .await
    });
    let client_cpu_s = streamlab_process::procfs::self_cpu_seconds() - cpu_before;
    if waited.is_err() {
        bail!("the acknowledgements of a paced run did not all come within {} s", FLUSH_TIMEOUT.as_secs());
    }
    let _ = rt.block_on(producer.close_timeout(CLOSE_TIMEOUT));
    let tally = tally.lock().expect("every task finished").clone();
    Ok((PacedLoop::new(schedule, records, last_send_ns, &tally, client_cpu_s, 0), setup_note))
}
