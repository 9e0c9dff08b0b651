//! Java client properties (`java.util.Properties` files) for one of the environment's listeners: its address and
//! security settings, as every Java client the lab starts reads them (the perf tools' `--producer.config`, the
//! durability ledger driver, Kafka Connect's worker). Written to owner-only files; described in records with the
//! password masked.

use anyhow::{Context, Result, bail};
use streamlab_record::EnvDescriptor;
use streamlab_record::descriptor::Listener;

/// Ordered `key=value` pairs; `secret` is masked wherever [`Properties::describe`] shows a value.
#[derive(Debug, Clone, Default)]
pub struct Properties {
    pairs: Vec<(String, String)>,
    secret: Option<String>,
}

impl Properties {
    /// The listener's address and security settings (and nothing else).
    pub fn for_listener(name: &str, l: &Listener, password: Option<&str>) -> Result<Properties> {
        let mut p = Properties::default();
        p.set("bootstrap.servers", &l.bootstrap);
        p.set("security.protocol", &l.security_protocol);
        if let Some(ca) = &l.ca_file {
            p.set("ssl.truststore.type", "PEM");
            p.set("ssl.truststore.location", &ca.display().to_string());
        }
        let Some(mechanism) = l.sasl_mechanism.as_deref() else { return Ok(p) };
        let username = l.username.as_deref().with_context(|| format!("listener {name} ({mechanism}) names no user"))?;
        let jaas = match mechanism {
            "OAUTHBEARER" => format!(
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required \
                 unsecuredLoginStringClaim_sub={};",
                jaas_quoted(username)?
            ),
            "SCRAM-SHA-256" | "SCRAM-SHA-512" => {
                let password = password.with_context(|| format!("listener {name} ({mechanism}) has no password"))?;
                p.secret = Some(password.to_owned());
                format!(
                    "org.apache.kafka.common.security.scram.ScramLoginModule required username={} password={};",
                    jaas_quoted(username)?,
                    jaas_quoted(password)?
                )
            }
            other => bail!("listener {name}: SASL mechanism {other} has no Java client settings here"),
        };
        p.set("sasl.mechanism", mechanism);
        p.set("sasl.jaas.config", &jaas);
        Ok(p)
    }

    /// The settings of the environment's default listener (plaintext on the lab's own cluster, or what an external
    /// cluster's `--kafka-config` describes), its password read from the environment's owner-only file.
    pub fn for_default_listener(env: &EnvDescriptor) -> Result<Properties> {
        let name = env.default_listener();
        let listener = env.listener(name).context("the environment has no default listener")?;
        Properties::for_listener(name, listener, listener.password()?.as_deref())
    }

    /// The pairs in the order they were set.
    pub fn pairs(&self) -> impl Iterator<Item = (&str, &str)> {
        self.pairs.iter().map(|(k, v)| (k.as_str(), v.as_str()))
    }

    /// The password these settings carry, if any (for a caller that must mask it in text of its own).
    pub fn secret(&self) -> Option<&str> {
        self.secret.as_deref()
    }

    pub fn set(&mut self, key: &str, value: &str) {
        self.pairs.retain(|(k, _)| k != key);
        self.pairs.push((key.to_owned(), value.to_owned()));
    }

    /// The file text: one `key=value` a line, escaped for `java.util.Properties` (read as ISO-8859-1).
    pub fn render(&self) -> String {
        self.pairs.iter().map(|(k, v)| format!("{k}={}\n", escape(v))).collect()
    }

    /// `key=value key=value ...` for a record, with the password replaced by `***`.
    pub fn describe(&self) -> String {
        let mask = |v: &str| match &self.secret {
            Some(s) if !s.is_empty() => v.replace(s.as_str(), "***"),
            _ => v.to_owned(),
        };
        self.pairs.iter().map(|(k, v)| format!("{k}={}", mask(v))).collect::<Vec<_>>().join(" ")
    }
}

/// A JAAS option value in double quotes (the JAAS parser has no escape for a quote inside one).
fn jaas_quoted(value: &str) -> Result<String> {
    if value.contains('"') || value.contains('\\') {
        bail!("a SASL user or password with a quote or backslash cannot be written into sasl.jaas.config");
    }
    Ok(format!("\"{value}\""))
}

/// `java.util.Properties` escapes for a value: backslash, line breaks, a leading space, and anything outside
/// printable ASCII as \uXXXX (the file is read as ISO-8859-1).
fn escape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for (i, c) in value.chars().enumerate() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            ' ' if i == 0 => out.push_str("\\ "),
            ' '..='~' => out.push(c),
            _ => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn listener(protocol: &str, mechanism: Option<&str>, user: Option<&str>, ca: Option<&str>) -> Listener {
        Listener {
            bootstrap: "127.0.0.1:9092".into(),
            security_protocol: protocol.into(),
            sasl_mechanism: mechanism.map(Into::into),
            username: user.map(Into::into),
            password_file: None,
            ca_file: ca.map(PathBuf::from),
        }
    }

    #[test]
    fn scram_settings_carry_the_password_in_the_file_and_mask_it_in_the_description() {
        let l = listener("SASL_PLAINTEXT", Some("SCRAM-SHA-512"), Some("streamlab"), None);
        let p = Properties::for_listener("scram512", &l, Some("s3cret")).unwrap();
        assert_eq!(
            p.render(),
            "bootstrap.servers=127.0.0.1:9092\nsecurity.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\nsasl.jaas.config=org.apache.kafka.common.\
             security.scram.ScramLoginModule required username=\"streamlab\" password=\"s3cret\";\n"
        );
        assert!(!p.describe().contains("s3cret") && p.describe().contains("password=\"***\""), "{}", p.describe());
        let none = Properties::for_listener("scram512", &l, None).unwrap_err().to_string();
        assert!(none.contains("scram512") && none.contains("no password"), "{none}");
        assert!(Properties::for_listener("scram512", &l, Some("a\"b")).is_err());
    }

    #[test]
    fn ssl_and_oauth_settings_match_what_the_broker_probe_uses() {
        let ssl = listener("SSL", None, None, Some("/env/kafka/ca.pem"));
        assert_eq!(
            Properties::for_listener("ssl", &ssl, None).unwrap().render(),
            "bootstrap.servers=127.0.0.1:9092\nsecurity.protocol=SSL\nssl.truststore.type=PEM\nssl.truststore.location=/env/kafka/ca.pem\n"
        );
        let oauth = listener("SASL_PLAINTEXT", Some("OAUTHBEARER"), Some("admin"), None);
        let text = Properties::for_listener("oauth", &oauth, None).unwrap().render();
        assert!(text.contains("sasl.mechanism=OAUTHBEARER\n"), "{text}");
        assert!(text.contains("OAuthBearerLoginModule required unsecuredLoginStringClaim_sub=\"admin\";"), "{text}");
        let plain = listener("PLAINTEXT", None, None, None);
        assert_eq!(
            Properties::for_listener("plaintext", &plain, None).unwrap().render(),
            "bootstrap.servers=127.0.0.1:9092\nsecurity.protocol=PLAINTEXT\n"
        );
        let gssapi = listener("SASL_PLAINTEXT", Some("GSSAPI"), Some("u"), None);
        assert!(Properties::for_listener("k", &gssapi, None).unwrap_err().to_string().contains("GSSAPI"));
    }

    #[test]
    fn values_are_escaped_for_java_properties() {
        let mut p = Properties::default();
        p.set("ssl.truststore.location", "C:\\certs\\ca é.pem");
        p.set("x", " leading");
        assert_eq!(p.render(), "ssl.truststore.location=C:\\\\certs\\\\ca \\u00e9.pem\nx=\\ leading\n");
        p.set("x", "again");
        assert!(
            p.render().ends_with("\nx=again\n") && p.render().matches("x=").count() == 1,
            "set twice, written once"
        );
    }
}
