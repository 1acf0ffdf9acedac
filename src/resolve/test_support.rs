//! Shared helpers for the resolver's unit tests.

use std::path::Path;

use serde_json::{json, Value};

use super::*;
use crate::template::Template;

/// Every `Ref` is `phys-<LogicalId>`, every attribute `<LogicalId>.<Attr>`;
/// ids starting with `Pending` have no value yet.
pub struct Synthetic;

impl ResourceLookup for Synthetic {
    fn ref_value(&self, id: &str) -> Option<Value> {
        (!id.starts_with("Pending")).then(|| Value::String(format!("phys-{id}")))
    }
    fn get_att(&self, id: &str, attribute: &str) -> Option<Value> {
        if id.starts_with("Pending") {
            return None;
        }
        if attribute == "Port" {
            return Some(json!(5432));
        }
        Some(Value::String(format!("{id}.{attribute}")))
    }
}

/// Imports give `imported:<name>`, AZs `<region>a`/`<region>b`, outputs
/// `<stack>/<output>`; SSM lookups are not available.
pub struct SyntheticExternal;

impl ExternalLookup for SyntheticExternal {
    fn import_value(&self, name: &str) -> Result<Value, LookupError> {
        Ok(Value::String(format!("imported:{name}")))
    }
    fn availability_zones(&self, region: &str) -> Result<Vec<String>, LookupError> {
        Ok(vec![format!("{region}a"), format!("{region}b")])
    }
    fn stack_output(&self, r: &StackOutputRequest) -> Result<Value, LookupError> {
        Ok(Value::String(format!(
            "{}/{}@{}",
            r.stack_name,
            r.output_name,
            r.region.as_deref().unwrap_or("-")
        )))
    }
}

/// The test template: parameters, a mapping, conditions and resources.
pub fn template() -> Template {
    template_from(json!({
        "Parameters": {
            "Env": {"Type": "String", "Default": "dev"},
            "Count": {"Type": "Number", "Default": 3},
            "Names": {"Type": "CommaDelimitedList", "Default": "a, b,c"},
            "Secret": {"Type": "String", "Default": "s3cr3t", "NoEcho": true},
            "BootstrapVersion": {
                "Type": "AWS::SSM::Parameter::Value<String>",
                "Default": "/cdk-bootstrap/hnb659fds/version"
            }
        },
        "Mappings": {
            "RegionMap": {
                "us-east-1": {"Prefix": "use1", "Azs": ["a", "b"]},
                "eu-west-1": {"Prefix": "euw1"}
            }
        },
        "Conditions": {
            "IsProd": {"Fn::Equals": [{"Ref": "Env"}, "prod"]},
            "IsDev": {"Fn::Equals": [{"Ref": "Env"}, "dev"]},
            "NotProd": {"Fn::Not": [{"Condition": "IsProd"}]},
            "CountIs3": {"Fn::Equals": [{"Ref": "Count"}, 3]}
        },
        "Resources": {
            "Bucket": {"Type": "AWS::S3::Bucket"},
            "Db": {"Type": "AWS::RDS::DBInstance"},
            "PendingQueue": {"Type": "AWS::SQS::Queue"},
            "ProdOnly": {"Type": "AWS::SNS::Topic", "Condition": "IsProd"},
            "Fn": {"Type": "AWS::Lambda::Function", "Properties": {"Environment": {
                "Variables": {"X": {"Ref": "Nope"}}
            }}}
        },
        "Outputs": {
            "BucketName": {"Value": {"Ref": "Bucket"}, "Export": {"Name": {"Fn::Sub": "${AWS::StackName}-bucket"}}},
            "ProdTopic": {"Value": {"Ref": "ProdOnly"}, "Condition": "IsProd"}
        }
    }))
}

pub fn template_from(v: Value) -> Template {
    Template::from_value(v, Path::new("test.json")).expect("test template parses")
}

pub fn ctx() -> ResolveContext {
    ResolveContext::new("TestStack", "us-east-1", Some("123456789012".into()))
}

pub fn bind(t: &Template) -> BoundParameters {
    bind_parameters(t, &[], "TestStack", &NoExternalLookup).expect("parameters bind")
}

/// Resolves `v` against [`template`] with the synthetic lookups.
pub fn eval(v: Value) -> Result<Option<Value>, ResolveError> {
    let t = template();
    let c = ctx();
    let p = bind(&t);
    let mut r = Resolver::new(&t, &c, &p, &Synthetic, &SyntheticExternal);
    r.resolve_value(&v, "Resources.Test.Properties.P")
}

/// Like [`eval`], also returning the warnings.
pub fn eval_warn(v: Value) -> (Result<Option<Value>, ResolveError>, Vec<ResolveWarning>) {
    let t = template();
    let c = ctx();
    let p = bind(&t);
    let mut r = Resolver::new(&t, &c, &p, &Synthetic, &SyntheticExternal);
    let out = r.resolve_value(&v, "Resources.Test.Properties.P");
    (out, r.take_warnings())
}

/// The error of resolving `v`, as text.
pub fn eval_err(v: Value) -> String {
    match eval(v.clone()) {
        Ok(out) => panic!("expected an error for {v}, got {out:?}"),
        Err(e) => e.to_string(),
    }
}
