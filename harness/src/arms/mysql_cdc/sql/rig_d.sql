-- Rig D (the seed's Kafka -> MySQL sink table): no primary key, no index; truncated before every run.
CREATE DATABASE IF NOT EXISTS benchdb CHARACTER SET utf8mb4;
CREATE TABLE IF NOT EXISTS benchdb.bench_events (
  id BIGINT,
  category VARCHAR(50),
  value DOUBLE,
  ts BIGINT
);
