//! The resource mapping of `cdkd import`: `--resource LogicalId=physicalId` (repeatable),
//! `--resource-mapping file.json` and `--resource-mapping-inline '{...}'`, merged in that
//! order of precedence (a `--resource` wins over a mapping naming the same logical id).
//!
//! A mapping is a JSON object of logical id → physical id. A composite physical id joins its
//! parts with `|`, which needs no escaping in JSON (on a command line it must be quoted).

use indexmap::IndexMap;
use serde_json::Value;

/// A mapping that cannot be used; the message names the argument and the entry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct MappingError(pub String);

/// Merges the three sources: `file` is the mapping file's text and name (already read).
pub fn parse_mapping(
    resources: &[String],
    file: Option<(&str, &str)>,
    inline: Option<&str>,
) -> Result<IndexMap<String, String>, MappingError> {
    let mut out = IndexMap::new();
    if let Some((text, name)) = file {
        merge_json(&mut out, text, &format!("--resource-mapping {name}"))?;
    }
    if let Some(text) = inline {
        merge_json(&mut out, text, "--resource-mapping-inline")?;
    }
    for r in resources {
        let Some((id, physical)) = r.split_once('=') else {
            return Err(MappingError(format!(
                "--resource {r}: expected LogicalId=physicalId"
            )));
        };
        let (id, physical) = (id.trim(), physical.trim());
        if id.is_empty() || physical.is_empty() {
            return Err(MappingError(format!(
                "--resource {r}: expected LogicalId=physicalId, both non-empty"
            )));
        }
        out.insert(id.to_string(), physical.to_string());
    }
    // Empty is no mapping at all: the import then finds every resource (auto mode).
    Ok(out)
}

fn merge_json(
    out: &mut IndexMap<String, String>,
    text: &str,
    what: &str,
) -> Result<(), MappingError> {
    let v: Value = serde_json::from_str(text)
        .map_err(|e| MappingError(format!("{what}: not valid JSON ({e})")))?;
    let Value::Object(m) = v else {
        return Err(MappingError(format!(
            "{what}: expected a JSON object of LogicalId: physicalId"
        )));
    };
    for (id, physical) in m {
        match physical {
            Value::String(s) if !s.trim().is_empty() && !id.trim().is_empty() => {
                out.insert(id.trim().to_string(), s.trim().to_string());
            }
            other => {
                return Err(MappingError(format!(
                    "{what}: the physical id of '{id}' must be a non-empty string, got {other}"
                )))
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_file_inline_and_flags_in_precedence_order() {
        let m = parse_mapping(
            &["Queue=flag-url".into(), "Table=db|tbl".into()],
            Some((r#"{"Queue": "file-url", "Bucket": "b"}"#, "m.json")),
            Some(r#"{"Bucket": "inline-b", "Topic": "arn:aws:sns:us-east-1:1:t"}"#),
        )
        .unwrap();
        assert_eq!(
            m.into_iter().collect::<Vec<_>>(),
            vec![
                ("Queue".to_string(), "flag-url".to_string()),
                ("Bucket".to_string(), "inline-b".to_string()),
                ("Topic".to_string(), "arn:aws:sns:us-east-1:1:t".to_string()),
                ("Table".to_string(), "db|tbl".to_string()),
            ]
        );
    }

    #[test]
    fn refuses_what_it_cannot_use() {
        for (resources, file, inline, needle) in [
            (
                vec!["NoEquals".to_string()],
                None,
                None,
                "--resource NoEquals",
            ),
            (vec!["=x".to_string()], None, None, "both non-empty"),
            (
                vec![],
                Some(("[1]", "m.json")),
                None,
                "--resource-mapping m.json",
            ),
            (vec![], None, Some("{"), "not valid JSON"),
            (
                vec![],
                None,
                Some(r#"{"A": 1}"#),
                "'A' must be a non-empty string",
            ),
        ] {
            let e = parse_mapping(&resources, file, inline).unwrap_err();
            assert!(e.0.contains(needle), "{e}");
        }
    }

    #[test]
    fn no_source_is_an_empty_mapping() {
        assert!(parse_mapping(&[], None, None).unwrap().is_empty());
    }
}
