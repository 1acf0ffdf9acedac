//! Comparing a resource's resolved desired properties with its state record.
//!
//! The rules: the record's `properties` are what cdkd sent (the resolved template, never
//! AWS's read-back, which lives in `observedProperties`), so the comparison is symmetric at
//! every depth: a key only the record holds is a removal the user made (a dropped
//! `LifecycleConfiguration`, a Lambda environment variable taken out) and must reach AWS,
//! as upstream cdkd's comparator does today (the spec's older "only template keys" rule
//! swallowed such removals). `null` and absent are the same; scalars compare by their text
//! (`60` equals `"60"`). A differing top-level property is a replacement when the type's
//! registry schema lists it as create-only, or when a create-only path inside it (`A/B`,
//! `Tags/*/Key`) holds a different value.

use serde_json::{Map, Value};

use crate::plan::PropertyDiff;
use crate::provider::schema;

/// Types whose replacement destroys data: replacing one needs `--force-stateful-recreation`
/// (unless its `UpdateReplacePolicy` keeps the old resource).
const STATEFUL_TYPES: &[&str] = &[
    "AWS::S3::Bucket",
    "AWS::DynamoDB::Table",
    "AWS::DynamoDB::GlobalTable",
    "AWS::Logs::LogGroup",
    "AWS::EFS::FileSystem",
    "AWS::FSx::FileSystem",
    "AWS::SecretsManager::Secret",
    "AWS::SSM::Parameter",
    "AWS::Kinesis::Stream",
    "AWS::KinesisFirehose::DeliveryStream",
    "AWS::KMS::Key",
    "AWS::Cognito::UserPool",
    "AWS::ElastiCache::CacheCluster",
    "AWS::ElastiCache::ReplicationGroup",
    "AWS::ElastiCache::ServerlessCache",
    "AWS::OpenSearchService::Domain",
    "AWS::Elasticsearch::Domain",
    "AWS::EC2::Volume",
    "AWS::Backup::BackupVault",
    "AWS::Neptune::DBCluster",
    "AWS::DocDB::DBCluster",
    "AWS::Redshift::Cluster",
    "AWS::Timestream::Table",
    "AWS::ECR::Repository",
];

/// Whether replacing a resource of this type can lose data.
pub fn is_stateful(resource_type: &str) -> bool {
    STATEFUL_TYPES.contains(&resource_type) || resource_type.starts_with("AWS::RDS::")
}

/// The refusal a stateful replacement without `--force-stateful-recreation` gets.
pub fn stateful_refusal(logical_id: &str, resource_type: &str, why: &str) -> String {
    format!(
        "STATEFUL_REPLACE_BLOCKED: {logical_id} ({resource_type}) would be replaced ({why}), \
         which deletes the old resource and its data; pass --force-stateful-recreation to allow \
         it, or set UpdateReplacePolicy: Retain to keep the old one"
    )
}

/// Equality of a desired value with a recorded one: symmetric over keys (a key on either
/// side alone is a difference unless it is `null`), scalars compare by text, lists element
/// by element.
pub fn values_equal(new: &Value, old: &Value) -> bool {
    match (new, old) {
        (Value::Null, Value::Null) => true,
        (Value::Object(n), Value::Object(o)) => {
            n.iter().all(|(k, nv)| optional_equal(Some(nv), o.get(k)))
                && o.iter().all(|(k, ov)| n.contains_key(k) || ov.is_null())
        }
        (Value::Array(n), Value::Array(o)) => {
            n.len() == o.len() && n.iter().zip(o).all(|(a, b)| values_equal(a, b))
        }
        _ => match (scalar_text(new), scalar_text(old)) {
            (Some(a), Some(b)) => a == b,
            _ => false,
        },
    }
}

fn scalar_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// [`values_equal`] over values that may be absent: absent equals `null`.
pub fn optional_equal(new: Option<&Value>, old: Option<&Value>) -> bool {
    match (new, old) {
        (Some(n), Some(o)) => values_equal(n, o),
        (Some(v), None) | (None, Some(v)) => v.is_null(),
        (None, None) => true,
    }
}

/// The top-level properties whose desired value differs from the record. Keys listed in
/// `unknown` (values that cannot be resolved yet) are not compared.
pub fn diff_properties(
    resource_type: &str,
    desired: &Map<String, Value>,
    recorded: &Map<String, Value>,
    unknown: &[String],
) -> Vec<PropertyDiff> {
    let mut diffs = Vec::new();
    for (key, new) in desired {
        if unknown.iter().any(|u| u == key) {
            continue;
        }
        let old = recorded.get(key);
        if optional_equal(Some(new), old) {
            continue;
        }
        diffs.push(PropertyDiff {
            path: key.clone(),
            old: old.cloned(),
            new: Some(new.clone()),
            requires_replacement: replaces(resource_type, key, Some(new), old),
        });
    }
    // A property the template no longer declares: AWS must unset it (a create-only one
    // replaces the resource, as CloudFormation does).
    for (key, old) in recorded {
        if desired.contains_key(key) || old.is_null() || unknown.iter().any(|u| u == key) {
            continue;
        }
        diffs.push(PropertyDiff {
            path: key.clone(),
            old: Some(old.clone()),
            new: None,
            requires_replacement: replaces(resource_type, key, None, Some(old)),
        });
    }
    diffs
}

/// Whether a change of top-level `key` from `old` to `new` replaces the resource.
pub fn replaces(resource_type: &str, key: &str, new: Option<&Value>, old: Option<&Value>) -> bool {
    if schema::is_create_only(resource_type, key) {
        return true;
    }
    schema::create_only_paths_under(resource_type, key)
        .iter()
        .any(|path| {
            let rest = &path.segments()[1..];
            let mut a = Vec::new();
            let mut b = Vec::new();
            collect_at(new, rest, &mut a);
            collect_at(old, rest, &mut b);
            a.len() != b.len() || a.iter().zip(&b).any(|(x, y)| !optional_equal(*x, *y))
        })
}

/// The values at `path` under `value`; `*` expands to every list item.
fn collect_at<'a>(value: Option<&'a Value>, path: &[String], out: &mut Vec<Option<&'a Value>>) {
    let Some((first, rest)) = path.split_first() else {
        out.push(value);
        return;
    };
    match (value, first.as_str()) {
        (Some(Value::Array(items)), "*") => {
            for item in items {
                collect_at(Some(item), rest, out);
            }
        }
        (Some(Value::Object(m)), key) => collect_at(m.get(key), rest, out),
        (Some(Value::Array(items)), index) => collect_at(
            index.parse::<usize>().ok().and_then(|i| items.get(i)),
            rest,
            out,
        ),
        _ => out.push(None),
    }
}

/// Every string inside `value` that holds a `{{resolve:...}}` dynamic reference.
pub fn has_dynamic_reference(value: &Value) -> bool {
    match value {
        Value::String(s) => crate::resolve::dynamic::contains_dynamic_reference(s),
        Value::Array(items) => items.iter().any(has_dynamic_reference),
        Value::Object(m) => m.values().any(has_dynamic_reference),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn map(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn null_is_absent_on_both_sides() {
        let desired = map(json!({"A": 1, "B": {"X": "y"}, "C": null}));
        let recorded = map(json!({"A": "1", "B": {"X": "y", "Gone": null}, "D": null}));
        assert!(diff_properties("AWS::SQS::Queue", &desired, &recorded, &[]).is_empty());
        let recorded = map(json!({"A": 2, "B": {"X": "y"}}));
        let diffs = diff_properties("AWS::SQS::Queue", &desired, &recorded, &[]);
        assert_eq!(diffs.len(), 1);
        assert_eq!(diffs[0].path, "A");
        assert!(!diffs[0].requires_replacement);
        // An unknown value is not compared.
        assert!(diff_properties("AWS::SQS::Queue", &desired, &recorded, &["A".into()]).is_empty());
    }

    #[test]
    fn a_property_or_key_only_the_record_holds_is_a_removal() {
        let desired = map(json!({"A": 1, "B": {"X": "y"}}));
        let recorded = map(json!({"A": 1, "B": {"X": "y", "Z": "w"}, "Lifecycle": {"Rules": []}}));
        let diffs = diff_properties("AWS::S3::Bucket", &desired, &recorded, &[]);
        let paths: Vec<&str> = diffs.iter().map(|d| d.path.as_str()).collect();
        assert_eq!(paths, ["B", "Lifecycle"]);
        assert_eq!(diffs[1].new, None);
        // Removing a create-only property replaces the resource.
        let desired = map(json!({}));
        let recorded = map(json!({"BucketName": "b"}));
        let diffs = diff_properties("AWS::S3::Bucket", &desired, &recorded, &[]);
        assert!(diffs[0].requires_replacement);
        assert!(!values_equal(&json!({"a": 1}), &json!({"a": 1, "b": 2})));
    }

    #[test]
    fn lists_compare_by_position() {
        assert!(values_equal(
            &json!([1, {"a": 1}]),
            &json!([1, {"a": 1, "b": null}])
        ));
        assert!(!values_equal(&json!([1, 2]), &json!([2, 1])));
        assert!(!values_equal(&json!([1]), &json!([1, 2])));
        assert!(!values_equal(&json!({"a": 1}), &json!("x")));
    }

    #[test]
    fn create_only_properties_replace() {
        let desired = map(json!({"QueueName": "b", "VisibilityTimeout": 30}));
        let recorded = map(json!({"QueueName": "a", "VisibilityTimeout": 60}));
        let diffs = diff_properties("AWS::SQS::Queue", &desired, &recorded, &[]);
        let by = |p: &str| {
            diffs
                .iter()
                .find(|d| d.path == p)
                .unwrap()
                .requires_replacement
        };
        assert!(by("QueueName"));
        assert!(!by("VisibilityTimeout"));
    }

    #[test]
    fn stateful_types() {
        assert!(is_stateful("AWS::S3::Bucket"));
        assert!(is_stateful("AWS::RDS::DBCluster"));
        assert!(!is_stateful("AWS::SQS::Queue"));
    }

    #[test]
    fn dynamic_references_are_found() {
        assert!(has_dynamic_reference(
            &json!({"a": ["x{{resolve:ssm:/p}}"]})
        ));
        assert!(!has_dynamic_reference(&json!({"a": ["plain"]})));
    }
}
