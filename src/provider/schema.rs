//! Resource-type metadata from the CloudFormation registry schemas.
//!
//! For every resource type available in us-east-1 this knows the schema's
//! `primaryIdentifier`, `additionalIdentifiers`, `createOnlyProperties`,
//! `writeOnlyProperties` and `readOnlyProperties`: what names a resource, which property
//! changes force a replacement, which properties a read never returns, and which ones
//! only the service sets.
//!
//! The data is a snapshot, `data/resource-schemas.json`, embedded in the binary and parsed
//! once, on first use. `scripts/gen-resource-schemas` regenerates it from the schemas that
//! a pinned cfn-lint release ships (see `scripts/gen_resource_schemas.py` for the format:
//! paths are stored without their common `/properties/` prefix).
//!
//! Paths are kept as the schemas spell them, split on `/`: `/properties/Tags/*/Key` is the
//! [`PropertyPath`] `["Tags", "*", "Key"]`, where `*` stands for every item of an array.
//! A schema may list both a property and paths inside it (`SnapStart` and
//! `SnapStart/ApplyOn`); both are kept.
//!
//! If the embedded snapshot cannot be parsed (a broken refresh), every lookup answers
//! "unknown type" and one error is logged; nothing panics.

use std::collections::HashMap;
use std::fmt;
use std::sync::OnceLock;

use serde::Deserialize;

/// The embedded snapshot.
const SNAPSHOT: &str = include_str!("../../data/resource-schemas.json");

/// The prefix every path in the schemas has, and that the snapshot leaves out.
const PROPERTIES_PREFIX: &str = "/properties/";

/// A path into a resource's properties: the segments after `/properties/`.
/// `*` is a segment that matches every item of an array.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct PropertyPath {
    segments: Vec<String>,
}

impl PropertyPath {
    /// Parses the snapshot's form, `Tags/*/Key` (a leading `/properties/` is accepted too).
    pub fn parse(path: &str) -> Self {
        let path = path.strip_prefix(PROPERTIES_PREFIX).unwrap_or(path);
        PropertyPath {
            segments: path.split('/').map(str::to_owned).collect(),
        }
    }

    /// The segments, e.g. `["Tags", "*", "Key"]`.
    pub fn segments(&self) -> &[String] {
        &self.segments
    }

    /// The top-level property the path starts in, e.g. `Tags`.
    pub fn top_level(&self) -> &str {
        self.segments.first().map(String::as_str).unwrap_or("")
    }

    /// Whether the path names a whole top-level property (`BucketName`, not `Code/ZipFile`).
    pub fn is_top_level(&self) -> bool {
        self.segments.len() == 1
    }

    /// The path as the schemas spell it, e.g. `/properties/Tags/*/Key`.
    pub fn to_pointer(&self) -> String {
        format!("{PROPERTIES_PREFIX}{self}")
    }
}

impl fmt::Display for PropertyPath {
    /// `Tags/*/Key`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.segments.join("/"))
    }
}

/// What the registry schema of one resource type says about identifiers and mutability.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TypeSchema {
    /// The properties that together identify a resource (Cloud Control's identifier joins
    /// their values with `|`, in this order), e.g. `["BucketName"]` or
    /// `["RestApiId", "ResourceId"]`. Nearly always top-level property names; a handful of
    /// types name a nested property, written `Schedule/ScheduleId`.
    pub primary_identifier: Vec<String>,
    /// Other property sets that also identify a resource (same spelling as above).
    pub additional_identifiers: Vec<Vec<String>>,
    /// Changing any of these replaces the resource.
    pub create_only: Vec<PropertyPath>,
    /// Accepted on create/update but never returned by a read (passwords, code locations).
    pub write_only: Vec<PropertyPath>,
    /// Set by the service only (ARNs, generated ids); never part of a desired state.
    pub read_only: Vec<PropertyPath>,
    /// Properties `Fn::GetAtt` also reads although they are not read-only (cfn-lint's
    /// special cases: `AWS::EC2::VPC`'s `CidrBlock`, every property of a few types).
    pub getatt_extra: Vec<PropertyPath>,
}

impl TypeSchema {
    /// Whether changing the top-level `property` as a whole replaces the resource.
    /// A nested create-only path (`A/B`) does not make `A` create-only: see
    /// [`TypeSchema::create_only_paths_under`].
    pub fn is_create_only(&self, property: &str) -> bool {
        self.create_only
            .iter()
            .any(|p| p.is_top_level() && p.top_level() == property)
    }

    /// The create-only paths strictly inside the top-level `property` (`A/B` for `A`). A
    /// change to `A` replaces the resource only if it changes a value under one of them.
    pub fn create_only_paths_under(&self, property: &str) -> Vec<&PropertyPath> {
        paths_under(&self.create_only, property)
    }

    /// The write-only paths strictly inside the top-level `property` (`Code/ZipFile` for `Code`).
    pub fn write_only_paths_under(&self, property: &str) -> Vec<&PropertyPath> {
        paths_under(&self.write_only, property)
    }

    /// The read-only paths strictly inside the top-level `property`.
    pub fn read_only_paths_under(&self, property: &str) -> Vec<&PropertyPath> {
        paths_under(&self.read_only, property)
    }

    /// The top-level properties that are write-only as a whole, in schema order.
    pub fn write_only_top_level(&self) -> Vec<&str> {
        top_level(&self.write_only)
    }

    /// The top-level properties that are read-only as a whole, in schema order.
    pub fn read_only_top_level(&self) -> Vec<&str> {
        top_level(&self.read_only)
    }
}

fn paths_under<'a>(paths: &'a [PropertyPath], property: &str) -> Vec<&'a PropertyPath> {
    paths
        .iter()
        .filter(|p| !p.is_top_level() && p.top_level() == property)
        .collect()
}

fn top_level(paths: &[PropertyPath]) -> Vec<&str> {
    let mut out: Vec<&str> = Vec::new();
    for p in paths.iter().filter(|p| p.is_top_level()) {
        if !out.contains(&p.top_level()) {
            out.push(p.top_level());
        }
    }
    out
}

/// The parsed snapshot.
struct Snapshot {
    source: String,
    types: HashMap<String, TypeSchema>,
    /// The type names, sorted, for a deterministic [`known_types`].
    names: Vec<String>,
}

#[derive(Deserialize)]
struct RawSnapshot {
    source: String,
    prefix: String,
    types: HashMap<String, RawType>,
}

#[derive(Deserialize)]
struct RawType {
    #[serde(default)]
    p: Vec<String>,
    #[serde(default)]
    a: Vec<Vec<String>>,
    #[serde(default)]
    c: Vec<String>,
    #[serde(default)]
    w: Vec<String>,
    #[serde(default)]
    r: Vec<String>,
    #[serde(default)]
    g: Vec<String>,
}

fn parse_snapshot(text: &str) -> Result<Snapshot, String> {
    let raw: RawSnapshot = serde_json::from_str(text).map_err(|e| e.to_string())?;
    if raw.prefix != PROPERTIES_PREFIX {
        return Err(format!(
            "unexpected path prefix {:?} (expected {PROPERTIES_PREFIX:?})",
            raw.prefix
        ));
    }
    let paths = |v: Vec<String>| v.iter().map(|s| PropertyPath::parse(s)).collect();
    let types: HashMap<String, TypeSchema> = raw
        .types
        .into_iter()
        .map(|(name, t)| {
            let schema = TypeSchema {
                primary_identifier: t.p,
                additional_identifiers: t.a,
                create_only: paths(t.c),
                write_only: paths(t.w),
                read_only: paths(t.r),
                getatt_extra: paths(t.g),
            };
            (name, schema)
        })
        .collect();
    let mut names: Vec<String> = types.keys().cloned().collect();
    names.sort();
    Ok(Snapshot {
        source: raw.source,
        types,
        names,
    })
}

fn snapshot() -> Option<&'static Snapshot> {
    static SNAPSHOT_CELL: OnceLock<Option<Snapshot>> = OnceLock::new();
    SNAPSHOT_CELL
        .get_or_init(|| match parse_snapshot(SNAPSHOT) {
            Ok(s) => Some(s),
            Err(e) => {
                tracing::error!(
                    "the embedded resource schema snapshot (data/resource-schemas.json) is \
                     unreadable, so no resource type is known: {e}"
                );
                None
            }
        })
        .as_ref()
}

/// Where the snapshot came from, e.g. `cfn-lint 1.58.0 us-east-1`.
pub fn source() -> Option<&'static str> {
    snapshot().map(|s| s.source.as_str())
}

/// The schema of `type_name` (e.g. `AWS::S3::Bucket`), or `None` for a type the snapshot
/// does not know (a third-party or private type, a type newer than the snapshot).
pub fn schema_for(type_name: &str) -> Option<&'static TypeSchema> {
    snapshot()?.types.get(type_name)
}

/// The primary identifier's properties, e.g. `["BucketName"]`.
pub fn primary_identifier(type_name: &str) -> Option<&'static [String]> {
    schema_for(type_name).map(|s| s.primary_identifier.as_slice())
}

/// Whether changing the top-level `property` as a whole replaces the resource (false for
/// an unknown type). See [`create_only_paths_under`] for create-only paths inside it.
pub fn is_create_only(type_name: &str, property: &str) -> bool {
    schema_for(type_name).is_some_and(|s| s.is_create_only(property))
}

/// The create-only paths strictly inside the top-level `property` (empty for an unknown
/// type): a change to `property` replaces the resource only if it changes one of them.
pub fn create_only_paths_under(type_name: &str, property: &str) -> Vec<&'static PropertyPath> {
    schema_for(type_name)
        .map(|s| s.create_only_paths_under(property))
        .unwrap_or_default()
}

/// The top-level properties that are write-only as a whole (empty for an unknown type).
pub fn write_only_top_level(type_name: &str) -> Vec<&'static str> {
    schema_for(type_name)
        .map(TypeSchema::write_only_top_level)
        .unwrap_or_default()
}

/// The top-level properties that are read-only as a whole (empty for an unknown type).
pub fn read_only_top_level(type_name: &str) -> Vec<&'static str> {
    schema_for(type_name)
        .map(TypeSchema::read_only_top_level)
        .unwrap_or_default()
}

/// Every resource type the snapshot knows, sorted.
pub fn known_types() -> impl Iterator<Item = &'static str> {
    snapshot()
        .map(|s| s.names.as_slice())
        .unwrap_or_default()
        .iter()
        .map(String::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path(s: &str) -> PropertyPath {
        PropertyPath::parse(s)
    }

    #[test]
    fn embedded_snapshot_parses() {
        let snap = parse_snapshot(SNAPSHOT).expect("embedded snapshot parses");
        assert!(snap.types.len() > 1000, "only {} types", snap.types.len());
        assert!(snap.source.starts_with("cfn-lint "), "{}", snap.source);
        assert_eq!(known_types().count(), snap.types.len());
        let names: Vec<&str> = known_types().collect();
        assert!(
            names.windows(2).all(|w| w[0] < w[1]),
            "sorted, no duplicates"
        );
        assert!(snap
            .types
            .values()
            .all(|t| !t.primary_identifier.is_empty()));
        assert!(source().is_some());
    }

    #[test]
    fn bad_snapshot_is_an_error_not_a_panic() {
        assert!(parse_snapshot("{").is_err());
        assert!(parse_snapshot(r#"{"source":"x","prefix":"/p/","types":{}}"#).is_err());
    }

    #[test]
    fn s3_bucket() {
        assert_eq!(
            primary_identifier("AWS::S3::Bucket"),
            Some(&["BucketName".to_owned()][..])
        );
        assert!(is_create_only("AWS::S3::Bucket", "BucketName"));
        assert!(!is_create_only(
            "AWS::S3::Bucket",
            "VersioningConfiguration"
        ));
        let s = schema_for("AWS::S3::Bucket").unwrap();
        assert!(s.read_only_top_level().contains(&"Arn"));
        assert!(s
            .write_only
            .contains(&path("LifecycleConfiguration/Rules/*/Transition")));
    }

    #[test]
    fn lambda_function_code_is_write_only_inside() {
        let s = schema_for("AWS::Lambda::Function").unwrap();
        for p in [
            "Code/ZipFile",
            "Code/S3Bucket",
            "Code/S3Key",
            "Code/ImageUri",
        ] {
            assert!(s.write_only.contains(&path(p)), "{p} write-only");
        }
        // Code itself is not write-only as a whole, only everything inside it.
        let top = write_only_top_level("AWS::Lambda::Function");
        assert!(!top.contains(&"Code"));
        assert!(top.contains(&"SnapStart"));
        assert!(s.write_only_paths_under("Code").len() >= 4);
        assert!(is_create_only("AWS::Lambda::Function", "FunctionName"));
        assert!(!is_create_only("AWS::Lambda::Function", "Code"));
        assert_eq!(
            path("/properties/Code/ZipFile").segments(),
            ["Code", "ZipFile"]
        );
        assert_eq!(
            path("Code/ZipFile").to_pointer(),
            "/properties/Code/ZipFile"
        );
    }

    #[test]
    fn api_gateway_resource_has_composite_identifier() {
        assert_eq!(
            primary_identifier("AWS::ApiGateway::Resource").unwrap(),
            ["RestApiId", "ResourceId"]
        );
    }

    #[test]
    fn iam_role_read_only() {
        let ro = read_only_top_level("AWS::IAM::Role");
        assert!(ro.contains(&"Arn") && ro.contains(&"RoleId"), "{ro:?}");
        assert!(is_create_only("AWS::IAM::Role", "RoleName"));
        assert!(is_create_only("AWS::IAM::Role", "Path"));
    }

    #[test]
    fn nested_create_only_paths() {
        let t = "AWS::Batch::ComputeEnvironment";
        assert!(!is_create_only(t, "EksConfiguration"));
        let under: Vec<String> = create_only_paths_under(t, "EksConfiguration")
            .iter()
            .map(|p| p.to_string())
            .collect();
        assert!(
            under.contains(&"EksConfiguration/EksClusterArn".to_owned()),
            "{under:?}"
        );
        assert!(create_only_paths_under(t, "Type").is_empty());
        assert!(is_create_only(t, "Type"));
    }

    #[test]
    fn unknown_type() {
        assert!(schema_for("Custom::Thing").is_none());
        assert!(schema_for("AWS::Nope::Nothing").is_none());
        assert!(primary_identifier("Custom::Thing").is_none());
        assert!(!is_create_only("Custom::Thing", "Name"));
        assert!(create_only_paths_under("Custom::Thing", "Name").is_empty());
        assert!(write_only_top_level("Custom::Thing").is_empty());
        assert!(read_only_top_level("Custom::Thing").is_empty());
    }
}
