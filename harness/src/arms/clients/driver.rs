//! One Kafka client as the clients bench drives it ([`Driver`]), and the one [`run`] every client's arm is:
//! read the knobs, let the client refuse what it cannot do (before any topic is made), make a fresh topic, run
//! the workload on it and delete it.

use anyhow::{Result, bail};
use streamlab_record::Measurement;

use super::{Knobs, NotRunnable, Workload, admin_config, fresh_run_topic};
use crate::arms::ArmContext;

pub trait Driver {
    /// The arm's name; the run's topic is named after it.
    fn arm(&self) -> &str;

    /// Why the client has no sequential produce -> ack round trip, if it has none.
    fn no_latency(&self) -> Option<&'static str> {
        None
    }

    /// Refuse, as [`NotRunnable`], a point the client cannot run, and load what it runs with.
    fn prepare(&mut self, knobs: &Knobs) -> Result<()>;

    /// `count` records of `payload_bytes` into `topic`.
    fn produce(&self, ctx: &ArmContext, knobs: &Knobs, topic: &str) -> Result<Measurement>;

    /// Read `topic`, filled first, from offset 0.
    fn fetch(&self, ctx: &ArmContext, knobs: &Knobs, topic: &str) -> Result<Measurement>;

    /// Sequential produce -> ack round trips on `topic`'s one partition.
    fn latency(&self, _ctx: &ArmContext, _knobs: &Knobs, _topic: &str) -> Result<Measurement> {
        bail!("{} has no latency workload", self.arm())
    }
}

/// A clients arm: `driver` on a fresh topic of the knobs' workload.
pub fn run(ctx: &ArmContext, driver: &mut dyn Driver) -> Result<Measurement> {
    let knobs = Knobs::read(ctx)?;
    if let (Workload::Latency, Some(why)) = (knobs.workload, driver.no_latency()) {
        return Err(NotRunnable(why.into()).into());
    }
    driver.prepare(&knobs)?;
    let topic = fresh_run_topic(&ctx.env, &knobs, driver.arm())?;
    let measurement = match knobs.workload {
        Workload::Produce => driver.produce(ctx, &knobs, &topic),
        Workload::Fetch => driver.fetch(ctx, &knobs, &topic),
        Workload::Latency => driver.latency(ctx, &knobs, &topic),
    };
    let _ = crate::kafka::admin::delete_topic(&admin_config(&ctx.env)?, &topic);
    measurement
}
