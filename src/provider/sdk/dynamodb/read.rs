//! A table as DynamoDB describes it, named the way `AWS::DynamoDB::Table` names its
//! properties.

use aws_sdk_dynamodb::types::{
    BillingMode, KeySchemaElement, OnDemandThroughput, PointInTimeRecoveryStatus, Projection,
    ProvisionedThroughputDescription, SseStatus, TableClass, TableDescription, TimeToLiveStatus,
};
use serde_json::{json, Map, Value};

fn keys(keys: &[KeySchemaElement]) -> Value {
    Value::Array(
        keys.iter()
            .map(|k| json!({"AttributeName": k.attribute_name(), "KeyType": k.key_type().as_str()}))
            .collect(),
    )
}

fn projection(p: &Projection) -> Value {
    let mut m = Map::new();
    if let Some(t) = p.projection_type() {
        m.insert("ProjectionType".into(), json!(t.as_str()));
    }
    if !p.non_key_attributes().is_empty() {
        m.insert("NonKeyAttributes".into(), json!(p.non_key_attributes()));
    }
    Value::Object(m)
}

fn throughput(t: &ProvisionedThroughputDescription) -> Value {
    json!({
        "ReadCapacityUnits": t.read_capacity_units().unwrap_or_default(),
        "WriteCapacityUnits": t.write_capacity_units().unwrap_or_default(),
    })
}

/// `OnDemandThroughput`, omitted when it sets no limit (-1 or absent).
fn on_demand(o: Option<&OnDemandThroughput>) -> Option<Value> {
    let o = o?;
    let mut m = Map::new();
    if let Some(r) = o.max_read_request_units().filter(|v| *v > 0) {
        m.insert("MaxReadRequestUnits".into(), json!(r));
    }
    if let Some(w) = o.max_write_request_units().filter(|v| *v > 0) {
        m.insert("MaxWriteRequestUnits".into(), json!(w));
    }
    (!m.is_empty()).then_some(Value::Object(m))
}

/// The billing mode a description reports (tables created provisioned may have no summary).
pub(super) fn billing_mode(t: &TableDescription) -> BillingMode {
    t.billing_mode_summary()
        .and_then(|s| s.billing_mode())
        .cloned()
        .unwrap_or(BillingMode::Provisioned)
}

/// The properties DescribeTable alone reports.
pub(super) fn table_properties(t: &TableDescription) -> Map<String, Value> {
    let mut out = Map::new();
    let mode = billing_mode(t);
    let provisioned = mode == BillingMode::Provisioned;
    if let Some(name) = t.table_name() {
        out.insert("TableName".into(), json!(name));
    }
    out.insert("KeySchema".into(), keys(t.key_schema()));
    out.insert(
        "AttributeDefinitions".into(),
        Value::Array(
            t.attribute_definitions()
                .iter()
                .map(|a| json!({"AttributeName": a.attribute_name(), "AttributeType": a.attribute_type().as_str()}))
                .collect(),
        ),
    );
    out.insert("BillingMode".into(), json!(mode.as_str()));
    if provisioned {
        if let Some(tp) = t.provisioned_throughput() {
            out.insert("ProvisionedThroughput".into(), throughput(tp));
        }
    } else if let Some(od) = on_demand(t.on_demand_throughput()) {
        out.insert("OnDemandThroughput".into(), od);
    }
    if !t.global_secondary_indexes().is_empty() {
        let gsis = t
            .global_secondary_indexes()
            .iter()
            .map(|g| {
                let mut m = Map::new();
                m.insert(
                    "IndexName".into(),
                    json!(g.index_name().unwrap_or_default()),
                );
                m.insert("KeySchema".into(), keys(g.key_schema()));
                if let Some(p) = g.projection() {
                    m.insert("Projection".into(), projection(p));
                }
                if provisioned {
                    if let Some(tp) = g.provisioned_throughput() {
                        m.insert("ProvisionedThroughput".into(), throughput(tp));
                    }
                } else if let Some(od) = on_demand(g.on_demand_throughput()) {
                    m.insert("OnDemandThroughput".into(), od);
                }
                Value::Object(m)
            })
            .collect();
        out.insert("GlobalSecondaryIndexes".into(), Value::Array(gsis));
    }
    if !t.local_secondary_indexes().is_empty() {
        let lsis = t
            .local_secondary_indexes()
            .iter()
            .map(|l| {
                let mut m = Map::new();
                m.insert(
                    "IndexName".into(),
                    json!(l.index_name().unwrap_or_default()),
                );
                m.insert("KeySchema".into(), keys(l.key_schema()));
                if let Some(p) = l.projection() {
                    m.insert("Projection".into(), projection(p));
                }
                Value::Object(m)
            })
            .collect();
        out.insert("LocalSecondaryIndexes".into(), Value::Array(lsis));
    }
    if let Some(s) = t.stream_specification().filter(|s| s.stream_enabled()) {
        if let Some(vt) = s.stream_view_type() {
            out.insert(
                "StreamSpecification".into(),
                json!({"StreamViewType": vt.as_str()}),
            );
        }
    }
    if let Some(sse) = t.sse_description() {
        let on = matches!(
            sse.status(),
            Some(SseStatus::Enabled | SseStatus::Enabling | SseStatus::Updating)
        );
        if on {
            let mut m = Map::new();
            m.insert("SSEEnabled".into(), json!(true));
            if let Some(ty) = sse.sse_type() {
                m.insert("SSEType".into(), json!(ty.as_str()));
            }
            if let Some(k) = sse.kms_master_key_arn() {
                m.insert("KMSMasterKeyId".into(), json!(k));
            }
            out.insert("SSESpecification".into(), Value::Object(m));
        }
    }
    let class = t
        .table_class_summary()
        .and_then(|c| c.table_class())
        .cloned()
        .unwrap_or(TableClass::Standard);
    out.insert("TableClass".into(), json!(class.as_str()));
    out.insert(
        "DeletionProtectionEnabled".into(),
        json!(t.deletion_protection_enabled().unwrap_or(false)),
    );
    if let Some(w) = t.warm_throughput() {
        if w.read_units_per_second().is_some() || w.write_units_per_second().is_some() {
            let mut m = Map::new();
            if let Some(r) = w.read_units_per_second() {
                m.insert("ReadUnitsPerSecond".into(), json!(r));
            }
            if let Some(wr) = w.write_units_per_second() {
                m.insert("WriteUnitsPerSecond".into(), json!(wr));
            }
            out.insert("WarmThroughput".into(), Value::Object(m));
        }
    }
    out
}

/// `TimeToLiveSpecification` from DescribeTimeToLive, when TTL is on.
pub(super) fn ttl(status: Option<&TimeToLiveStatus>, attribute: Option<&str>) -> Option<Value> {
    match (status, attribute) {
        (Some(TimeToLiveStatus::Enabled | TimeToLiveStatus::Enabling), Some(a)) => {
            Some(json!({"AttributeName": a, "Enabled": true}))
        }
        _ => None,
    }
}

/// `PointInTimeRecoverySpecification` from DescribeContinuousBackups.
pub(super) fn pitr(status: Option<&PointInTimeRecoveryStatus>, days: Option<i32>) -> Value {
    let enabled = matches!(status, Some(PointInTimeRecoveryStatus::Enabled));
    let mut m = Map::new();
    m.insert("PointInTimeRecoveryEnabled".into(), json!(enabled));
    if let (true, Some(d)) = (enabled, days) {
        m.insert("RecoveryPeriodInDays".into(), json!(d));
    }
    Value::Object(m)
}
