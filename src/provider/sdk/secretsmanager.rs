//! `AWS::SecretsManager::Secret` through the Secrets Manager API.
//!
//! Physical id, `Ref` and `Fn::GetAtt Id`: the secret's ARN. A secret the template leaves
//! unnamed is called `{logicalId}-{RANDOM}`, as CloudFormation names them. The value is
//! `SecretString`, or one generated with GetRandomPassword from `GenerateSecretString` (put
//! under `GenerateStringKey` in the `SecretStringTemplate` JSON when those are given); with
//! neither the secret is created empty. `Name` replaces the secret; `Description`, `KmsKeyId`
//! and the value (a changed `GenerateSecretString` generates a new one) are updated with
//! UpdateSecret, `Tags` and `ReplicaRegions` with their own calls. Delete removes replicas and
//! then deletes without a recovery window, as CloudFormation does.
//!
//! Secret values never appear in an error, a log line or a returned attribute.

use std::collections::BTreeMap;

use async_trait::async_trait;
use aws_sdk_secretsmanager::operation::describe_secret::DescribeSecretOutput;
use aws_sdk_secretsmanager::types::{ReplicaRegionType, Tag};
use aws_sdk_secretsmanager::Client;
use serde_json::{json, Map, Value};

use crate::aws::{classify, ErrorKind};
use crate::provider::props::{changed, changed_properties, Props};
use crate::provider::sdk::scaffold::Service;
use crate::provider::{
    naming, schema, Provider, ProviderContext, ProviderError, Provisioned, ResourceRequest,
    UpdateOutcome,
};

const SECRET: &str = "AWS::SecretsManager::Secret";

/// The top-level CloudFormation properties this provider sends (any other routes the
/// resource through Cloud Control: `Provider::supported_properties`).
const SECRET_PROPERTIES: &[&str] = &[
    "Description",
    "GenerateSecretString",
    "KmsKeyId",
    "Name",
    "ReplicaRegions",
    "SecretString",
    "Tags",
];
const SERVICE: &str = "secretsmanager";
/// The key Secrets Manager uses when none is named.
const DEFAULT_KMS_KEY: &str = "alias/aws/secretsmanager";

pub struct SecretProvider;

fn client(ctx: &ProviderContext<'_>) -> Client {
    ctx.clients.cached(Some(ctx.region), Client::new)
}

/// Every failed call's typed error (`scaffold::Service`).
pub(super) const API: Service = Service(SERVICE);

/// `{logicalId}-{RANDOM}` within Secrets Manager's name rules.
fn generated_name(logical_id: &str) -> String {
    let rules = naming::SECRET;
    let token = naming::random_token(logical_id);
    let logical: String = logical_id
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || rules.extra_chars.contains(*c))
        .take(rules.max_len.saturating_sub(token.len() + 1))
        .collect();
    format!("{logical}-{token}")
}

/// A nested object property's typed fields, with errors that name the path.
struct Fields<'a> {
    req: &'a ResourceRequest<'a>,
    map: &'a Map<String, Value>,
    path: &'static str,
}

impl Fields<'_> {
    fn wrong(&self, key: &str, expected: &str) -> ProviderError {
        ProviderError::failed(
            self.req,
            format!("property {}.{key} must be {expected}", self.path),
        )
    }

    fn str(&self, key: &str) -> Result<Option<String>, ProviderError> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(Value::Number(n)) => Ok(Some(n.to_string())),
            Some(_) => Err(self.wrong(key, "a string")),
        }
    }

    fn bool(&self, key: &str) -> Result<Option<bool>, ProviderError> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(Value::String(s)) if s.eq_ignore_ascii_case("true") => Ok(Some(true)),
            Some(Value::String(s)) if s.eq_ignore_ascii_case("false") => Ok(Some(false)),
            Some(_) => Err(self.wrong(key, "a boolean")),
        }
    }

    fn i64(&self, key: &str) -> Result<Option<i64>, ProviderError> {
        match self.map.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => n
                .as_i64()
                .map(Some)
                .ok_or_else(|| self.wrong(key, "an integer")),
            Some(Value::String(s)) => s
                .trim()
                .parse()
                .map(Some)
                .map_err(|_| self.wrong(key, "an integer")),
            Some(_) => Err(self.wrong(key, "an integer")),
        }
    }
}

/// The secret value the template asks for: `SecretString`, or one generated from
/// `GenerateSecretString`; `None` for an empty secret.
async fn secret_value(
    client: &Client,
    req: &ResourceRequest<'_>,
) -> Result<Option<String>, ProviderError> {
    let props = Props::new(req);
    let literal = props.str("SecretString")?;
    let generate = props.object("GenerateSecretString")?;
    match (literal, generate) {
        (Some(_), Some(_)) => Err(ProviderError::failed(
            req,
            "properties SecretString and GenerateSecretString cannot both be set",
        )),
        (Some(s), None) => Ok(Some(s)),
        (None, Some(spec)) => generate_value(client, req, spec).await.map(Some),
        (None, None) => Ok(None),
    }
}

/// GetRandomPassword with the `GenerateSecretString` options, placed in the template JSON.
async fn generate_value(
    client: &Client,
    req: &ResourceRequest<'_>,
    spec: &Map<String, Value>,
) -> Result<String, ProviderError> {
    let f = Fields {
        req,
        map: spec,
        path: "GenerateSecretString",
    };
    let template = f.str("SecretStringTemplate")?;
    let key = f.str("GenerateStringKey")?;
    // Checked before anything is generated. The template may hold sensitive values, so no
    // message quotes it.
    let template = match (template, key) {
        (Some(t), Some(k)) => {
            let parsed: Value = serde_json::from_str(&t).map_err(|_| {
                ProviderError::failed(req, "property GenerateSecretString.SecretStringTemplate is not valid JSON")
            })?;
            match parsed {
                Value::Object(m) => Some((m, k)),
                _ => {
                    return Err(ProviderError::failed(
                        req,
                        "property GenerateSecretString.SecretStringTemplate must be a JSON object",
                    ))
                }
            }
        }
        (None, None) => None,
        _ => {
            return Err(ProviderError::failed(
                req,
                "properties GenerateSecretString.SecretStringTemplate and GenerateSecretString.GenerateStringKey must be set together",
            ))
        }
    };
    let out = client
        .get_random_password()
        .set_password_length(f.i64("PasswordLength")?)
        .set_exclude_characters(f.str("ExcludeCharacters")?)
        .set_exclude_numbers(f.bool("ExcludeNumbers")?)
        .set_exclude_punctuation(f.bool("ExcludePunctuation")?)
        .set_exclude_uppercase(f.bool("ExcludeUppercase")?)
        .set_exclude_lowercase(f.bool("ExcludeLowercase")?)
        .set_include_space(f.bool("IncludeSpace")?)
        .set_require_each_included_type(f.bool("RequireEachIncludedType")?)
        .send()
        .await
        .map_err(|e| API.err(req, "GetRandomPassword", req.logical_id, &e))?;
    let password = out
        .random_password
        .ok_or_else(|| ProviderError::failed(req, "GetRandomPassword returned no password"))?;
    Ok(match template {
        Some((mut m, key)) => {
            m.insert(key, Value::String(password));
            Value::Object(m).to_string()
        }
        None => password,
    })
}

fn tags(req: &ResourceRequest<'_>) -> Result<BTreeMap<String, String>, ProviderError> {
    Ok(Props::new(req).tags()?.into_iter().collect())
}

fn sdk_tags(tags: &BTreeMap<String, String>) -> Vec<Tag> {
    tags.iter()
        .map(|(k, v)| Tag::builder().key(k).value(v).build())
        .collect()
}

/// `ReplicaRegions` by region, with the optional KMS key of each.
fn replicas(req: &ResourceRequest<'_>) -> Result<BTreeMap<String, Option<String>>, ProviderError> {
    let Some(items) = Props::new(req).list("ReplicaRegions")? else {
        return Ok(BTreeMap::new());
    };
    items
        .iter()
        .map(|item| {
            let Value::Object(map) = item else {
                return Err(ProviderError::failed(
                    req,
                    "property ReplicaRegions must be a list of objects",
                ));
            };
            let f = Fields {
                req,
                map,
                path: "ReplicaRegions",
            };
            let region = f
                .str("Region")?
                .ok_or_else(|| ProviderError::missing(req, "ReplicaRegions.Region"))?;
            Ok((region, f.str("KmsKeyId")?))
        })
        .collect()
}

fn replica_types(regions: &BTreeMap<String, Option<String>>) -> Vec<ReplicaRegionType> {
    regions
        .iter()
        .map(|(r, k)| {
            ReplicaRegionType::builder()
                .region(r)
                .set_kms_key_id(k.clone())
                .build()
        })
        .collect()
}

fn attributes(arn: &str) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("Id".into(), json!(arn));
    m
}

/// DescribeSecret; `None` when the secret does not exist or is scheduled for deletion.
async fn describe(
    client: &Client,
    req: &ResourceRequest<'_>,
    id: &str,
) -> Result<Option<DescribeSecretOutput>, ProviderError> {
    match client.describe_secret().secret_id(id).send().await {
        Ok(out) if out.deleted_date().is_some() => Ok(None),
        Ok(out) => Ok(Some(out)),
        Err(e) if classify(&e) == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(API.err(req, "DescribeSecret", id, &e)),
    }
}

async fn update_tags(
    client: &Client,
    req: &ResourceRequest<'_>,
    arn: &str,
    old: &BTreeMap<String, String>,
    new: &BTreeMap<String, String>,
) -> Result<(), ProviderError> {
    let removed: Vec<String> = old
        .keys()
        .filter(|k| !new.contains_key(*k))
        .cloned()
        .collect();
    if !removed.is_empty() {
        client
            .untag_resource()
            .secret_id(arn)
            .set_tag_keys(Some(removed))
            .send()
            .await
            .map_err(|e| API.err(req, "UntagResource", arn, &e))?;
    }
    let set: BTreeMap<String, String> = new
        .iter()
        .filter(|(k, v)| old.get(*k) != Some(*v))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if !set.is_empty() {
        client
            .tag_resource()
            .secret_id(arn)
            .set_tags(Some(sdk_tags(&set)))
            .send()
            .await
            .map_err(|e| API.err(req, "TagResource", arn, &e))?;
    }
    Ok(())
}

async fn update_replicas(
    client: &Client,
    req: &ResourceRequest<'_>,
    arn: &str,
    old: &BTreeMap<String, Option<String>>,
    new: &BTreeMap<String, Option<String>>,
) -> Result<(), ProviderError> {
    // A replica whose key changes is removed and added again.
    let removed: Vec<String> = old
        .iter()
        .filter(|(r, k)| new.get(*r) != Some(*k))
        .map(|(r, _)| r.clone())
        .collect();
    if !removed.is_empty() {
        client
            .remove_regions_from_replication()
            .secret_id(arn)
            .set_remove_replica_regions(Some(removed))
            .send()
            .await
            .map_err(|e| API.err(req, "RemoveRegionsFromReplication", arn, &e))?;
    }
    let added: BTreeMap<String, Option<String>> = new
        .iter()
        .filter(|(r, k)| old.get(*r) != Some(*k))
        .map(|(r, k)| (r.clone(), k.clone()))
        .collect();
    if !added.is_empty() {
        client
            .replicate_secret_to_regions()
            .secret_id(arn)
            .set_add_replica_regions(Some(replica_types(&added)))
            .send()
            .await
            .map_err(|e| API.err(req, "ReplicateSecretToRegions", arn, &e))?;
    }
    Ok(())
}

#[async_trait]
impl Provider for SecretProvider {
    fn resource_types(&self) -> &'static [&'static str] {
        &[SECRET]
    }

    fn supported_properties(&self, _resource_type: &str) -> Option<Vec<&'static str>> {
        Some(SECRET_PROPERTIES.to_vec())
    }

    async fn create(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
    ) -> Result<Provisioned, ProviderError> {
        let client = client(ctx);
        let props = Props::new(req);
        let name = match props.str("Name")? {
            Some(n) => n,
            None => generated_name(req.logical_id),
        };
        let value = secret_value(&client, req).await?;
        let tags = sdk_tags(&tags(req)?);
        let replicas = replica_types(&replicas(req)?);
        // Secrets Manager takes a 32-64 character idempotency token for the first version.
        let token = req
            .client_token
            .filter(|t| value.is_some() && (32..=64).contains(&t.len()));
        let out = client
            .create_secret()
            .name(&name)
            .set_description(props.str("Description")?)
            .set_kms_key_id(props.str("KmsKeyId")?)
            .set_secret_string(value)
            .set_client_request_token(token.map(str::to_owned))
            .set_tags((!tags.is_empty()).then_some(tags))
            .set_add_replica_regions((!replicas.is_empty()).then_some(replicas))
            .send()
            .await
            .map_err(|e| API.err(req, "CreateSecret", &name, &e))?;
        let arn = out.arn.ok_or_else(|| {
            ProviderError::failed(req, format!("CreateSecret for {name} returned no ARN"))
        })?;
        Ok(Provisioned {
            attributes: attributes(&arn),
            physical_id: arn,
        })
    }

    async fn update(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
        previous: &Map<String, Value>,
    ) -> Result<UpdateOutcome, ProviderError> {
        let changes = changed_properties(previous, req.properties);
        if let Some(p) = changes
            .iter()
            .find(|p| *p == "Name" || schema::is_create_only(SECRET, p))
        {
            return Ok(UpdateOutcome::NeedsReplacement {
                reason: format!("{p} cannot be changed on an existing secret"),
            });
        }
        let client = client(ctx);
        let props = Props::new(req);
        let desired = req.properties;
        let value_changed = changed(previous, desired, "SecretString")
            || changed(previous, desired, "GenerateSecretString");
        let value = if value_changed {
            secret_value(&client, req).await?
        } else {
            None
        };
        let description =
            changed(previous, desired, "Description").then(|| props.str("Description"));
        let kms = changed(previous, desired, "KmsKeyId").then(|| props.str("KmsKeyId"));
        if value.is_some() || description.is_some() || kms.is_some() {
            client
                .update_secret()
                .secret_id(physical_id)
                .set_description(description.transpose()?.map(|d| d.unwrap_or_default()))
                .set_kms_key_id(
                    kms.transpose()?
                        .map(|k| k.unwrap_or_else(|| DEFAULT_KMS_KEY.to_owned())),
                )
                .set_secret_string(value)
                .send()
                .await
                .map_err(|e| API.err(req, "UpdateSecret", physical_id, &e))?;
        }
        let prev_req = ResourceRequest {
            properties: previous,
            ..req.clone()
        };
        if changed(previous, desired, "Tags") {
            update_tags(&client, req, physical_id, &tags(&prev_req)?, &tags(req)?).await?;
        }
        if changed(previous, desired, "ReplicaRegions") {
            update_replicas(
                &client,
                req,
                physical_id,
                &replicas(&prev_req)?,
                &replicas(req)?,
            )
            .await?;
        }
        Ok(UpdateOutcome::Updated(Provisioned {
            physical_id: physical_id.to_owned(),
            attributes: attributes(physical_id),
        }))
    }

    async fn delete(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<(), ProviderError> {
        let client = client(ctx);
        let described = match client.describe_secret().secret_id(physical_id).send().await {
            Ok(out) => out,
            Err(e) if classify(&e) == ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(API.err(req, "DescribeSecret", physical_id, &e)),
        };
        // A primary secret cannot be deleted while it has replicas.
        let regions: Vec<String> = described
            .replication_status()
            .iter()
            .filter_map(|r| r.region().map(str::to_owned))
            .collect();
        if !regions.is_empty() {
            match client
                .remove_regions_from_replication()
                .secret_id(physical_id)
                .set_remove_replica_regions(Some(regions))
                .send()
                .await
            {
                Ok(_) => {}
                Err(e) if classify(&e) == ErrorKind::NotFound => {}
                Err(e) => {
                    return Err(API.err(req, "RemoveRegionsFromReplication", physical_id, &e))
                }
            }
        }
        match client
            .delete_secret()
            .secret_id(physical_id)
            .force_delete_without_recovery(true)
            .send()
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if classify(&e) == ErrorKind::NotFound => Ok(()),
            Err(e) => Err(API.err(req, "DeleteSecret", physical_id, &e)),
        }
    }

    async fn read(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let Some(d) = describe(&client(ctx), req, physical_id).await? else {
            return Ok(None);
        };
        // The value is write-only: a read never returns it.
        let mut out = Map::new();
        out.insert("Id".into(), json!(d.arn().unwrap_or(physical_id)));
        if let Some(name) = d.name() {
            out.insert("Name".into(), json!(name));
        }
        if let Some(desc) = d.description().filter(|s| !s.is_empty()) {
            out.insert("Description".into(), json!(desc));
        }
        if let Some(key) = d.kms_key_id() {
            out.insert("KmsKeyId".into(), json!(key));
        }
        let tags: Vec<Value> = d
            .tags()
            .iter()
            .filter_map(|t| Some((t.key()?, t.value().unwrap_or_default())))
            .filter(|(k, _)| !k.starts_with("aws:"))
            .map(|(k, v)| json!({"Key": k, "Value": v}))
            .collect();
        if !tags.is_empty() {
            out.insert("Tags".into(), Value::Array(tags));
        }
        let replicas: Vec<Value> = d
            .replication_status()
            .iter()
            .filter_map(|r| {
                let mut m = Map::new();
                m.insert("Region".into(), json!(r.region()?));
                if let Some(k) = r.kms_key_id() {
                    m.insert("KmsKeyId".into(), json!(k));
                }
                Some(Value::Object(m))
            })
            .collect();
        if !replicas.is_empty() {
            out.insert("ReplicaRegions".into(), Value::Array(replicas));
        }
        Ok(Some(out))
    }

    async fn import(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<Provisioned, ProviderError> {
        let d = describe(&client(ctx), req, physical_id)
            .await?
            .ok_or_else(|| {
                ProviderError::failed(req, format!("secret {physical_id} does not exist"))
            })?;
        let arn = d.arn().unwrap_or(physical_id).to_owned();
        Ok(Provisioned {
            attributes: attributes(&arn),
            physical_id: arn,
        })
    }
}
