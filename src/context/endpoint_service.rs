//! `endpoint-service-availability-zones`: the zones a VPC endpoint service is offered in
//! (`InterfaceVpcEndpoint` with `lookupSupportedAzs`); an empty list when EC2 describes no
//! such service.

use aws_config::SdkConfig;
use serde_json::Value;

use super::query::{LookupError, Query};

pub async fn lookup(config: &SdkConfig, query: Query<'_>) -> Result<Value, LookupError> {
    let service = query.str("serviceName")?;
    let out = aws_sdk_ec2::Client::new(config)
        .describe_vpc_endpoint_services()
        .service_names(service)
        .send()
        .await
        .map_err(|e| LookupError::call("ec2", "DescribeVpcEndpointServices", service, &e))?;
    let zones = out
        .service_details()
        .first()
        .map(|d| d.availability_zones().to_vec())
        .unwrap_or_default();
    Ok(Value::Array(zones.into_iter().map(Value::String).collect()))
}
