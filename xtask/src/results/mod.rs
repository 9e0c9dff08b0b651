//! The results model, apart from its pages (asv's split): what results/ holds and what it says. The lab
//! (`lab compare`, `lab verdicts`, the budgeted runner) and the site both stand on it.
//!
//! `load` reads and checks the runs (of one schema: `migrate` brings older records to it, once), `model` turns
//! records into per-point outcomes, `parity` decides which two records may be divided, `headline` computes
//! each matrix's headline figures, `claims` judges the seeds' claims per machine, and `attempts` compares the sessions of a resumed run. `config` is the compiled-in data they are
//! judged against (site/headlines.toml, site/seeds.toml); `format` and `words` give their numbers and metrics
//! in words. The statistics themselves live in `streamlab_record::stats`.

pub(crate) mod attempts;
pub(crate) mod claims;
pub(crate) mod compare;
pub(crate) mod config;
pub(crate) mod declared;
#[cfg(test)]
pub(crate) mod fixtures;
pub(crate) mod format;
pub(crate) mod headline;
pub(crate) mod load;
pub(crate) mod migrate;
pub(crate) mod model;
pub(crate) mod parity;
pub(crate) mod words;
