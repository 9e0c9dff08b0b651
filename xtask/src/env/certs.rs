//! Per-environment TLS material: a throwaway CA and a broker certificate for 127.0.0.1 and localhost.

use anyhow::{Context, Result};
use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, KeyPair, SanType};

pub struct TlsMaterial {
    pub ca_pem: String,
    /// Broker certificate chain (leaf then CA), PEM.
    pub broker_chain_pem: String,
    /// Broker private key, PKCS#8 PEM (`BEGIN PRIVATE KEY`), as Kafka's PEM keystore wants.
    pub broker_key_pem: String,
}

pub fn generate(env_id: &str) -> Result<TlsMaterial> {
    let ca_key = KeyPair::generate().context("cannot generate the CA key")?;
    let mut ca_params = CertificateParams::new(Vec::<String>::new())?;
    ca_params.distinguished_name.push(DnType::CommonName, format!("streamlab CA {env_id}"));
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).context("cannot self-sign the CA")?;

    let broker_key = KeyPair::generate().context("cannot generate the broker key")?;
    let mut params = CertificateParams::new(vec!["localhost".to_owned()])?;
    params.subject_alt_names.push(SanType::IpAddress(std::net::Ipv4Addr::LOCALHOST.into()));
    params.distinguished_name.push(DnType::CommonName, "localhost");
    let issuer = rcgen::Issuer::from_params(&ca_params, &ca_key);
    let broker = params.signed_by(&broker_key, &issuer).context("cannot sign the broker certificate")?;

    Ok(TlsMaterial {
        ca_pem: ca.pem(),
        broker_chain_pem: format!("{}{}", broker.pem(), ca.pem()),
        broker_key_pem: broker_key.serialize_pem(),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_broker_key_is_pkcs8_and_the_chain_has_two_certificates() {
        let tls = super::generate("t").unwrap();
        assert!(tls.broker_key_pem.starts_with("-----BEGIN PRIVATE KEY-----"));
        assert_eq!(tls.broker_chain_pem.matches("BEGIN CERTIFICATE").count(), 2);
        assert!(tls.ca_pem.starts_with("-----BEGIN CERTIFICATE-----"));
    }
}
