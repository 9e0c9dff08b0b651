//! The durability bench's side of the contract: the work a ledger-keeping producer is given ([`LedgerWork`]), the
//! ledger it keeps ([`Ledger`]: every record it sent and what became of it, indexed by the sequence number the
//! record carries in its first 8 bytes) and what it hands back ([`LedgerProduced`]).

use std::collections::BTreeMap;
use std::sync::OnceLock;
use std::time::Duration;

use super::ProducerSettings;

/// What became of one record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ack {
    /// Sent; no answer came (the client gave up or the run ended first).
    Unanswered,
    /// The broker acknowledged it at this partition and offset.
    Ok { partition: i32, offset: i64, at_us: u64 },
    /// The client reported a failure.
    Failed { at_us: u64 },
}

/// One sent record: when (epoch µs) and what became of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry {
    pub sent_us: u64,
    pub ack: Ack,
}

/// Every record a producer sent, by sequence number (its index), and the client's errors by kind.
#[derive(Debug, Clone, Default)]
pub struct Ledger {
    pub entries: Vec<Entry>,
    pub errors: BTreeMap<String, u64>,
}

impl Ledger {
    pub fn acked(&self) -> u64 {
        self.entries.iter().filter(|e| matches!(e.ack, Ack::Ok { .. })).count() as u64
    }

    pub fn failed(&self) -> u64 {
        self.entries.iter().filter(|e| matches!(e.ack, Ack::Failed { .. })).count() as u64
    }

    pub fn unanswered(&self) -> u64 {
        self.entries.iter().filter(|e| e.ack == Ack::Unanswered).count() as u64
    }
}

/// The value of record `seq`: its sequence number (8 bytes, big-endian), then `'x'` up to `payload_bytes`.
pub fn payload(seq: u64, payload_bytes: usize) -> Vec<u8> {
    let mut v = vec![b'x'; payload_bytes.max(8)];
    v[..8].copy_from_slice(&seq.to_be_bytes());
    v
}

/// The sequence number a value carries, if it is one of ours.
pub fn seq_of(value: &[u8]) -> Option<u64> {
    value.get(..8).map(|b| u64::from_be_bytes(b.try_into().expect("8 bytes")))
}

/// When the producer's first record was acknowledged (epoch ms): its timed run starts then, the bench's window
/// `warmup_s` later, and the fault at its offset into that window.
#[derive(Debug, Default)]
pub struct FirstAck(OnceLock<u64>);

impl FirstAck {
    pub fn mark(&self, epoch_ms: u64) {
        let _ = self.0.set(epoch_ms);
    }

    pub fn get(&self) -> Option<u64> {
        self.0.get().copied()
    }
}

/// How long a producer's first record may wait for its acknowledgement: the client's start (a JVM, connections, a
/// SASL handshake, metadata, an idempotent producer id) on a loaded host. Past it the run fails with its own reason.
pub const FIRST_ACK_WAIT: Duration = Duration::from_secs(60);

/// The first record's answer as the moment the client could send (epoch µs), or why it could not: its error (from
/// `errors`, the client's errors so far) or no answer within [`FIRST_ACK_WAIT`].
pub fn first_ack(ack: Ack, errors: &BTreeMap<String, u64>) -> anyhow::Result<u64> {
    match ack {
        Ack::Ok { at_us, .. } => Ok(at_us),
        Ack::Failed { .. } => {
            let named: Vec<&str> = errors.keys().map(String::as_str).collect();
            anyhow::bail!("the producer's first record failed before its run began: {}", named.join("; "))
        }
        Ack::Unanswered => anyhow::bail!(
            "the producer's first record was not acknowledged within {} s of its send, so its run never began (the \
             client could not connect, authenticate, get metadata or a producer id)",
            FIRST_ACK_WAIT.as_secs()
        ),
    }
}

/// What a ledger-keeping producer is asked to do: send one record and wait for its acknowledgement (at most
/// [`FIRST_ACK_WAIT`], marking it in [`FirstAck`]), so that a slow start is not part of the run; then produce as
/// fast as the client accepts records for [`LedgerWork::run_time`] from that acknowledgement, at most
/// `max_records` in all, then flush.
#[derive(Debug, Clone)]
pub struct LedgerWork {
    pub producer: ProducerSettings,
    pub max_in_flight: u64,
    /// How long a record may wait for its acknowledgement (librdkafka message.timeout.ms, Java and partitionline
    /// delivery.timeout.ms).
    pub delivery_timeout_ms: u64,
    pub max_records: u64,
    pub run_time: Duration,
}

impl LedgerWork {
    /// How long the flush after the window may take.
    pub fn flush_timeout(&self) -> Duration {
        Duration::from_millis(self.delivery_timeout_ms) + Duration::from_secs(30)
    }
}

/// What a ledger-keeping producer hands back.
pub struct LedgerProduced {
    pub ledger: Ledger,
    /// CPU seconds of the client (this process, or the JVM it ran) over the produce phase.
    pub client_cpu_s: f64,
    /// The producer settings as the client ran them, under Java's names (see streamlab_record::applied).
    pub settings: Vec<(&'static str, String)>,
    /// Broker connections the client opens for produce requests.
    pub connections: String,
    /// What ran (secrets never in it).
    pub command: String,
    pub versions: BTreeMap<String, String>,
    pub note: Option<String>,
    /// Why the client may have received records out of their sequence order (so a reordering in the topic is
    /// not the client's to answer for), or `None` when it received them in order.
    pub unordered_handoff: Option<&'static str>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_payload_carries_its_sequence_number() {
        let p = payload(0x0102, 100);
        assert_eq!((p.len(), seq_of(&p), p[99]), (100, Some(0x0102), b'x'));
        assert_eq!(payload(7, 3).len(), 8, "never shorter than the sequence number");
        assert_eq!(seq_of(b"short"), None);
    }

    #[test]
    fn the_first_acknowledgement_starts_the_run_and_anything_else_is_a_reason() {
        let ok = Ack::Ok { partition: 1, offset: 0, at_us: 7_000 };
        assert_eq!(first_ack(ok, &BTreeMap::new()).unwrap(), 7_000);
        let errors = BTreeMap::from([("NotEnoughReplicasException".to_owned(), 1)]);
        let failed = first_ack(Ack::Failed { at_us: 9 }, &errors).unwrap_err().to_string();
        assert!(failed.contains("first record failed") && failed.contains("NotEnoughReplicas"), "{failed}");
        let silent = first_ack(Ack::Unanswered, &BTreeMap::new()).unwrap_err().to_string();
        assert!(silent.contains("not acknowledged within 60 s"), "{silent}");
    }
}
