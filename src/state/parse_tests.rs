//! Reader tests over the fixtures in `fixtures/state/`.

use serde_json::{json, Value};

use super::*;
use crate::state::error::{OrphanProblem, RowProblem, STATE_RESOURCES_MALFORMED};
use crate::state::record::{serialize_state, serialize_state_for};
use crate::state::resource::{BaselineRefusalReason, PathSegment, ProvisionedBy, ResourcePolicy};

fn fixture(name: &str) -> Vec<u8> {
    let path = format!("{}/fixtures/state/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn fixture_value(name: &str) -> Value {
    serde_json::from_slice(&fixture(name)).unwrap()
}

/// Reads a fixture as the record at `cdkd/{its stackName}/{its region or
/// us-east-1}/state.json`.
fn read_fixture(name: &str) -> ParsedState {
    let v = fixture_value(name);
    let stack = v["stackName"].as_str().unwrap_or("S").to_string();
    let region = v["region"].as_str().unwrap_or("us-east-1").to_string();
    parse_state(&fixture(name), &stack, &region).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn spec_example_round_trips_to_an_equal_value() {
    let parsed = read_fixture("spec-example.json");
    assert_eq!(parsed.source_version, 11);
    assert_eq!(parsed.body_region, BodyRegion::Matches);
    assert!(parsed.warnings.is_empty());
    let state = &parsed.state;
    assert_eq!(state.resources.len(), 2);
    assert_eq!(
        state.resources["MyFunction"].dependencies.as_deref(),
        Some(&["MyFunctionRole".to_string(), "MyBucket".to_string()][..])
    );
    assert_eq!(state.importable_output_keys(), vec!["BucketArn"]);
    let written: Value = serde_json::from_slice(&serialize_state(state)).unwrap();
    assert_eq!(written, fixture_value("spec-example.json"));
    // Key order survives too: the first keys come out as the spec wrote them.
    let text = String::from_utf8(serialize_state(state)).unwrap();
    assert!(text.starts_with("{\n  \"version\": 11,\n  \"stackName\": \"MyAppStack\",\n  \"region\": \"us-east-1\",\n  \"resources\": {\n    \"MyBucket\": {\n      \"physicalId\""));
}

#[test]
fn every_version_parses_and_upgrades() {
    for v in 1..=11 {
        let name = format!("v{v}.json");
        let parsed = read_fixture(&name);
        assert_eq!(parsed.source_version, v, "{name}");
        assert_eq!(parsed.state.version, STATE_SCHEMA_VERSION, "{name}");
        // Re-reading what this binary writes gives the same record.
        let bytes = serialize_state(&parsed.state);
        let again = parse_state(&bytes, &parsed.state.stack_name, &parsed.state.region).unwrap();
        assert_eq!(again.state, parsed.state, "{name}");
        assert_eq!(again.source_version, 11);
        // And nothing was invented or lost beyond the version stamp and the
        // key's region.
        let mut original = fixture_value(&name);
        original["version"] = json!(11);
        original["region"] = json!(parsed.state.region);
        let written: Value = serde_json::from_slice(&bytes).unwrap();
        assert_eq!(written, original, "{name}");
    }
}

#[test]
fn v1_takes_its_region_from_the_key_and_reads_every_later_field_as_absent() {
    let parsed = parse_state(&fixture("v1.json"), "LegacyStack", "us-east-1").unwrap();
    assert_eq!(parsed.body_region, BodyRegion::Absent);
    assert!(parsed.warnings.is_empty());
    let s = &parsed.state;
    assert_eq!(s.region, "us-east-1");
    assert_eq!(s.version, 11);
    // v9: no export set known, so every output key stays importable.
    assert_eq!(s.export_names(), None);
    assert_eq!(s.importable_output_keys(), vec!["BucketName", "TopicArn"]);
    let bucket = &s.resources["Bucket"];
    // v3, v5, v7, v10, v11 fields are absent, with their legacy meaning.
    assert!(bucket.observed_properties.is_none());
    assert_eq!(bucket.drift_baseline(), &bucket.properties);
    assert!(bucket.deletion_policy.is_none() && !bucket.retains_on_delete());
    assert_eq!(bucket.provisioned_by_or_default(), ProvisionedBy::Sdk);
    assert!(!bucket.is_pinned_to_cloud_control());
    assert!(!bucket.baseline_refused());
    assert!(bucket.no_echo_leaves.is_none());
    // v4, v6, v8 stack fields are absent.
    assert!(s.imports.is_none() && s.output_read_entries().is_empty());
    assert!(!s.is_nested_child());
    // The upgraded record is written as v11 with the key's region.
    let written: Value = serde_json::from_slice(&serialize_state(s)).unwrap();
    assert_eq!(written["version"], 11);
    assert_eq!(written["region"], "us-east-1");
    assert!(written.get("exportNames").is_none());
}

#[test]
fn legacy_key_reads_by_region() {
    // No region in the body: readable from any region.
    let read = parse_legacy_state(&fixture("v1.json"), "LegacyStack", "eu-west-1")
        .unwrap()
        .unwrap();
    assert!(read.from_legacy_key);
    assert_eq!(read.state.region, "eu-west-1");
    // A body naming another region belongs to that region.
    let mut body = fixture_value("v1.json");
    body["region"] = json!("us-east-1");
    let bytes = serde_json::to_vec(&body).unwrap();
    assert!(parse_legacy_state(&bytes, "LegacyStack", "eu-west-1")
        .unwrap()
        .is_none());
    let same = parse_legacy_state(&bytes, "LegacyStack", "us-east-1")
        .unwrap()
        .unwrap();
    assert_eq!(same.body_region, BodyRegion::Matches);
    // A truthy non-string region matches no region; an empty one any.
    body["region"] = json!(123);
    let bytes = serde_json::to_vec(&body).unwrap();
    assert!(parse_legacy_state(&bytes, "LegacyStack", "us-east-1")
        .unwrap()
        .is_none());
    assert!(matches!(
        legacy_record_region(&bytes),
        LegacyRegion::Unreadable { .. }
    ));
    body["region"] = json!("");
    let bytes = serde_json::to_vec(&body).unwrap();
    assert_eq!(legacy_record_region(&bytes), LegacyRegion::None);
    let any = parse_legacy_state(&bytes, "LegacyStack", "ap-south-1")
        .unwrap()
        .unwrap();
    assert_eq!(any.state.region, "ap-south-1");
    assert_eq!(
        legacy_record_region(br#"{"region":"us-east-1"}"#),
        LegacyRegion::Region("us-east-1".into())
    );
    assert!(matches!(
        legacy_record_region(b"{"),
        LegacyRegion::Unreadable { .. }
    ));
}

#[test]
fn version_specific_fields_are_typed() {
    let v3 = read_fixture("v3.json").state;
    assert_eq!(
        v3.resources["Bucket"].drift_baseline()["VersioningConfiguration"]["Status"],
        "Suspended"
    );

    let v4 = read_fixture("v4.json").state;
    let import = &v4.imports.as_ref().unwrap()[0];
    assert_eq!(
        (
            import.source_stack.as_str(),
            import.source_region.as_str(),
            import.export_name.as_str()
        ),
        ("Producer", "us-east-1", "BucketArn")
    );

    let v5 = read_fixture("v5.json").state;
    assert!(v5.resources["Bucket"].retains_on_delete());
    assert!(!v5.resources["Topic"].retains_on_delete());
    assert_eq!(
        v5.resources["Database"].deletion_policy,
        Some(ResourcePolicy::Snapshot)
    );
    assert_eq!(
        v5.resources["Database"].update_replace_policy,
        Some(ResourcePolicy::RetainExceptOnCreate)
    );
    assert_eq!(v5.imports.as_deref(), Some(&[][..]));

    let v6 = read_fixture("v6.json").state;
    assert!(v6.is_nested_child());
    assert_eq!(v6.stack_name, "Parent~ChildStack");
    assert_eq!(v6.parent_logical_id.as_deref(), Some("ChildStack"));
    assert_eq!(v6.parent_region.as_deref(), Some("us-west-2"));

    let v7 = read_fixture("v7.json").state;
    assert!(v7.resources["Schedule"].is_pinned_to_cloud_control());
    assert_eq!(
        v7.resources["Bucket"].provisioned_by,
        Some(ProvisionedBy::Sdk)
    );
    assert_eq!(v7.resources["Topic"].provisioned_by, None);

    let v8 = read_fixture("v8.json").state;
    let reads = v8.output_read_entries();
    assert_eq!(reads.len(), 1);
    assert_eq!(reads[0].output_name, "SharedVpcId");
    assert_eq!(v8.importable_output_keys(), vec!["VpcId", "SharedVpcId"]);

    let v9 = read_fixture("v9.json").state;
    assert_eq!(v9.export_names(), Some(vec!["BucketArn"]));
    assert_eq!(v9.importable_output_keys(), vec!["BucketArn"]);
    assert_eq!(
        v9.outputs.as_ref().unwrap()["NameServers"],
        json!(["ns-1.awsdns-00.com", "ns-2.awsdns-01.net"])
    );

    let v10 = read_fixture("v10.json").state;
    assert!(v10.resources["Param"].baseline_refused());
    assert_eq!(
        v10.resources["Param"].observed_baseline_refusal_reason,
        Some(BaselineRefusalReason::UnverifiableParameter)
    );
    assert_eq!(
        v10.resources["Other"].observed_baseline_refusal_reason,
        Some(BaselineRefusalReason::IncompleteResolution)
    );
    assert_eq!(v10.resources["Old"].observed_baseline_refusal_reason, None);
    assert_eq!(v10.export_names(), Some(vec![]));
    assert!(v10.importable_output_keys().is_empty());
}

#[test]
fn v11_fields_and_unknown_fields() {
    let s = read_fixture("v11.json").state;
    let db = &s.resources["Database"];
    assert_eq!(
        db.no_echo_leaves.as_ref().unwrap()[1],
        vec![
            PathSegment::Key("Tags".into()),
            PathSegment::Index(0),
            PathSegment::Key("Value".into())
        ]
    );
    assert_eq!(
        db.no_echo_exact_echo_leaves.as_deref(),
        Some(&[vec!["MasterUserPassword".to_string()]][..])
    );
    assert_eq!(
        db.accepted_create_only_drops.as_deref(),
        Some(&["StorageEncrypted".to_string()][..])
    );
    assert_eq!(
        db.construct_path.as_deref(),
        Some("SecureStack/Database/Resource")
    );
    assert_eq!(
        db.extra["futureResourceField"],
        json!({"addedBy": "a newer cdkd"})
    );
    assert_eq!(
        s.resources["Minter"].no_echo_attribute_names.as_deref(),
        Some(&["Token".to_string()][..])
    );
    let inst = &s.resources["Instance"];
    assert_eq!(
        inst.masked_property_fingerprints().unwrap()["UserData"],
        "sha256:0f1e2d3c"
    );
    assert!(
        inst.masked_property_input_fingerprints().unwrap()["UserData"]
            .starts_with("inputs-sha256:")
    );
    assert_eq!(
        s.skipped_outputs().unwrap()["BrokenOutput"],
        "sha256:9a8b7c6d"
    );
    let verdict = &s.condition_verdicts().unwrap()["UseProdSettings"];
    assert!(verdict.verdict);
    let orphan = &s.orphans.as_ref().unwrap()[0];
    assert_eq!(orphan.logical_id, "Logs");
    assert_eq!(
        orphan.state.physical_id.as_deref(),
        Some("secure-stack-logs")
    );
    assert_eq!(
        orphan.orphaned_at.as_ref().and_then(|t| t.valid().copied()),
        Some(1_700_000_009_500)
    );
    assert_eq!(s.extra["futureStackField"], json!([1, 2, 3]));
    assert_eq!(s.outputs.as_ref().unwrap()["Port"], json!(5432));
    assert_eq!(s.importable_output_keys(), vec!["Shared-DbEndpoint"]);
}

#[test]
fn unknown_fields_survive_a_round_trip() {
    let mut body = fixture_value("spec-example.json");
    body["addedByANewerCdkd"] = json!({"nested": [1, {"x": null}]});
    body["resources"]["MyBucket"]["newResourceField"] = json!("kept");
    body["resources"]["MyBucket"]["deletionPolicy"] = json!("SomeFuturePolicy");
    let bytes = serde_json::to_vec(&body).unwrap();
    let parsed = parse_state(&bytes, "MyAppStack", "us-east-1").unwrap();
    let written: Value = serde_json::from_slice(&serialize_state(&parsed.state)).unwrap();
    assert_eq!(written, body);
}

#[test]
fn forgiving_fields_read_as_the_spec_says_and_are_written_back() {
    let mut body = fixture_value("spec-example.json");
    body["exportNames"] = json!("BucketArn");
    body["conditionVerdicts"] = json!([1]);
    body["skippedOutputs"] = json!(null);
    body["outputReads"] = json!([
        {"sourceStack": "P", "sourceRegion": "r", "outputName": "O"},
        "junk"
    ]);
    let bytes = serde_json::to_vec(&body).unwrap();
    let s = parse_state(&bytes, "MyAppStack", "us-east-1")
        .unwrap()
        .state;
    // A non-list export set exports nothing (never "unknown").
    assert_eq!(s.export_names(), Some(vec![]));
    assert!(s.importable_output_keys().is_empty());
    assert!(s.condition_verdicts().is_none());
    assert!(s.skipped_outputs().is_none());
    assert_eq!(s.output_read_entries().len(), 1);
    let written: Value = serde_json::from_slice(&serialize_state(&s)).unwrap();
    assert_eq!(written, body);
}

#[test]
fn newer_versions_are_refused_with_the_spec_message() {
    let err = parse_state(&fixture("v12.json"), "SecureStack", "us-east-1").unwrap_err();
    assert_eq!(
        err.to_string(),
        "Unsupported state schema version 12. Upgrade cdkd."
    );
    assert_eq!(err.code(), "STATE_SCHEMA_UNSUPPORTED");
    for (raw, shown) in [
        ("0", "0"),
        ("\"11\"", "11"),
        ("null", "null"),
        ("10.5", "10.5"),
    ] {
        let text = format!(r#"{{"version":{raw},"stackName":"S","resources":{{}}}}"#);
        let err = parse_state(text.as_bytes(), "S", "r").unwrap_err();
        assert_eq!(
            err.to_string(),
            format!("Unsupported state schema version {shown}. Upgrade cdkd.")
        );
    }
    // An unversioned body is the legacy layout; 11.0 is 11.
    let ok = parse_state(br#"{"stackName":"S","resources":{}}"#, "S", "r").unwrap();
    assert_eq!(ok.source_version, 1);
    let ok = parse_state(br#"{"version":11.0,"resources":{}}"#, "S", "r").unwrap();
    assert_eq!(ok.source_version, 11);
}

#[test]
fn each_malformed_fixture_is_refused_with_its_code() {
    type Check = fn(&StateError) -> bool;
    let cases: &[(&str, Check)] = &[
        ("malformed-resources-absent.json", |e| {
            matches!(e, StateError::ResourcesMalformed { found: None, .. })
        }),
        ("malformed-resources-string.json", |e| {
            matches!(
                e,
                StateError::ResourcesMalformed {
                    found: Some(ValueKind::String),
                    ..
                }
            )
        }),
        ("malformed-resources-list.json", |e| {
            matches!(
                e,
                StateError::ResourcesMalformed {
                    found: Some(ValueKind::Array),
                    ..
                }
            )
        }),
        ("malformed-resources-null.json", |e| {
            matches!(
                e,
                StateError::ResourcesMalformed {
                    found: Some(ValueKind::Null),
                    ..
                }
            )
        }),
        ("malformed-resource-record-null.json", |e| {
            matches!(e, StateError::ResourceRecordsMalformed { rows, .. }
                if rows[0].logical_id == "Broken" && rows[0].problem == RowProblem::NotObject(ValueKind::Null))
        }),
        ("malformed-resource-record-string.json", |e| {
            matches!(e, StateError::ResourceRecordsMalformed { rows, .. }
                if rows[0].problem == RowProblem::NotObject(ValueKind::String))
        }),
        ("malformed-resource-record-no-type.json", |e| {
            matches!(e, StateError::ResourceRecordsMalformed { rows, .. }
                if rows[0].problem == RowProblem::NoResourceType)
        }),
        ("malformed-resource-record-field.json", |e| {
            matches!(e, StateError::ResourceRecordsMalformed { rows, .. }
                if matches!(rows[0].problem, RowProblem::Field { field: "dependencies", .. }))
        }),
        ("malformed-resource-attributes-null.json", |e| {
            matches!(e, StateError::ResourceRecordsMalformed { rows, .. }
                if matches!(rows[0].problem, RowProblem::Field { field: "attributes", found: Some(ValueKind::Null), .. }))
        }),
        ("malformed-properties-string.json", |e| {
            matches!(e, StateError::PropertiesMalformed { rows, .. }
                if rows == &vec![("Broken".to_string(), Some(ValueKind::String))])
        }),
        ("malformed-properties-absent.json", |e| {
            matches!(e, StateError::PropertiesMalformed { rows, .. }
                if rows == &vec![("Broken".to_string(), None)])
        }),
        ("malformed-outputs-string.json", |e| {
            matches!(
                e,
                StateError::OutputsMalformed {
                    kind: ValueKind::String,
                    ..
                }
            )
        }),
        ("malformed-outputs-null.json", |e| {
            matches!(
                e,
                StateError::OutputsMalformed {
                    kind: ValueKind::Null,
                    ..
                }
            )
        }),
        ("malformed-orphans-string.json", |e| {
            matches!(
                e,
                StateError::OrphansMalformed {
                    kind: ValueKind::String,
                    ..
                }
            )
        }),
        ("malformed-orphans-object.json", |e| {
            matches!(
                e,
                StateError::OrphansMalformed {
                    kind: ValueKind::Object,
                    ..
                }
            )
        }),
        ("malformed-orphan-record-physical-id.json", |e| {
            matches!(e, StateError::OrphanRecordsMalformed { rows, .. }
                if rows[0].problem == OrphanProblem::NoPhysicalId)
        }),
        ("malformed-orphan-record-duplicate.json", |e| {
            matches!(e, StateError::OrphanRecordsMalformed { rows, .. }
                if rows.len() == 2 && rows.iter().all(|r| r.problem == OrphanProblem::Duplicate))
        }),
        ("malformed-orphan-record-attributes.json", |e| {
            matches!(e, StateError::OrphanRecordsMalformed { rows, .. }
                if matches!(&rows[0].problem, OrphanProblem::State(RowProblem::Field { field: "attributes", .. })))
        }),
        ("malformed-orphan-record-null.json", |e| {
            matches!(e, StateError::OrphanRecordsMalformed { rows, .. }
                if rows[0].problem == OrphanProblem::NotObject(ValueKind::Null))
        }),
        ("malformed-imports.json", |e| {
            matches!(
                e,
                StateError::FieldMalformed {
                    field: "imports",
                    ..
                }
            )
        }),
        ("malformed-last-modified.json", |e| {
            matches!(
                e,
                StateError::FieldMalformed {
                    field: "lastModified",
                    ..
                }
            )
        }),
    ];
    let dir = format!("{}/fixtures/state", env!("CARGO_MANIFEST_DIR"));
    let on_disk = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.starts_with("malformed-"))
        .count();
    assert_eq!(on_disk, cases.len(), "every malformed fixture has a case");
    for (name, check) in cases {
        let err = parse_state(&fixture(name), "MalformedStack", "us-east-1").unwrap_err();
        assert_eq!(err.code(), STATE_RESOURCES_MALFORMED, "{name}: {err}");
        assert!(check(&err), "{name}: {err:?}");
        let text = err.to_string();
        assert!(text.contains("'MalformedStack'"), "{name}: {text}");
        assert!(text.contains("cdkd state show 'MalformedStack' --stack-region 'us-east-1' --json"));
        assert!(!text.contains('\n'));
        // A lossy read repairs the same record and says what it repaired.
        let lossy = parse_state_lossy(&fixture(name), "MalformedStack", "us-east-1")
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(lossy.is_lossy(), "{name}");
        assert!(check(&lossy.defects[0]), "{name}");
        assert!(lossy.state.resources.contains_key("Bucket") || name.contains("resources-"));
        if name.contains("properties-") {
            // A properties map reads as empty: the row stays, so a preview
            // still shows the resource.
            assert!(lossy.state.resources["Broken"].properties.is_empty());
        } else {
            assert!(!lossy.state.resources.contains_key("Broken"), "{name}");
        }
    }
}

#[test]
fn invalid_and_non_object_bodies_are_refused() {
    let err = parse_state(&fixture("invalid-json.json"), "Trunc", "us-east-1").unwrap_err();
    assert_eq!(err.code(), "STATE_NOT_JSON");
    assert!(err
        .to_string()
        .starts_with("State file for stack 'Trunc' ('us-east-1') is not valid JSON"));
    let err = parse_state(&fixture("not-object.json"), "S", "us-east-1").unwrap_err();
    assert_eq!(err.code(), "STATE_NOT_OBJECT");
    assert!(err.to_string().contains("parses to an array"));
    // The lossy reader refuses these too.
    assert!(parse_state_lossy(&fixture("invalid-json.json"), "T", "r").is_err());
}

#[test]
fn a_byte_order_mark_is_skipped() {
    let mut bytes = b"\xef\xbb\xbf".to_vec();
    bytes.extend(fixture("spec-example.json"));
    assert!(parse_state(&bytes, "MyAppStack", "us-east-1").is_ok());
}

#[test]
fn region_comes_from_the_key_with_a_warning_naming_the_kind() {
    let parsed = parse_state(
        &fixture("region-disagrees.json"),
        "MalformedStack",
        "us-east-1",
    )
    .unwrap();
    assert_eq!(parsed.state.region, "us-east-1");
    assert!(parsed.region_disagreed());
    assert_eq!(
        parsed.body_region,
        BodyRegion::Disagrees {
            kind: ValueKind::Number,
            shown: "42".into()
        }
    );
    assert_eq!(parsed.warnings.len(), 1);
    let warning = &parsed.warnings[0];
    assert!(warning.contains("(a number)"), "{warning}");
    assert!(warning.contains("'us-east-1'"), "{warning}");
    assert!(
        !warning.contains("42"),
        "the value itself is withheld: {warning}"
    );
    // Destroy and rollback refuse while resources are listed.
    let err = parsed.ensure_deletable().unwrap_err();
    assert_eq!(err.code(), "STATE_REGION_MISMATCH");
    assert!(err
        .to_string()
        .contains("cdkd state orphan 'MalformedStack' --stack-region 'us-east-1'"));
    // ...and the next write carries the key's region.
    let written: Value = serde_json::from_slice(&serialize_state(&parsed.state)).unwrap();
    assert_eq!(written["region"], "us-east-1");

    // A string region of another region: same treatment, value withheld.
    let mut body = fixture_value("spec-example.json");
    body["region"] = json!("eu-west-1");
    let bytes = serde_json::to_vec(&body).unwrap();
    let parsed = parse_state(&bytes, "MyAppStack", "us-east-1").unwrap();
    assert!(parsed.warnings[0].contains("(a string)"));
    assert!(!parsed.warnings[0].contains("eu-west-1"));
    assert_eq!(parsed.state.region, "us-east-1");

    // A record with no resources is not refused: nothing to strand.
    body["resources"] = json!({});
    let bytes = serde_json::to_vec(&body).unwrap();
    let empty = parse_state(&bytes, "MyAppStack", "us-east-1").unwrap();
    assert!(empty.region_disagreed());
    assert!(empty.ensure_deletable().is_ok());

    // null and "" disagree with a region-scoped key (only absence agrees).
    for raw in [json!(null), json!("")] {
        body["region"] = raw;
        let bytes = serde_json::to_vec(&body).unwrap();
        assert!(parse_state(&bytes, "MyAppStack", "us-east-1")
            .unwrap()
            .region_disagreed());
    }
    // A healthy record is deletable.
    assert!(read_fixture("spec-example.json").ensure_deletable().is_ok());
}

#[test]
fn stack_name_comes_from_the_key() {
    let parsed = parse_state(&fixture("spec-example.json"), "Renamed", "us-east-1").unwrap();
    assert_eq!(parsed.state.stack_name, "Renamed");
    let written: Value =
        serde_json::from_slice(&serialize_state_for(&parsed.state, "Other", "ap-south-1")).unwrap();
    assert_eq!(written["stackName"], "Other");
    assert_eq!(written["region"], "ap-south-1");
}

/// A small deterministic generator, so the garbage is the same on every run.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

#[test]
fn arbitrary_bytes_never_panic() {
    let mut rng = Lcg(7);
    let seeds = [
        fixture("spec-example.json"),
        fixture("v11.json"),
        fixture("v1.json"),
    ];
    let mut inputs: Vec<Vec<u8>> = Vec::new();
    // Every truncation of a real record.
    for seed in &seeds {
        for cut in 0..seed.len() {
            inputs.push(seed[..cut].to_vec());
        }
    }
    // Random byte flips of real records, and pure noise.
    for _ in 0..2000 {
        let seed = &seeds[(rng.next() % seeds.len() as u64) as usize];
        let mut bytes = seed.clone();
        for _ in 0..(1 + rng.next() % 4) {
            let at = (rng.next() % bytes.len() as u64) as usize;
            bytes[at] = (rng.next() % 256) as u8;
        }
        inputs.push(bytes);
        let len = (rng.next() % 64) as usize;
        inputs.push((0..len).map(|_| (rng.next() % 256) as u8).collect());
    }
    // Every JSON type in every top-level field.
    let values = [
        json!(null),
        json!(1),
        json!(-1.5),
        json!("x"),
        json!([]),
        json!([null]),
        json!({}),
        json!(true),
    ];
    let body = fixture_value("v11.json");
    for key in body.as_object().unwrap().keys() {
        for v in &values {
            let mut b = body.clone();
            b[key] = v.clone();
            inputs.push(serde_json::to_vec(&b).unwrap());
        }
    }
    // And in every field of a resource record.
    let row = body["resources"]["Database"].clone();
    for key in row.as_object().unwrap().keys() {
        for v in &values {
            let mut b = body.clone();
            b["resources"]["Database"][key] = v.clone();
            inputs.push(serde_json::to_vec(&b).unwrap());
        }
    }
    inputs.push("[".repeat(10_000).into_bytes());
    for bytes in &inputs {
        let reads = [
            parse_state(bytes, "S", "us-east-1"),
            parse_state_lossy(bytes, "S", "us-east-1"),
        ];
        for parsed in reads.into_iter().flatten() {
            // Whatever was read can be written and read back.
            let again = serialize_state(&parsed.state);
            assert!(parse_state(&again, "S", "us-east-1").is_ok());
        }
        let _ = parse_legacy_state(bytes, "S", "us-east-1");
        let _ = legacy_record_region(bytes);
        let _ = crate::state::record::LockInfo::parse(bytes);
    }
}
