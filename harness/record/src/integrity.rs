//! Completeness checks: every number is backed by a count the broker or server confirms.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IntegrityStatus {
    Verified,
    Failed,
    /// The arm did not get far enough to check (it failed or did not run).
    NotChecked,
}

/// What a durability record's integrity method says when the client was handed its records out of sequence
/// order, so a reordering in the topic was counted but not held against it (the site marks the count).
pub const REORDERING_NOT_JUDGED: &str = "reordering is not judged for this client";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Integrity {
    pub status: IntegrityStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed: Option<u64>,
    /// How it was checked, e.g. `sum of partition high watermarks == acknowledged records`.
    pub method: String,
}

impl Integrity {
    /// Compare what the arm claims with what the broker/server holds.
    pub fn compare(expected: u64, observed: u64, method: impl Into<String>) -> Self {
        let status = if expected == observed { IntegrityStatus::Verified } else { IntegrityStatus::Failed };
        Integrity { status, expected: Some(expected), observed: Some(observed), method: method.into() }
    }

    pub fn not_checked(method: impl Into<String>) -> Self {
        Integrity { status: IntegrityStatus::NotChecked, expected: None, observed: None, method: method.into() }
    }

    /// A human reason for a failed check, e.g. for the site's "withdrawn" line.
    pub fn failure_reason(&self) -> Option<String> {
        (self.status == IntegrityStatus::Failed).then(|| match (self.expected, self.observed) {
            // The counts agree: what failed is in the method (a duplicate, a reordering).
            (Some(e), Some(o)) if e == o => format!("integrity failed: {}", self.method),
            (expected, observed) => format!(
                "integrity failed: expected {} but observed {} ({})",
                expected.map_or("?".into(), |v| v.to_string()),
                observed.map_or("?".into(), |v| v.to_string()),
                self.method
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_that_differs_from_the_watermarks_fails() {
        let i = Integrity::compare(1_000, 999, "hwm");
        assert_eq!(i.status, IntegrityStatus::Failed);
        assert_eq!(i.failure_reason().unwrap(), "integrity failed: expected 1000 but observed 999 (hwm)");
        assert_eq!(Integrity::compare(5, 5, "hwm").status, IntegrityStatus::Verified);
        assert!(Integrity::compare(5, 5, "hwm").failure_reason().is_none());
        let same_counts = Integrity { status: IntegrityStatus::Failed, ..Integrity::compare(5, 5, "2 duplicated") };
        assert_eq!(same_counts.failure_reason().unwrap(), "integrity failed: 2 duplicated");
    }
}
