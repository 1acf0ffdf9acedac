//! A stack's target environment, `aws://ACCOUNT/REGION`, with the CDK's `unknown-account` /
//! `unknown-region` placeholders for environment-agnostic stacks.

use std::fmt;

pub const UNKNOWN_ACCOUNT: &str = "unknown-account";
pub const UNKNOWN_REGION: &str = "unknown-region";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Environment {
    /// `None` when the app left it to the CLI (`unknown-account`).
    pub account: Option<String>,
    /// `None` when the app left it to the CLI (`unknown-region`).
    pub region: Option<String>,
}

impl Environment {
    pub fn unknown() -> Self {
        Environment {
            account: None,
            region: None,
        }
    }

    /// Parses `aws://account/region`; anything else is `None`.
    pub fn parse(s: &str) -> Option<Self> {
        let rest = s.strip_prefix("aws://")?;
        let (account, region) = rest.split_once('/')?;
        if account.is_empty() || region.is_empty() || region.contains('/') {
            return None;
        }
        let known = |v: &str, placeholder: &str| (v != placeholder).then(|| v.to_owned());
        Some(Environment {
            account: known(account, UNKNOWN_ACCOUNT),
            region: known(region, UNKNOWN_REGION),
        })
    }

    /// Fills the unknown halves from the caller's account and region chain.
    pub fn resolved(&self, default_account: Option<&str>, default_region: Option<&str>) -> Self {
        Environment {
            account: self
                .account
                .clone()
                .or_else(|| default_account.map(str::to_owned)),
            region: self
                .region
                .clone()
                .or_else(|| default_region.map(str::to_owned)),
        }
    }
}

impl fmt::Display for Environment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "aws://{}/{}",
            self.account.as_deref().unwrap_or(UNKNOWN_ACCOUNT),
            self.region.as_deref().unwrap_or(UNKNOWN_REGION)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_fills_unknowns() {
        let e = Environment::parse("aws://unknown-account/unknown-region").expect("parses");
        assert_eq!(e, Environment::unknown());
        let r = e.resolved(Some("123456789012"), Some("eu-west-1"));
        assert_eq!(r.to_string(), "aws://123456789012/eu-west-1");
        let pinned = Environment::parse("aws://111111111111/us-east-1").expect("parses");
        assert_eq!(pinned.resolved(Some("2"), Some("x")), pinned);
        for bad in [
            "",
            "aws://",
            "aws://a",
            "s3://a/b",
            "aws://a/b/c",
            "aws:///r",
        ] {
            assert!(Environment::parse(bad).is_none(), "{bad}");
        }
    }
}
