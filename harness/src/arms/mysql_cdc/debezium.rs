//! Debezium on Kafka Connect (written next).
