//! The ledger (`crate::drivers::contract::ledger`: what a producer sent and what became of each record) compared
//! with what every partition holds from offset 0 to its high watermark.

use std::collections::BTreeMap;

use crate::drivers::contract::ledger::{Ack, Ledger};

/// What one partition holds, in offset order: each record's offset and sequence number (`None`: not ours).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PartitionLog {
    pub partition: i32,
    pub records: Vec<(i64, Option<u64>)>,
}

/// An acknowledged record the topic does not hold.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lost {
    pub seq: u64,
    pub partition: i32,
    pub offset: i64,
}

/// The ledger against the topic.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Comparison {
    pub sent: u64,
    pub acked: u64,
    pub failed: u64,
    pub unanswered: u64,
    /// Records read back (every partition from offset 0 to its high watermark).
    pub read: u64,
    /// Acknowledged, and nowhere in the topic.
    pub lost: Vec<Lost>,
    /// Acknowledged at one partition and offset, found only elsewhere (no copy where the ack said).
    pub misplaced: u64,
    /// Copies beyond the first of a record the topic holds more than once.
    pub duplicated: u64,
    /// Records that sit after a record sent later, in the same partition (first copies only).
    pub reordered: u64,
    /// Failed or unanswered, yet in the topic.
    pub unacked_present: u64,
    /// Records in the topic the ledger never sent (not ours, or a sequence number past the last sent).
    pub unknown: u64,
}

/// Compare `ledger` with what the partitions hold.
pub fn compare(ledger: &Ledger, partitions: &[PartitionLog]) -> Comparison {
    let n = ledger.entries.len();
    // Where each sequence number was found (first copy), how many copies, and whether a copy sits where its
    // acknowledgement said (a retried record's acknowledged copy may be its second).
    let mut found: Vec<Option<(i32, i64)>> = vec![None; n];
    let mut copies: Vec<u32> = vec![0; n];
    let mut at_ack: Vec<bool> = vec![false; n];
    let mut c = Comparison {
        sent: n as u64,
        acked: ledger.acked(),
        failed: ledger.failed(),
        unanswered: ledger.unanswered(),
        ..Comparison::default()
    };
    for log in partitions {
        let mut highest: Option<u64> = None;
        for &(offset, seq) in &log.records {
            c.read += 1;
            let Some(seq) = seq.filter(|&s| (s as usize) < n) else {
                c.unknown += 1;
                continue;
            };
            let i = seq as usize;
            copies[i] += 1;
            if let Ack::Ok { partition, offset: acked, .. } = ledger.entries[i].ack {
                at_ack[i] |= (partition, acked) == (log.partition, offset);
            }
            if copies[i] > 1 {
                c.duplicated += 1;
                continue;
            }
            found[i] = Some((log.partition, offset));
            if highest.is_some_and(|h| seq < h) {
                c.reordered += 1;
            }
            highest = highest.max(Some(seq));
        }
    }
    for (i, e) in ledger.entries.iter().enumerate() {
        match (e.ack, found[i]) {
            (Ack::Ok { partition, offset, .. }, None) => c.lost.push(Lost { seq: i as u64, partition, offset }),
            (Ack::Ok { .. }, Some(_)) if !at_ack[i] => c.misplaced += 1,
            (Ack::Failed { .. } | Ack::Unanswered, Some(_)) => c.unacked_present += 1,
            _ => {}
        }
    }
    c
}

impl Comparison {
    /// Acknowledged records the topic holds.
    pub fn acked_present(&self) -> u64 {
        self.acked - self.lost.len() as u64
    }

    /// `partition 0 offsets 17, 18, 19; partition 3 offset 5` for at most `limit` lost records, then how many more.
    pub fn lost_offsets(&self, limit: usize) -> String {
        let mut by_partition: BTreeMap<i32, Vec<i64>> = BTreeMap::new();
        for l in self.lost.iter().take(limit) {
            by_partition.entry(l.partition).or_default().push(l.offset);
        }
        let mut parts: Vec<String> = by_partition
            .into_iter()
            .map(|(p, mut offsets)| {
                offsets.sort_unstable();
                let list = offsets.iter().map(i64::to_string).collect::<Vec<_>>().join(", ");
                format!("partition {p} offset{} {list}", if offsets.len() == 1 { "" } else { "s" })
            })
            .collect();
        if self.lost.len() > limit {
            parts.push(format!("and {} more", self.lost.len() - limit));
        }
        parts.join("; ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drivers::contract::ledger::Entry;

    fn ok(partition: i32, offset: i64) -> Entry {
        Entry { sent_us: 1, ack: Ack::Ok { partition, offset, at_us: 2 } }
    }

    fn log(partition: i32, seqs: &[u64]) -> PartitionLog {
        PartitionLog { partition, records: seqs.iter().enumerate().map(|(o, &s)| (o as i64, Some(s))).collect() }
    }

    /// Records 0..4 acknowledged: 0, 2 on partition 0 (offsets 0, 1), 1, 3 on partition 1 (offsets 0, 1).
    fn ledger() -> Ledger {
        Ledger { entries: vec![ok(0, 0), ok(1, 0), ok(0, 1), ok(1, 1)], errors: BTreeMap::new() }
    }

    #[test]
    fn a_topic_that_holds_exactly_the_ledger_compares_clean() {
        let c = compare(&ledger(), &[log(0, &[0, 2]), log(1, &[1, 3])]);
        assert_eq!(c, Comparison { sent: 4, acked: 4, read: 4, ..Comparison::default() });
        assert_eq!(c.acked_present(), 4);
    }

    #[test]
    fn an_acknowledged_record_missing_from_the_topic_is_lost_with_its_offset() {
        let c = compare(&ledger(), &[log(0, &[0]), log(1, &[1, 3])]);
        assert_eq!(c.lost, vec![Lost { seq: 2, partition: 0, offset: 1 }]);
        assert_eq!(c.lost_offsets(10), "partition 0 offset 1");
        assert_eq!((c.acked_present(), c.read), (3, 3));
        let all_gone = compare(&ledger(), &[log(0, &[]), log(1, &[])]);
        assert_eq!(all_gone.lost_offsets(3), "partition 0 offsets 0, 1; partition 1 offset 0; and 1 more");
    }

    #[test]
    fn a_second_copy_is_a_duplicate_not_a_reordering() {
        let c = compare(&ledger(), &[log(0, &[0, 2, 2, 0]), log(1, &[1, 3])]);
        assert_eq!((c.duplicated, c.reordered, c.read), (2, 0, 6));
        assert!(c.lost.is_empty());
    }

    #[test]
    fn a_retried_record_acknowledged_at_its_second_copy_is_a_duplicate_not_misplaced() {
        // Record 0 was written at 0@0, its acknowledgement lost with the leader; the retry landed at 0@2 and
        // was acknowledged there.
        let mut l = ledger();
        l.entries[0] = ok(0, 2);
        let c = compare(&l, &[log(0, &[0, 2, 0]), log(1, &[1, 3])]);
        assert_eq!((c.duplicated, c.misplaced), (1, 0), "{c:?}");
        assert!(c.lost.is_empty());
    }

    #[test]
    fn a_record_behind_one_sent_later_in_its_partition_is_reordered() {
        let mut l = ledger();
        l.entries[0] = ok(0, 1);
        l.entries[2] = ok(0, 0);
        let c = compare(&l, &[log(0, &[2, 0]), log(1, &[1, 3])]);
        assert_eq!((c.reordered, c.misplaced, c.duplicated), (1, 0, 0));
        // Out of order across partitions is not reordering.
        let across = compare(&ledger(), &[log(1, &[1, 3]), log(0, &[0, 2])]);
        assert_eq!(across.reordered, 0);
    }

    #[test]
    fn failed_or_unanswered_records_in_the_topic_are_counted_apart() {
        let mut l = ledger();
        l.entries[1].ack = Ack::Failed { at_us: 3 };
        l.entries[3].ack = Ack::Unanswered;
        l.errors.insert("MsgTimedOut".into(), 1);
        let c = compare(&l, &[log(0, &[0, 2]), log(1, &[1])]);
        assert_eq!((c.acked, c.failed, c.unanswered, c.unacked_present), (2, 1, 1, 1));
        assert!(c.lost.is_empty(), "an unacknowledged record may be missing");
    }

    #[test]
    fn records_found_elsewhere_or_foreign_are_told_apart() {
        let c = compare(&ledger(), &[log(0, &[0, 3]), log(1, &[1, 2, 99])]);
        assert_eq!(c.misplaced, 2, "2 acked at 0@1 sits at 1@2; 3 acked at 1@1 sits at 0@1");
        assert_eq!(c.unknown, 1);
        let garbage = PartitionLog { partition: 0, records: vec![(0, None)] };
        assert_eq!(compare(&ledger(), &[garbage]).unknown, 1);
    }
}
