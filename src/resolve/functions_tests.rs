//! Table-driven tests of the intrinsic functions and pseudo parameters.

use serde_json::{json, Value};

use super::test_support::*;
use super::*;

fn ok(cases: &[(Value, Value)]) {
    for (input, want) in cases {
        match eval(input.clone()) {
            Ok(Some(got)) => assert_eq!(&got, want, "input {input}"),
            other => panic!("input {input}: expected {want}, got {other:?}"),
        }
    }
}

fn errs(cases: &[(Value, &str)]) {
    for (input, want) in cases {
        let got = eval_err(input.clone());
        assert!(
            got.contains(want),
            "input {input}: error {got:?} lacks {want:?}"
        );
        assert!(!got.contains('\n'), "multi-line error: {got}");
        assert!(
            got.starts_with("stack TestStack: Resources.Test.Properties.P"),
            "{got}"
        );
    }
}

#[test]
fn pseudo_parameters() {
    ok(&[
        (json!({"Ref": "AWS::Region"}), json!("us-east-1")),
        (json!({"Ref": "AWS::AccountId"}), json!("123456789012")),
        (json!({"Ref": "AWS::Partition"}), json!("aws")),
        (json!({"Ref": "AWS::URLSuffix"}), json!("amazonaws.com")),
        (json!({"Ref": "AWS::StackName"}), json!("TestStack")),
        (json!({"Ref": "AWS::NotificationARNs"}), json!([])),
    ]);
    let id = eval(json!({"Ref": "AWS::StackId"})).unwrap().unwrap();
    let id = id.as_str().unwrap();
    assert!(id.starts_with("arn:aws:cloudformation:us-east-1:123456789012:stack/TestStack/"));
    assert_eq!(id.rsplit('/').next().unwrap().len(), 36);
    // Stable for the same inputs.
    assert_eq!(Some(id.to_string()), ctx().stack_id());
    errs(&[(
        json!({"Ref": "AWS::Bogus"}),
        "unknown pseudo parameter 'AWS::Bogus'",
    )]);
}

#[test]
fn account_id_unknown_is_refused() {
    let t = template();
    let c = ResolveContext::new("S", "us-east-1", None);
    let p = bind(&t);
    let mut r = Resolver::new(&t, &c, &p, &Synthetic, &NoExternalLookup);
    for v in [
        json!({"Ref": "AWS::AccountId"}),
        json!({"Ref": "AWS::StackId"}),
        json!({"Fn::Sub": "arn:aws:iam::${AWS::AccountId}:root"}),
    ] {
        let e = r.resolve_value(&v, "Outputs.O.Value").unwrap_err();
        assert!(
            matches!(e.kind, ResolveErrorKind::AccountIdUnknown(_)),
            "{e}"
        );
        assert!(e
            .to_string()
            .contains("refusing to substitute a placeholder"));
    }
}

#[test]
fn region_is_lower_cased_and_stack_id_can_be_given() {
    let c = ResolveContext::new("S", " US-West-2 ", Some("111122223333".into()));
    assert_eq!(c.region(), "us-west-2");
    let c = c.with_stack_id("11111111-2222-3333-4444-555555555555");
    assert_eq!(
        c.stack_id().unwrap(),
        "arn:aws:cloudformation:us-west-2:111122223333:stack/S/11111111-2222-3333-4444-555555555555"
    );
    let arn = "arn:aws:cloudformation:us-west-2:1:stack/S/x";
    assert_eq!(c.with_stack_id(arn).stack_id().unwrap(), arn);
}

#[test]
fn partitions() {
    let cases = [
        ("us-east-1", "aws", "amazonaws.com"),
        ("cn-north-1", "aws-cn", "amazonaws.com.cn"),
        ("us-gov-west-1", "aws-us-gov", "amazonaws.com"),
        ("us-iso-east-1", "aws-iso", "c2s.ic.gov"),
        ("us-isob-east-1", "aws-iso-b", "sc2s.sgov.gov"),
        ("eu-isoe-west-1", "aws-iso-e", "cloud.adc-e.uk"),
        ("us-isof-south-1", "aws-iso-f", "csp.hci.ic.gov"),
        ("eusc-de-east-1", "aws-eusc", "amazonaws.eu"),
        ("CN-NORTHWEST-1", "aws-cn", "amazonaws.com.cn"),
    ];
    for (region, partition, suffix) in cases {
        let c = ResolveContext::new("S", region, Some("123456789012".into()));
        assert_eq!(c.partition().name, partition, "{region}");
        assert_eq!(c.partition().url_suffix, suffix, "{region}");
        let id = c.stack_id().unwrap();
        assert!(id.starts_with(&format!("arn:{partition}:cloudformation:{}:", c.region())));
    }
}

#[test]
fn refs_to_parameters_and_resources() {
    ok(&[
        (json!({"Ref": "Env"}), json!("dev")),
        (json!({"Ref": "Count"}), json!("3")),
        (json!({"Ref": "Names"}), json!(["a", "b", "c"])),
        (json!({"Ref": "Bucket"}), json!("phys-Bucket")),
    ]);
    errs(&[
        (json!({"Ref": "Nope"}), "Ref to unknown logical id 'Nope'"),
        (json!({"Ref": "PendingQueue"}), "has no physical id yet"),
        (
            json!({"Ref": "BootstrapVersion"}),
            "parameter 'BootstrapVersion' has no value",
        ),
        (json!({"Ref": 5}), "Ref: expected a logical id string"),
    ]);
    let e = eval(json!({"Ref": "PendingQueue"})).unwrap_err();
    assert!(e.is_unavailable());
    assert!(!eval(json!({"Ref": "Nope"})).unwrap_err().is_unavailable());
}

#[test]
fn get_att_forms() {
    ok(&[
        (
            json!({"Fn::GetAtt": ["Bucket", "Arn"]}),
            json!("Bucket.Arn"),
        ),
        (json!({"Fn::GetAtt": "Bucket.Arn"}), json!("Bucket.Arn")),
        (
            json!({"Fn::GetAtt": "Db.Endpoint.Address"}),
            json!("Db.Endpoint.Address"),
        ),
        (
            json!({"Fn::GetAtt": ["Db", "Outputs.Url"]}),
            json!("Db.Outputs.Url"),
        ),
        (
            json!({"Fn::GetAtt": ["Db", {"Ref": "Env"}]}),
            json!("Db.dev"),
        ),
        (json!({"Fn::GetAtt": ["Db", "Port"]}), json!(5432)),
    ]);
    errs(&[
        (
            json!({"Fn::GetAtt": ["Nope", "Arn"]}),
            "Fn::GetAtt to unknown logical id 'Nope'",
        ),
        (
            json!({"Fn::GetAtt": "NoDot"}),
            "expected 'LogicalId.Attribute'",
        ),
        (
            json!({"Fn::GetAtt": ["PendingQueue", "Arn"]}),
            "PendingQueue.Arn cannot be resolved",
        ),
        (json!({"Fn::GetAtt": ["Bucket"]}), "Fn::GetAtt: expected"),
    ]);
}

#[test]
fn join() {
    ok(&[
        (json!({"Fn::Join": ["-", ["a", "b", "c"]]}), json!("a-b-c")),
        (json!({"Fn::Join": ["", []]}), json!("")),
        (json!({"Fn::Join": [",", {"Ref": "Names"}]}), json!("a,b,c")),
        (
            json!({"Fn::Join": [":", [{"Fn::GetAtt": ["Db", "Endpoint.Address"]}, {"Fn::GetAtt": ["Db", "Port"]}]]}),
            json!("Db.Endpoint.Address:5432"),
        ),
        (
            json!({"Fn::Join": ["-", ["a", {"Fn::If": ["IsProd", "p", {"Ref": "AWS::NoValue"}]}, "z"]]}),
            json!("a-z"),
        ),
        (
            json!({"Fn::Join": [{"Ref": "Env"}, ["x", "y"]]}),
            json!("xdevy"),
        ),
    ]);
    errs(&[
        (
            json!({"Fn::Join": ["-", ["a", 1]]}),
            "Fn::Join[1][1]: Fn::Join: expected a string, got a number",
        ),
        (
            json!({"Fn::Join": ["-", ["a", true]]}),
            "expected a string, got a boolean",
        ),
        (json!({"Fn::Join": ["-", [["nested"]]]}), "got a list of 1"),
        (
            json!({"Fn::Join": ["-", [{"Ref": "Names"}]]}),
            "expected a string, got a list of 3",
        ),
        (json!({"Fn::Join": ["-"]}), "Fn::Join: expected a list of 2"),
        (
            json!({"Fn::Join": ["-", "abc"]}),
            "expected a list, got a string",
        ),
    ]);
}

#[test]
fn select_split() {
    ok(&[
        (json!({"Fn::Select": [1, ["a", "b"]]}), json!("b")),
        (json!({"Fn::Select": ["0", ["a", "b"]]}), json!("a")),
        (json!({"Fn::Select": [2, {"Ref": "Names"}]}), json!("c")),
        (
            json!({"Fn::Select": [{"Ref": "Count"}, ["a", "b", "c", "d"]]}),
            json!("d"),
        ),
        (json!({"Fn::Select": [0, [{"k": 1}]]}), json!({"k": 1})),
        (
            json!({"Fn::Split": [",", "a,b,,c"]}),
            json!(["a", "b", "", "c"]),
        ),
        (
            json!({"Fn::Select": [1, {"Fn::Split": ["/", {"Fn::Join": ["/", ["x", "y"]]}]}]}),
            json!("y"),
        ),
    ]);
    errs(&[
        (
            json!({"Fn::Select": [2, ["a", "b"]]}),
            "index 2 is out of range for a list of 2",
        ),
        (
            json!({"Fn::Select": [-1, ["a"]]}),
            "index -1 is out of range",
        ),
        (
            json!({"Fn::Select": ["x", ["a"]]}),
            "expected an integer, got a string",
        ),
        (
            json!({"Fn::Split": [",", 5]}),
            "Fn::Split: expected a string to split, got a number",
        ),
        (
            json!({"Fn::Split": [",", {"Ref": "Names"}]}),
            "expected a string to split, got a list",
        ),
        (json!({"Fn::Split": ["", "abc"]}), "the delimiter is empty"),
    ]);
}

#[test]
fn if_and_no_value() {
    ok(&[
        (json!({"Fn::If": ["IsDev", "yes", "no"]}), json!("yes")),
        (json!({"Fn::If": ["IsProd", "yes", "no"]}), json!("no")),
        (
            json!({"A": {"Fn::If": ["IsProd", 1, {"Ref": "AWS::NoValue"}]}, "B": 2}),
            json!({"B": 2}),
        ),
        (
            json!(["a", {"Fn::If": ["IsProd", "b", {"Ref": "AWS::NoValue"}]}, "c"]),
            json!(["a", "c"]),
        ),
        (
            json!([{"Fn::If": ["IsDev", {"Fn::If": ["IsProd", "x", ["n1", {"Fn::If": ["NotProd", "deep", "no"]}]]}, "z"]}]),
            json!([["n1", "deep"]]),
        ),
        (
            json!({"Fn::If": ["IsDev", {"Ref": "Bucket"}, {"Ref": "Nope"}]}),
            json!("phys-Bucket"),
        ),
    ]);
    assert_eq!(eval(json!({"Ref": "AWS::NoValue"})).unwrap(), None);
    errs(&[
        (
            json!({"Fn::If": ["Missing", 1, 2]}),
            "unknown condition 'Missing'",
        ),
        (
            json!({"Fn::If": [{"Condition": "IsDev"}, 1, 2]}),
            "must be a condition name",
        ),
        (json!({"Fn::If": ["IsDev", 1]}), "expected a list of 3"),
    ]);
}

#[test]
fn condition_functions_inline() {
    ok(&[
        (json!({"Fn::Equals": ["a", "a"]}), json!(true)),
        (json!({"Fn::Equals": [{"Ref": "Count"}, 3]}), json!(true)),
        (json!({"Fn::Equals": [["a"], ["a"]]}), json!(true)),
        (
            json!({"Fn::And": [{"Condition": "IsDev"}, {"Fn::Equals": [1, 1]}]}),
            json!(true),
        ),
        (
            json!({"Fn::Or": [{"Condition": "IsProd"}, {"Condition": "IsDev"}]}),
            json!(true),
        ),
        (json!({"Fn::Not": [{"Condition": "IsDev"}]}), json!(false)),
    ]);
    errs(&[
        (
            json!({"Fn::Equals": ["a"]}),
            "Fn::Equals: expected a list of 2",
        ),
        (
            json!({"Fn::Not": ["a", "b"]}),
            "expected a list of 1 condition",
        ),
        (json!({"Fn::And": []}), "expected a list of conditions"),
        (
            json!({"Fn::Or": ["maybe"]}),
            "does not evaluate to true or false",
        ),
    ]);
}

#[test]
fn find_in_map() {
    ok(&[
        (
            json!({"Fn::FindInMap": ["RegionMap", {"Ref": "AWS::Region"}, "Prefix"]}),
            json!("use1"),
        ),
        (
            json!({"Fn::FindInMap": ["RegionMap", "us-east-1", "Azs"]}),
            json!(["a", "b"]),
        ),
        (
            json!({"Fn::FindInMap": ["RegionMap", "ap-south-1", "Prefix", {"DefaultValue": "dflt"}]}),
            json!("dflt"),
        ),
        (
            json!({"Fn::FindInMap": ["Nope", "x", "y", {"DefaultValue": {"Ref": "Env"}}]}),
            json!("dev"),
        ),
        (
            json!({"Fn::FindInMap": ["RegionMap", "us-east-1", "Prefix", {"DefaultValue": "unused"}]}),
            json!("use1"),
        ),
    ]);
    errs(&[
        (
            json!({"Fn::FindInMap": ["RegionMap", "ap-south-1", "Prefix"]}),
            "mapping 'RegionMap' has no key 'ap-south-1'",
        ),
        (
            json!({"Fn::FindInMap": ["RegionMap", "eu-west-1", "Azs"]}),
            "mapping 'RegionMap.eu-west-1' has no key 'Azs'",
        ),
        (
            json!({"Fn::FindInMap": ["Nope", "a", "b"]}),
            "mapping 'Nope' is not defined",
        ),
        (
            json!({"Fn::FindInMap": ["RegionMap", "a", "b", {"Default": 1}]}),
            "DefaultValue",
        ),
    ]);
}

#[test]
fn base64_length_json_cidr_azs() {
    ok(&[
        (json!({"Fn::Base64": "hello"}), json!("aGVsbG8=")),
        (json!({"Fn::Base64": ""}), json!("")),
        (json!({"Fn::Base64": "ab"}), json!("YWI=")),
        (
            json!({"Fn::Base64": {"Fn::Sub": "#!/bin/sh\necho ${AWS::Region}"}}),
            json!("IyEvYmluL3NoCmVjaG8gdXMtZWFzdC0x"),
        ),
        (
            json!({"Fn::Length": [1, 2, {"Ref": "AWS::NoValue"}]}),
            json!(2),
        ),
        (json!({"Fn::Length": {"Ref": "Names"}}), json!(3)),
        (
            json!({"Fn::ToJsonString": {"b": {"Ref": "Env"}, "a": [1, {"Ref": "AWS::NoValue"}]}}),
            json!(r#"{"b":"dev","a":[1]}"#),
        ),
        (
            json!({"Fn::Cidr": ["10.0.0.0/16", 2, 8]}),
            json!(["10.0.0.0/24", "10.0.1.0/24"]),
        ),
        (
            json!({"Fn::GetAZs": ""}),
            json!(["us-east-1a", "us-east-1b"]),
        ),
        (
            json!({"Fn::GetAZs": {"Ref": "AWS::Region"}}),
            json!(["us-east-1a", "us-east-1b"]),
        ),
        (
            json!({"Fn::GetAZs": "eu-west-1"}),
            json!(["eu-west-1a", "eu-west-1b"]),
        ),
    ]);
    errs(&[
        (json!({"Fn::Base64": 5}), "Fn::Base64: expected a string"),
        (json!({"Fn::Length": "abc"}), "Fn::Length: expected a list"),
        (
            json!({"Fn::Cidr": ["10.0.0.0/24", 16, 5]}),
            "16 subnets of /27 do not fit",
        ),
    ]);
}

#[test]
fn cross_stack_lookups() {
    ok(&[
        (
            json!({"Fn::ImportValue": "Producer:Url"}),
            json!("imported:Producer:Url"),
        ),
        (
            json!({"Fn::ImportValue": {"Fn::Sub": "${Env}-url"}}),
            json!("imported:dev-url"),
        ),
        (
            json!({"Fn::GetStackOutput": {"StackName": "P", "OutputName": "O", "Region": {"Ref": "AWS::Region"}}}),
            json!("P/O@us-east-1"),
        ),
    ]);
    errs(&[
        (
            json!({"Fn::GetStackOutput": {"StackName": "P"}}),
            "StackName and OutputName are required",
        ),
        (
            json!({"Fn::GetStackOutput": {"StackName": "P", "OutputName": "O", "Bogus": "x"}}),
            "unknown key 'Bogus'",
        ),
        (
            json!({"Fn::Contains": [["a"], "a"]}),
            "unsupported intrinsic function Fn::Contains",
        ),
        (
            json!({"Fn::Transform": {"Name": "X"}}),
            "unsupported intrinsic function Fn::Transform",
        ),
    ]);
    // Without an external lookup each is a typed "not available here".
    let t = template();
    let c = ctx();
    let p = bind(&t);
    let mut r = Resolver::new(&t, &c, &p, &Synthetic, &NoExternalLookup);
    for (v, function) in [
        (json!({"Fn::ImportValue": "X"}), "Fn::ImportValue"),
        (json!({"Fn::GetAZs": ""}), "Fn::GetAZs"),
        (
            json!({"Fn::GetStackOutput": {"StackName": "P", "OutputName": "O"}}),
            "Fn::GetStackOutput",
        ),
    ] {
        let e = r.resolve_value(&v, "Outputs.O.Value").unwrap_err();
        match &e.kind {
            ResolveErrorKind::Lookup {
                function: f,
                error: LookupError::NotAvailable(_),
            } => assert_eq!(*f, function),
            other => panic!("{v}: {other:?}"),
        }
        assert!(e.is_unavailable());
        assert!(e.to_string().contains("is not available here"), "{e}");
    }
}

#[test]
fn paths_name_the_failing_value() {
    let t = template();
    let c = ctx();
    let p = bind(&t);
    let mut r = Resolver::new(&t, &c, &p, &Synthetic, &SyntheticExternal);
    let e = r.resolve_properties("Fn").unwrap_err();
    assert_eq!(
        e.path,
        "Resources.Fn.Properties.Environment.Variables.X.Ref"
    );
    assert_eq!(e.stack, "TestStack");
    let v = json!({"L": [1, {"Fn::Join": ["", ["a", {"Fn::Select": [5, ["x"]]}]]}]});
    let e = r.resolve_value(&v, "Resources.R.Properties").unwrap_err();
    assert_eq!(
        e.path,
        "Resources.R.Properties.L[1].Fn::Join[1][1].Fn::Select"
    );
}

#[test]
fn outputs() {
    let t = template();
    let c = ctx();
    let p = bind(&t);
    let mut r = Resolver::new(&t, &c, &p, &Synthetic, &SyntheticExternal);
    let out = r.resolve_output("BucketName").unwrap().unwrap();
    assert_eq!(out.value, json!("phys-Bucket"));
    assert_eq!(out.export_name.as_deref(), Some("TestStack-bucket"));
    assert_eq!(r.resolve_output("ProdTopic").unwrap(), None);
    let e = r.resolve_output("Missing").unwrap_err();
    assert!(e.to_string().contains("Outputs.Missing"), "{e}");

    let t = template_from(json!({
        "Resources": {"B": {"Type": "AWS::S3::Bucket"}},
        "Outputs": {
            "None": {"Value": {"Ref": "AWS::NoValue"}},
            "Unknown": {"Value": "x", "Condition": "Ghost"}
        }
    }));
    let p = bind(&t);
    let mut r = Resolver::new(&t, &c, &p, &Synthetic, &SyntheticExternal);
    let e = r.resolve_output("None").unwrap_err();
    assert_eq!(e.path, "Outputs.None.Value");
    assert!(e.to_string().contains("cannot be AWS::NoValue"));
    assert_eq!(
        r.resolve_output("Unknown").unwrap().unwrap().value,
        json!("x")
    );
    assert_eq!(r.warnings().len(), 1);
}

#[test]
fn resolve_properties_drops_no_value_keys_and_rules_are_ignored() {
    let t = template_from(json!({
        "Resources": {"Q": {"Type": "AWS::SQS::Queue", "Properties": {
            "DelaySeconds": {"Ref": "AWS::NoValue"},
            "QueueName": {"Fn::Join": ["-", [{"Ref": "AWS::StackName"}, "q"]]},
            "Policy": {"Condition": {"StringEquals": {"aws:x": "y"}}}
        }}},
        "Rules": {"R": {"Assertions": [{"Assert": {"Fn::Contains": [["1"], {"Ref": "Nothing"}]}}]}}
    }));
    let c = ctx();
    let p = bind(&t);
    let mut r = Resolver::new(&t, &c, &p, &Synthetic, &SyntheticExternal);
    let props = r.resolve_properties("Q").unwrap();
    assert_eq!(
        Value::Object(props),
        json!({"QueueName": "TestStack-q", "Policy": {"Condition": {"StringEquals": {"aws:x": "y"}}}})
    );
}

#[test]
fn base64_matches_reference_vectors() {
    for (input, want) in [
        ("", ""),
        ("f", "Zg=="),
        ("fo", "Zm8="),
        ("foo", "Zm9v"),
        ("foob", "Zm9vYg=="),
        ("fooba", "Zm9vYmE="),
        ("foobar", "Zm9vYmFy"),
    ] {
        assert_eq!(super::functions::base64(input.as_bytes()), want);
    }
}
