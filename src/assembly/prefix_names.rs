//! `cdkd deploy --prefix-user-supplied-names`: upstream cdkd's opt-in to its pre-0.94 naming,
//! where a physical name the template gives an IAM role, user, group, instance profile or
//! managed policy, or an ELBv2 load balancer or target group, is created as
//! `{stack}-{name}` (its "pattern B" types). Every other type keeps the name as given, and a
//! resource the template leaves unnamed gets its generated `{stack}-{logicalId}-...` name
//! either way.
//!
//! The name is built as upstream builds it: `{stack}-{name}`, every character other than an
//! ASCII letter, digit or `-` replaced by `-`, runs of `-` collapsed and trimmed, and a name
//! over the type's length limit cut and ended with `-` and 8 hex digits of the SHA-256 of the
//! unsanitized `{stack}-{name}`.
//!
//! The deploy reads templates rewritten this way (copies in a temporary directory, as the
//! asset redirect makes them), so the plan, the record and the created resource all carry
//! the prefixed name; a later deploy without the flag therefore replaces such a resource
//! (upstream documents the same for flipping the flag). A name written as an intrinsic is
//! left as it is (it has no value before resolution), with a warning. Nested stacks' templates
//! are prefixed with their top-level stack's name.

use std::path::{Path, PathBuf};

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::StackArtifact;
use crate::error::Error;
use crate::ui;

/// The pattern-B types: their name property and the longest name each takes.
const TYPES: &[(&str, &str, usize)] = &[
    ("AWS::IAM::Role", "RoleName", 64),
    ("AWS::IAM::User", "UserName", 64),
    ("AWS::IAM::Group", "GroupName", 128),
    ("AWS::IAM::InstanceProfile", "InstanceProfileName", 128),
    ("AWS::IAM::ManagedPolicy", "ManagedPolicyName", 128),
    ("AWS::ElasticLoadBalancingV2::LoadBalancer", "Name", 32),
    ("AWS::ElasticLoadBalancingV2::TargetGroup", "Name", 32),
];

/// `{stack}-{name}` within `max_len`, as upstream builds it.
pub fn prefixed_name(stack: &str, name: &str, max_len: usize) -> String {
    let full = format!("{stack}-{name}");
    let mut sanitized = String::with_capacity(full.len());
    for c in full.chars() {
        let c = if c.is_ascii_alphanumeric() { c } else { '-' };
        if c == '-' && sanitized.ends_with('-') {
            continue;
        }
        sanitized.push(c);
    }
    let sanitized = sanitized.trim_matches('-').to_owned();
    if sanitized.len() <= max_len {
        return sanitized;
    }
    let hash = hex(&Sha256::digest(full.as_bytes()));
    let keep = max_len.saturating_sub(9);
    let head = sanitized[..keep].trim_end_matches('-');
    format!("{head}-{}", &hash[..8])
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Prefixes the user-given names of `template`'s pattern-B resources with `stack`; returns
/// the logical ids changed.
pub fn prefix_template(template: &mut Value, stack: &str) -> Vec<String> {
    let mut changed = Vec::new();
    let Some(resources) = template.get_mut("Resources").and_then(Value::as_object_mut) else {
        return changed;
    };
    for (id, res) in resources.iter_mut() {
        let Some(t) = res.get("Type").and_then(Value::as_str) else {
            continue;
        };
        let Some(&(_, key, max_len)) = TYPES.iter().find(|(ty, _, _)| *ty == t) else {
            continue;
        };
        let Some(slot) = res
            .get_mut("Properties")
            .and_then(Value::as_object_mut)
            .and_then(|p| p.get_mut(key))
        else {
            continue;
        };
        match slot {
            Value::String(name) if !name.is_empty() => {
                *name = prefixed_name(stack, name, max_len);
                changed.push(id.clone());
            }
            Value::String(_) => {}
            _ => ui::warn(format!(
                "{stack}: {id}: --prefix-user-supplied-names: its {key} is an intrinsic, which \
                 has no value before resolution; the name is left as it is"
            )),
        }
    }
    changed
}

/// Removes the rewritten templates when the deploy is done.
#[derive(Debug, Default)]
pub struct PrefixedTemplates {
    dir: Option<PathBuf>,
}

impl Drop for PrefixedTemplates {
    fn drop(&mut self) {
        if let Some(dir) = &self.dir {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// Points every stack at copies of its directory's templates (its own and its nested
/// stacks') with the pattern-B names prefixed by its name. Keep the guard until the deploy
/// ends.
pub fn rewrite(stacks: &mut [StackArtifact]) -> Result<PrefixedTemplates, Error> {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let root = std::env::temp_dir().join(format!("cdkd-prefixed-{}-{nanos}", std::process::id()));
    let guard = PrefixedTemplates {
        dir: Some(root.clone()),
    };
    for stack in stacks.iter_mut() {
        let source = stack
            .template_file
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let dir = root.join(&stack.artifact_id);
        std::fs::create_dir_all(&dir).map_err(|e| Error::io(writing(&dir), e))?;
        let entries = std::fs::read_dir(&source).map_err(|e| Error::io(reading(&source), e))?;
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if !name.ends_with(".template.json") {
                continue;
            }
            let path = entry.path();
            let text = std::fs::read_to_string(&path).map_err(|e| Error::io(reading(&path), e))?;
            let text = match serde_json::from_str::<Value>(&text) {
                Ok(mut template) => {
                    let changed = prefix_template(&mut template, &stack.stack_name);
                    if path == stack.template_file && !changed.is_empty() {
                        ui::info(format!(
                            "{}: names prefixed with the stack name: {}",
                            stack.stack_name,
                            changed.join(", ")
                        ));
                    }
                    serde_json::to_string(&template).unwrap_or(text)
                }
                // Not JSON: the deploy reports the template's own error.
                Err(_) => text,
            };
            let target = dir.join(&name);
            std::fs::write(&target, text).map_err(|e| Error::io(writing(&target), e))?;
        }
        if let Some(name) = stack.template_file.file_name() {
            stack.template_file = dir.join(name);
        }
    }
    Ok(guard)
}

fn reading(path: &Path) -> String {
    format!("--prefix-user-supplied-names: reading {}", path.display())
}

fn writing(path: &Path) -> String {
    format!("--prefix-user-supplied-names: writing {}", path.display())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_are_built_as_upstream_builds_them() {
        assert_eq!(prefixed_name("MyStack", "my-role", 64), "MyStack-my-role");
        // Characters outside [A-Za-z0-9-] become '-', runs collapse, ends are trimmed.
        assert_eq!(
            prefixed_name("MyStack", "my_role..x-", 64),
            "MyStack-my-role-x"
        );
        // Over the limit: cut, then '-' and 8 hex digits of the unsanitized full name.
        let long = "a".repeat(40);
        let got = prefixed_name("Stack", &long, 32);
        assert_eq!(got.len(), 32, "{got}");
        let hash = hex(&Sha256::digest(format!("Stack-{long}").as_bytes()));
        assert_eq!(got, format!("Stack-{}-{}", "a".repeat(17), &hash[..8]));
    }

    #[test]
    fn only_pattern_b_names_the_template_gives_are_prefixed() {
        let mut t = json!({"Resources": {
            "Role": {"Type": "AWS::IAM::Role", "Properties": {"RoleName": "r"}},
            "Policy": {"Type": "AWS::IAM::ManagedPolicy",
                       "Properties": {"ManagedPolicyName": "p"}},
            "Unnamed": {"Type": "AWS::IAM::Role", "Properties": {}},
            "Joined": {"Type": "AWS::IAM::Role",
                       "Properties": {"RoleName": {"Fn::Join": ["", ["a", "b"]]}}},
            "Queue": {"Type": "AWS::SQS::Queue", "Properties": {"QueueName": "q"}},
            "Lb": {"Type": "AWS::ElasticLoadBalancingV2::LoadBalancer",
                   "Properties": {"Name": "lb"}}
        }});
        let mut changed = prefix_template(&mut t, "S");
        changed.sort();
        assert_eq!(changed, vec!["Lb", "Policy", "Role"]);
        let r = &t["Resources"];
        assert_eq!(r["Role"]["Properties"]["RoleName"], "S-r");
        assert_eq!(r["Policy"]["Properties"]["ManagedPolicyName"], "S-p");
        assert_eq!(r["Lb"]["Properties"]["Name"], "S-lb");
        assert_eq!(r["Queue"]["Properties"]["QueueName"], "q");
        assert_eq!(r["Unnamed"]["Properties"], json!({}));
        assert!(r["Joined"]["Properties"]["RoleName"].is_object());
    }
}
