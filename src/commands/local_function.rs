//! `cdkd local invoke`'s function: found in the cloud assembly by construct path or logical
//! id, its code located (asset directory, asset zip, or inline `ZipFile`), its environment
//! resolved from the template (parameters' defaults, pseudo parameters) or, with
//! `--from-state`, from the deployed resources' recorded Refs and attributes.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::assembly::assets::AssetManifest;
use crate::assembly::{CloudAssembly, StackArtifact};
use crate::error::{Error, Result};
use crate::resolve::{
    bind_parameters, NoExternalLookup, NoResources, ResolveContext, Resolver, ResourceLookup,
};
use crate::state::StackState;
use crate::template::{parse_template_file, Template};

pub const FUNCTION_TYPE: &str = "AWS::Lambda::Function";

/// A function of the app, ready to run (everything but the event and credentials).
#[derive(Debug)]
pub struct LocalFunction {
    pub stack: String,
    pub logical_id: String,
    pub path: Option<String>,
    pub code: Code,
    pub runtime: String,
    pub handler: String,
    pub timeout: Duration,
    pub memory_mb: u32,
    pub function_name: String,
    pub environment: BTreeMap<String, String>,
    /// Variables that could not be resolved (left out), with the reason.
    pub unresolved: Vec<String>,
}

#[derive(Debug)]
pub enum Code {
    /// A directory or zip archive on disk.
    Path(PathBuf),
    /// Inline source (`Code.ZipFile`), written as index.js / index.py at run time.
    Inline(String),
}

/// The stack and logical id `target` names.
pub fn find<'a>(
    assembly: &'a CloudAssembly,
    target: &str,
) -> Result<(&'a StackArtifact, Template, String)> {
    let mut matches: Vec<(&StackArtifact, Template, String)> = Vec::new();
    let mut functions = Vec::new();
    for stack in &assembly.stacks {
        let template = parse_template_file(&stack.template_file)?;
        let mut hit = None;
        for (id, res) in &template.resources {
            if res.type_ != FUNCTION_TYPE {
                continue;
            }
            let path = cdk_path(res.metadata.as_ref());
            functions.push(
                path.clone()
                    .unwrap_or_else(|| format!("{}:{id}", stack.display_name)),
            );
            let by_path = path
                .as_deref()
                .is_some_and(|p| p == target || p.strip_suffix("/Resource") == Some(target));
            let by_id = target == id
                || [&stack.stack_name, &stack.display_name, &stack.artifact_id]
                    .iter()
                    .any(|s| target == format!("{s}:{id}") || target == format!("{s}/{id}"));
            if by_path || by_id {
                hit = Some(id.clone());
            }
        }
        if let Some(id) = hit {
            matches.push((stack, template, id));
        }
    }
    match matches.len() {
        1 => Ok(matches.remove(0)),
        0 => Err(Error::Usage(format!(
            "no Lambda function {target} in the app; its functions: {}",
            if functions.is_empty() {
                "none".to_owned()
            } else {
                functions.join(", ")
            }
        ))),
        _ => Err(Error::Usage(format!(
            "{target} names a function in several stacks ({}); name it as STACK:LOGICAL_ID",
            matches
                .iter()
                .map(|m| m.0.display_name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

fn cdk_path(metadata: Option<&Value>) -> Option<String> {
    metadata?.get("aws:cdk:path")?.as_str().map(str::to_owned)
}

/// Everything about the function `logical_id` of `stack` except the environment's
/// references, which `env` resolves.
pub fn describe(
    stack: &StackArtifact,
    template: &Template,
    logical_id: &str,
    region: &str,
    account: Option<String>,
    state: Option<&StackState>,
) -> Result<LocalFunction> {
    let res = &template.resources[logical_id];
    let props = &res.properties;
    let what = |field: &str| {
        format!(
            "{}:{logical_id} ({FUNCTION_TYPE}) {field}",
            stack.display_name
        )
    };
    let string = |field: &str| -> Result<String> {
        props
            .get(field)
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| Error::Usage(format!("{} is missing or not a string: `cdkd local invoke` runs zip functions with a Runtime and a Handler", what(field))))
    };
    if props.get("PackageType").and_then(Value::as_str) == Some("Image") {
        return Err(Error::Usage(format!(
            "{} is a container image function: `cdkd local invoke` runs Node.js and Python zip functions",
            what("PackageType")
        )));
    }
    let runtime = string("Runtime")?;
    let handler = string("Handler")?;
    let code = code(stack, res.metadata.as_ref(), props.get("Code")).ok_or_else(|| {
        Error::Usage(format!(
            "{} names no asset or inline code of the cloud assembly",
            what("Code")
        ))
    })?;
    let number = |field: &str, default: u64| {
        props
            .get(field)
            .and_then(|v| v.as_u64().or_else(|| v.as_str()?.parse().ok()))
            .unwrap_or(default)
    };
    let (environment, unresolved) = env(stack, template, logical_id, region, account, state);
    let function_name = state
        .and_then(|s| s.resources.get(logical_id))
        .and_then(|r| r.physical_id.clone())
        .or_else(|| {
            props
                .get("FunctionName")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .unwrap_or_else(|| logical_id.to_owned());
    Ok(LocalFunction {
        stack: stack.display_name.clone(),
        logical_id: logical_id.to_owned(),
        path: cdk_path(res.metadata.as_ref()),
        code,
        runtime,
        handler,
        timeout: Duration::from_secs(number("Timeout", 3).max(1)),
        memory_mb: u32::try_from(number("MemorySize", 128)).unwrap_or(128),
        function_name,
        environment,
        unresolved,
    })
}

/// The code: the file asset whose object key the template names, the resource's
/// `aws:asset:path` metadata, or inline `ZipFile`.
fn code(stack: &StackArtifact, metadata: Option<&Value>, code: Option<&Value>) -> Option<Code> {
    let code = code?;
    if let Some(text) = code.get("ZipFile").and_then(Value::as_str) {
        return Some(Code::Inline(text.to_owned()));
    }
    if let Some(key) = code.get("S3Key").and_then(Value::as_str) {
        for manifest_file in &stack.asset_manifests {
            let Ok(manifest) = AssetManifest::load(manifest_file) else {
                continue;
            };
            let Ok(assets) = manifest.file_assets(manifest_file) else {
                continue;
            };
            if let Some(asset) = assets
                .iter()
                .find(|a| a.destinations.iter().any(|d| d.object_key == key))
            {
                return Some(Code::Path(asset.source_path.clone()));
            }
        }
    }
    let asset = metadata?.get("aws:asset:path")?.as_str()?;
    Some(Code::Path(stack.assembly_dir.join(asset)))
}

/// A deployed stack's resources as Ref / Fn::GetAtt read them.
struct Recorded(HashMap<String, (Value, Map<String, Value>)>);

impl ResourceLookup for Recorded {
    fn ref_value(&self, logical_id: &str) -> Option<Value> {
        self.0.get(logical_id).map(|e| e.0.clone())
    }
    fn get_att(&self, logical_id: &str, attribute: &str) -> Option<Value> {
        self.0.get(logical_id)?.1.get(attribute).cloned()
    }
}

/// `Environment.Variables`, each resolved on its own: one that cannot be (a reference to a
/// resource not deployed, a parameter without a default) is left out and named.
fn env(
    stack: &StackArtifact,
    template: &Template,
    logical_id: &str,
    region: &str,
    account: Option<String>,
    state: Option<&StackState>,
) -> (BTreeMap<String, String>, Vec<String>) {
    let mut out = BTreeMap::new();
    let mut unresolved = Vec::new();
    let Some(vars) = template.resources[logical_id]
        .properties
        .get("Environment")
        .and_then(|e| e.get("Variables"))
        .and_then(Value::as_object)
    else {
        return (out, unresolved);
    };
    let mut bound_template = template.clone();
    bound_template.parameters.retain(|_, p| p.default.is_some());
    let ctx = ResolveContext::new(stack.stack_name.clone(), region, account);
    let params = bind_parameters(&bound_template, &[], &stack.stack_name, &NoExternalLookup).ok();
    let recorded = state.map(|s| {
        Recorded(
            s.resources
                .iter()
                .filter_map(|(id, rec)| {
                    let r = crate::provider::refs::of_record(rec)?;
                    Some((id.clone(), (r, rec.attributes.clone().unwrap_or_default())))
                })
                .collect(),
        )
    });
    let lookup: &dyn ResourceLookup = match &recorded {
        Some(r) => r,
        None => &NoResources,
    };
    for (name, value) in vars {
        if let Some(text) = value.as_str() {
            out.insert(name.clone(), text.to_owned());
            continue;
        }
        let Some(params) = &params else {
            unresolved.push(format!(
                "{name} (the template's parameters could not be bound)"
            ));
            continue;
        };
        let mut resolver = Resolver::new(&bound_template, &ctx, params, lookup, &NoExternalLookup);
        let label = format!("Resources.{logical_id}.Properties.Environment.Variables.{name}");
        match resolver.resolve_value(value, &label) {
            Ok(Some(Value::String(s))) => {
                out.insert(name.clone(), s);
            }
            Ok(Some(other)) if !other.is_object() && !other.is_array() => {
                out.insert(name.clone(), other.to_string());
            }
            Ok(_) => unresolved.push(format!("{name} (no value)")),
            Err(e) => unresolved.push(format!(
                "{name} ({}{})",
                e.kind,
                if state.is_none() {
                    "; --from-state resolves references to deployed resources"
                } else {
                    ""
                }
            )),
        }
    }
    (out, unresolved)
}
