//! `availability-zones`: the region's available zone names (what `stack.availabilityZones`
//! reads in an environment-pinned stack), in the order EC2 lists them.

use aws_config::SdkConfig;
use aws_sdk_ec2::types::AvailabilityZoneState;
use serde_json::Value;

use super::query::{LookupError, Query};

pub async fn lookup(config: &SdkConfig, query: Query<'_>) -> Result<Value, LookupError> {
    let region = query.region()?;
    let out = aws_sdk_ec2::Client::new(config)
        .describe_availability_zones()
        .send()
        .await
        .map_err(|e| {
            LookupError::call(
                "ec2",
                "DescribeAvailabilityZones",
                format!("region {region}"),
                &e,
            )
        })?;
    Ok(Value::Array(
        out.availability_zones()
            .iter()
            .filter(|z| z.state() == Some(&AvailabilityZoneState::Available))
            .filter_map(|z| z.zone_name())
            .map(|n| Value::String(n.to_owned()))
            .collect(),
    ))
}
