//! Free loopback ports. The OS hands out ports nobody holds; we keep all sockets open until we have
//! them all, so the ports are distinct, then release them for the services to bind.

use std::net::{Ipv4Addr, TcpListener};

use anyhow::{Context, Result};

pub fn free_loopback_ports(n: usize) -> Result<Vec<u16>> {
    let listeners = (0..n)
        .map(|_| TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).context("cannot bind a loopback port"))
        .collect::<Result<Vec<_>>>()?;
    listeners.iter().map(|l| Ok(l.local_addr()?.port())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_already_taken_is_avoided() {
        let held = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let taken = held.local_addr().unwrap().port();
        let ports = free_loopback_ports(64).unwrap();
        assert!(!ports.contains(&taken));
        let mut unique = ports.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), ports.len(), "ports must be distinct");
    }
}
