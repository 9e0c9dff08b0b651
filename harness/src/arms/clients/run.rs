//! The one run every clients arm is: read the knobs, let the client refuse what it cannot do (before any topic is
//! made), make a fresh topic, run the workload through the driver with the brokers' CPU read around it, read the
//! high watermarks, write the record, delete the topic.

use anyhow::Result;
use streamlab_record::Measurement;

use super::paced::{EndToEnd, paced_measurement};
use super::{
    Broker, admin_config, fetch_measurement, fresh_run_topic, latency_measurement, preload, produce_measurement,
    read_knobs, topic_high_watermark,
};
use crate::arms::ArmContext;
use crate::cpu::{BrokersCpu, HostSpan};
use crate::drivers::contract::{KafkaDriver, NotRunnable, Workload};

/// A clients arm: `driver` on a fresh topic of the knobs' workload.
pub fn run(ctx: &ArmContext, driver: &dyn KafkaDriver) -> Result<Measurement> {
    let knobs = read_knobs(ctx)?;
    if let (Workload::Latency, Some(why)) = (knobs.workload, driver.no_latency()) {
        return Err(NotRunnable(why.into()).into());
    }
    driver.refuse(&knobs)?;
    let env = &ctx.env;
    let topic = fresh_run_topic(env, &knobs, driver.name())?;
    let measurement = match knobs.workload {
        Workload::Produce => {
            let (brokers, host) = (BrokersCpu::start(env), HostSpan::start());
            driver.produce(env, &knobs, &topic).and_then(|ran| {
                let (cpu_s, host) = (brokers.spent(), Some(host.finish()));
                Ok(produce_measurement(
                    &knobs,
                    ran,
                    Broker { high_watermark: topic_high_watermark(env, &topic)?, cpu_s, host },
                ))
            })
        }
        Workload::Fetch => preload(env, &topic, &knobs).and_then(|records| {
            let (brokers, host) = (BrokersCpu::start(env), HostSpan::start());
            let ran = driver.fetch(env, &knobs, &topic, records)?;
            let host = Some(host.finish());
            Ok(fetch_measurement(ran, Broker { high_watermark: records, cpu_s: brokers.spent(), host }))
        }),
        Workload::Paced => {
            let descriptor = env.dir.join(streamlab_record::descriptor::DESCRIPTOR_FILE);
            let records = knobs.paced_records();
            let consumer = EndToEnd::start(&descriptor, &topic, knobs.partitions, records)?;
            let host = HostSpan::start();
            driver.paced(env, &knobs, &topic).and_then(|ran| {
                let host = Some(host.finish());
                let receipts = consumer.finish();
                let high_watermark = topic_high_watermark(env, &topic)?;
                Ok(paced_measurement(&knobs, ran, receipts, Broker { high_watermark, cpu_s: None, host }))
            })
        }
        Workload::Latency => {
            let host = HostSpan::start();
            driver.latency(env, &knobs, &topic).and_then(|ran| {
                let host = Some(host.finish());
                let high_watermark = topic_high_watermark(env, &topic)?;
                Ok(latency_measurement(&knobs, ran, Broker { high_watermark, cpu_s: None, host }))
            })
        }
    };
    let _ = crate::kafka::admin::delete_topic(&admin_config(env)?, &topic);
    measurement
}
