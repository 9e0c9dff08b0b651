//! One driver per Kafka client (the OpenMessaging Benchmark's shape): each module here is everything the lab
//! knows about driving one client, for every Kafka bench that drives it. Each bench says what it asks of a
//! client, and each driver answers it and declares its arms, which [`crate::arms::REGISTRY`] lists:
//! - the clients bench: produce, fetch and latency through [`crate::arms::clients::driver::Driver`];
//! - the durability bench: produce-with-ledger, a [`crate::arms::durability::ProduceFn`].
//!
//! Adding a client to both Kafka benches: its module here, its `mod` line below, its lines in the registry, and
//! its arm in `harness/matrices/clients.toml` and `durability.toml`.

pub mod c_tool;
pub mod java;
pub mod partitionline;
pub mod rdkafka;
