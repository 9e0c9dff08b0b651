//! One driver per Kafka client (the OpenMessaging Benchmark's shape): each module here is everything the lab
//! knows about driving one client, a translator from the benches' requests ([`contract`]) to its client. The
//! drivers know no bench: the clients and durability benches (`crate::arms`) run every driver in [`DRIVERS`].
//!
//! Adding a client to both Kafka benches: its module here, its line in [`DRIVERS`], its crate in the workspace's
//! and harness's Cargo.toml, and its arm in `harness/matrices/clients.toml` and `durability.toml` (README, "Add a
//! client").

pub mod c_tool;
pub mod contract;
pub mod java;
pub mod partitionline;
pub mod rdkafka;

use self::contract::KafkaDriver;

/// Every Kafka client the benches drive, once each.
pub const DRIVERS: &[&dyn KafkaDriver] =
    &[&c_tool::C_2_15, &c_tool::C_2_12, &rdkafka::Rdkafka, &partitionline::Partitionline, &java::Java];
