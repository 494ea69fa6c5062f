//! Which network addresses outgoing calls made on a user's behalf (workflow WEBHOOK steps) may
//! reach (DECISIONS.md "Workflows": private, loopback and link-local targets are refused unless
//! an operator setting allows them). The caller resolves the host once, checks every address
//! here, and connects to the checked address (no second lookup a DNS rebinding could change).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// True for addresses inside the operator's network or this machine: loopback, private
/// (RFC 1918, RFC 4193), link-local, CGNAT shared space, unspecified, broadcast, multicast,
/// documentation and benchmarking ranges, `0.0.0.0/8`, and IPv4 addresses wrapped in IPv6.
pub fn is_internal(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => internal_v4(v4),
        IpAddr::V6(v6) => internal_v6(v6),
    }
}

fn internal_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || a == 0
        || (a == 100 && (64..128).contains(&b))
        || (a == 192 && b == 0 && c == 0)
        || (a == 198 && (18..20).contains(&b))
        || a >= 240
}

fn internal_v6(ip: Ipv6Addr) -> bool {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return internal_v4(v4);
    }
    let first = ip.segments()[0];
    ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        || (first & 0xfe00) == 0xfc00
        || (first & 0xffc0) == 0xfe80
        || first == 0x2001 && ip.segments()[1] == 0x0db8
        // IPv4-compatible (::a.b.c.d) and NAT64 (64:ff9b::/96) forms reach IPv4 space.
        || ip.segments()[..6] == [0; 6]
        || (first == 0x64 && ip.segments()[1] == 0xff9b)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().expect("ip")
    }

    #[test]
    fn internal_addresses_are_refused() {
        for s in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "0.1.2.3",
            "255.255.255.255",
            "224.0.0.1",
            "::1",
            "::",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::127.0.0.1",
            "64:ff9b::a00:1",
        ] {
            assert!(is_internal(ip(s)), "{s}");
        }
    }

    #[test]
    fn public_addresses_pass() {
        for s in [
            "93.184.216.34",
            "8.8.8.8",
            "2606:4700::1111",
            "::ffff:1.1.1.1",
        ] {
            assert!(!is_internal(ip(s)), "{s}");
        }
    }
}
