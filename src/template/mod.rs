//! The CloudFormation template model.
//!
//! `cdkd` deploys the templates a CDK app synthesizes without handing them to
//! CloudFormation, so it has to do CloudFormation's first job itself: read the
//! template (JSON as the CDK writes it, or hand-written YAML with short-form
//! tags such as `!Ref` and `!GetAtt`), check its structure, and present it as
//! typed sections — parameters, resources, outputs — that the planner and
//! provisioners can work with. Property values and intrinsic functions stay
//! as plain JSON (`serde_json::Value`, always in long form) for the
//! resolver. Key order is preserved throughout and [`Template::to_value`]
//! reproduces the source document, so templates can be stored and compared.
//!
//! Errors ([`TemplateError`]) are one line naming the file and the location
//! inside it (line/column for syntax errors, a path such as
//! `Resources.MyBucket.Type` for structural ones).

pub mod codec;
mod codec_yaml;
mod error;
mod model;
mod parse;
mod yaml;

use std::path::Path;

pub use error::TemplateError;
pub use model::{Output, Parameter, Resource, Template};
pub use yaml::yaml_to_json;

/// Parses a template from text: JSON if the first non-whitespace character
/// is `{`, YAML otherwise. `source` names the file in error messages.
pub fn parse_template(text: &str, source: &Path) -> Result<Template, TemplateError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let value = if text.trim_start().starts_with('{') {
        serde_json::from_str(text).map_err(|e| TemplateError::json(source, &e))?
    } else {
        yaml_to_json(text, source)?
    };
    Template::from_value(value, source)
}

/// Reads and parses the template at `path`.
pub fn parse_template_file(path: &Path) -> Result<Template, TemplateError> {
    let text = std::fs::read_to_string(path).map_err(|source| TemplateError::Io {
        file: path.to_path_buf(),
        source,
    })?;
    parse_template(&text, path)
}

#[cfg(test)]
mod tests;
