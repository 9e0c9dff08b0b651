//! The source and the chain: fixed-size keyless payloads generated as fast as the pipeline threads poll,
//! borrowed (never copied) through the chain into one keyless Kafka message per record.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use spate::checkpoint::{AckIssuer, AckRef};
use spate::deser::{Deserializer, EmitRecord, RecFamily};
use spate::error::{DeserError, SinkError, SourceError};
use spate::kafka::{KafkaMessage, MessageEncoder};
use spate::record::{PartitionId, RawPayload, Record};
use spate::source::{LaneId, PayloadBatch, Source, SourceCtx, SourceEvent, SourceLane};

use super::config::GeneratorConfig;

/// Hands out one lane per partition once, then idles. Commits are no-ops: nothing is replayed.
pub(super) struct Generator {
    config: GeneratorConfig,
    issuer: Option<AckIssuer>,
    handed_out: bool,
    generated: Arc<AtomicU64>,
}

impl Generator {
    pub(super) fn new(config: GeneratorConfig, generated: Arc<AtomicU64>) -> Self {
        Generator { config, issuer: None, handed_out: false, generated }
    }
}

pub(super) struct GeneratorLane {
    id: LaneId,
    partition: PartitionId,
    issuer: AckIssuer,
    next_offset: i64,
    /// Every payload of a poll borrows this one buffer, like a Kafka lane borrows librdkafka's memory.
    payload: Vec<u8>,
    generated: Arc<AtomicU64>,
}

pub(super) struct GeneratorBatch<'a> {
    payload: &'a [u8],
    partition: PartitionId,
    base_offset: i64,
    len: usize,
    idx: usize,
    timestamp_ms: i64,
    ack: AckRef,
}

impl Source for Generator {
    type Lane = GeneratorLane;

    fn open(&mut self, ctx: SourceCtx) -> Result<(), SourceError> {
        self.issuer = Some(ctx.issuer);
        Ok(())
    }

    fn poll_events(&mut self, timeout: Duration) -> Result<SourceEvent<GeneratorLane>, SourceError> {
        if self.handed_out {
            std::thread::sleep(timeout);
            return Ok(SourceEvent::Idle);
        }
        self.handed_out = true;
        let issuer = self.issuer.as_ref().expect("spate calls open() before poll_events()");
        let lanes = (0..self.config.partitions as u32)
            .map(|p| GeneratorLane {
                id: LaneId(p),
                partition: PartitionId(p),
                issuer: issuer.clone(),
                next_offset: 0,
                payload: vec![b'x'; self.config.payload_bytes],
                generated: Arc::clone(&self.generated),
            })
            .collect();
        Ok(SourceEvent::LanesAssigned(lanes))
    }

    fn commit(&mut self, _watermarks: &[(PartitionId, i64)]) -> Result<(), SourceError> {
        Ok(())
    }
}

impl SourceLane for GeneratorLane {
    type Batch<'a> = GeneratorBatch<'a>;

    fn id(&self) -> LaneId {
        self.id
    }

    fn partition(&self) -> PartitionId {
        self.partition
    }

    fn poll(&mut self, max_records: usize, _timeout: Duration) -> Result<Option<GeneratorBatch<'_>>, SourceError> {
        let base_offset = self.next_offset;
        self.next_offset += max_records as i64;
        self.generated.fetch_add(max_records as u64, Ordering::Relaxed);
        let ack = self.issuer.issue(self.partition, self.next_offset - 1);
        Ok(Some(GeneratorBatch {
            payload: &self.payload,
            partition: self.partition,
            base_offset,
            len: max_records,
            idx: 0,
            timestamp_ms: streamlab_process::clock::now_ms_i64(),
            ack,
        }))
    }
}

impl<'a> PayloadBatch<'a> for GeneratorBatch<'a> {
    fn next_payload(&mut self) -> Option<RawPayload<'a>> {
        if self.idx == self.len {
            return None;
        }
        let offset = self.base_offset + self.idx as i64;
        self.idx += 1;
        Some(RawPayload {
            bytes: self.payload,
            key: None,
            partition: self.partition,
            offset,
            timestamp_ms: self.timestamp_ms,
        })
    }

    fn ack(&self) -> &AckRef {
        &self.ack
    }
}

// ----- the chain: borrowed payloads in, one keyless Kafka message per record out -----

/// Records that borrow the generator's buffer: no copy between the source and the sink's encoder.
pub(super) struct BorrowedBytes;

impl RecFamily for BorrowedBytes {
    type Rec<'buf> = &'buf [u8];
}

#[derive(Clone, Copy)]
pub(super) struct BorrowPayload;

impl Deserializer<BorrowedBytes> for BorrowPayload {
    fn deserialize<'buf>(
        &mut self,
        raw: &RawPayload<'buf>,
        ack: &AckRef,
        out: &mut dyn EmitRecord<'buf, &'buf [u8]>,
    ) -> Result<(), DeserError> {
        // One record per payload: a Blocked flow is retried by the driver from this payload on.
        let _ = out.emit(Record { payload: raw.bytes, meta: raw.meta(), ack: ack.clone() });
        Ok(())
    }
}

#[derive(Clone, Copy)]
pub(super) struct KeylessPayload;

impl MessageEncoder<BorrowedBytes> for KeylessPayload {
    fn encode(&mut self, rec: &Record<&[u8]>, msg: &mut KafkaMessage) -> Result<(), SinkError> {
        msg.set_payload(rec.payload);
        Ok(())
    }
}
