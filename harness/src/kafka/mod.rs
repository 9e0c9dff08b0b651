//! Kafka plumbing shared by every arm: client configuration from the env descriptor, topics, watermarks,
//! and the librdkafka settings a client actually ran with.

pub mod admin;
pub mod config;
pub mod deliveries;
pub mod effective;
pub mod fill;
pub mod java_props;
pub mod java_tools;
pub mod stats;
pub mod watermarks;
