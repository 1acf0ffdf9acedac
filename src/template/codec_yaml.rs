//! Writing a CloudFormation YAML document back out, short-form tags kept.
//!
//! The YAML library's own emitter follows YAML 1.2 and leaves strings such as `2010-09-09`,
//! `yes` or `0755` unquoted, which CloudFormation's YAML 1.1 parser would read as a date, a
//! boolean or an octal number. This emitter quotes every string that is not plainly a word
//! (JSON-style double quotes, which YAML reads the same way), writes block collections, and
//! puts each tag in front of its node (`!Ref Queue`, `!GetAtt Queue.Arn`, `!Join` + a list).

use serde_norway::Value as Yaml;

/// Renders `doc` (a mapping at the top level) as block YAML.
pub(super) fn render(doc: &serde_norway::Mapping) -> Result<String, String> {
    let mut out = String::new();
    if doc.is_empty() {
        return Ok("{}\n".into());
    }
    mapping(&mut out, doc, 0, false)?;
    Ok(out)
}

fn pad(out: &mut String, indent: usize) {
    out.extend(std::iter::repeat_n(' ', indent));
}

/// The entries of `map` at `indent`; the first line unpadded when `inline_first` (after `- `).
fn mapping(
    out: &mut String,
    map: &serde_norway::Mapping,
    indent: usize,
    inline_first: bool,
) -> Result<(), String> {
    for (i, (k, v)) in map.iter().enumerate() {
        if !(inline_first && i == 0) {
            pad(out, indent);
        }
        out.push_str(&key(k)?);
        out.push(':');
        after_indicator(out, v, indent)?;
    }
    Ok(())
}

/// The items of `seq`, each after `- ` at `indent`.
fn sequence(out: &mut String, seq: &[Yaml], indent: usize) -> Result<(), String> {
    for item in seq {
        pad(out, indent);
        out.push('-');
        match item {
            Yaml::Mapping(m) if !m.is_empty() => {
                out.push(' ');
                mapping(out, m, indent + 2, true)?;
            }
            other => after_indicator(out, other, indent)?,
        }
    }
    Ok(())
}

/// A node that follows `key:` or `-` on the same line (scalars, tags, empty collections)
/// or on the lines below (block collections, two spaces deeper than `indent`).
fn after_indicator(out: &mut String, v: &Yaml, indent: usize) -> Result<(), String> {
    match v {
        Yaml::Mapping(m) if m.is_empty() => out.push_str(" {}\n"),
        Yaml::Sequence(s) if s.is_empty() => out.push_str(" []\n"),
        Yaml::Mapping(m) => {
            out.push('\n');
            mapping(out, m, indent + 2, false)?;
        }
        Yaml::Sequence(s) => {
            out.push('\n');
            sequence(out, s, indent + 2)?;
        }
        Yaml::Tagged(t) => {
            if matches!(t.value, Yaml::Tagged(_)) {
                return Err(format!(
                    "a node carries two tags ({} and another); YAML allows one",
                    t.tag
                ));
            }
            out.push(' ');
            out.push_str(&t.tag.to_string());
            after_indicator(out, &t.value, indent)?;
        }
        scalar => {
            out.push(' ');
            out.push_str(&scalar_text(scalar)?);
            out.push('\n');
        }
    }
    Ok(())
}

fn key(k: &Yaml) -> Result<String, String> {
    match k {
        Yaml::Mapping(_) | Yaml::Sequence(_) | Yaml::Tagged(_) => {
            Err("a mapping key that is not a scalar".into())
        }
        scalar => scalar_text(scalar),
    }
}

fn scalar_text(v: &Yaml) -> Result<String, String> {
    Ok(match v {
        Yaml::Null => "null".into(),
        Yaml::Bool(b) => b.to_string(),
        Yaml::Number(n) => n.to_string(),
        Yaml::String(s) => string(s),
        _ => return Err("a collection where a scalar was expected".into()),
    })
}

/// `s` plain when it is unmistakably a string to every YAML version, else double-quoted.
fn string(s: &str) -> String {
    if is_plain_safe(s) {
        s.to_owned()
    } else {
        serde_json::Value::String(s.to_owned()).to_string()
    }
}

/// Words YAML 1.1 reads as booleans or null.
const YAML11_WORDS: [&str; 9] = ["y", "n", "yes", "no", "true", "false", "on", "off", "null"];

fn is_plain_safe(s: &str) -> bool {
    let mut chars = s.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    // A leading digit, sign or dot could be a number, a date or a time in YAML 1.1.
    if !(first.is_ascii_alphabetic() || first == '_' || first == '/') {
        return false;
    }
    if !s
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || "_./:@-".contains(c))
    {
        return false;
    }
    if s.ends_with(':') {
        return false;
    }
    !YAML11_WORDS.iter().any(|w| s.eq_ignore_ascii_case(w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ambiguous_strings_are_quoted() {
        for s in [
            "2010-09-09",
            "yes",
            "No",
            "on",
            "0755",
            "1:20",
            "",
            "a b",
            "${AWS::StackName}",
            "x:",
            "~",
            ".inf",
        ] {
            assert!(string(s).starts_with('"'), "{s} left plain");
        }
        for s in ["AWS::SQS::Queue", "Queue.Arn", "dev", "arn:aws:s3:::b/k"] {
            assert_eq!(string(s), s);
        }
    }

    #[test]
    fn quoted_strings_read_back_as_the_same_string() {
        for s in ["2010-09-09", "line1\nline2\t\"q\" \\ é", "${X}-y", "0755"] {
            let text = format!("k: {}\n", string(s));
            let back: Yaml = serde_norway::from_str(&text).unwrap();
            assert_eq!(back["k"], Yaml::String(s.to_owned()), "{text}");
        }
    }
}
