//! Context lookups, as the CDK CLI performs them: when the app's manifest lists `missing`
//! context, each key is answered by its provider (in parallel), the answers are saved to
//! `cdk.context.json`, and the app is synthesized again with them, until nothing is missing.
//!
//! - [`synth_loop`]: the loop around the app; [`store`]: the `cdk.context.json` cache.
//! - [`credentials`]: the account, region and lookup role a query is answered with.
//! - [`query`]: reading a query; one module per provider, named after what it looks up.
//!
//! A provider's failure is not the command's: it is handed to the app as that key's error value
//! (`$providerError`, never saved), and the app reports it; the loop then stops naming the key.

pub mod ami;
pub mod azs;
pub mod cc_api;
pub mod credentials;
pub mod endpoint_service;
pub mod hosted_zone;
pub mod key;
pub mod load_balancer;
pub mod query;
pub mod security_group;
pub mod ssm;
pub mod store;
pub mod synth_loop;
pub mod vpc;

use serde_json::Value;

pub use credentials::Lookups;
pub use query::{LookupError, Query};
pub use store::ContextFile;
pub use synth_loop::{synthesize, ContextError, LoopOptions};

use crate::assembly::MissingContext;

/// Every provider name cdkd answers (the cloud assembly schema's ContextProvider values but
/// `plugin`).
pub const PROVIDERS: &[&str] = &[
    "ami",
    "availability-zones",
    "hosted-zone",
    "ssm",
    "vpc-provider",
    "endpoint-service-availability-zones",
    "load-balancer",
    "load-balancer-listener",
    "security-group",
    "key-provider",
    "cc-api-provider",
];

/// Answers one missing key with its provider, read with the credentials its query names. A
/// not-found answer becomes the query's `dummyValue` when it sets `ignoreErrorOnMissingContext`,
/// as the CDK CLI does.
pub async fn lookup(lookups: &Lookups, missing: &MissingContext) -> Result<Value, LookupError> {
    let query = Query::new(&missing.provider, &missing.props);
    let result = answer(lookups, query).await;
    match result {
        Err(LookupError::NotFound(_))
            if query.opt_bool("ignoreErrorOnMissingContext") == Ok(Some(true))
                && query.get("dummyValue").is_some() =>
        {
            Ok(query.get("dummyValue").cloned().unwrap_or(Value::Null))
        }
        other => other,
    }
}

async fn answer(lookups: &Lookups, query: Query<'_>) -> Result<Value, LookupError> {
    if !PROVIDERS.contains(&query.provider) {
        return Err(LookupError::failed(match query.provider {
            "plugin" => "context provider plugins are not supported by cdkd; pass the value with -c KEY=VALUE or add it to cdk.context.json".to_owned(),
            other => format!(
                "unrecognized context provider `{other}`; cdkd may be older than the construct library"
            ),
        }));
    }
    let account = query.account()?;
    let region = query.region()?;
    let role = query
        .opt_str("lookupRoleArn")?
        .map(|arn| query::resolve_placeholders(arn, account, region));
    let external_id = query.opt_str("lookupRoleExternalId")?;
    let config = lookups
        .config_for(account, region, role.as_deref(), external_id)
        .await?;
    match query.provider {
        "availability-zones" => azs::lookup(&config, query).await,
        "ssm" => ssm::lookup(&config, query).await,
        "vpc-provider" => vpc::lookup(&config, query).await,
        "ami" => ami::lookup(&config, query).await,
        "hosted-zone" => hosted_zone::lookup(&config, query).await,
        "security-group" => security_group::lookup(&config, query).await,
        "load-balancer" => load_balancer::lookup_load_balancer(&config, query).await,
        "load-balancer-listener" => load_balancer::lookup_listener(&config, query).await,
        "key-provider" => key::lookup(&config, query).await,
        "endpoint-service-availability-zones" => endpoint_service::lookup(&config, query).await,
        _ => cc_api::lookup(&config, query).await,
    }
}
