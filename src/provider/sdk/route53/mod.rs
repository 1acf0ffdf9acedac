//! Amazon Route 53: hosted zones and their record sets, one provider for the family (a
//! shared client, error source and DNS name comparison), one module per type:
//! - [`zone`]: `AWS::Route53::HostedZone` (physical id and `Ref` the zone id without the
//!   `/hostedzone/` prefix; `Fn::GetAtt` `Id`, `NameServers`).
//! - [`record`]: `AWS::Route53::RecordSet` (physical id `<Name>|<HostedZoneId>|<Type>|<SetIdentifier>`,
//!   the primary identifier joined as Cloud Control joins it; `Ref` the record name).
//!
//! Neither waits for a change to reach `INSYNC`: a record set can be written into a zone whose
//! creation is still propagating, and nothing cdkd deploys reads DNS.

mod record;
mod zone;

use aws_sdk_route53::Client;

use super::scaffold;
use crate::provider::ProviderContext;

pub(crate) const HOSTED_ZONE: &str = "AWS::Route53::HostedZone";
pub(crate) const RECORD_SET: &str = "AWS::Route53::RecordSet";

/// Where Route 53's errors come from.
const ROUTE53: scaffold::Service = scaffold::Service("route53");

/// Route 53 is a global service whose one endpoint lives in us-east-1 (the SDK resolves it
/// from any region); the regional client of the context is the same endpoint.
fn client(ctx: &ProviderContext<'_>) -> Client {
    scaffold::regional(ctx, Client::new)
}

/// A zone id as the API's paths carry it (`/hostedzone/Z…`) or as CloudFormation shows it
/// (`Z…`): the bare id.
fn bare_zone_id(id: &str) -> &str {
    id.trim_start_matches("/hostedzone/")
}

/// A DNS name in one spelling: no trailing dot, lower case, Route 53's octal escape of `*`
/// decoded (it lists a wildcard record as `\052.example.com.`).
fn canonical_name(name: &str) -> String {
    name.trim_end_matches('.')
        .replace("\\052", "*")
        .to_ascii_lowercase()
}

/// `live` as the template spells it, when the two name the same thing; otherwise `live`.
fn as_written(live: &str, written: Option<&str>) -> String {
    match written {
        Some(w) if canonical_name(w) == canonical_name(live) => w.to_owned(),
        _ => live.to_owned(),
    }
}

scaffold::family::family_provider!(Route53Provider, "Route 53", client, {
    HOSTED_ZONE => zone,
    RECORD_SET => record,
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_compare_in_one_spelling() {
        assert_eq!(canonical_name("\\052.Example.com."), "*.example.com");
        assert_eq!(
            as_written("www.example.com.", Some("WWW.example.com")),
            "WWW.example.com"
        );
        assert_eq!(
            as_written("www.example.com.", Some("other.com")),
            "www.example.com."
        );
        assert_eq!(bare_zone_id("/hostedzone/Z123"), "Z123");
        assert_eq!(bare_zone_id("Z123"), "Z123");
    }
}
