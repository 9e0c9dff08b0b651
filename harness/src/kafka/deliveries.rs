//! Delivery reports counted: what a producer that keeps no ledger knows of what it sent.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use rdkafka::ClientContext;
use rdkafka::producer::{DeliveryResult, ProducerContext};

/// Deliveries acknowledged and failed, and the first failure.
#[derive(Debug, Default)]
pub struct Deliveries {
    acked: AtomicU64,
    failed: AtomicU64,
    first_error: Mutex<Option<String>>,
}

impl Deliveries {
    pub fn acked(&self) -> u64 {
        self.acked.load(Ordering::Relaxed)
    }

    pub fn failed(&self) -> u64 {
        self.failed.load(Ordering::Relaxed)
    }

    /// Records with a delivery report, acknowledged or failed.
    pub fn answered(&self) -> u64 {
        self.acked() + self.failed()
    }

    pub fn first_error(&self) -> Option<String> {
        self.first_error.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// A producer context that counts every delivery report into its [`Deliveries`].
#[derive(Debug, Default)]
pub struct Counting(pub Arc<Deliveries>);

impl ClientContext for Counting {}

impl ProducerContext for Counting {
    type DeliveryOpaque = ();

    fn delivery(&self, result: &DeliveryResult<'_>, _: ()) {
        let d = &self.0;
        match result {
            Ok(_) => {
                d.acked.fetch_add(1, Ordering::Relaxed);
            }
            Err((e, _)) => {
                d.failed.fetch_add(1, Ordering::Relaxed);
                d.first_error.lock().unwrap_or_else(|p| p.into_inner()).get_or_insert_with(|| e.to_string());
            }
        }
    }
}
