//! `Fn::Cidr`: consecutive subnets carved from the start of an address block.

use std::net::{Ipv4Addr, Ipv6Addr};

/// The largest `count` CloudFormation accepts.
pub const MAX_CIDR_COUNT: i64 = 256;

/// `count` subnets of `ip_block`, each with `cidr_bits` host bits (a /24 for
/// 8 bits in IPv4, a /64 for 64 bits in IPv6), starting at the block's
/// network address. The error says why the request cannot be met.
pub fn cidr(ip_block: &str, count: i64, cidr_bits: i64) -> Result<Vec<String>, String> {
    let block = ip_block.trim();
    let Some((addr, prefix)) = block.split_once('/') else {
        return Err(format!(
            "'{block}' is not in CIDR notation (address/prefix)"
        ));
    };
    let (value, width, v6) = if let Ok(a) = addr.parse::<Ipv4Addr>() {
        (u128::from(u32::from(a)), 32u32, false)
    } else if let Ok(a) = addr.parse::<Ipv6Addr>() {
        (u128::from(a), 128u32, true)
    } else {
        return Err(format!("'{addr}' is not an IPv4 or IPv6 address"));
    };
    let prefix: u32 = match prefix.parse() {
        Ok(p) if p <= width => p,
        _ => return Err(format!("'{prefix}' is not a prefix length for '{block}'")),
    };
    if !(1..=MAX_CIDR_COUNT).contains(&count) {
        return Err(format!(
            "count must be between 1 and {MAX_CIDR_COUNT}, got {count}"
        ));
    }
    let bits = match u32::try_from(cidr_bits) {
        Ok(b) if b <= width => b,
        _ => {
            return Err(format!(
                "cidrBits must be between 0 and {width}, got {cidr_bits}"
            ))
        }
    };
    let subnet_prefix = width - bits;
    if subnet_prefix < prefix {
        return Err(format!(
            "a /{subnet_prefix} subnet ({bits} cidrBits) is larger than the block {block}"
        ));
    }
    let room_bits = subnet_prefix - prefix;
    // `count` is at most 256, so 9 bits of room always suffice.
    if room_bits < 9 && (count as u128) > (1u128 << room_bits) {
        return Err(format!(
            "{count} subnets of /{subnet_prefix} do not fit in {block} (room for {})",
            1u128 << room_bits
        ));
    }
    let full = if width == 128 {
        u128::MAX
    } else {
        (1u128 << width) - 1
    };
    let mask = if prefix == 0 {
        0
    } else {
        (u128::MAX << (width - prefix)) & full
    };
    let network = value & mask;
    let mut out = Vec::with_capacity(count as usize);
    for i in 0..count as u128 {
        let offset = i.checked_shl(bits).unwrap_or(0);
        let start = network + offset;
        let text = if v6 {
            Ipv6Addr::from(start).to_string()
        } else {
            Ipv4Addr::from(start as u32).to_string()
        };
        out.push(format!("{text}/{subnet_prefix}"));
    }
    Ok(out)
}
