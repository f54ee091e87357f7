//! Which remote media URLs a reply may name (spec §11.1, OpenClaw `isAllowedRemoteMediaUrl`):
//! `https://` only, no credentials, and a public host — never `localhost`, `*.local`,
//! `*.internal`, cloud metadata, private or special-use addresses, or a host without a dot.

use std::net::{Ipv4Addr, Ipv6Addr};

/// Whether `candidate` is an `https://` URL the gateway may fetch and forward.
pub fn is_allowed_remote_media_url(candidate: &str) -> bool {
    let Some((scheme, rest)) = candidate.split_once("://") else {
        return false;
    };
    if !scheme.eq_ignore_ascii_case("https") {
        return false;
    }
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..authority_end];
    let host_port = match authority.rsplit_once('@') {
        // Any user info (even empty user with a password) is refused.
        Some((userinfo, _)) if !userinfo.is_empty() => return false,
        Some((_, host)) => host,
        None => authority,
    };
    let host = if let Some(inner) = host_port.strip_prefix('[') {
        match inner.split_once(']') {
            Some((v6, _)) => v6,
            None => return false,
        }
    } else {
        host_port.split(':').next().unwrap_or("")
    };
    !is_blocked_host(host)
}

/// `isBlockedRemoteMediaHostname` on an already extracted host (IPv6 without brackets).
fn is_blocked_host(host: &str) -> bool {
    let normalized = host.trim().to_lowercase();
    let normalized = normalized.trim_end_matches('.');
    if normalized.is_empty() || normalized.split('.').any(str::is_empty) {
        return true;
    }
    if normalized.contains(':') {
        return match normalized.parse::<Ipv6Addr>() {
            Ok(v6) => is_blocked_ipv6(v6),
            Err(_) => true,
        };
    }
    if !normalized.contains('.') {
        return true;
    }
    if matches!(
        normalized,
        "localhost" | "localhost.localdomain" | "metadata.google.internal"
    ) || normalized.ends_with(".localhost")
        || normalized.ends_with(".local")
        || normalized.ends_with(".internal")
    {
        return true;
    }
    if let Ok(v4) = normalized.parse::<Ipv4Addr>() {
        return is_blocked_ipv4(v4);
    }
    // Legacy IPv4 spellings (`127.1`, `0x7f.0.0.1`, `0177.0.0.1`) resolve to addresses too.
    is_legacy_ipv4_literal(normalized)
}

fn is_legacy_ipv4_literal(host: &str) -> bool {
    let labels: Vec<&str> = host.split('.').collect();
    labels.len() <= 4
        && labels.iter().all(|label| {
            let hex = label
                .strip_prefix("0x")
                .is_some_and(|h| h.bytes().all(|b| b.is_ascii_hexdigit()));
            hex || (!label.is_empty() && label.bytes().all(|b| b.is_ascii_digit()))
        })
}

fn is_blocked_ipv4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    a == 0
        || a == 10
        || (a == 100 && (64..128).contains(&b))
        || a == 127
        || (a == 169 && b == 254)
        || (a == 172 && (16..32).contains(&b))
        || (a == 192 && b == 0 && c == 0)
        || (a == 192 && b == 0 && c == 2)
        || (a == 192 && b == 168)
        || (a == 198 && (b == 18 || b == 19))
        || (a == 198 && b == 51 && c == 100)
        || (a == 203 && b == 0 && c == 113)
        || a >= 224
}

fn is_blocked_ipv6(ip: Ipv6Addr) -> bool {
    let seg = ip.segments();
    if ip.is_unspecified() || ip.is_loopback() || ip.is_multicast() {
        return true;
    }
    let unique_local = (seg[0] & 0xfe00) == 0xfc00;
    let link_local = (seg[0] & 0xffc0) == 0xfe80;
    let documentation = seg[0] == 0x2001 && seg[1] == 0x0db8;
    if unique_local || link_local || documentation {
        return true;
    }
    // IPv4 inside IPv6 (mapped `::ffff:a.b.c.d`, NAT64 `64:ff9b::a.b.c.d`) is judged as IPv4.
    let nat64 = seg[0] == 0x64 && seg[1] == 0xff9b && seg[2..6].iter().all(|s| *s == 0);
    match ip.to_ipv4_mapped() {
        Some(v4) => is_blocked_ipv4(v4),
        None if nat64 => {
            let [.., hi, lo] = seg;
            is_blocked_ipv4(Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo)))
        }
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_https_hosts_are_allowed() {
        for url in [
            "https://example.com/b.png",
            "https://cdn.example.com:8443/a.png?x=1",
            "HTTPS://Example.COM/a.png",
            "https://8.8.8.8/a.png",
            "https://[2606:4700::1111]/a.png",
        ] {
            assert!(is_allowed_remote_media_url(url), "{url}");
        }
    }

    #[test]
    fn unsafe_urls_are_refused() {
        for url in [
            "http://example.com/a.png",
            "https://intranet/a.png",
            "https://printer/a.png",
            "https://localhost/a.png",
            "https://localhost../a.png",
            "https://127.0.0.1/a.png",
            "https://127.0.0.1../a.png",
            "https://169.254.169.254/latest/meta-data",
            "https://[::1]/a.png",
            "https://[::ffff:10.0.0.1]/a.png",
            "https://metadata.google.internal/a.png",
            "https://metadata.google.internal../a.png",
            "https://example..com/a.png",
            "https://media.local/a.png",
            "https://user:pw@example.com/a.png",
            "https://10.1.2.3/a.png",
            "https://192.168.1.1/a.png",
            "https://0x7f.0.0.1/a.png",
            "https://127.1/a.png",
            "ftp://example.com/a.png",
            "https:///a.png",
        ] {
            assert!(!is_allowed_remote_media_url(url), "{url}");
        }
    }
}
