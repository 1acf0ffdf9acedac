//! Table-driven tests of `Fn::Cidr`.

use super::cidr::cidr;

#[test]
fn subnets() {
    let cases: &[(&str, i64, i64, &[&str])] = &[
        (
            "10.0.0.0/16",
            6,
            5,
            &[
                "10.0.0.0/27",
                "10.0.0.32/27",
                "10.0.0.64/27",
                "10.0.0.96/27",
                "10.0.0.128/27",
                "10.0.0.160/27",
            ],
        ),
        (
            "192.168.0.0/24",
            3,
            6,
            &["192.168.0.0/26", "192.168.0.64/26", "192.168.0.128/26"],
        ),
        (
            "10.0.0.0/24",
            4,
            6,
            &[
                "10.0.0.0/26",
                "10.0.0.64/26",
                "10.0.0.128/26",
                "10.0.0.192/26",
            ],
        ),
        ("10.1.2.3/16", 1, 8, &["10.1.0.0/24"]),
        ("10.0.0.0/31", 2, 0, &["10.0.0.0/32", "10.0.0.1/32"]),
        ("0.0.0.0/0", 1, 32, &["0.0.0.0/0"]),
        (
            "2001:db8:1234:1a00::/56",
            3,
            64,
            &[
                "2001:db8:1234:1a00::/64",
                "2001:db8:1234:1a01::/64",
                "2001:db8:1234:1a02::/64",
            ],
        ),
        ("fd00::/7", 2, 120, &["fc00::/8", "fd00::/8"]),
        ("::/0", 1, 128, &["::/0"]),
        (" 10.0.0.0/8 ", 2, 16, &["10.0.0.0/16", "10.1.0.0/16"]),
    ];
    for (block, count, bits, want) in cases {
        let got = cidr(block, *count, *bits).unwrap_or_else(|e| panic!("{block}: {e}"));
        assert_eq!(&got, want, "{block} {count} {bits}");
    }
    let all = cidr("10.0.0.0/16", 256, 8).unwrap();
    assert_eq!(all.len(), 256);
    assert_eq!(all[255], "10.0.255.0/24");
}

#[test]
fn refusals() {
    let cases = [
        (
            "10.0.0.0/24",
            16,
            5,
            "16 subnets of /27 do not fit in 10.0.0.0/24 (room for 8)",
        ),
        (
            "10.0.0.0/24",
            1,
            9,
            "a /23 subnet (9 cidrBits) is larger than the block",
        ),
        ("10.0.0.0/16", 0, 8, "count must be between 1 and 256"),
        ("10.0.0.0/16", 257, 8, "count must be between 1 and 256"),
        ("10.0.0.0/16", 1, 33, "cidrBits must be between 0 and 32"),
        ("10.0.0.0/16", 1, -1, "cidrBits must be between 0 and 32"),
        ("2001:db8::/64", 3, 63, "3 subnets of /65 do not fit"),
        (
            "2001:db8::/64",
            1,
            129,
            "cidrBits must be between 0 and 128",
        ),
        ("10.0.0.0", 1, 8, "not in CIDR notation"),
        ("10.0.0.0/33", 1, 8, "not a prefix length"),
        ("banana/8", 1, 8, "not an IPv4 or IPv6 address"),
        ("10.0.0.256/8", 1, 8, "not an IPv4 or IPv6 address"),
    ];
    for (block, count, bits, want) in cases {
        let e = cidr(block, count, bits).unwrap_err();
        assert!(e.contains(want), "{block} {count} {bits}: {e}");
    }
}
