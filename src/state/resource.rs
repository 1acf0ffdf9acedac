//! One resource's record in `state.json` (`ResourceState`), and the small
//! string enums its fields hold.
//!
//! Every optional field is skipped when absent, so a record read from a file
//! re-serializes without inventing keys, and fields this binary does not know
//! are kept in `extra` and written back. The string enums keep an unknown
//! spelling as `Other(..)` for the same reason.

use indexmap::IndexMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::value::Lenient;

macro_rules! string_enum {
    ($(#[$meta:meta])* $name:ident { $($variant:ident => $text:literal),+ $(,)? }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        pub enum $name {
            $($variant,)+
            /// A spelling this binary does not know, kept verbatim.
            Other(String),
        }

        impl $name {
            pub fn as_str(&self) -> &str {
                match self {
                    $($name::$variant => $text,)+
                    $name::Other(s) => s,
                }
            }

            pub fn parse(s: &str) -> Self {
                match s {
                    $($text => $name::$variant,)+
                    other => $name::Other(other.to_string()),
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let s = String::deserialize(deserializer)?;
                Ok($name::parse(&s))
            }
        }
    };
}

string_enum!(
    /// A CloudFormation `DeletionPolicy` / `UpdateReplacePolicy` value (v5+).
    ResourcePolicy {
        Delete => "Delete",
        Retain => "Retain",
        Snapshot => "Snapshot",
        RetainExceptOnCreate => "RetainExceptOnCreate",
    }
);

impl ResourcePolicy {
    /// `Retain` and `RetainExceptOnCreate` keep the AWS resource when cdkd
    /// deletes its record.
    pub fn retains(&self) -> bool {
        matches!(
            self,
            ResourcePolicy::Retain | ResourcePolicy::RetainExceptOnCreate
        )
    }
}

string_enum!(
    /// Which provisioning layer owns a resource (v7+).
    ProvisionedBy {
        Sdk => "sdk",
        CcApi => "cc-api",
    }
);

string_enum!(
    /// Why `cdkd import` declined to capture an observed baseline.
    BaselineRefusalReason {
        UnverifiableParameter => "unverifiable-parameter",
        IncompleteResolution => "incomplete-resolution",
    }
);

/// One step of a path into a resource's `properties` (`noEchoLeaves`): an
/// object key or a list index.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum PathSegment {
    Key(String),
    Index(u64),
}

/// One resource's record (`ResourceState`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceState {
    /// The id the provider returned (an ARN, a name, a `|`-joined composite).
    /// Absent only on a damaged record; such a row is still readable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub physical_id: Option<String>,
    pub resource_type: String,
    /// The resolved template values cdkd sent.
    pub properties: Map<String, Value>,
    /// AWS's view right after the last create / update (v3+, drift baseline).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_properties: Option<Map<String, Value>>,
    /// The `Fn::GetAtt` cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attributes: Option<Map<String, Value>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dependencies: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<Map<String, Value>>,
    /// `aws:cdk:path` at the last deploy; informational (no bump).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub construct_path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_policy: Option<ResourcePolicy>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_replace_policy: Option<ResourcePolicy>,
    /// v7+. Absent = not pinned (the legacy SDK default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provisioned_by: Option<ProvisionedBy>,
    /// v10+. `Some(true)` when `cdkd import` declined to capture a baseline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_baseline_refused: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_baseline_refusal_reason: Option<BaselineRefusalReason>,
    /// v11+. Positions in `properties` stored as `***` for a NoEcho value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_echo_leaves: Option<Vec<Vec<PathSegment>>>,
    /// v11+. `attributes` the provider declared NoEcho.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_echo_attribute_names: Option<Vec<String>>,
    /// `noEchoLeaves` positions AWS reports exactly (no bump).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_echo_exact_echo_leaves: Option<Vec<Vec<String>>>,
    /// Create-only properties `--prefer-sdk-route` dropped (no bump).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub accepted_create_only_drops: Option<Vec<String>>,
    /// Per masked property, a hash of its template text (no bump). A malformed
    /// map reads as absent.
    #[serde(
        default,
        deserialize_with = "super::value::present",
        skip_serializing_if = "Option::is_none"
    )]
    pub masked_property_fingerprints: Option<Lenient<IndexMap<String, String>>>,
    /// Per masked property, a hash of its resolved non-secret inputs bound to
    /// the text hash (no bump). A malformed map reads as absent.
    #[serde(
        default,
        deserialize_with = "super::value::present",
        skip_serializing_if = "Option::is_none"
    )]
    pub masked_property_input_fingerprints: Option<Lenient<IndexMap<String, String>>>,
    /// Fields this binary does not know, kept for the next write.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ResourceState {
    /// A record with the fields every writer sets.
    pub fn new(
        physical_id: impl Into<String>,
        resource_type: impl Into<String>,
        properties: Map<String, Value>,
    ) -> Self {
        ResourceState {
            physical_id: Some(physical_id.into()),
            resource_type: resource_type.into(),
            properties,
            ..ResourceState::default()
        }
    }

    /// The provisioning layer, reading an absent field as the legacy SDK
    /// default. Use [`ResourceState::is_pinned_to_cloud_control`] for routing:
    /// an absent field is not a pin.
    pub fn provisioned_by_or_default(&self) -> ProvisionedBy {
        self.provisioned_by.clone().unwrap_or(ProvisionedBy::Sdk)
    }

    /// Only a recorded `cc-api` pins a resource to Cloud Control.
    pub fn is_pinned_to_cloud_control(&self) -> bool {
        self.provisioned_by == Some(ProvisionedBy::CcApi)
    }

    /// Whether the recorded `DeletionPolicy` keeps the AWS resource.
    pub fn retains_on_delete(&self) -> bool {
        self.deletion_policy
            .as_ref()
            .is_some_and(ResourcePolicy::retains)
    }

    /// `observedBaselineRefused: true` is recorded.
    pub fn baseline_refused(&self) -> bool {
        self.observed_baseline_refused == Some(true)
    }

    /// The text fingerprints, or `None` when absent or malformed.
    pub fn masked_property_fingerprints(&self) -> Option<&IndexMap<String, String>> {
        self.masked_property_fingerprints
            .as_ref()
            .and_then(Lenient::valid)
    }

    /// The input fingerprints, or `None` when absent or malformed.
    pub fn masked_property_input_fingerprints(&self) -> Option<&IndexMap<String, String>> {
        self.masked_property_input_fingerprints
            .as_ref()
            .and_then(Lenient::valid)
    }

    /// The drift baseline: `observedProperties` when recorded, else
    /// `properties` (the pre-v3 behaviour).
    pub fn drift_baseline(&self) -> &Map<String, Value> {
        self.observed_properties
            .as_ref()
            .unwrap_or(&self.properties)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_record_round_trips_without_inventing_keys() {
        let raw = json!({
            "physicalId": "b",
            "resourceType": "AWS::S3::Bucket",
            "properties": {},
            "deletionPolicy": "Retain",
            "provisionedBy": "cc-api",
            "noEchoLeaves": [["Config", 0, "Token"]],
            "futureField": {"x": 1}
        });
        let r: ResourceState = serde_json::from_value(raw.clone()).unwrap();
        assert!(r.retains_on_delete());
        assert!(r.is_pinned_to_cloud_control());
        assert_eq!(
            r.no_echo_leaves.as_ref().unwrap()[0][1],
            PathSegment::Index(0)
        );
        assert_eq!(r.extra["futureField"], json!({"x": 1}));
        assert_eq!(serde_json::to_value(&r).unwrap(), raw);
    }

    #[test]
    fn unknown_enum_spellings_are_kept() {
        let r: ResourceState = serde_json::from_value(json!({
            "resourceType": "T",
            "properties": {},
            "provisionedBy": "future-layer",
            "updateReplacePolicy": "Snapshot"
        }))
        .unwrap();
        assert_eq!(
            r.provisioned_by,
            Some(ProvisionedBy::Other("future-layer".into()))
        );
        assert!(!r.is_pinned_to_cloud_control());
        assert_eq!(r.provisioned_by_or_default().as_str(), "future-layer");
        assert_eq!(r.update_replace_policy, Some(ResourcePolicy::Snapshot));
        assert_eq!(r.physical_id, None);
    }

    #[test]
    fn malformed_fingerprints_read_as_absent_and_are_written_back() {
        let raw = json!({
            "physicalId": "p",
            "resourceType": "T",
            "properties": {"UserData": "***"},
            "maskedPropertyFingerprints": "oops",
            "maskedPropertyInputFingerprints": {"UserData": "inputs-sha256:ab+sha256:cd"}
        });
        let r: ResourceState = serde_json::from_value(raw.clone()).unwrap();
        assert!(r.masked_property_fingerprints().is_none());
        assert_eq!(
            r.masked_property_input_fingerprints().unwrap()["UserData"],
            "inputs-sha256:ab+sha256:cd"
        );
        assert_eq!(serde_json::to_value(&r).unwrap(), raw);
    }
}
