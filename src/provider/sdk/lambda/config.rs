//! A function's configuration: the CloudFormation properties CreateFunction and
//! UpdateFunctionConfiguration share, turned into SDK values, and a function read back into
//! CloudFormation's property names.

use aws_sdk_lambda::types::{
    ApplicationLogLevel, Architecture, DeadLetterConfig, Environment, EphemeralStorage,
    FileSystemConfig, FunctionConfiguration, ImageConfig, LogFormat, LoggingConfig, Runtime,
    SnapStart, SnapStartApplyOn, SystemLogLevel, TenancyConfig, TenantIsolationMode, TracingConfig,
    TracingMode, VpcConfig,
};
use serde_json::{json, Map, Value};

use super::{nonempty, put, Obj};
use crate::provider::ProviderError;

/// The properties UpdateFunctionConfiguration changes.
pub(super) const CONFIG_PROPERTIES: &[&str] = &[
    "DeadLetterConfig",
    "Description",
    "Environment",
    "EphemeralStorage",
    "FileSystemConfigs",
    "Handler",
    "ImageConfig",
    "KmsKeyArn",
    "Layers",
    "LoggingConfig",
    "MemorySize",
    "Role",
    "Runtime",
    "SnapStart",
    "Timeout",
    "TracingConfig",
    "VpcConfig",
];

/// Every CloudFormation property of `AWS::Lambda::Function` this provider handles.
pub(super) const KNOWN_PROPERTIES: &[&str] = &[
    "Architectures",
    "Code",
    "CodeSigningConfigArn",
    "FunctionName",
    "PackageType",
    "RecursiveLoop",
    "ReservedConcurrentExecutions",
    "RuntimeManagementConfig",
    "Tags",
    "TenancyConfig",
];

/// The configuration values of one request (all `None` for what it leaves out).
#[derive(Debug, Default)]
pub(super) struct Config {
    pub description: Option<String>,
    pub handler: Option<String>,
    pub runtime: Option<Runtime>,
    pub role: Option<String>,
    pub timeout: Option<i32>,
    pub memory_size: Option<i32>,
    pub vpc_config: Option<VpcConfig>,
    pub environment: Option<Environment>,
    pub dead_letter_config: Option<DeadLetterConfig>,
    pub kms_key_arn: Option<String>,
    pub tracing_config: Option<TracingConfig>,
    pub layers: Option<Vec<String>>,
    pub file_system_configs: Option<Vec<FileSystemConfig>>,
    pub image_config: Option<ImageConfig>,
    pub ephemeral_storage: Option<EphemeralStorage>,
    pub snap_start: Option<SnapStart>,
    pub logging_config: Option<LoggingConfig>,
}

impl Config {
    /// Everything the template sets.
    pub fn from_props(root: &Obj<'_>) -> Result<Self, ProviderError> {
        let all: Vec<String> = CONFIG_PROPERTIES.iter().map(|s| (*s).to_owned()).collect();
        let mut config = Config::default();
        config.fill(root, &all, None)?;
        Ok(config)
    }

    /// Only the `changed` properties; one the template no longer sets goes back to the
    /// service default (`function_name` names the default log group).
    pub fn changes(
        root: &Obj<'_>,
        changed: &[String],
        function_name: &str,
    ) -> Result<Self, ProviderError> {
        let mut config = Config::default();
        config.fill(root, changed, Some(function_name))?;
        Ok(config)
    }

    fn fill(
        &mut self,
        root: &Obj<'_>,
        names: &[String],
        reset_for: Option<&str>,
    ) -> Result<(), ProviderError> {
        let want = |n: &str| names.iter().any(|c| c == n);
        let reset = reset_for.is_some();
        if want("Description") {
            self.description = root.str("Description")?.or_else(|| reset.then(String::new));
        }
        if want("Handler") {
            self.handler = root.str("Handler")?;
        }
        if want("Runtime") {
            self.runtime = root.str("Runtime")?.map(|r| Runtime::from(r.as_str()));
        }
        if want("Role") {
            self.role = root.str("Role")?;
        }
        if want("Timeout") {
            self.timeout = root.i32("Timeout")?.or(reset.then_some(3));
        }
        if want("MemorySize") {
            self.memory_size = root.i32("MemorySize")?.or(reset.then_some(128));
        }
        if want("VpcConfig") {
            self.vpc_config = match root.object("VpcConfig")? {
                Some(v) => Some(
                    VpcConfig::builder()
                        .set_subnet_ids(Some(v.strings("SubnetIds")?.unwrap_or_default()))
                        .set_security_group_ids(Some(
                            v.strings("SecurityGroupIds")?.unwrap_or_default(),
                        ))
                        .set_ipv6_allowed_for_dual_stack(v.bool("Ipv6AllowedForDualStack")?)
                        .build(),
                ),
                None if reset => Some(
                    VpcConfig::builder()
                        .set_subnet_ids(Some(Vec::new()))
                        .set_security_group_ids(Some(Vec::new()))
                        .build(),
                ),
                None => None,
            };
        }
        if want("Environment") {
            let variables = match root.object("Environment")? {
                Some(env) => Some(env.string_map("Variables")?.unwrap_or_default()),
                None => reset.then(Default::default),
            };
            self.environment =
                variables.map(|v| Environment::builder().set_variables(Some(v)).build());
        }
        if want("DeadLetterConfig") {
            let target = match root.object("DeadLetterConfig")? {
                Some(d) => Some(d.str("TargetArn")?.unwrap_or_default()),
                None => reset.then(String::new),
            };
            self.dead_letter_config =
                target.map(|t| DeadLetterConfig::builder().target_arn(t).build());
        }
        if want("KmsKeyArn") {
            self.kms_key_arn = root.str("KmsKeyArn")?.or_else(|| reset.then(String::new));
        }
        if want("TracingConfig") {
            let mode = match root.object("TracingConfig")? {
                Some(t) => t.str("Mode")?.or_else(|| Some("PassThrough".to_owned())),
                None => reset.then(|| "PassThrough".to_owned()),
            };
            self.tracing_config = mode.map(|m| {
                TracingConfig::builder()
                    .mode(TracingMode::from(m.as_str()))
                    .build()
            });
        }
        if want("Layers") {
            self.layers = root.strings("Layers")?.or_else(|| reset.then(Vec::new));
        }
        if want("FileSystemConfigs") {
            let mut configs = Vec::new();
            for fs in root.objects("FileSystemConfigs")? {
                let built = FileSystemConfig::builder()
                    .arn(fs.required_str("Arn")?)
                    .local_mount_path(fs.required_str("LocalMountPath")?)
                    .build()
                    .map_err(|e| {
                        ProviderError::failed(root.req, format!("FileSystemConfigs: {e}"))
                    })?;
                configs.push(built);
            }
            self.file_system_configs =
                (!configs.is_empty() || reset || root.get("FileSystemConfigs").is_some())
                    .then_some(configs);
        }
        if want("ImageConfig") {
            self.image_config = match root.object("ImageConfig")? {
                Some(i) => Some(
                    ImageConfig::builder()
                        .set_command(i.strings("Command")?)
                        .set_entry_point(i.strings("EntryPoint")?)
                        .set_working_directory(i.str("WorkingDirectory")?)
                        .build(),
                ),
                None => reset.then(|| {
                    ImageConfig::builder()
                        .set_command(Some(Vec::new()))
                        .set_entry_point(Some(Vec::new()))
                        .working_directory("")
                        .build()
                }),
            };
        }
        if want("EphemeralStorage") {
            let size = match root.object("EphemeralStorage")? {
                Some(e) => Some(e.i32("Size")?.unwrap_or(512)),
                None => reset.then_some(512),
            };
            self.ephemeral_storage = match size {
                Some(s) => Some(EphemeralStorage::builder().size(s).build().map_err(|e| {
                    ProviderError::failed(root.req, format!("EphemeralStorage: {e}"))
                })?),
                None => None,
            };
        }
        if want("SnapStart") {
            let apply_on = match root.object("SnapStart")? {
                Some(s) => Some(s.str("ApplyOn")?.unwrap_or_else(|| "None".to_owned())),
                None => reset.then(|| "None".to_owned()),
            };
            self.snap_start = apply_on.map(|a| {
                SnapStart::builder()
                    .apply_on(SnapStartApplyOn::from(a.as_str()))
                    .build()
            });
        }
        if want("LoggingConfig") {
            self.logging_config = match root.object("LoggingConfig")? {
                Some(l) => Some(
                    LoggingConfig::builder()
                        .set_log_format(l.str("LogFormat")?.map(|s| LogFormat::from(s.as_str())))
                        .set_application_log_level(
                            l.str("ApplicationLogLevel")?
                                .map(|s| ApplicationLogLevel::from(s.as_str())),
                        )
                        .set_system_log_level(
                            l.str("SystemLogLevel")?
                                .map(|s| SystemLogLevel::from(s.as_str())),
                        )
                        .set_log_group(l.str("LogGroup")?)
                        .build(),
                ),
                None => reset_for.map(|name| {
                    LoggingConfig::builder()
                        .log_format(LogFormat::Text)
                        .log_group(format!("/aws/lambda/{name}"))
                        .build()
                }),
            };
        }
        Ok(())
    }
}

/// Applies a [`Config`] to a CreateFunction or UpdateFunctionConfiguration request (the two
/// share these setters but not a type).
macro_rules! apply_config {
    ($builder:expr, $config:expr) => {{
        let c = $config;
        $builder
            .set_description(c.description)
            .set_handler(c.handler)
            .set_runtime(c.runtime)
            .set_role(c.role)
            .set_timeout(c.timeout)
            .set_memory_size(c.memory_size)
            .set_vpc_config(c.vpc_config)
            .set_environment(c.environment)
            .set_dead_letter_config(c.dead_letter_config)
            .set_kms_key_arn(c.kms_key_arn)
            .set_tracing_config(c.tracing_config)
            .set_layers(c.layers)
            .set_file_system_configs(c.file_system_configs)
            .set_image_config(c.image_config)
            .set_ephemeral_storage(c.ephemeral_storage)
            .set_snap_start(c.snap_start)
            .set_logging_config(c.logging_config)
    }};
}
pub(super) use apply_config;

/// `Architectures` (absent: the service default, x86_64).
pub(super) fn architectures(root: &Obj<'_>) -> Result<Option<Vec<Architecture>>, ProviderError> {
    Ok(root.strings("Architectures")?.map(|list| {
        list.iter()
            .map(|a| Architecture::from(a.as_str()))
            .collect()
    }))
}

pub(super) fn tenancy_config(root: &Obj<'_>) -> Result<Option<TenancyConfig>, ProviderError> {
    let Some(t) = root.object("TenancyConfig")? else {
        return Ok(None);
    };
    let mode = t.required_str("TenantIsolationMode")?;
    TenancyConfig::builder()
        .tenant_isolation_mode(TenantIsolationMode::from(mode.as_str()))
        .build()
        .map(Some)
        .map_err(|e| ProviderError::failed(root.req, format!("TenancyConfig: {e}")))
}

/// A function's configuration under CloudFormation's property names.
pub(super) fn read_config(c: &FunctionConfiguration) -> Map<String, Value> {
    let mut out = Map::new();
    let s = |v: Option<&str>| nonempty(v).map(Value::String);
    put(&mut out, "FunctionName", s(c.function_name()));
    put(&mut out, "Arn", s(c.function_arn()));
    put(&mut out, "Description", s(c.description()));
    put(&mut out, "Handler", s(c.handler()));
    put(&mut out, "Runtime", c.runtime().map(|r| json!(r.as_str())));
    put(&mut out, "Role", s(c.role()));
    put(&mut out, "Timeout", c.timeout().map(Value::from));
    put(&mut out, "MemorySize", c.memory_size().map(Value::from));
    put(
        &mut out,
        "PackageType",
        c.package_type().map(|p| json!(p.as_str())),
    );
    if !c.architectures().is_empty() {
        let list: Vec<&str> = c.architectures().iter().map(|a| a.as_str()).collect();
        out.insert("Architectures".into(), json!(list));
    }
    if let Some(v) = c.vpc_config().filter(|v| !v.subnet_ids().is_empty()) {
        let mut vpc = Map::new();
        vpc.insert("SubnetIds".into(), json!(v.subnet_ids()));
        vpc.insert("SecurityGroupIds".into(), json!(v.security_group_ids()));
        put(
            &mut vpc,
            "Ipv6AllowedForDualStack",
            v.ipv6_allowed_for_dual_stack().map(Value::from),
        );
        out.insert("VpcConfig".into(), Value::Object(vpc));
    }
    if let Some(vars) = c.environment().and_then(|e| e.variables()) {
        let sorted: std::collections::BTreeMap<_, _> = vars.iter().collect();
        out.insert("Environment".into(), json!({ "Variables": sorted }));
    }
    if let Some(target) = nonempty(c.dead_letter_config().and_then(|d| d.target_arn())) {
        out.insert("DeadLetterConfig".into(), json!({ "TargetArn": target }));
    }
    put(&mut out, "KmsKeyArn", s(c.kms_key_arn()));
    if let Some(mode) = c.tracing_config().and_then(|t| t.mode()) {
        out.insert("TracingConfig".into(), json!({ "Mode": mode.as_str() }));
    }
    if !c.layers().is_empty() {
        let arns: Vec<&str> = c.layers().iter().filter_map(|l| l.arn()).collect();
        out.insert("Layers".into(), json!(arns));
    }
    if !c.file_system_configs().is_empty() {
        let list: Vec<Value> = c
            .file_system_configs()
            .iter()
            .map(|f| json!({"Arn": f.arn(), "LocalMountPath": f.local_mount_path()}))
            .collect();
        out.insert("FileSystemConfigs".into(), Value::Array(list));
    }
    if let Some(i) = c.image_config_response().and_then(|r| r.image_config()) {
        let mut image = Map::new();
        if !i.command().is_empty() {
            image.insert("Command".into(), json!(i.command()));
        }
        if !i.entry_point().is_empty() {
            image.insert("EntryPoint".into(), json!(i.entry_point()));
        }
        put(&mut image, "WorkingDirectory", s(i.working_directory()));
        if !image.is_empty() {
            out.insert("ImageConfig".into(), Value::Object(image));
        }
    }
    if let Some(e) = c.ephemeral_storage() {
        out.insert("EphemeralStorage".into(), json!({ "Size": e.size() }));
    }
    if let Some(l) = c.logging_config() {
        let mut log = Map::new();
        put(
            &mut log,
            "LogFormat",
            l.log_format().map(|v| json!(v.as_str())),
        );
        put(
            &mut log,
            "ApplicationLogLevel",
            l.application_log_level().map(|v| json!(v.as_str())),
        );
        put(
            &mut log,
            "SystemLogLevel",
            l.system_log_level().map(|v| json!(v.as_str())),
        );
        put(&mut log, "LogGroup", s(l.log_group()));
        if !log.is_empty() {
            out.insert("LoggingConfig".into(), Value::Object(log));
        }
    }
    if let Some(mode) = c.tenancy_config().map(|t| t.tenant_isolation_mode()) {
        out.insert(
            "TenancyConfig".into(),
            json!({ "TenantIsolationMode": mode.as_str() }),
        );
    }
    let (apply_on, status) = snap_start_response(c);
    out.insert(
        "SnapStartResponse".into(),
        json!({"ApplyOn": apply_on, "OptimizationStatus": status}),
    );
    out
}

/// `SnapStartResponse.ApplyOn` and `.OptimizationStatus` (Lambda's defaults when it omits them).
pub(super) fn snap_start_response(c: &FunctionConfiguration) -> (String, String) {
    let snap = c.snap_start();
    (
        snap.and_then(|s| s.apply_on())
            .map_or("None", |a| a.as_str())
            .to_owned(),
        snap.and_then(|s| s.optimization_status())
            .map_or("Off", |o| o.as_str())
            .to_owned(),
    )
}
