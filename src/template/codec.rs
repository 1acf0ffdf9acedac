//! A CloudFormation template kept in its source format, for editing a template that
//! CloudFormation will read again (`cdkd import --migrate-from-cloudformation` injects
//! `DeletionPolicy: Retain` and rewrites nested `TemplateURL`s).
//!
//! Unlike [`super::parse_template`], nothing is normalized: JSON stays JSON and YAML stays
//! YAML with its short-form tags (`!Ref`, `!Sub`, `!GetAtt`, `!Join`, ...) kept as tags, so the
//! document CloudFormation gets back differs from what it holds only by the edits made here.
//! YAML comments and the original quoting style are not kept (the YAML library does not
//! expose them); values and tags are, and `codec_yaml` quotes every string a YAML 1.1
//! reader (CloudFormation's) could take for something else.

use serde_json::Value as Json;
use serde_norway::Value as Yaml;

/// The format a template was written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceFormat {
    Json,
    Yaml,
}

impl SourceFormat {
    /// The file extension an uploaded copy carries.
    pub fn extension(self) -> &'static str {
        match self {
            SourceFormat::Json => "json",
            SourceFormat::Yaml => "yaml",
        }
    }

    /// The content type an uploaded copy carries.
    pub fn content_type(self) -> &'static str {
        match self {
            SourceFormat::Json => "application/json",
            SourceFormat::Yaml => "application/x-yaml",
        }
    }
}

/// Why a template could not be read or written back.
#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    #[error("the template is not valid JSON: {0}")]
    Json(String),
    #[error("the template is not valid YAML: {0}")]
    Yaml(String),
    #[error("the template's top level is not a mapping")]
    NotAMapping,
    #[error("the template could not be written back: {0}")]
    Render(String),
}

#[derive(Debug, Clone, PartialEq)]
enum Doc {
    Json(serde_json::Map<String, Json>),
    Yaml(serde_norway::Mapping),
}

/// A template document in its source format.
#[derive(Debug, Clone, PartialEq)]
pub struct SourceTemplate {
    doc: Doc,
}

const RESOURCES: &str = "Resources";

impl SourceTemplate {
    /// Parses `text`: JSON when its first non-blank character is `{` and it parses as JSON,
    /// YAML otherwise (a JSON document that fails to parse is reported as JSON).
    pub fn parse(text: &str) -> Result<Self, CodecError> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        if text.trim_start().starts_with('{') {
            match serde_json::from_str::<Json>(text) {
                Ok(Json::Object(map)) => {
                    return Ok(SourceTemplate {
                        doc: Doc::Json(map),
                    })
                }
                Ok(_) => return Err(CodecError::NotAMapping),
                // `{` also opens a YAML flow mapping, which may carry tags JSON cannot.
                Err(e) => {
                    if let Ok(t) = Self::parse_yaml(text) {
                        return Ok(t);
                    }
                    return Err(CodecError::Json(e.to_string()));
                }
            }
        }
        Self::parse_yaml(text)
    }

    fn parse_yaml(text: &str) -> Result<Self, CodecError> {
        // The library is not expected to panic, but a template from AWS must not take the
        // process down.
        let parsed = std::panic::catch_unwind(|| serde_norway::from_str::<Yaml>(text));
        match parsed {
            Ok(Ok(Yaml::Mapping(map))) => Ok(SourceTemplate {
                doc: Doc::Yaml(map),
            }),
            Ok(Ok(_)) => Err(CodecError::NotAMapping),
            Ok(Err(e)) => Err(CodecError::Yaml(e.to_string())),
            Err(_) => Err(CodecError::Yaml(
                "the YAML parser failed on this input".into(),
            )),
        }
    }

    pub fn format(&self) -> SourceFormat {
        match self.doc {
            Doc::Json(_) => SourceFormat::Json,
            Doc::Yaml(_) => SourceFormat::Yaml,
        }
    }

    /// `(logical id, Type)` of every resource, in document order (`None` for a missing or
    /// non-string Type).
    pub fn resources(&self) -> Vec<(String, Option<String>)> {
        match &self.doc {
            Doc::Json(map) => map
                .get(RESOURCES)
                .and_then(Json::as_object)
                .map(|r| {
                    r.iter()
                        .map(|(id, body)| {
                            let t = body.get("Type").and_then(Json::as_str).map(str::to_owned);
                            (id.clone(), t)
                        })
                        .collect()
                })
                .unwrap_or_default(),
            Doc::Yaml(map) => map
                .get(RESOURCES)
                .and_then(Yaml::as_mapping)
                .map(|r| {
                    r.iter()
                        .filter_map(|(id, body)| {
                            let id = id.as_str()?.to_owned();
                            let t = body.get("Type").and_then(Yaml::as_str).map(str::to_owned);
                            Some((id, t))
                        })
                        .collect()
                })
                .unwrap_or_default(),
        }
    }

    /// Sets `DeletionPolicy: Retain` on every resource whose Type `skip` does not select;
    /// returns the logical ids whose policy changed.
    pub fn retain_all(&mut self, skip: impl Fn(&str) -> bool) -> Vec<String> {
        let mut changed = Vec::new();
        match &mut self.doc {
            Doc::Json(map) => {
                let Some(Json::Object(resources)) = map.get_mut(RESOURCES) else {
                    return changed;
                };
                for (id, body) in resources.iter_mut() {
                    let Json::Object(body) = body else { continue };
                    let t = body.get("Type").and_then(Json::as_str).unwrap_or_default();
                    if skip(t) {
                        continue;
                    }
                    if body.get("DeletionPolicy").and_then(Json::as_str) != Some("Retain") {
                        body.insert("DeletionPolicy".into(), Json::String("Retain".into()));
                        changed.push(id.clone());
                    }
                }
            }
            Doc::Yaml(map) => {
                let Some(Yaml::Mapping(resources)) = map.get_mut(RESOURCES) else {
                    return changed;
                };
                for (id, body) in resources.iter_mut() {
                    let Yaml::Mapping(body) = body else { continue };
                    let t = body.get("Type").and_then(Yaml::as_str).unwrap_or_default();
                    if skip(t) {
                        continue;
                    }
                    if body.get("DeletionPolicy").and_then(Yaml::as_str) != Some("Retain") {
                        body.insert(
                            Yaml::String("DeletionPolicy".into()),
                            Yaml::String("Retain".into()),
                        );
                        changed.push(id.as_str().unwrap_or_default().to_owned());
                    }
                }
            }
        }
        changed
    }

    /// Sets `Resources.<id>.Properties.TemplateURL` to `url`; false when the resource (or
    /// its Properties mapping) is missing.
    pub fn set_template_url(&mut self, id: &str, url: &str) -> bool {
        match &mut self.doc {
            Doc::Json(map) => {
                let props = map
                    .get_mut(RESOURCES)
                    .and_then(|r| r.get_mut(id))
                    .and_then(|b| b.get_mut("Properties"))
                    .and_then(Json::as_object_mut);
                match props {
                    Some(p) => {
                        p.insert("TemplateURL".into(), Json::String(url.into()));
                        true
                    }
                    None => false,
                }
            }
            Doc::Yaml(map) => {
                let props = map
                    .get_mut(RESOURCES)
                    .and_then(|r| r.get_mut(id))
                    .and_then(|b| b.get_mut("Properties"))
                    .and_then(Yaml::as_mapping_mut);
                match props {
                    Some(p) => {
                        p.insert(Yaml::String("TemplateURL".into()), Yaml::String(url.into()));
                        true
                    }
                    None => false,
                }
            }
        }
    }

    /// The document as text, JSON pretty-printed unless that is over `limit` bytes (then
    /// compact, so a size limit is not crossed by indentation alone).
    pub fn render_within(&self, limit: usize) -> Result<String, CodecError> {
        let text = self.render()?;
        match &self.doc {
            Doc::Json(map) if text.len() > limit => {
                serde_json::to_string(map).map_err(|e| CodecError::Render(e.to_string()))
            }
            _ => Ok(text),
        }
    }

    /// The document as text in its source format (JSON pretty-printed).
    pub fn render(&self) -> Result<String, CodecError> {
        match &self.doc {
            Doc::Json(map) => {
                serde_json::to_string_pretty(map).map_err(|e| CodecError::Render(e.to_string()))
            }
            Doc::Yaml(map) => super::codec_yaml::render(map).map_err(CodecError::Render),
        }
    }
}

#[cfg(test)]
#[path = "codec_tests.rs"]
mod tests;
