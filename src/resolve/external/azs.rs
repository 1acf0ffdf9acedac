//! `Fn::GetAZs`: EC2 DescribeAvailabilityZones per region, asked once per
//! deploy however many stacks read the same region.
//!
//! CloudFormation answers with the region's availability zones in name
//! order; Local Zones and Wavelength Zones (other `ZoneType`s) and zones
//! that are not `available` are left out.

use aws_sdk_ec2::types::AvailabilityZoneState;

use super::ExternalReader;
use crate::aws::AwsError;
use crate::resolve::error::LookupError;

impl ExternalReader {
    /// The availability zones of `region`, cached for the reader's lifetime
    /// (a failure is cached too, so every stack reports the same one).
    pub async fn availability_zones(&self, region: &str) -> Result<Vec<String>, LookupError> {
        let cell = {
            let mut azs = self.azs.lock().unwrap_or_else(|p| p.into_inner());
            azs.entry(region.to_string()).or_default().clone()
        };
        cell.get_or_init(|| self.describe_availability_zones(region))
            .await
            .clone()
    }

    async fn describe_availability_zones(&self, region: &str) -> Result<Vec<String>, LookupError> {
        let out = self
            .clients
            .ec2(Some(region))
            .describe_availability_zones()
            .send()
            .await
            .map_err(|e| {
                LookupError::Failed(
                    AwsError::call(
                        "ec2",
                        "DescribeAvailabilityZones",
                        format!("region {region}"),
                        &e,
                    )
                    .to_string(),
                )
            })?;
        let mut zones: Vec<String> = out
            .availability_zones()
            .iter()
            .filter(|z| z.zone_type().is_none_or(|t| t == "availability-zone"))
            .filter(|z| {
                z.state()
                    .is_none_or(|s| *s == AvailabilityZoneState::Available)
            })
            .filter(|z| z.region_name().is_none_or(|r| r == region))
            .filter_map(|z| z.zone_name().map(str::to_string))
            .collect();
        zones.sort();
        zones.dedup();
        Ok(zones)
    }
}
