//! Errors produced while reading, parsing or validating a template.
//!
//! Every variant renders as a single line that starts with
//! `template <file>:` and then says *where* in the document the problem is
//! (a line/column for syntax errors, a dotted template path such as
//! `Resources.MyBucket.Type` for structural ones) and what was expected.

use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::Value;

/// Path used in messages when the problem concerns the document as a whole.
pub const TOP_LEVEL: &str = "(top level)";

/// A problem with a template file. `Display` is always exactly one line.
#[derive(Debug, thiserror::Error)]
pub enum TemplateError {
    /// The file could not be read.
    #[error("template {}: cannot read file: {}", .file.display(), one_line(&.source.to_string()))]
    Io {
        file: PathBuf,
        #[source]
        source: std::io::Error,
    },

    /// The document is not syntactically valid JSON.
    #[error("template {}: line {line} column {column}: invalid JSON: {message}", .file.display())]
    Json {
        file: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },

    /// The document is not syntactically valid YAML.
    #[error("template {}: {}invalid YAML: {message}", .file.display(), Loc(*.line, *.column))]
    Yaml {
        file: PathBuf,
        line: Option<usize>,
        column: Option<usize>,
        message: String,
    },

    /// A YAML tag that is not one of CloudFormation's short-form intrinsics.
    #[error("template {}: {path}: {}unknown YAML tag !{tag}", .file.display(), Loc(*.line, *.column))]
    UnknownTag {
        file: PathBuf,
        /// Template path of the tagged value, e.g. `Resources.Bucket.Properties.Name`.
        path: String,
        tag: String,
        line: Option<usize>,
        column: Option<usize>,
    },

    /// The document parsed but does not have the shape of a CloudFormation template.
    #[error("template {}: {path}: {message}", .file.display())]
    Invalid {
        file: PathBuf,
        /// Template path of the offending value, e.g. `Resources.MyBucket.Type`.
        path: String,
        message: String,
    },
}

impl TemplateError {
    /// The file the error is about.
    pub fn file(&self) -> &Path {
        match self {
            TemplateError::Io { file, .. }
            | TemplateError::Json { file, .. }
            | TemplateError::Yaml { file, .. }
            | TemplateError::UnknownTag { file, .. }
            | TemplateError::Invalid { file, .. } => file,
        }
    }

    pub(crate) fn invalid(file: &Path, path: &str, message: impl Into<String>) -> Self {
        TemplateError::Invalid {
            file: file.to_path_buf(),
            path: one_line(path),
            message: one_line(&message.into()),
        }
    }

    /// "expected X, found Y" for the value at `path`.
    pub(crate) fn expected(file: &Path, path: &str, expected: &str, found: &Value) -> Self {
        Self::invalid(
            file,
            path,
            format!("expected {expected}, found {}", describe(found)),
        )
    }

    pub(crate) fn json(file: &Path, err: &serde_json::Error) -> Self {
        let (line, column) = (err.line(), err.column());
        let full = err.to_string();
        let suffix = format!(" at line {line} column {column}");
        let message = full.strip_suffix(&suffix).unwrap_or(&full);
        TemplateError::Json {
            file: file.to_path_buf(),
            line,
            column,
            message: one_line(message),
        }
    }

    pub(crate) fn yaml(file: &Path, err: &serde_norway::Error) -> Self {
        let full = err.to_string();
        let (line, column, message) = match err.location() {
            Some(loc) => {
                let at = format!(" at line {} column {}", loc.line(), loc.column());
                // The library repeats the position inside the message; we
                // print it once, up front.
                let message = full.replacen(&at, "", 1);
                (Some(loc.line()), Some(loc.column()), message)
            }
            None => (None, None, full),
        };
        TemplateError::Yaml {
            file: file.to_path_buf(),
            line,
            column,
            message: one_line(&message),
        }
    }
}

/// Describes a JSON value's kind for "found ..." messages.
pub(crate) fn describe(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// Collapses a message onto one line: line breaks become spaces and other
/// control characters are escaped.
pub(crate) fn one_line(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut last_space = false;
    for c in s.chars() {
        if c == '\n' || c == '\r' {
            if !last_space {
                out.push(' ');
            }
            last_space = true;
            continue;
        }
        last_space = c == ' ';
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// Optional `line L column C: ` prefix.
struct Loc(Option<usize>, Option<usize>);

impl fmt::Display for Loc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.0, self.1) {
            (Some(l), Some(c)) => write!(f, "line {l} column {c}: "),
            (Some(l), None) => write!(f, "line {l}: "),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_collapses_breaks_and_escapes_controls() {
        assert_eq!(one_line("a\nb\r\nc\td"), "a b c\\td");
    }

    #[test]
    fn invalid_renders_file_and_path() {
        let e = TemplateError::expected(
            Path::new("cdk.out/MyStack.template.json"),
            "Resources.MyBucket.Type",
            "a string",
            &serde_json::json!(3),
        );
        assert_eq!(
            e.to_string(),
            "template cdk.out/MyStack.template.json: Resources.MyBucket.Type: expected a string, found a number"
        );
        assert_eq!(e.file(), Path::new("cdk.out/MyStack.template.json"));
    }
}
