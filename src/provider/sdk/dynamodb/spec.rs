//! `AWS::DynamoDB::Table` properties, as CloudFormation spells them, turned into DynamoDB API
//! shapes. Every accessor reads one request's properties (the desired ones, or the previous
//! ones through a request built over them) and names the offending path on a wrong shape.

use std::collections::BTreeMap;

use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, ContributorInsightsMode, CreateGlobalSecondaryIndexAction,
    GlobalSecondaryIndex, KeySchemaElement, KeyType, LocalSecondaryIndex, OnDemandThroughput,
    Projection, ProjectionType, ProvisionedThroughput, ScalarAttributeType, SseSpecification,
    SseType, WarmThroughput,
};
use serde_json::{Map, Value};

use crate::provider::props::Props;
use crate::provider::{ProviderError, ResourceRequest};

/// Typed access to nested values, with errors naming the resource and the property path.
pub(super) struct Spec<'a> {
    req: &'a ResourceRequest<'a>,
}

impl<'a> Spec<'a> {
    pub fn new(req: &'a ResourceRequest<'a>) -> Self {
        Spec { req }
    }

    pub fn props(&self) -> Props<'a> {
        Props::new(self.req)
    }

    pub fn wrong(&self, path: &str, expected: &str) -> ProviderError {
        ProviderError::failed(self.req, format!("property {path} must be {expected}"))
    }

    /// A top-level or nested object; null and absent are `None`.
    pub fn object<'v>(
        &self,
        value: Option<&'v Value>,
        path: &str,
    ) -> Result<Option<&'v Map<String, Value>>, ProviderError> {
        match value {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Object(m)) => Ok(Some(m)),
            Some(_) => Err(self.wrong(path, "an object")),
        }
    }

    /// A list; null and absent are empty.
    pub fn list<'v>(
        &self,
        value: Option<&'v Value>,
        path: &str,
    ) -> Result<&'v [Value], ProviderError> {
        match value {
            None | Some(Value::Null) => Ok(&[]),
            Some(Value::Array(items)) => Ok(items),
            Some(_) => Err(self.wrong(path, "a list")),
        }
    }

    pub fn str(
        &self,
        m: &Map<String, Value>,
        key: &str,
        path: &str,
    ) -> Result<Option<String>, ProviderError> {
        match m.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(Value::Number(n)) => Ok(Some(n.to_string())),
            Some(Value::Bool(b)) => Ok(Some(b.to_string())),
            Some(_) => Err(self.wrong(&format!("{path}.{key}"), "a string")),
        }
    }

    pub fn required_str(
        &self,
        m: &Map<String, Value>,
        key: &str,
        path: &str,
    ) -> Result<String, ProviderError> {
        self.str(m, key, path)?
            .ok_or_else(|| ProviderError::missing(self.req, &format!("{path}.{key}")))
    }

    pub fn i64(
        &self,
        m: &Map<String, Value>,
        key: &str,
        path: &str,
    ) -> Result<Option<i64>, ProviderError> {
        let wrong = || self.wrong(&format!("{path}.{key}"), "an integer");
        match m.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => n.as_i64().map(Some).ok_or_else(wrong),
            Some(Value::String(s)) => s.trim().parse().map(Some).map_err(|_| wrong()),
            Some(_) => Err(wrong()),
        }
    }

    pub fn bool(
        &self,
        m: &Map<String, Value>,
        key: &str,
        path: &str,
    ) -> Result<Option<bool>, ProviderError> {
        match m.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(Value::String(s)) if s.eq_ignore_ascii_case("true") => Ok(Some(true)),
            Some(Value::String(s)) if s.eq_ignore_ascii_case("false") => Ok(Some(false)),
            Some(_) => Err(self.wrong(&format!("{path}.{key}"), "a boolean")),
        }
    }

    fn strings(
        &self,
        m: &Map<String, Value>,
        key: &str,
        path: &str,
    ) -> Result<Vec<String>, ProviderError> {
        let p = format!("{path}.{key}");
        self.list(m.get(key), &p)?
            .iter()
            .map(|v| match v {
                Value::String(s) => Ok(s.clone()),
                Value::Number(n) => Ok(n.to_string()),
                _ => Err(self.wrong(&p, "a list of strings")),
            })
            .collect()
    }

    fn item<'v>(&self, v: &'v Value, path: &str) -> Result<&'v Map<String, Value>, ProviderError> {
        self.object(Some(v), path)?
            .ok_or_else(|| self.wrong(path, "an object"))
    }

    // ---- table-level properties -------------------------------------------------------

    /// `BillingMode`, CloudFormation's default being `PROVISIONED`.
    pub fn billing_mode(&self) -> Result<BillingMode, ProviderError> {
        Ok(BillingMode::from(
            self.props()
                .str("BillingMode")?
                .as_deref()
                .unwrap_or("PROVISIONED"),
        ))
    }

    pub fn key_schema_at(
        &self,
        value: Option<&Value>,
        path: &str,
    ) -> Result<Vec<KeySchemaElement>, ProviderError> {
        self.list(value, path)?
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let p = format!("{path}[{i}]");
                let m = self.item(v, &p)?;
                KeySchemaElement::builder()
                    .attribute_name(self.required_str(m, "AttributeName", &p)?)
                    .key_type(KeyType::from(self.required_str(m, "KeyType", &p)?.as_str()))
                    .build()
                    .map_err(|e| self.wrong(&p, &e.to_string()))
            })
            .collect()
    }

    pub fn key_schema(&self) -> Result<Vec<KeySchemaElement>, ProviderError> {
        self.key_schema_at(self.req.properties.get("KeySchema"), "KeySchema")
    }

    /// `AttributeDefinitions` by attribute name (type as written).
    pub fn attribute_types(&self) -> Result<BTreeMap<String, String>, ProviderError> {
        let mut out = BTreeMap::new();
        for (i, v) in self
            .list(
                self.req.properties.get("AttributeDefinitions"),
                "AttributeDefinitions",
            )?
            .iter()
            .enumerate()
        {
            let p = format!("AttributeDefinitions[{i}]");
            let m = self.item(v, &p)?;
            out.insert(
                self.required_str(m, "AttributeName", &p)?,
                self.required_str(m, "AttributeType", &p)?,
            );
        }
        Ok(out)
    }

    pub fn attribute_definitions(&self) -> Result<Vec<AttributeDefinition>, ProviderError> {
        self.attribute_types()?
            .into_iter()
            .map(|(name, ty)| {
                AttributeDefinition::builder()
                    .attribute_name(name)
                    .attribute_type(ScalarAttributeType::from(ty.as_str()))
                    .build()
                    .map_err(|e| self.wrong("AttributeDefinitions", &e.to_string()))
            })
            .collect()
    }

    pub fn throughput_at(
        &self,
        value: Option<&Value>,
        path: &str,
    ) -> Result<Option<ProvisionedThroughput>, ProviderError> {
        let Some(m) = self.object(value, path)? else {
            return Ok(None);
        };
        let read = self.i64(m, "ReadCapacityUnits", path)?;
        let write = self.i64(m, "WriteCapacityUnits", path)?;
        match (read, write) {
            (Some(r), Some(w)) => Ok(Some(
                ProvisionedThroughput::builder()
                    .read_capacity_units(r)
                    .write_capacity_units(w)
                    .build()
                    .map_err(|e| self.wrong(path, &e.to_string()))?,
            )),
            _ => Err(self.wrong(
                path,
                "an object with ReadCapacityUnits and WriteCapacityUnits",
            )),
        }
    }

    pub fn on_demand_at(
        &self,
        value: Option<&Value>,
        path: &str,
    ) -> Result<Option<OnDemandThroughput>, ProviderError> {
        let Some(m) = self.object(value, path)? else {
            return Ok(None);
        };
        Ok(Some(
            OnDemandThroughput::builder()
                .set_max_read_request_units(self.i64(m, "MaxReadRequestUnits", path)?)
                .set_max_write_request_units(self.i64(m, "MaxWriteRequestUnits", path)?)
                .build(),
        ))
    }

    pub fn warm_at(
        &self,
        value: Option<&Value>,
        path: &str,
    ) -> Result<Option<WarmThroughput>, ProviderError> {
        let Some(m) = self.object(value, path)? else {
            return Ok(None);
        };
        Ok(Some(
            WarmThroughput::builder()
                .set_read_units_per_second(self.i64(m, "ReadUnitsPerSecond", path)?)
                .set_write_units_per_second(self.i64(m, "WriteUnitsPerSecond", path)?)
                .build(),
        ))
    }

    pub fn projection_at(
        &self,
        value: Option<&Value>,
        path: &str,
    ) -> Result<Option<Projection>, ProviderError> {
        let Some(m) = self.object(value, path)? else {
            return Ok(None);
        };
        let non_key = self.strings(m, "NonKeyAttributes", path)?;
        Ok(Some(
            Projection::builder()
                .set_projection_type(
                    self.str(m, "ProjectionType", path)?
                        .map(|t| ProjectionType::from(t.as_str())),
                )
                .set_non_key_attributes(if non_key.is_empty() {
                    None
                } else {
                    Some(non_key)
                })
                .build(),
        ))
    }

    pub fn local_indexes(&self) -> Result<Vec<LocalSecondaryIndex>, ProviderError> {
        self.list(
            self.req.properties.get("LocalSecondaryIndexes"),
            "LocalSecondaryIndexes",
        )?
        .iter()
        .enumerate()
        .map(|(i, v)| {
            let p = format!("LocalSecondaryIndexes[{i}]");
            let m = self.item(v, &p)?;
            LocalSecondaryIndex::builder()
                .index_name(self.required_str(m, "IndexName", &p)?)
                .set_key_schema(Some(
                    self.key_schema_at(m.get("KeySchema"), &format!("{p}.KeySchema"))?,
                ))
                .set_projection(
                    self.projection_at(m.get("Projection"), &format!("{p}.Projection"))?,
                )
                .build()
                .map_err(|e| self.wrong(&p, &e.to_string()))
        })
        .collect()
    }

    pub fn global_indexes(&self) -> Result<Vec<Gsi<'a>>, ProviderError> {
        let mut out = Vec::new();
        for (i, v) in self
            .list(
                self.req.properties.get("GlobalSecondaryIndexes"),
                "GlobalSecondaryIndexes",
            )?
            .iter()
            .enumerate()
        {
            let path = format!("GlobalSecondaryIndexes[{i}]");
            let raw = self.item(v, &path)?;
            let name = self.required_str(raw, "IndexName", &path)?;
            out.push(Gsi { name, raw, path });
        }
        Ok(out)
    }

    /// `StreamSpecification.StreamViewType`, when streams are on.
    pub fn stream_view_type(&self) -> Result<Option<String>, ProviderError> {
        let Some(m) = self.props().object("StreamSpecification")? else {
            return Ok(None);
        };
        Ok(Some(self.required_str(
            m,
            "StreamViewType",
            "StreamSpecification",
        )?))
    }

    /// `StreamSpecification.ResourcePolicy.PolicyDocument`, serialized.
    pub fn stream_policy(&self) -> Result<Option<String>, ProviderError> {
        let Some(m) = self.props().object("StreamSpecification")? else {
            return Ok(None);
        };
        self.policy_document(
            m.get("ResourcePolicy"),
            "StreamSpecification.ResourcePolicy",
        )
    }

    /// `ResourcePolicy.PolicyDocument`, serialized.
    pub fn table_policy(&self) -> Result<Option<String>, ProviderError> {
        self.policy_document(self.req.properties.get("ResourcePolicy"), "ResourcePolicy")
    }

    fn policy_document(
        &self,
        value: Option<&Value>,
        path: &str,
    ) -> Result<Option<String>, ProviderError> {
        let Some(m) = self.object(value, path)? else {
            return Ok(None);
        };
        match m.get("PolicyDocument") {
            None | Some(Value::Null) => Err(ProviderError::missing(
                self.req,
                &format!("{path}.PolicyDocument"),
            )),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(v @ Value::Object(_)) => Ok(Some(v.to_string())),
            Some(_) => Err(self.wrong(&format!("{path}.PolicyDocument"), "a JSON document")),
        }
    }

    pub fn sse(&self) -> Result<Option<SseSpecification>, ProviderError> {
        let Some(m) = self.props().object("SSESpecification")? else {
            return Ok(None);
        };
        let path = "SSESpecification";
        Ok(Some(
            SseSpecification::builder()
                .set_enabled(self.bool(m, "SSEEnabled", path)?)
                .set_sse_type(
                    self.str(m, "SSEType", path)?
                        .map(|t| SseType::from(t.as_str())),
                )
                .set_kms_master_key_id(self.str(m, "KMSMasterKeyId", path)?)
                .build(),
        ))
    }

    /// `TimeToLiveSpecification` as (attribute, enabled); `None` when absent.
    pub fn ttl(&self) -> Result<Option<(Option<String>, bool)>, ProviderError> {
        let Some(m) = self.props().object("TimeToLiveSpecification")? else {
            return Ok(None);
        };
        let path = "TimeToLiveSpecification";
        let enabled = self
            .bool(m, "Enabled", path)?
            .ok_or_else(|| ProviderError::missing(self.req, "TimeToLiveSpecification.Enabled"))?;
        Ok(Some((self.str(m, "AttributeName", path)?, enabled)))
    }

    /// The TTL attribute when TTL is on.
    pub fn ttl_enabled_attribute(&self) -> Result<Option<String>, ProviderError> {
        match self.ttl()? {
            Some((Some(attr), true)) => Ok(Some(attr)),
            Some((None, true)) => Err(ProviderError::missing(
                self.req,
                "TimeToLiveSpecification.AttributeName",
            )),
            _ => Ok(None),
        }
    }

    /// `PointInTimeRecoverySpecification` as (enabled, recovery period).
    pub fn pitr(&self) -> Result<(bool, Option<i32>), ProviderError> {
        let Some(m) = self.props().object("PointInTimeRecoverySpecification")? else {
            return Ok((false, None));
        };
        let path = "PointInTimeRecoverySpecification";
        let days = self
            .i64(m, "RecoveryPeriodInDays", path)?
            .map(|d| {
                i32::try_from(d).map_err(|_| {
                    self.wrong(&format!("{path}.RecoveryPeriodInDays"), "a small integer")
                })
            })
            .transpose()?;
        Ok((
            self.bool(m, "PointInTimeRecoveryEnabled", path)?
                .unwrap_or(false),
            days,
        ))
    }

    /// A `ContributorInsightsSpecification` as (enabled, mode).
    pub fn insights_at(
        &self,
        value: Option<&Value>,
        path: &str,
    ) -> Result<(bool, Option<ContributorInsightsMode>), ProviderError> {
        let Some(m) = self.object(value, path)? else {
            return Ok((false, None));
        };
        let enabled = self.bool(m, "Enabled", path)?.unwrap_or(false);
        let mode = self
            .str(m, "Mode", path)?
            .map(|s| ContributorInsightsMode::from(s.as_str()));
        Ok((enabled, mode))
    }

    /// `KinesisStreamSpecification` as (stream ARN, precision).
    pub fn kinesis(&self) -> Result<Option<(String, Option<String>)>, ProviderError> {
        let Some(m) = self.props().object("KinesisStreamSpecification")? else {
            return Ok(None);
        };
        let path = "KinesisStreamSpecification";
        Ok(Some((
            self.required_str(m, "StreamArn", path)?,
            self.str(m, "ApproximateCreationDateTimePrecision", path)?,
        )))
    }

    /// `Tags` as a map.
    pub fn tags(&self) -> Result<BTreeMap<String, String>, ProviderError> {
        Ok(self.props().tags()?.into_iter().collect())
    }
}

/// One `GlobalSecondaryIndexes` entry.
pub(super) struct Gsi<'v> {
    pub name: String,
    pub raw: &'v Map<String, Value>,
    pub path: String,
}

impl Gsi<'_> {
    /// What cannot change in place: the key schema, the projection and the key attributes'
    /// types. A change to any of them deletes and re-creates the index.
    pub fn structure(&self, attribute_types: &BTreeMap<String, String>) -> Value {
        let key_types: Vec<Value> = self
            .raw
            .get("KeySchema")
            .and_then(Value::as_array)
            .map(|keys| {
                keys.iter()
                    .filter_map(|k| k.get("AttributeName").and_then(Value::as_str))
                    .map(|a| Value::String(attribute_types.get(a).cloned().unwrap_or_default()))
                    .collect()
            })
            .unwrap_or_default();
        serde_json::json!([
            self.raw.get("KeySchema"),
            self.raw.get("Projection"),
            key_types
        ])
    }

    pub fn throughput(
        &self,
        spec: &Spec<'_>,
    ) -> Result<Option<ProvisionedThroughput>, ProviderError> {
        spec.throughput_at(
            self.raw.get("ProvisionedThroughput"),
            &format!("{}.ProvisionedThroughput", self.path),
        )
    }

    pub fn on_demand(&self, spec: &Spec<'_>) -> Result<Option<OnDemandThroughput>, ProviderError> {
        spec.on_demand_at(
            self.raw.get("OnDemandThroughput"),
            &format!("{}.OnDemandThroughput", self.path),
        )
    }

    pub fn warm(&self, spec: &Spec<'_>) -> Result<Option<WarmThroughput>, ProviderError> {
        spec.warm_at(
            self.raw.get("WarmThroughput"),
            &format!("{}.WarmThroughput", self.path),
        )
    }

    pub fn insights(
        &self,
        spec: &Spec<'_>,
    ) -> Result<(bool, Option<ContributorInsightsMode>), ProviderError> {
        spec.insights_at(
            self.raw.get("ContributorInsightsSpecification"),
            &format!("{}.ContributorInsightsSpecification", self.path),
        )
    }

    fn keys(&self, spec: &Spec<'_>) -> Result<Vec<KeySchemaElement>, ProviderError> {
        spec.key_schema_at(
            self.raw.get("KeySchema"),
            &format!("{}.KeySchema", self.path),
        )
    }

    fn projection(&self, spec: &Spec<'_>) -> Result<Option<Projection>, ProviderError> {
        spec.projection_at(
            self.raw.get("Projection"),
            &format!("{}.Projection", self.path),
        )
    }

    /// The index for CreateTable. Throughput is sent only for provisioned tables.
    pub fn for_create(
        &self,
        spec: &Spec<'_>,
        provisioned: bool,
    ) -> Result<GlobalSecondaryIndex, ProviderError> {
        GlobalSecondaryIndex::builder()
            .index_name(&self.name)
            .set_key_schema(Some(self.keys(spec)?))
            .set_projection(self.projection(spec)?)
            .set_provisioned_throughput(if provisioned {
                self.throughput(spec)?
            } else {
                None
            })
            .set_on_demand_throughput(if provisioned {
                None
            } else {
                self.on_demand(spec)?
            })
            .set_warm_throughput(self.warm(spec)?)
            .build()
            .map_err(|e| spec.wrong(&self.path, &e.to_string()))
    }

    /// The index for an UpdateTable `Create` action.
    pub fn for_update_create(
        &self,
        spec: &Spec<'_>,
        provisioned: bool,
    ) -> Result<CreateGlobalSecondaryIndexAction, ProviderError> {
        CreateGlobalSecondaryIndexAction::builder()
            .index_name(&self.name)
            .set_key_schema(Some(self.keys(spec)?))
            .set_projection(self.projection(spec)?)
            .set_provisioned_throughput(if provisioned {
                self.throughput(spec)?
            } else {
                None
            })
            .set_on_demand_throughput(if provisioned {
                None
            } else {
                self.on_demand(spec)?
            })
            .set_warm_throughput(self.warm(spec)?)
            .build()
            .map_err(|e| spec.wrong(&self.path, &e.to_string()))
    }
}
