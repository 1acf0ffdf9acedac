//! Construct paths to logical ids, through the `aws:cdk:path` metadata the CDK writes on every
//! resource of a synthesized template.
//!
//! `Stack/Queue` names the L1 resource `Stack/Queue/Resource` and, like `cdk orphan`, every
//! resource below an L2 construct path; a path whose last part is a logical id the template
//! declares (a hand-written template has no metadata) names that resource.

use crate::template::Template;

/// The logical ids `rest` (a construct path with the stack's own part removed) names in
/// `template`, whose metadata paths start with `stack_prefix` (the stack's display path).
pub fn logical_ids_for(template: &Template, stack_prefixes: &[&str], rest: &str) -> Vec<String> {
    let rest = rest.trim_matches('/');
    let mut out = Vec::new();
    for (id, res) in &template.resources {
        let Some(path) = res
            .metadata
            .as_ref()
            .and_then(|m| m.get("aws:cdk:path"))
            .and_then(|p| p.as_str())
        else {
            continue;
        };
        let Some(inner) = stack_prefixes
            .iter()
            .find_map(|p| path.strip_prefix(p).and_then(|r| r.strip_prefix('/')))
        else {
            continue;
        };
        let hit = inner == rest
            || inner
                .strip_prefix(rest)
                .is_some_and(|tail| tail.starts_with('/'));
        if hit {
            out.push(id.clone());
        }
    }
    if out.is_empty() && template.resources.contains_key(rest) {
        out.push(rest.to_owned());
    }
    out
}

/// Every resource of `template` (other than the orphans) whose definition reads one of
/// `orphans`, through an intrinsic or `DependsOn`.
pub fn template_readers(template: &Template, orphans: &[String]) -> Vec<String> {
    template
        .resources
        .iter()
        .filter(|(id, _)| !orphans.contains(id))
        .filter(|(_, res)| {
            res.depends_on.iter().any(|d| orphans.contains(d))
                || orphans
                    .iter()
                    .any(|o| mentions(&serde_json::Value::Object(res.properties.clone()), o))
        })
        .map(|(id, _)| id.clone())
        .collect()
}

fn mentions(v: &serde_json::Value, id: &str) -> bool {
    use serde_json::Value;
    match v {
        Value::Object(m) => {
            if m.len() == 1 {
                if let Some((k, arg)) = m.iter().next() {
                    let hit = match (k.as_str(), arg) {
                        ("Ref", Value::String(t)) => t == id,
                        ("Fn::GetAtt", Value::Array(a)) => {
                            a.first().and_then(Value::as_str) == Some(id)
                        }
                        ("Fn::GetAtt", Value::String(s)) => s.split('.').next() == Some(id),
                        ("Fn::Sub", Value::String(s)) => sub_mentions(s, id),
                        ("Fn::Sub", Value::Array(a)) => a
                            .first()
                            .and_then(Value::as_str)
                            .is_some_and(|s| sub_mentions(s, id)),
                        _ => false,
                    };
                    if hit {
                        return true;
                    }
                }
            }
            m.values().any(|x| mentions(x, id))
        }
        Value::Array(a) => a.iter().any(|x| mentions(x, id)),
        _ => false,
    }
}

fn sub_mentions(text: &str, id: &str) -> bool {
    text.contains(&format!("${{{id}}}")) || text.contains(&format!("${{{id}."))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::parse_template;
    use std::path::Path;

    fn template() -> Template {
        parse_template(
            r#"{"Resources": {
                "QueueA1": {"Type": "AWS::SQS::Queue",
                    "Metadata": {"aws:cdk:path": "Stage/Api/Queue/Resource"}},
                "QueuePolicyB2": {"Type": "AWS::SQS::QueuePolicy",
                    "Metadata": {"aws:cdk:path": "Stage/Api/Queue/Policy/Resource"}},
                "Queue2C3": {"Type": "AWS::SQS::Queue",
                    "Metadata": {"aws:cdk:path": "Stage/Api/Queue2/Resource"}},
                "Param": {"Type": "AWS::SSM::Parameter",
                    "Properties": {"Value": {"Fn::Sub": "${QueueA1.Arn}"}}}
            }}"#,
            Path::new("t.json"),
        )
        .expect("template")
    }

    #[test]
    fn a_path_names_its_resource_or_everything_below_it() {
        let t = template();
        let p = ["Stage/Api"];
        assert_eq!(
            logical_ids_for(&t, &p, "Queue/Resource"),
            vec!["QueueA1".to_string()]
        );
        assert_eq!(
            logical_ids_for(&t, &p, "Queue"),
            vec!["QueueA1".to_string(), "QueuePolicyB2".to_string()],
            "an L2 path takes every resource below it, not Queue2"
        );
        assert_eq!(logical_ids_for(&t, &p, "Param"), vec!["Param".to_string()]);
        assert!(logical_ids_for(&t, &p, "Nope").is_empty());
        assert_eq!(
            template_readers(&t, &["QueueA1".to_string()]),
            vec!["Param".to_string()]
        );
    }
}
