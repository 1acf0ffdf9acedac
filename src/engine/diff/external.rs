//! What a diff reads from outside its stack, read-only: the SSM-typed template parameters (as
//! the deploy binds them) and the literal `Fn::ImportValue` names, looked up through a reader
//! with no exports index, so nothing is written through to the index. No dynamic reference is
//! fetched: a `{{resolve:...}}` stays its expression. Anything else stays unknown, and an
//! unknown value is not compared.

use std::path::Path;
use std::sync::Arc;

use serde_json::Value;

use crate::resolve::{
    ExternalLookup, ExternalReader, NoExternalLookup, ParameterOverride, PrefetchedLookup,
    ResolveContext,
};
use crate::template::{parse_template_file, Template};

/// The lookup a diff of `stack` resolves with.
pub async fn lookup_for(
    reader: Option<&Arc<ExternalReader>>,
    stack: &str,
    region: &str,
    account_id: &str,
    template_file: &Path,
    overrides: &[ParameterOverride],
) -> Arc<dyn ExternalLookup + Send + Sync> {
    let Some(reader) = reader else {
        return Arc::new(NoExternalLookup);
    };
    // An unreadable template is reported by the preparation that follows.
    let Ok(template) = parse_template_file(template_file) else {
        return Arc::new(NoExternalLookup);
    };
    let ctx = ResolveContext::new(stack, region, Some(account_id.to_owned()));
    let lookup = PrefetchedLookup::new(reader.clone(), ctx);
    lookup.prefetch_parameters(&template, overrides).await;
    lookup.fetch_imports(&literal_imports(&template)).await;
    Arc::new(lookup)
}

/// Every `Fn::ImportValue` of a literal name in the resources and outputs.
pub fn literal_imports(template: &Template) -> Vec<String> {
    let mut names = Vec::new();
    for r in template.resources.values() {
        for v in r.properties.values() {
            collect(v, &mut names, 0);
        }
    }
    for o in template.outputs.values() {
        collect(&o.value, &mut names, 0);
    }
    names.sort();
    names.dedup();
    names
}

fn collect(value: &Value, out: &mut Vec<String>, depth: usize) {
    if depth > 256 {
        return;
    }
    match value {
        Value::Object(m) => {
            if let (1, Some(Value::String(name))) = (m.len(), m.get("Fn::ImportValue")) {
                out.push(name.clone());
                return;
            }
            for v in m.values() {
                collect(v, out, depth + 1);
            }
        }
        Value::Array(items) => {
            for v in items {
                collect(v, out, depth + 1);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn literal_import_names_are_found() {
        let t = Template::from_value(
            json!({
                "Resources": {"P": {"Type": "AWS::SSM::Parameter", "Properties": {
                    "Value": {"Fn::ImportValue": "A"},
                    "Name": {"Fn::Join": ["", [{"Fn::ImportValue": "B"}, {"Fn::ImportValue": {"Ref": "X"}}]]}
                }}},
                "Outputs": {"O": {"Value": {"Fn::ImportValue": "A"}}}
            }),
            Path::new("t.json"),
        )
        .unwrap();
        assert_eq!(literal_imports(&t), vec!["A".to_owned(), "B".to_owned()]);
    }
}
