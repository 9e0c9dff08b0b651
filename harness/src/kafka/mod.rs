//! Kafka plumbing shared by every arm: client configuration from the env descriptor, topics, watermarks.

pub mod admin;
pub mod config;
pub mod stats;
