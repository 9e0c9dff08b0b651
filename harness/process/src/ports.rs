//! Free loopback ports for the services the lab starts. They are taken below the kernel's ephemeral range:
//! a port handed out inside it could be taken by any outgoing connection (a client of a test running
//! beside us) in the seconds between our releasing it and the service binding it. Every socket is held
//! until all are found, so the ports are distinct, then released for the services to bind.

use std::net::{Ipv4Addr, TcpListener};

use anyhow::{Result, ensure};

/// Where the search starts: above the ports well-known services use.
const LOWEST: u16 = 10_000;
/// The Linux default's first ephemeral port, when /proc does not say.
const DEFAULT_EPHEMERAL_LOW: u16 = 32_768;

pub fn free_loopback_ports(n: usize) -> Result<Vec<u16>> {
    let high = ephemeral_low().max(LOWEST + 1_000);
    let span = u32::from(high - LOWEST);
    // A different starting point per process and call, so two environments coming up at once rarely probe
    // the same ports (and a port one of them holds is skipped by the other's bind).
    let seed = std::process::id().wrapping_mul(7_919) ^ crate::clock::now_ms() as u32;
    let mut held = Vec::with_capacity(n);
    for i in 0..span {
        if held.len() == n {
            break;
        }
        let port = LOWEST + (seed.wrapping_add(i) % span) as u16;
        if let Ok(listener) = TcpListener::bind((Ipv4Addr::LOCALHOST, port)) {
            held.push(listener);
        }
    }
    ensure!(held.len() == n, "only {} free loopback ports between {LOWEST} and {high}, {n} wanted", held.len());
    Ok(held.iter().map(|l| l.local_addr().map(|a| a.port())).collect::<std::io::Result<_>>()?)
}

/// The first port of the kernel's ephemeral range (net.ipv4.ip_local_port_range).
fn ephemeral_low() -> u16 {
    std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse().ok())
        .unwrap_or(DEFAULT_EPHEMERAL_LOW)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_are_distinct_free_and_outside_the_ephemeral_range() {
        let ports = free_loopback_ports(64).unwrap();
        let mut unique = ports.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), ports.len(), "ports must be distinct");
        assert!(ports.iter().all(|&p| (LOWEST..ephemeral_low()).contains(&p)), "{ports:?}");
        // A port someone holds is never handed out.
        let held: Vec<TcpListener> =
            ports.iter().map(|&p| TcpListener::bind((Ipv4Addr::LOCALHOST, p)).unwrap()).collect();
        let more = free_loopback_ports(64).unwrap();
        assert!(more.iter().all(|p| !ports.contains(p)), "{more:?} overlaps the held {ports:?}");
        drop(held);
    }
}
