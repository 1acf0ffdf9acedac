//! The Route 53 SDK provider (HostedZone, RecordSet) against the emulator, checked through
//! the Route 53 API: create with `Ref` / `Fn::GetAtt` as CloudFormation reports them, update
//! in place (comment, tags, a record's values), the replacement a create-only change answers,
//! read, import by physical id, delete and a second delete of what is gone.
//!
//! Run: `./scripts/test --test providers -- provider_route53::`.

use crate::sdk_env::{obj, replaced, Env};
use crate::support;

use aws_sdk_route53::types::{RrType, TagResourceType};
use serde_json::json;

const ZONE: &str = "AWS::Route53::HostedZone";
const RECORD: &str = "AWS::Route53::RecordSet";

#[tokio::test]
async fn hosted_zone_and_record_set_lifecycle() {
    let env = Env::new("DnsStack").await;
    let r53 = aws_sdk_route53::Client::new(&env.sdk);
    let domain = format!("{}.example.com", support::unique_name("z"));

    let z1 = obj(json!({
        "Name": domain,
        "HostedZoneConfig": {"Comment": "one"},
        "HostedZoneTags": [{"Key": "team", "Value": "a"}],
    }));
    let zone = env.create(ZONE, &z1).await;
    let id = zone.physical_id.clone();
    assert!(!id.starts_with("/hostedzone/"), "{id}");
    assert_eq!(env.ref_of(ZONE, &zone), json!(id));
    assert_eq!(zone.attributes["Id"], json!(id));
    assert!(
        zone.attributes["NameServers"]
            .as_array()
            .is_some_and(|n| !n.is_empty()),
        "{:?}",
        zone.attributes
    );
    assert_eq!(env.read(ZONE, &z1, &id).await, Some(z1.clone()));

    let z2 = obj(json!({
        "Name": domain,
        "HostedZoneConfig": {"Comment": "two"},
        "HostedZoneTags": [{"Key": "tier", "Value": "dns"}],
    }));
    let after = env.updated(ZONE, &z2, &id, &z1).await;
    assert_eq!(after, zone);
    let live = r53
        .get_hosted_zone()
        .id(&id)
        .send()
        .await
        .expect("GetHostedZone");
    assert_eq!(
        live.hosted_zone()
            .and_then(|z| z.config())
            .and_then(|c| c.comment()),
        Some("two")
    );
    let tags = r53
        .list_tags_for_resource()
        .resource_type(TagResourceType::Hostedzone)
        .resource_id(&id)
        .send()
        .await
        .expect("ListTagsForResource");
    let keys: Vec<&str> = tags
        .resource_tag_set()
        .map(|s| s.tags())
        .unwrap_or_default()
        .iter()
        .filter_map(|t| t.key())
        .collect();
    assert_eq!(keys, ["tier"]);
    assert_eq!(env.read(ZONE, &z2, &id).await, Some(z2.clone()));
    let mut renamed = z2.clone();
    renamed.insert("Name".into(), json!(format!("other.{domain}")));
    assert!(replaced(env.update(ZONE, &renamed, &id, &z2).await).contains("Name"));
    assert_eq!(env.import(ZONE, &z2, &id).await, zone);

    // A record set in the zone, named by zone id; then one by zone name.
    let www = format!("www.{domain}.");
    let r1 = obj(json!({
        "HostedZoneId": id,
        "Name": www,
        "Type": "A",
        "TTL": "300",
        "ResourceRecords": ["192.0.2.1"],
    }));
    let record = env.create(RECORD, &r1).await;
    assert_eq!(record.physical_id, format!("{www}|{id}|A|"));
    assert_eq!(env.ref_of(RECORD, &record), json!(www));
    assert_eq!(
        env.read(RECORD, &r1, &record.physical_id).await,
        Some(r1.clone())
    );
    assert_eq!(env.import(RECORD, &r1, &record.physical_id).await, record);

    let r2 = obj(json!({
        "HostedZoneId": id,
        "Name": www,
        "Type": "A",
        "TTL": "60",
        "ResourceRecords": ["192.0.2.2", "192.0.2.3"],
    }));
    env.updated(RECORD, &r2, &record.physical_id, &r1).await;
    let listed = r53
        .list_resource_record_sets()
        .hosted_zone_id(&id)
        .start_record_name(&www)
        .start_record_type(RrType::A)
        .max_items(1)
        .send()
        .await
        .expect("ListResourceRecordSets");
    let set = &listed.resource_record_sets()[0];
    assert_eq!(set.ttl(), Some(60));
    assert_eq!(set.resource_records().len(), 2);
    assert_eq!(
        env.read(RECORD, &r2, &record.physical_id).await,
        Some(r2.clone())
    );
    let mut retyped = r2.clone();
    retyped.insert("Type".into(), json!("TXT"));
    assert!(
        replaced(env.update(RECORD, &retyped, &record.physical_id, &r2).await).contains("Type")
    );

    let api = format!("api.{domain}");
    let by_name = obj(json!({
        "HostedZoneName": format!("{domain}."),
        "Name": api,
        "Type": "CNAME",
        "TTL": 60,
        "ResourceRecords": [format!("www.{domain}")],
    }));
    let cname = env.create(RECORD, &by_name).await;
    assert_eq!(cname.physical_id, format!("{api}|{id}|CNAME|"));
    assert_eq!(
        env.read(RECORD, &by_name, &cname.physical_id).await,
        Some(by_name.clone())
    );

    env.delete_twice(RECORD, &by_name, &cname.physical_id).await;
    env.delete_twice(RECORD, &r2, &record.physical_id).await;
    env.delete_twice(ZONE, &z2, &id).await;
    let gone = r53.get_hosted_zone().id(&id).send().await;
    assert!(gone.is_err(), "the zone survived: {gone:?}");
}
