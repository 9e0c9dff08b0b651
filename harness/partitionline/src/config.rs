//! partitionline's configuration from the lab's settings: the one place a `ProducerConfig` or `ConsumerConfig` is
//! built, so the harness describes exactly what the bench binary runs.

use std::time::Duration;

use anyhow::{Context, Result};
use partitionline::{Acks, Compression, ConsumerConfig, ProducerConfig, Sasl, TlsConfig};
use serde::{Deserialize, Serialize};
use streamlab_record::arms::NotRunnable;
use streamlab_record::descriptor::Listener;

/// The lab's settings that reach the client. Where a count is 0 the crate's default stands.
#[derive(Clone, Serialize, Deserialize)]
pub struct Settings {
    pub listener: Listener,
    /// The listener's password, read from its file by the harness (a job travels on stdin, never on a command
    /// line).
    pub password: Option<String>,
    pub acks: i16,
    pub linger_ms: u64,
    /// The crate's codec name: `none`, `gzip`, `snappy` or `lz4`.
    pub compression: String,
    pub idempotence: bool,
    /// Produce connections per broker (the crate's default is 8, as the seed ran).
    pub connections: usize,
    pub batch_records: usize,
    pub batch_bytes: usize,
    pub payload_bytes: usize,
    pub fetch_max_wait_ms: i32,
    pub fetch_min_bytes: i32,
    pub fetch_max_bytes: i32,
}

impl Settings {
    /// The produce throughput configuration: the settings where the crate has them, its defaults elsewhere (16
    /// in flight per connection), with the listener's TLS and SASL.
    pub fn producer(&self) -> Result<ProducerConfig> {
        let mut cfg = ProducerConfig::bootstrap(servers(&self.listener.bootstrap))
            .acks(acks(self.acks)?)
            .linger(Duration::from_millis(self.linger_ms))
            .compression(compression(&self.compression)?)
            .idempotent(self.idempotence);
        if self.connections > 0 {
            cfg = cfg.connections(self.connections);
        }
        if self.batch_records > 0 {
            cfg = cfg.batch_records(self.batch_records);
        }
        if self.batch_bytes > 0 {
            cfg = cfg.batch_bytes(self.batch_bytes);
        }
        Ok(self.security()?.apply_producer(cfg))
    }

    /// The seed's bench_latency producer: one record per request, one request at a time, on one connection.
    pub fn latency_producer(&self) -> Result<ProducerConfig> {
        let cfg = ProducerConfig::bootstrap(servers(&self.listener.bootstrap))
            .acks(acks(self.acks)?)
            .linger(Duration::ZERO)
            .batch_records(1)
            // bench_latency's value: room for one record and its framing.
            .batch_bytes(self.payload_bytes.saturating_add(256))
            .connections(1)
            .max_in_flight(1)
            .idempotent(self.idempotence);
        Ok(self.security()?.apply_producer(cfg))
    }

    pub fn consumer(&self) -> Result<ConsumerConfig> {
        let cfg = ConsumerConfig::bootstrap(servers(&self.listener.bootstrap))
            .max_wait_ms(self.fetch_max_wait_ms)
            .min_bytes(self.fetch_min_bytes)
            // Both fetch.max.bytes and max.partition.fetch.bytes, as the librdkafka arms set both.
            .max_bytes(self.fetch_max_bytes);
        Ok(self.security()?.apply_consumer(cfg))
    }

    pub fn security(&self) -> Result<Security> {
        Security::of(&self.listener, self.password.clone())
    }
}

fn servers(bootstrap: &str) -> Vec<String> {
    bootstrap.split(',').map(|s| s.trim().to_owned()).collect()
}

fn acks(setting: i16) -> Result<Acks> {
    Acks::from_i16(setting).with_context(|| format!("acks {setting} is not 0, 1 or -1"))
}

/// The crate's codec by name (the harness refuses zstd, which partitionline 0.1.0 lacks, before it makes a topic).
fn compression(name: &str) -> Result<Compression> {
    Compression::from_name(name).with_context(|| format!("partitionline 0.1.0 has no codec {name:?}"))
}

/// The listener's TLS and SASL, as partitionline takes them.
pub struct Security {
    pub tls: Option<TlsConfig>,
    pub sasl: Option<Sasl>,
    /// e.g. `SSL, CA <file>, server name 127.0.0.1` (never the password).
    pub described: String,
}

impl Security {
    pub fn of(listener: &Listener, password: Option<String>) -> Result<Self> {
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

    pub fn apply_producer(&self, mut cfg: ProducerConfig) -> ProducerConfig {
        if let Some(tls) = &self.tls {
            cfg = cfg.tls(tls.clone());
        }
        if let Some(sasl) = &self.sasl {
            cfg = cfg.sasl(sasl.clone());
        }
        cfg
    }

    pub fn apply_consumer(&self, mut cfg: ConsumerConfig) -> ConsumerConfig {
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
pub fn server_name(bootstrap: &str) -> Result<String> {
    let first = bootstrap.split(',').next().unwrap_or(bootstrap).trim();
    let (host, _port) = first.rsplit_once(':').with_context(|| format!("bootstrap {bootstrap:?} is not host:port"))?;
    Ok(host.trim_start_matches('[').trim_end_matches(']').to_owned())
}

fn sasl(listener: &Listener, password: Option<String>) -> Result<Option<Sasl>> {
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn listener(security_protocol: &str, mechanism: Option<&str>, user: Option<&str>) -> Listener {
        Listener {
            bootstrap: "127.0.0.1:9095".into(),
            security_protocol: security_protocol.into(),
            sasl_mechanism: mechanism.map(Into::into),
            username: user.map(Into::into),
            password_file: None,
            ca_file: None,
        }
    }

    #[test]
    fn acks_outside_0_1_and_minus_1_are_refused() {
        assert!(acks(2).is_err());
        assert_eq!(acks(0).unwrap(), Acks::None);
        assert_eq!(acks(-1).unwrap(), Acks::All);
    }

    #[test]
    fn a_codec_the_crate_lacks_is_an_error_naming_it() {
        assert_eq!(compression("lz4").unwrap(), Compression::Lz4);
        let err = compression("zstd").unwrap_err();
        assert!(err.to_string().contains("\"zstd\""), "{err}");
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
        assert_eq!(servers("127.0.0.1:1, 127.0.0.1:2"), ["127.0.0.1:1", "127.0.0.1:2"]);
        let dir = tempfile::tempdir().unwrap();
        let ca = dir.path().join("ca.pem");
        std::fs::write(&ca, "-----BEGIN CERTIFICATE-----\n").unwrap();
        let ssl = Listener { ca_file: Some(ca.clone()), ..listener("SSL", None, None) };
        let s = Security::of(&ssl, None).unwrap();
        let tls = s.tls.unwrap();
        assert_eq!(tls.ca_pem.as_deref(), Some(&b"-----BEGIN CERTIFICATE-----\n"[..]));
        assert_eq!(tls.server_name.as_deref(), Some("127.0.0.1"));
        let missing = Listener { ca_file: Some(dir.path().join("nope.pem")), ..ssl };
        let err = Security::of(&missing, None).err().expect("a missing CA file is an error");
        assert!(err.to_string().contains("nope.pem"), "{err}");
    }
}
