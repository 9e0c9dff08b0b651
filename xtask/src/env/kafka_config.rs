//! `--kafka-config FILE`: how every arm reaches an external cluster that is not PLAINTEXT, given as Kafka client
//! properties in Kafka's own (Java client) format. The file is read once, before anything is provisioned; a
//! setting the lab cannot apply to every arm is refused with its file and line. The password goes to an
//! owner-only file in the environment's directory (as the lab's own listeners' do) and is never echoed or
//! recorded: provenance names the settings, not their values.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use streamlab_record::descriptor::Listener;

/// The settings the lab applies to every arm (librdkafka, partitionline, the Java clients), by their Java names.
const SUPPORTED: [&str; 7] = [
    "bootstrap.servers",
    "security.protocol",
    "sasl.mechanism",
    "sasl.jaas.config",
    "ssl.truststore.type",
    "ssl.truststore.location",
    "ssl.endpoint.identification.algorithm",
];
const PROTOCOLS: [&str; 4] = ["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"];
/// The SASL mechanisms every arm's client is tested with on the lab's own listeners.
const MECHANISMS: [&str; 2] = ["SCRAM-SHA-256", "SCRAM-SHA-512"];

/// What a `--kafka-config` file says, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct KafkaConfig {
    pub file: PathBuf,
    pub bootstrap: Option<String>,
    pub security_protocol: String,
    pub sasl_mechanism: Option<String>,
    pub username: Option<String>,
    pub password: Option<String>,
    /// A PEM file of the CA certificates the brokers' certificates are checked against.
    pub ca_file: Option<PathBuf>,
    /// The settings' names, in file order (what provenance records).
    pub names: Vec<String>,
}

impl KafkaConfig {
    pub fn read(file: &Path) -> Result<KafkaConfig> {
        let text = std::fs::File::open(file).with_context(|| format!("--kafka-config {}", file.display()))?;
        let mut settings = Vec::new();
        for line in java_properties::PropertiesIter::new(text) {
            let line = line.with_context(|| format!("--kafka-config {}: not a properties file", file.display()))?;
            let number = line.line_number();
            if let java_properties::LineContent::KVPair(key, value) = line.consume_content() {
                settings.push((number, key, value));
            }
        }
        parse(file, &settings)
    }

    /// The listener every arm uses: named after what it is, as the lab's own listeners are.
    pub fn listener_name(&self) -> String {
        match (self.security_protocol.as_str(), self.sasl_mechanism.as_deref()) {
            ("PLAINTEXT", _) => "plaintext".into(),
            ("SSL", _) => "ssl".into(),
            (protocol, Some(mechanism)) => {
                let short = mechanism.to_ascii_lowercase().replace("scram-sha-", "scram");
                if protocol == "SASL_SSL" { format!("{short}_ssl") } else { short }
            }
            (protocol, None) => protocol.to_ascii_lowercase(),
        }
    }

    /// The listener, its password in `password_file` (written by the caller, owner-only).
    pub fn listener(&self, bootstrap: &str, password_file: Option<PathBuf>) -> Listener {
        Listener {
            bootstrap: self.bootstrap.clone().unwrap_or_else(|| bootstrap.to_owned()),
            security_protocol: self.security_protocol.clone(),
            sasl_mechanism: self.sasl_mechanism.clone(),
            username: self.username.clone(),
            password_file,
            ca_file: self.ca_file.clone(),
        }
    }
}

fn parse(file: &Path, settings: &[(usize, String, String)]) -> Result<KafkaConfig> {
    let at = |line: usize| format!("--kafka-config {}:{line}", file.display());
    let get = |key: &str| settings.iter().find(|(_, k, _)| k == key).map(|(n, _, v)| (*n, v.trim()));
    for (n, key, _) in settings {
        if !SUPPORTED.contains(&key.as_str()) {
            bail!(
                "{}: {key} is not a setting the lab can apply to every arm; it applies {}",
                at(*n),
                SUPPORTED.join(", ")
            );
        }
    }
    let security_protocol = match get("security.protocol") {
        Some((n, p)) if !PROTOCOLS.contains(&p) => {
            bail!("{}: security.protocol {p:?} is not one of {}", at(n), PROTOCOLS.join(", "))
        }
        Some((_, p)) => p.to_owned(),
        None => "PLAINTEXT".to_owned(),
    };
    let sasl = security_protocol.starts_with("SASL_");
    let (sasl_mechanism, username, password) = match (sasl, get("sasl.mechanism"), get("sasl.jaas.config")) {
        (false, None, None) => (None, None, None),
        (false, Some((n, _)), _) | (false, None, Some((n, _))) => {
            bail!("{}: SASL settings need security.protocol SASL_PLAINTEXT or SASL_SSL, not {security_protocol}", at(n))
        }
        (true, Some((n, m)), _) if !MECHANISMS.contains(&m) => {
            bail!("{}: sasl.mechanism {m:?} is not one of {}", at(n), MECHANISMS.join(", "))
        }
        (true, None, _) => bail!("--kafka-config {}: {security_protocol} needs sasl.mechanism", file.display()),
        (true, Some(_), None) => bail!("--kafka-config {}: SASL needs sasl.jaas.config", file.display()),
        (true, Some((_, m)), Some((n, jaas))) => {
            let (user, password) = jaas_credentials(jaas).with_context(|| at(n))?;
            (Some(m.to_owned()), Some(user), Some(password))
        }
    };
    let ca_file = match (get("ssl.truststore.type"), get("ssl.truststore.location")) {
        (Some((n, t)), _) if !t.eq_ignore_ascii_case("PEM") => {
            bail!("{}: ssl.truststore.type {t:?}: only PEM can be given to every arm (librdkafka reads no JKS)", at(n))
        }
        (None, Some((n, _))) => bail!("{}: ssl.truststore.location needs ssl.truststore.type=PEM", at(n)),
        (Some((n, _)), None) => bail!("{}: ssl.truststore.type needs ssl.truststore.location", at(n)),
        (Some(_), Some((n, path))) => {
            let path = PathBuf::from(path);
            anyhow::ensure!(path.is_file(), "{}: ssl.truststore.location {} is not a file", at(n), path.display());
            Some(path)
        }
        (None, None) => None,
    };
    if let Some((n, algorithm)) = get("ssl.endpoint.identification.algorithm")
        && !algorithm.eq_ignore_ascii_case("https")
    {
        bail!(
            "{}: every arm checks the broker's host name; ssl.endpoint.identification.algorithm must be https",
            at(n)
        );
    }
    let bootstrap = get("bootstrap.servers").map(|(_, b)| b.to_owned());
    if let (Some(b), Some((n, _))) = (&bootstrap, get("bootstrap.servers")) {
        check_bootstrap(b).with_context(|| at(n))?;
    }
    let names = settings.iter().map(|(_, k, _)| k.clone()).collect();
    Ok(KafkaConfig {
        file: file.to_owned(),
        bootstrap,
        security_protocol,
        sasl_mechanism,
        username,
        password,
        ca_file,
        names,
    })
}

/// `username="..."` and `password="..."` of a `sasl.jaas.config` for a SCRAM login module.
fn jaas_credentials(jaas: &str) -> Result<(String, String)> {
    anyhow::ensure!(
        jaas.contains("ScramLoginModule"),
        "sasl.jaas.config: the SCRAM mechanisms log in with org.apache.kafka.common.security.scram.ScramLoginModule"
    );
    let quoted = |name: &str| -> Result<String> {
        let start =
            jaas.find(&format!("{name}=\"")).with_context(|| format!("sasl.jaas.config has no {name}=\"...\""))?
                + name.len()
                + 2;
        let len = jaas[start..].find('"').with_context(|| format!("sasl.jaas.config: {name} is not closed"))?;
        Ok(jaas[start..start + len].to_owned())
    };
    Ok((quoted("username")?, quoted("password")?))
}

/// Check `host:port` syntax of `--bootstrap`.
pub fn check_bootstrap(bootstrap: &str) -> Result<()> {
    for server in bootstrap.split(',') {
        let ok = server.rsplit_once(':').is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok());
        anyhow::ensure!(ok, "--bootstrap {bootstrap:?}: expected HOST:PORT[,HOST:PORT...]");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bootstrap_list_is_host_port_pairs() {
        assert!(check_bootstrap("127.0.0.1:9092,localhost:9093").is_ok());
        assert!(check_bootstrap("127.0.0.1").unwrap_err().to_string().contains("--bootstrap"));
    }

    fn read(text: &str) -> Result<KafkaConfig> {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("client.properties");
        std::fs::write(&file, text).unwrap();
        KafkaConfig::read(&file)
    }

    const SCRAM: &str = "# a managed cluster\nbootstrap.servers=127.0.0.1:9192\nsecurity.protocol=SASL_PLAINTEXT\n\
        sasl.mechanism=SCRAM-SHA-512\nsasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule \
        required \\\n    username=\"bench\" password=\"s3cret\";\n";

    #[test]
    fn a_scram_client_config_gives_the_listener_every_arm_uses_and_names_its_settings() {
        let c = read(SCRAM).unwrap();
        assert_eq!(c.listener_name(), "scram512");
        assert_eq!((c.username.as_deref(), c.password.as_deref()), (Some("bench"), Some("s3cret")));
        let l = c.listener("ignored:1", Some("/x/pw".into()));
        assert_eq!((l.bootstrap.as_str(), l.security_protocol.as_str()), ("127.0.0.1:9192", "SASL_PLAINTEXT"));
        assert_eq!(l.sasl_mechanism.as_deref(), Some("SCRAM-SHA-512"));
        assert_eq!(
            c.names,
            ["bootstrap.servers", "security.protocol", "sasl.mechanism", "sasl.jaas.config"],
            "names, never values"
        );
    }

    #[test]
    fn what_cannot_be_applied_to_every_arm_is_refused_with_its_line() {
        let e = |text: &str| format!("{:#}", read(text).unwrap_err());
        let unknown = e("security.protocol=SSL\nssl.truststore.type=PEM\nclient.id=x\n");
        assert!(unknown.contains("client.properties:3: client.id is not a setting"), "{unknown}");
        let jks = e("security.protocol=SSL\nssl.truststore.type=JKS\nssl.truststore.location=/etc/hosts\n");
        assert!(jks.contains(":2: ssl.truststore.type \"JKS\""), "{jks}");
        let plain = e("security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n");
        assert!(plain.contains(":2: sasl.mechanism \"PLAIN\" is not one of SCRAM-SHA-256, SCRAM-SHA-512"), "{plain}");
        let protocol = e("security.protocol=SASL_SCRAM\n");
        assert!(protocol.contains(":1: security.protocol \"SASL_SCRAM\""), "{protocol}");
        let no_password = e(&SCRAM.replace(" password=\"s3cret\"", ""));
        assert!(no_password.contains(":5") && no_password.contains("no password="), "{no_password}");
        assert!(!e(&SCRAM.replace("SCRAM-SHA-512", "SCRAM-SHA-1")).contains("s3cret"), "never echoes the secret");
        let missing = format!("{:#}", KafkaConfig::read(Path::new("/nonexistent/client.properties")).unwrap_err());
        assert!(missing.contains("--kafka-config /nonexistent/client.properties"), "{missing}");
    }
}
