//! librdkafka client configuration for one of the environment's listeners.

use anyhow::{Context, Result};
use rdkafka::ClientConfig;
use streamlab_record::EnvDescriptor;
use streamlab_record::descriptor::Listener;

/// A `ClientConfig` that reaches `listener` of the environment with its credentials.
pub fn client_config(env: &EnvDescriptor, listener: &str) -> Result<ClientConfig> {
    let l = env.listener(listener).with_context(|| {
        let known: Vec<_> = env.kafka.listeners.keys().cloned().collect();
        format!("the environment has no listener {listener:?}; it has {known:?}")
    })?;
    Ok(config_for(l, l.password()?.as_deref()))
}

/// A `ClientConfig` that reaches the environment's default listener (what an arm uses unless a point names
/// another: plaintext here, or the listener an external cluster's `--kafka-config` describes).
pub fn default_client_config(env: &EnvDescriptor) -> Result<ClientConfig> {
    client_config(env, env.default_listener())
}

/// Each `host:port` of a bootstrap list (a cluster's listener names every broker).
pub fn servers(bootstrap: &str) -> impl Iterator<Item = String> + '_ {
    bootstrap.split(',').map(|s| s.trim().to_owned())
}

/// Same as [`client_config`] but with an explicit password (tests use it to try a wrong one).
pub fn config_for(l: &Listener, password: Option<&str>) -> ClientConfig {
    let mut cfg = ClientConfig::new();
    cfg.set("bootstrap.servers", &l.bootstrap).set("security.protocol", &l.security_protocol);
    if let Some(ca) = &l.ca_file {
        cfg.set("ssl.ca.location", ca.to_string_lossy());
        // The broker's certificate names 127.0.0.1 and localhost; verify it.
        cfg.set("ssl.endpoint.identification.algorithm", "https");
    }
    if let Some(mechanism) = &l.sasl_mechanism {
        cfg.set("sasl.mechanism", mechanism);
        if mechanism == "OAUTHBEARER" {
            // Unsecured JWT: the broker's default validator accepts it; the subject is the principal.
            let sub = l.username.as_deref().unwrap_or("admin");
            cfg.set("enable.sasl.oauthbearer.unsecure.jwt", "true")
                .set("sasl.oauthbearer.config", format!("principal={sub}"));
        } else {
            if let Some(user) = &l.username {
                cfg.set("sasl.username", user);
            }
            if let Some(pw) = password {
                cfg.set("sasl.password", pw);
            }
        }
    }
    cfg
}
