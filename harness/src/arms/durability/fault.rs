//! The arm's side of a fault: when (a fixed offset into the measurement window, from the seed), on which broker
//! (partition 0's leader for a kill or a stop, a follower of it for a restart, from metadata at that moment),
//! asked of the runner through the fault directory, then watched until every partition's ISR is full again.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use rdkafka::ClientConfig;
use streamlab_record::fault::{self, FAULTS_ENV, FaultKind, FaultRequest, FaultResult};

use super::cluster::{Cluster, PartitionState};
use crate::drivers::contract::FirstAck;

/// How long after the fault every partition may take to have its full ISR again before we stop watching.
pub const ISR_WATCH: Duration = Duration::from_secs(240);
/// How long the producer may take to have its first record acknowledged (a JVM starting on a loaded machine; the
/// driver itself gives up after [`crate::drivers::contract::FIRST_ACK_WAIT`]).
const FIRST_ACK_WATCH: Duration = Duration::from_secs(180);

/// The fault a point asks for.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub kind: FaultKind,
    /// Seconds into the measurement window.
    pub offset_s: f64,
    pub hold_ms: u64,
}

/// The offset into a window of `window_s`: between 20% and 35% of it, fixed by `seed` (SplitMix64), so every rep
/// of a point faults at the same moment and the window holds the recovery.
pub fn offset_s(seed: u64, window_s: f64) -> f64 {
    let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    let unit = (z >> 11) as f64 / (1u64 << 53) as f64;
    window_s * (0.20 + 0.15 * unit)
}

/// What happened: the runner's answer, when the fault was asked for, the broker and the partition state then,
/// and what the ISR did.
#[derive(Debug, Clone)]
pub struct Happened {
    pub result: FaultResult,
    pub asked_ms: u64,
    pub before: PartitionState,
    pub isr: Isr,
}

/// What the topic's in-sync replicas did from the fault on, polled every 100 ms. A replica leaves the ISR only
/// when the controller fences its broker or it lags for replica.lag.time.max.ms: a short stop may leave it in.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Isr {
    /// Some partition lost a replica, and every partition had its full ISR again this long after the fault's
    /// first step.
    Refilled(Duration),
    /// Some partition lost a replica and had not got it back when the watch ended.
    NotRefilled,
    /// Every partition kept its full ISR from the fault to the end of the run.
    NeverShrank,
}

/// The fault directory the runner serves.
fn fault_dir() -> Result<PathBuf> {
    std::env::var_os(FAULTS_ENV).map(PathBuf::from).with_context(|| {
        format!("{FAULTS_ENV} is not set: faults are injected by `cargo xtask lab run`, which serves it")
    })
}

/// Start the fault's thread: it waits for the window, asks for the fault and watches the ISR until it has
/// shrunk and refilled, or (never having shrunk) until `done` is set, or for [`ISR_WATCH`] at most.
pub fn spawn(
    plan: Plan,
    admin: ClientConfig,
    topic: String,
    warmup_s: f64,
    first: Arc<FirstAck>,
    done: Arc<AtomicBool>,
) -> Result<JoinHandle<Result<Happened>>> {
    let dir = fault_dir()?;
    Ok(std::thread::spawn(move || run(&plan, &dir, &admin, &topic, warmup_s, &first, &done)))
}

fn run(
    plan: &Plan,
    dir: &std::path::Path,
    admin: &ClientConfig,
    topic: &str,
    warmup_s: f64,
    first: &FirstAck,
    done: &AtomicBool,
) -> Result<Happened> {
    let waiting = Instant::now();
    let first_ms = loop {
        if let Some(ms) = first.get() {
            break ms;
        }
        if waiting.elapsed() > FIRST_ACK_WATCH {
            bail!(
                "the producer had nothing acknowledged within {} s: no fault was injected",
                FIRST_ACK_WATCH.as_secs()
            );
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let at_ms = first_ms + ((warmup_s + plan.offset_s) * 1000.0).round() as u64;
    let now = streamlab_process::clock::now_ms();
    std::thread::sleep(Duration::from_millis(at_ms.saturating_sub(now)));
    let cluster = Cluster::new(admin)?;
    let before =
        cluster.partitions_patiently(topic)?.into_iter().find(|p| p.id == 0).context("the topic has no partition 0")?;
    let victim = match plan.kind {
        FaultKind::Kill | FaultKind::Stop => before.leader,
        FaultKind::Restart => before.follower().with_context(|| format!("partition 0 has no follower: {before:?}"))?,
    };
    let node_id = u32::try_from(victim).with_context(|| format!("partition 0 has no leader: {before:?}"))?;
    let request = FaultRequest { kind: plan.kind, node_id, hold_ms: plan.hold_ms };
    let asked_ms = streamlab_process::clock::now_ms();
    let (admin, name) = (admin.clone(), topic.to_owned());
    let stop_watching = Arc::new(AtomicBool::new(false));
    let watching = {
        let stop = stop_watching.clone();
        std::thread::spawn(move || watch_isr(&admin, &name, &stop))
    };
    // The runner answers when every step is done: a hold plus a broker start at most.
    let answer_within = Duration::from_millis(plan.hold_ms) + Duration::from_secs(180);
    let result = fault::request(dir, &request, answer_within).map_err(anyhow::Error::msg);
    if result.as_ref().map_or(true, |r| r.status != fault::FaultStatus::Done) {
        stop_watching.store(true, Ordering::Relaxed);
    }
    // Until the run says it is over (a shrunk ISR is watched on until it refills or the watch's time is up).
    while !done.load(Ordering::Relaxed) && !watching.is_finished() {
        std::thread::sleep(Duration::from_millis(50));
    }
    stop_watching.store(true, Ordering::Relaxed);
    let watched = watching.join().map_err(|_| anyhow::anyhow!("the ISR watch panicked"))?;
    let result = result?;
    let since = result.started_ms().unwrap_or(asked_ms);
    let isr = match watched {
        Watched::Refilled(at_ms) => Isr::Refilled(Duration::from_millis(at_ms.saturating_sub(since))),
        Watched::NotRefilled => Isr::NotRefilled,
        Watched::NeverShrank => Isr::NeverShrank,
    };
    Ok(Happened { result, asked_ms, before, isr })
}

enum Watched {
    /// Epoch ms of the first poll with every ISR full after one without.
    Refilled(u64),
    NotRefilled,
    NeverShrank,
}

/// Poll the topic's ISRs every 100 ms: done once they shrank and refilled; when `stop` is set, done if they never
/// shrank, else watched on for [`ISR_WATCH`] at most.
fn watch_isr(admin: &ClientConfig, topic: &str, stop: &AtomicBool) -> Watched {
    let started = Instant::now();
    let Ok(cluster) = Cluster::new(admin) else { return Watched::NotRefilled };
    let mut shrank = false;
    loop {
        if let Ok(states) = cluster.partitions(topic) {
            let full = !states.is_empty() && states.iter().all(PartitionState::isr_full);
            if !full {
                shrank = true;
            } else if shrank {
                return Watched::Refilled(streamlab_process::clock::now_ms());
            }
        }
        let stopping = stop.load(Ordering::Relaxed);
        if stopping && !shrank {
            return Watched::NeverShrank;
        }
        if started.elapsed() > ISR_WATCH {
            return if shrank { Watched::NotRefilled } else { Watched::NeverShrank };
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_offset_is_fixed_by_the_seed_and_inside_the_first_third_of_the_window() {
        let a = offset_s(42, 12.0);
        assert_eq!(a, offset_s(42, 12.0));
        assert_ne!(a, offset_s(43, 12.0));
        for seed in 0..1000 {
            let o = offset_s(seed, 10.0);
            assert!((2.0..3.5).contains(&o), "seed {seed}: {o}");
        }
    }
}
