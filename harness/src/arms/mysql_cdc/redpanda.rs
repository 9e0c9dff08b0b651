//! Redpanda Connect (written next).
