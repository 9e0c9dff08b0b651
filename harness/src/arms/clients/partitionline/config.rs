//! partitionline's configuration from the knobs and the listener, and how the record describes it: the
//! settings the crate runs with, by Java's names, for the record's `applied` map.

use std::time::Duration;

use crate::kafka::config::servers;
use anyhow::{Context, Result};
use partitionline::{Acks, ConsumerConfig, ProducerConfig, Sasl, TlsConfig};
use streamlab_record::descriptor::Listener;

use super::super::{Compression, Knobs, NotRunnable};

/// The crate's codec for the knob; zstd does not exist in partitionline 0.1.0.
pub(super) fn compression(c: Compression) -> Result<partitionline::Compression> {
    match c {
        Compression::None => Ok(partitionline::Compression::None),
        Compression::Lz4 => Ok(partitionline::Compression::Lz4),
        Compression::Zstd => Err(NotRunnable(
            "partitionline 0.1.0 has no zstd (Compression::from_name(\"zstd\") is an error; it offers none, gzip, \
             snappy and lz4)"
                .into(),
        )
        .into()),
    }
}

pub(super) fn acks(knob: i32) -> Result<Acks> {
    i16::try_from(knob).ok().and_then(Acks::from_i16).with_context(|| format!("acks {knob} is not 0, 1 or -1"))
}

/// The produce throughput configuration: the knobs where the crate has them, its defaults elsewhere (16 in
/// flight per connection; 8 connections per broker unless the `connections` knob sets them, as the seed
/// ran). Security comes from [`Security::apply_producer`].
pub(super) fn producer_config(knobs: &Knobs, bootstrap: &str) -> Result<ProducerConfig> {
    let mut cfg = ProducerConfig::bootstrap(servers(bootstrap))
        .acks(acks(knobs.acks)?)
        .linger(Duration::from_millis(knobs.linger_ms))
        .compression(compression(knobs.compression)?)
        .idempotent(knobs.idempotence);
    if knobs.connections > 0 {
        cfg = cfg.connections(usize::try_from(knobs.connections)?);
    }
    if knobs.batch_messages > 0 {
        cfg = cfg.batch_records(usize::try_from(knobs.batch_messages)?);
    }
    if knobs.batch_bytes > 0 {
        cfg = cfg.batch_bytes(usize::try_from(knobs.batch_bytes)?);
    }
    Ok(cfg)
}

/// The seed's bench_latency producer: one record per request, one request at a time, on one connection.
pub(super) fn latency_producer_config(knobs: &Knobs, bootstrap: &str) -> Result<ProducerConfig> {
    Ok(ProducerConfig::bootstrap(servers(bootstrap))
        .acks(acks(knobs.acks)?)
        .linger(Duration::ZERO)
        .batch_records(1)
        // bench_latency's value: room for one record and its framing.
        .batch_bytes(knobs.payload_bytes.saturating_add(256))
        .connections(1)
        .max_in_flight(1)
        .idempotent(knobs.idempotence))
}

pub(super) fn consumer_config(knobs: &Knobs, bootstrap: &str) -> Result<ConsumerConfig> {
    Ok(ConsumerConfig::bootstrap(servers(bootstrap))
        .max_wait_ms(i32::try_from(knobs.fetch_max_wait_ms).context("fetch_max_wait_ms")?)
        .min_bytes(i32::try_from(knobs.fetch_min_bytes).context("fetch_min_bytes")?)
        // Both fetch.max.bytes and max.partition.fetch.bytes, as the librdkafka arms set both.
        .max_bytes(i32::try_from(knobs.fetch_max_bytes).context("fetch_max_bytes")?))
}

/// The listener's TLS and SASL, as partitionline takes them.
pub(crate) struct Security {
    pub(super) tls: Option<TlsConfig>,
    pub(super) sasl: Option<Sasl>,
    /// e.g. `SSL, CA <file>, server name 127.0.0.1` (never the password).
    pub(super) described: String,
}

/// What partitionline runs with, by Java's names: TLS and SASL together are SASL_SSL.
pub(super) fn security_applied(security: &Security) -> Vec<(&'static str, String)> {
    let protocol = match (security.tls.is_some(), security.sasl.is_some()) {
        (false, false) => "PLAINTEXT",
        (true, false) => "SSL",
        (false, true) => "SASL_PLAINTEXT",
        (true, true) => "SASL_SSL",
    };
    let mut out = vec![("security.protocol", protocol.to_owned())];
    if let Some(sasl) = &security.sasl {
        let mechanism = match sasl {
            Sasl::Plain { .. } => "PLAIN",
            Sasl::ScramSha256 { .. } => "SCRAM-SHA-256",
            Sasl::ScramSha512 { .. } => "SCRAM-SHA-512",
            Sasl::OauthBearer { .. } | Sasl::Oidc(_) => "OAUTHBEARER",
        };
        out.push(("sasl.mechanism", mechanism.to_owned()));
    }
    out
}

/// The producer settings as the crate runs them: `Producer::new` forces acks=-1 and at most 5 requests in
/// flight per connection on an idempotent producer (partitionline 0.1.0 src/producer.rs, `Producer::new`).
pub(super) fn producer_applied(cfg: &ProducerConfig, security: &Security) -> Vec<(&'static str, String)> {
    let (acks, in_flight) =
        if cfg.enable_idempotence { (-1, cfg.max_in_flight.min(5)) } else { (cfg.acks, cfg.max_in_flight) };
    let mut out = vec![
        ("acks", acks.to_string()),
        ("enable.idempotence", cfg.enable_idempotence.to_string()),
        ("compression.type", cfg.compression.as_str().to_owned()),
        ("linger.ms", cfg.linger.as_millis().to_string()),
        ("batch.size", cfg.batch_bytes.to_string()),
        ("max.in.flight.requests.per.connection", in_flight.to_string()),
        ("partitioner.class", super::super::applied::PARTITIONLINE_PARTITIONER.to_owned()),
    ];
    out.extend(security_applied(security));
    out
}

/// The producer's queue cap: buffer.memory bytes, no record-count cap (the crate's default is Java's 32 MiB).
pub(super) fn queue_cap(cfg: &ProducerConfig) -> String {
    streamlab_record::applied::queue_cap(None, cfg.buffer_memory as u64)
}

/// The consumer settings as configured (a `max_poll_records` of None is no cap, as in librdkafka: no key).
pub(super) fn consumer_applied(cfg: &ConsumerConfig, security: &Security) -> Vec<(&'static str, String)> {
    let mut out = vec![
        ("fetch.min.bytes", cfg.min_bytes.to_string()),
        ("fetch.max.wait.ms", cfg.max_wait_ms.to_string()),
        ("fetch.max.bytes", cfg.max_bytes.to_string()),
        ("max.partition.fetch.bytes", cfg.max_partition_fetch_bytes.to_string()),
    ];
    if let Some(n) = cfg.max_poll_records {
        out.push(("max.poll.records", n.to_string()));
    }
    out.extend(security_applied(security));
    out
}

impl Security {
    pub(crate) fn of(listener: &Listener, password: Option<String>) -> Result<Self> {
        let (tls, tls_described) = match &listener.ca_file {
            Some(ca) => {
                let pem = std::fs::read(ca).with_context(|| format!("cannot read the CA file {}", ca.display()))?;
                let name = server_name(&listener.bootstrap)?;
                let described = format!(", CA {} (PEM bytes), server name {name}", ca.display());
                (Some(TlsConfig::default().ca_pem(pem).server_name(name)), described)
            }
            None => (None, String::new()),
        };
        let sasl = sasl(listener, password)?;
        let sasl_described = match (&listener.sasl_mechanism, &listener.username) {
            (Some(m), Some(u)) if m == "OAUTHBEARER" => format!(", OAUTHBEARER unsecured JWT, principal {u}"),
            (Some(m), Some(u)) => format!(", {m} user {u}"),
            (Some(m), None) => format!(", {m}"),
            _ => String::new(),
        };
        let described = format!("{}{tls_described}{sasl_described}", listener.security_protocol);
        Ok(Security { tls, sasl, described })
    }

    pub(crate) fn apply_producer(&self, mut cfg: ProducerConfig) -> ProducerConfig {
        if let Some(tls) = &self.tls {
            cfg = cfg.tls(tls.clone());
        }
        if let Some(sasl) = &self.sasl {
            cfg = cfg.sasl(sasl.clone());
        }
        cfg
    }

    pub(super) fn apply_consumer(&self, mut cfg: ConsumerConfig) -> ConsumerConfig {
        if let Some(tls) = &self.tls {
            cfg = cfg.tls(tls.clone());
        }
        if let Some(sasl) = &self.sasl {
            cfg = cfg.sasl(sasl.clone());
        }
        cfg
    }
}

/// The name the broker certificate is checked against: the host partitionline dials (the broker advertises
/// the same 127.0.0.1 its certificate names), set explicitly so that the record says which it was.
pub(super) fn server_name(bootstrap: &str) -> Result<String> {
    let first = bootstrap.split(',').next().unwrap_or(bootstrap).trim();
    let (host, _port) = first.rsplit_once(':').with_context(|| format!("bootstrap {bootstrap:?} is not host:port"))?;
    Ok(host.trim_start_matches('[').trim_end_matches(']').to_owned())
}

pub(super) fn sasl(listener: &Listener, password: Option<String>) -> Result<Option<Sasl>> {
    let Some(mechanism) = listener.sasl_mechanism.as_deref() else { return Ok(None) };
    let user = || listener.username.clone().with_context(|| format!("the {mechanism} listener has no username"));
    let pass = || password.clone().with_context(|| format!("the {mechanism} listener has no password file"));
    Ok(Some(match mechanism {
        "SCRAM-SHA-256" => Sasl::scram_sha256(user()?, pass()?),
        "SCRAM-SHA-512" => Sasl::scram_sha512(user()?, pass()?),
        "PLAIN" => Sasl::plain(user()?, pass()?),
        // Unsecured JWT (alg none): the principal is its only claim the crate lets us set.
        "OAUTHBEARER" => Sasl::oauthbearer(user()?),
        other => return Err(NotRunnable(format!("partitionline 0.1.0 has no SASL mechanism {other}")).into()),
    }))
}

/// The producer settings that decide throughput, as the crate will run them.
pub(super) fn describe_producer(cfg: &ProducerConfig) -> String {
    let effective =
        if cfg.enable_idempotence { " (idempotence: the crate forces acks=-1 and max_in_flight<=5)" } else { "" };
    format!(
        "acks={} linger={}ms batch_records={} batch_bytes={} max_request_size={} buffer_memory={} compression={} \
         idempotence={} connections={} max_in_flight={}{effective}",
        cfg.acks,
        cfg.linger.as_millis(),
        cfg.batch_records,
        cfg.batch_bytes,
        cfg.max_request_size,
        cfg.buffer_memory,
        cfg.compression.as_str(),
        cfg.enable_idempotence,
        cfg.connections,
        cfg.max_in_flight,
    )
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::arms::clients::partitionline::tests::{knobs, listener};

    #[test]
    fn the_seed_knobs_map_onto_the_producer_config_and_leave_connections_at_the_crate_default() {
        let cfg = producer_config(&knobs(serde_json::json!({})), "127.0.0.1:9092").unwrap();
        assert_eq!(
            (cfg.acks, cfg.linger, cfg.batch_records, cfg.batch_bytes),
            (1, Duration::from_millis(5), 32768, 1_000_000)
        );
        assert_eq!(cfg.compression, partitionline::Compression::None);
        assert_eq!((cfg.connections, cfg.max_in_flight), (8, 16));
        assert_eq!(cfg.bootstrap, vec!["127.0.0.1:9092".to_owned()]);
        let lz4 =
            producer_config(&knobs(serde_json::json!({"compression": "lz4", "acks": -1, "idempotence": true})), "h:1")
                .unwrap();
        assert_eq!((lz4.compression, lz4.acks, lz4.enable_idempotence), (partitionline::Compression::Lz4, -1, true));
    }

    #[test]
    fn the_connections_knob_sets_the_producers_connections_and_the_record_says_so() {
        let one = producer_config(&knobs(serde_json::json!({"connections": 1})), "h:1").unwrap();
        assert_eq!((one.connections, one.max_in_flight), (1, 16));
        let security = Security::of(&listener("PLAINTEXT", None, None), None).unwrap();
        let applied = crate::arms::clients::applied::base(
            &knobs(serde_json::json!({"connections": 1})),
            one.connections,
            crate::arms::clients::applied::CLOCK_BEFORE_CONNECT,
        )
        .producer(producer_applied(&one, &security))
        .build();
        assert_eq!(applied["connections"], "1 per broker");
        assert_eq!(applied["producer.max.in.flight.requests.per.connection"], "16");
        assert_eq!(applied["producer.security.protocol"], "PLAINTEXT");
        assert!(super::super::produce_asymmetries(&one, 6).connections.contains("set by the connections knob"));
        let seed = producer_config(&knobs(serde_json::json!({})), "h:1").unwrap();
        assert!(
            super::super::produce_asymmetries(&seed, 6).connections.contains("the crate's default, as the seed ran")
        );
    }

    #[test]
    fn an_idempotent_producer_is_recorded_as_the_crate_runs_it() {
        let cfg = producer_config(&knobs(serde_json::json!({"acks": 1, "idempotence": true})), "h:1").unwrap();
        let scram = listener("SASL_SSL", Some("SCRAM-SHA-256"), Some("u"));
        let security = Security { tls: Some(TlsConfig::default()), ..Security::of(&scram, Some("p".into())).unwrap() };
        let applied: std::collections::BTreeMap<_, _> = producer_applied(&cfg, &security).into_iter().collect();
        assert_eq!((applied["acks"].as_str(), applied["max.in.flight.requests.per.connection"].as_str()), ("-1", "5"));
        assert_eq!(
            (applied["security.protocol"].as_str(), applied["sasl.mechanism"].as_str()),
            ("SASL_SSL", "SCRAM-SHA-256")
        );
        assert_eq!(applied["batch.size"], "1000000");
    }

    #[test]
    fn zero_batch_knobs_keep_the_crate_defaults() {
        let cfg = producer_config(&knobs(serde_json::json!({"batch_messages": 0, "batch_bytes": 0})), "h:1").unwrap();
        let default = ProducerConfig::default();
        assert_eq!((cfg.batch_records, cfg.batch_bytes), (default.batch_records, default.batch_bytes));
        assert_eq!((default.batch_records, default.batch_bytes), (32_768, 1_000_000));
        let set =
            producer_config(&knobs(serde_json::json!({"batch_messages": 500, "batch_bytes": 200000})), "h:1").unwrap();
        assert_eq!((set.batch_records, set.batch_bytes), (500, 200_000));
    }

    #[test]
    fn zstd_is_not_runnable_and_says_why() {
        let err = producer_config(&knobs(serde_json::json!({"compression": "zstd"})), "h:1").unwrap_err();
        let not_runnable = err.downcast_ref::<NotRunnable>().expect("a NotRunnable");
        assert!(not_runnable.0.contains("no zstd"), "{not_runnable}");
    }

    #[test]
    fn acks_outside_0_1_and_minus_1_are_refused() {
        assert!(producer_config(&knobs(serde_json::json!({"acks": 2})), "h:1").is_err());
        assert_eq!(acks(0).unwrap(), Acks::None);
        assert_eq!(acks(-1).unwrap(), Acks::All);
    }

    #[test]
    fn the_latency_producer_is_one_record_at_a_time_on_one_connection() {
        let cfg =
            latency_producer_config(&knobs(serde_json::json!({"workload": "latency", "acks": -1})), "h:1").unwrap();
        assert_eq!((cfg.linger, cfg.batch_records, cfg.connections, cfg.max_in_flight), (Duration::ZERO, 1, 1, 1));
        assert_eq!((cfg.acks, cfg.batch_bytes), (-1, 356));
    }

    #[test]
    fn the_fetch_knobs_set_both_byte_caps() {
        let cfg =
            consumer_config(&knobs(serde_json::json!({"fetch_max_bytes": 1048576, "fetch_max_wait_ms": 50})), "h:1")
                .unwrap();
        assert_eq!(
            (cfg.max_wait_ms, cfg.min_bytes, cfg.max_bytes, cfg.max_partition_fetch_bytes),
            (50, 1, 1 << 20, 1 << 20)
        );
    }

    #[test]
    fn sasl_follows_the_listener_mechanism_and_never_describes_the_password() {
        let scram = listener("SASL_PLAINTEXT", Some("SCRAM-SHA-512"), Some("admin"));
        match sasl(&scram, Some("hunter2".into())).unwrap() {
            Some(Sasl::ScramSha512 { username, password }) => {
                assert_eq!((username.as_str(), password.as_str()), ("admin", "hunter2"))
            }
            _ => panic!("not SCRAM-SHA-512"),
        }
        let described = Security::of(&scram, Some("hunter2".into())).unwrap().described;
        assert!(described.contains("SCRAM-SHA-512 user admin") && !described.contains("hunter2"), "{described}");
        let oauth = listener("SASL_PLAINTEXT", Some("OAUTHBEARER"), Some("alice"));
        assert!(matches!(sasl(&oauth, None).unwrap(), Some(Sasl::OauthBearer { principal }) if principal == "alice"));
        assert!(sasl(&listener("PLAINTEXT", None, None), None).unwrap().is_none());
        let gssapi = sasl(&listener("SASL_PLAINTEXT", Some("GSSAPI"), Some("u")), None).unwrap_err();
        assert!(gssapi.downcast_ref::<NotRunnable>().is_some());
        assert!(sasl(&listener("SASL_PLAINTEXT", Some("SCRAM-SHA-256"), Some("u")), None).is_err(), "no password");
    }

    #[test]
    fn tls_reads_the_ca_file_and_checks_the_host_it_dials() {
        assert_eq!(server_name("127.0.0.1:9093").unwrap(), "127.0.0.1");
        assert_eq!(server_name("[::1]:9093").unwrap(), "::1");
        assert_eq!(server_name("127.0.0.1:9093,127.0.0.1:9094").unwrap(), "127.0.0.1", "a cluster's list");
        assert_eq!(servers("127.0.0.1:1,127.0.0.1:2").collect::<Vec<_>>(), ["127.0.0.1:1", "127.0.0.1:2"]);
        let dir = tempdir();
        let ca = dir.join("ca.pem");
        std::fs::write(&ca, "-----BEGIN CERTIFICATE-----\n").unwrap();
        let ssl = Listener { ca_file: Some(ca.clone()), ..listener("SSL", None, None) };
        let s = Security::of(&ssl, None).unwrap();
        let tls = s.tls.unwrap();
        assert_eq!(tls.ca_pem.as_deref(), Some(&b"-----BEGIN CERTIFICATE-----\n"[..]));
        assert_eq!(tls.server_name.as_deref(), Some("127.0.0.1"));
        let missing = Listener { ca_file: Some(dir.join("nope.pem")), ..ssl };
        let err = Security::of(&missing, None).err().expect("a missing CA file is an error");
        assert!(err.to_string().contains("nope.pem"), "{err}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    fn tempdir() -> PathBuf {
        let d = std::env::temp_dir().join(format!("pl-arm-test-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }
}
