//! `ssm`: the value of one SSM parameter (`StringParameter.valueFromLookup`).

use aws_config::SdkConfig;
use serde_json::Value;

use super::query::{LookupError, Query};

pub async fn lookup(config: &SdkConfig, query: Query<'_>) -> Result<Value, LookupError> {
    let name = query.str("parameterName")?;
    let not_found = || {
        LookupError::not_found(format!(
            "SSM parameter not available in account {}, region {}: {name}",
            query.account().unwrap_or("?"),
            query.region().unwrap_or("?"),
        ))
    };
    match aws_sdk_ssm::Client::new(config)
        .get_parameter()
        .name(name)
        .send()
        .await
    {
        Ok(out) => out
            .parameter()
            .and_then(|p| p.value())
            .map(|v| Value::String(v.to_owned()))
            .ok_or_else(not_found),
        Err(e) => match LookupError::call("ssm", "GetParameter", name, &e) {
            LookupError::NotFound(_) => Err(not_found()),
            other => Err(other),
        },
    }
}
