//! Which network addresses outgoing calls made on a user's behalf (workflow WEBHOOK steps) may
//! reach (DECISIONS.md "Workflows": private, loopback and link-local targets are refused unless
//! an operator setting allows them). The caller resolves the host once, checks every address
//! here, and connects to the checked address (no second lookup a DNS rebinding could change).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// True for addresses inside the operator's network or this machine: loopback, private
/// (RFC 1918, RFC 4193), link-local, CGNAT shared space, unspecified, broadcast, multicast,
/// documentation and benchmarking ranges, `0.0.0.0/8`. An IPv6 address carrying an IPv4
/// address ([`embedded_v4`]: mapped, NAT64, 6to4) is judged as that IPv4 address.
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
    if let Some(v4) = embedded_v4(ip) {
        return internal_v4(v4);
    }
    let seg = ip.segments();
    ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        || (seg[0] & 0xfe00) == 0xfc00
        || (seg[0] & 0xffc0) == 0xfe80
        || seg[0] == 0x2001 && seg[1] == 0x0db8
        // IPv4-compatible (::a.b.c.d, deprecated) reaches IPv4 space by no defined route.
        || seg[..6] == [0; 6]
        // NAT64 local-use prefix (RFC 8215): translated inside the operator's network.
        || (seg[0] == 0x64 && seg[1] == 0xff9b && seg[2] == 1)
}

/// The IPv4 address an IPv6 address stands for, when it is one of the forms that a router or
/// translator turns into IPv4 traffic: IPv4-mapped (`::ffff:0:0/96`, last 32 bits), NAT64
/// (`64:ff9b::/96`, RFC 6052, last 32 bits) and 6to4 (`2002::/16`, RFC 3056, bits 16-48).
/// Such an address is as internal as the IPv4 address it carries, no more and no less.
pub fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let seg = ip.segments();
    let [.., a, b, c, d] = ip.octets();
    if let Some(v4) = ip.to_ipv4_mapped() {
        return Some(v4);
    }
    if seg[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return Some(Ipv4Addr::new(a, b, c, d));
    }
    if seg[0] == 0x2002 {
        let [hi, lo] = [seg[1], seg[2]];
        return Some(Ipv4Addr::new(
            (hi >> 8) as u8,
            (hi & 0xff) as u8,
            (lo >> 8) as u8,
            (lo & 0xff) as u8,
        ));
    }
    None
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
            "64:ff9b::127.0.0.1",
            "64:ff9b::169.254.169.254",
            "64:ff9b:1::808:808",
            // 6to4 of loopback, RFC 1918, link-local (metadata) and CGNAT space.
            "2002:7f00:1::",
            "2002:7f00:0001:abcd::1",
            "2002:a00:1::",
            "2002:c0a8:101::1",
            "2002:a9fe:a9fe::",
            "2002:6440:1::",
            "2002::",
        ] {
            assert!(is_internal(ip(s)), "{s}");
        }
    }

    #[test]
    fn embedded_ipv4_is_read_from_each_form() {
        let v6 = |s: &str| s.parse::<Ipv6Addr>().expect("ipv6");
        let v4 = |s: &str| s.parse::<Ipv4Addr>().ok();
        assert_eq!(embedded_v4(v6("::ffff:10.1.2.3")), v4("10.1.2.3"));
        assert_eq!(embedded_v4(v6("64:ff9b::8.8.4.4")), v4("8.8.4.4"));
        assert_eq!(embedded_v4(v6("2002:c0a8:0102:5::9")), v4("192.168.1.2"));
        assert_eq!(embedded_v4(v6("2002:0808:0808::")), v4("8.8.8.8"));
        assert_eq!(embedded_v4(v6("2001:db8::1")), None);
        assert_eq!(embedded_v4(v6("2606:4700::1111")), None);
        assert_eq!(embedded_v4(v6("64:ff9b:1::808:808")), None);
    }

    #[test]
    fn public_addresses_pass() {
        for s in [
            "93.184.216.34",
            "8.8.8.8",
            "2606:4700::1111",
            "::ffff:1.1.1.1",
            // Translated or tunnelled to a public IPv4 address: as public as that address.
            "64:ff9b::808:808",
            "64:ff9b::1.1.1.1",
            "2002:808:808::1",
            "2002:5db8:d822::",
        ] {
            assert!(!is_internal(ip(s)), "{s}");
        }
    }
}
