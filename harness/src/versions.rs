//! Client library versions an arm observed at run time, merged into provenance by the runner.
//! (Crate versions come from Cargo.lock, read by the runner.)

use std::collections::BTreeMap;

pub fn client_versions() -> BTreeMap<String, String> {
    let (_, librdkafka) = rdkafka::util::get_rdkafka_version();
    BTreeMap::from([("librdkafka".to_owned(), librdkafka)])
}
