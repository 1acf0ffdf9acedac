//! `AWS::ElasticLoadBalancingV2::TargetGroup`: physical id and `Ref` the ARN; `Fn::GetAtt`
//! `TargetGroupArn`, `TargetGroupFullName`, `TargetGroupName` and `LoadBalancerArns`.
//!
//! The schema's create-only properties (`Name`, `Port`, `Protocol`, `ProtocolVersion`,
//! `TargetType`, `VpcId`, `IpAddressType`) replace the group. The health check and `Matcher`
//! change in place (ModifyTargetGroup; a setting the template drops keeps its live value,
//! since AWS's default depends on the protocol, and a warning says so), as do attributes
//! (ModifyTargetGroupAttributes), `Targets` (RegisterTargets / DeregisterTargets of the
//! difference) and tags. A target group is ready when CreateTargetGroup answers.

use aws_sdk_elasticloadbalancingv2::types::{
    Matcher, ProtocolEnum, TargetDescription, TargetGroup, TargetGroupIpAddressTypeEnum,
    TargetTypeEnum,
};
use aws_sdk_elasticloadbalancingv2::Client;
use serde_json::{json, Map, Value};

use super::attributes::{self, TARGET_GROUP_DEFAULTS};
use super::load_balancer::NAME_RULES;
use super::{create_tags, i32_prop, read_tags, unless_gone, update_tags, ELBV2};
use crate::provider::naming;
use crate::provider::props::{changed, Props};
use crate::provider::sdk::scaffold::lifecycle::{create_only_change, provisioned};
use crate::provider::sdk::scaffold::nested::{list_of, Fields, Obj};
use crate::provider::sdk::scaffold::readback::as_asked;
use crate::provider::{
    ProviderContext, ProviderError, Provisioned, ResourceRequest, UpdateOutcome,
};

/// The top-level CloudFormation properties this provider sends (any other routes the
/// resource through Cloud Control).
pub(super) const PROPERTIES: &[&str] = &[
    "HealthCheckEnabled",
    "HealthCheckIntervalSeconds",
    "HealthCheckPath",
    "HealthCheckPort",
    "HealthCheckProtocol",
    "HealthCheckTimeoutSeconds",
    "HealthyThresholdCount",
    "IpAddressType",
    "Matcher",
    "Name",
    "Port",
    "Protocol",
    "ProtocolVersion",
    "Tags",
    "TargetGroupAttributes",
    "TargetType",
    "Targets",
    "UnhealthyThresholdCount",
    "VpcId",
];

/// What ModifyTargetGroup changes.
const HEALTH_CHECK: &[&str] = &[
    "HealthCheckEnabled",
    "HealthCheckIntervalSeconds",
    "HealthCheckPath",
    "HealthCheckPort",
    "HealthCheckProtocol",
    "HealthCheckTimeoutSeconds",
    "HealthyThresholdCount",
    "Matcher",
    "UnhealthyThresholdCount",
];

fn protocol(req: &ResourceRequest<'_>, name: &str) -> Result<Option<ProtocolEnum>, ProviderError> {
    Ok(Props::new(req)
        .str(name)?
        .map(|p| ProtocolEnum::from(p.as_str())))
}

fn matcher(req: &ResourceRequest<'_>) -> Result<Option<Matcher>, ProviderError> {
    req.properties
        .get("Matcher")
        .filter(|v| !v.is_null())
        .map(|v| {
            let m = Obj::new(req, "Matcher", v, &["HttpCode", "GrpcCode"])?;
            Ok(Matcher::builder()
                .set_http_code(m.str("HttpCode")?)
                .set_grpc_code(m.str("GrpcCode")?)
                .build())
        })
        .transpose()
}

fn targets(req: &ResourceRequest<'_>) -> Result<Vec<TargetDescription>, ProviderError> {
    list_of(req, "Targets", &["Id", "Port", "AvailabilityZone"])?
        .iter()
        .map(|t| {
            Ok(TargetDescription::builder()
                .set_id(t.str("Id")?)
                .set_port(t.i32("Port")?)
                .set_availability_zone(t.str("AvailabilityZone")?)
                .build())
        })
        .collect()
}

async fn describe(
    client: &Client,
    req: &ResourceRequest<'_>,
    arn: &str,
) -> Result<Option<TargetGroup>, ProviderError> {
    Ok(unless_gone(
        client
            .describe_target_groups()
            .target_group_arns(arn)
            .send()
            .await,
        req,
        "DescribeTargetGroups",
        arn,
    )?
    .and_then(|out| out.target_groups().first().cloned()))
}

/// What `Fn::GetAtt` reads. The full name is the ARN's part from `targetgroup/` on
/// (`targetgroup/<name>/<id>`), what CloudWatch metrics name it by.
fn reported(req: &ResourceRequest<'_>, tg: &TargetGroup) -> Result<Provisioned, ProviderError> {
    let arn = ELBV2.required(req, tg.target_group_arn(), "target group ARN")?;
    let full = arn.find("targetgroup/").map_or("", |i| &arn[i..]);
    Ok(provisioned(
        arn,
        &[
            ("TargetGroupArn", json!(arn)),
            ("TargetGroupFullName", json!(full)),
            (
                "TargetGroupName",
                json!(tg.target_group_name().unwrap_or_default()),
            ),
            ("LoadBalancerArns", json!(tg.load_balancer_arns())),
        ],
    ))
}

pub(super) async fn provisioned_of(
    _ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
    arn: &str,
) -> Result<Option<Provisioned>, ProviderError> {
    describe(client, req, arn)
        .await?
        .map(|tg| reported(req, &tg))
        .transpose()
}

async fn register(
    client: &Client,
    req: &ResourceRequest<'_>,
    arn: &str,
    targets: Vec<TargetDescription>,
) -> Result<(), ProviderError> {
    if targets.is_empty() {
        return Ok(());
    }
    client
        .register_targets()
        .target_group_arn(arn)
        .set_targets(Some(targets))
        .send()
        .await
        .map_err(|e| ELBV2.err(req, "RegisterTargets", arn, &e))?;
    Ok(())
}

pub(super) async fn create(
    ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
) -> Result<Provisioned, ProviderError> {
    let props = Props::new(req);
    let name = match props.str("Name")? {
        Some(n) => n,
        None => {
            naming::single_hyphens(naming::generate(ctx.stack_name, req.logical_id, NAME_RULES))
        }
    };
    let out = client
        .create_target_group()
        .name(&name)
        .set_protocol(protocol(req, "Protocol")?)
        .set_protocol_version(props.str("ProtocolVersion")?)
        .set_port(i32_prop(req, "Port")?)
        .set_vpc_id(props.str("VpcId")?)
        .set_target_type(
            props
                .str("TargetType")?
                .map(|t| TargetTypeEnum::from(t.as_str())),
        )
        .set_ip_address_type(
            props
                .str("IpAddressType")?
                .map(|t| TargetGroupIpAddressTypeEnum::from(t.as_str())),
        )
        .set_health_check_protocol(protocol(req, "HealthCheckProtocol")?)
        .set_health_check_port(props.str("HealthCheckPort")?)
        .set_health_check_enabled(props.bool("HealthCheckEnabled")?)
        .set_health_check_path(props.str("HealthCheckPath")?)
        .set_health_check_interval_seconds(i32_prop(req, "HealthCheckIntervalSeconds")?)
        .set_health_check_timeout_seconds(i32_prop(req, "HealthCheckTimeoutSeconds")?)
        .set_healthy_threshold_count(i32_prop(req, "HealthyThresholdCount")?)
        .set_unhealthy_threshold_count(i32_prop(req, "UnhealthyThresholdCount")?)
        .set_matcher(matcher(req)?)
        .set_tags(create_tags(req)?)
        .send()
        .await
        .map_err(|e| ELBV2.err(req, "CreateTargetGroup", &name, &e))?;
    let tg = out.target_groups().first().ok_or_else(|| {
        ProviderError::failed(req, "elasticloadbalancing returned no target group")
    })?;
    let made = reported(req, tg)?;
    let arn = made.physical_id.clone();
    let finish = async {
        attributes::modify!(
            req,
            &arn,
            "ModifyTargetGroupAttributes",
            attributes::asked(req, "TargetGroupAttributes")?,
            client
                .modify_target_group_attributes()
                .target_group_arn(&arn)
        );
        register(client, req, &arn, targets(req)?).await
    };
    if let Err(e) = finish.await {
        // Never leave a half-configured target group behind.
        let _ = client
            .delete_target_group()
            .target_group_arn(&arn)
            .send()
            .await;
        return Err(e);
    }
    Ok(made)
}

/// A target as a comparable key (id, port, zone).
fn target_key(t: &TargetDescription) -> (String, Option<i32>, Option<String>) {
    (
        t.id().unwrap_or_default().to_owned(),
        t.port(),
        t.availability_zone().map(str::to_owned),
    )
}

pub(super) async fn update(
    ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
    arn: &str,
    previous: &Map<String, Value>,
) -> Result<UpdateOutcome, ProviderError> {
    if let Some(replace) = create_only_change(req, previous, &[]) {
        return Ok(replace);
    }
    let props = Props::new(req);
    let moved = |n: &str| changed(previous, req.properties, n);
    if HEALTH_CHECK.iter().any(|p| moved(p)) {
        for dropped in HEALTH_CHECK
            .iter()
            .filter(|p| moved(p) && props.get(p).is_none())
        {
            crate::ui::warn(format!(
                "{} ({}): {dropped} was removed from the template; its live value is kept (AWS's \
                 default depends on the protocol): set it explicitly to change it",
                req.logical_id, req.resource_type
            ));
        }
        client
            .modify_target_group()
            .target_group_arn(arn)
            .set_health_check_protocol(protocol(req, "HealthCheckProtocol")?)
            .set_health_check_port(props.str("HealthCheckPort")?)
            .set_health_check_enabled(props.bool("HealthCheckEnabled")?)
            .set_health_check_path(props.str("HealthCheckPath")?)
            .set_health_check_interval_seconds(i32_prop(req, "HealthCheckIntervalSeconds")?)
            .set_health_check_timeout_seconds(i32_prop(req, "HealthCheckTimeoutSeconds")?)
            .set_healthy_threshold_count(i32_prop(req, "HealthyThresholdCount")?)
            .set_unhealthy_threshold_count(i32_prop(req, "UnhealthyThresholdCount")?)
            .set_matcher(matcher(req)?)
            .send()
            .await
            .map_err(|e| ELBV2.err(req, "ModifyTargetGroup", arn, &e))?;
    }
    if moved("TargetGroupAttributes") {
        attributes::modify!(
            req,
            arn,
            "ModifyTargetGroupAttributes",
            attributes::to_send(
                req,
                previous,
                "TargetGroupAttributes",
                TARGET_GROUP_DEFAULTS
            )?,
            client
                .modify_target_group_attributes()
                .target_group_arn(arn)
        );
    }
    if moved("Targets") {
        let before_req = crate::provider::sdk::with_properties(req, previous);
        let before = targets(&before_req)?;
        let after = targets(req)?;
        let gone: Vec<TargetDescription> = before
            .iter()
            .filter(|b| !after.iter().any(|a| target_key(a) == target_key(b)))
            .cloned()
            .collect();
        let added: Vec<TargetDescription> = after
            .iter()
            .filter(|a| !before.iter().any(|b| target_key(a) == target_key(b)))
            .cloned()
            .collect();
        if !gone.is_empty() {
            client
                .deregister_targets()
                .target_group_arn(arn)
                .set_targets(Some(gone))
                .send()
                .await
                .map_err(|e| ELBV2.err(req, "DeregisterTargets", arn, &e))?;
        }
        register(client, req, arn, added).await?;
    }
    update_tags(client, req, arn, previous).await?;
    provisioned_of(ctx, client, req, arn)
        .await?
        .map(UpdateOutcome::Updated)
        .ok_or_else(|| ProviderError::failed(req, format!("{arn} does not exist")))
}

pub(super) async fn delete(
    _ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
    arn: &str,
) -> Result<(), ProviderError> {
    unless_gone(
        client
            .delete_target_group()
            .target_group_arn(arn)
            .send()
            .await,
        req,
        "DeleteTargetGroup",
        arn,
    )
    .map(|_| ())
}

pub(super) async fn read(
    _ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
    arn: &str,
) -> Result<Option<Map<String, Value>>, ProviderError> {
    let Some(tg) = describe(client, req, arn).await? else {
        return Ok(None);
    };
    let mut live = Fields::new()
        .put("Name", tg.target_group_name())
        .put("Protocol", tg.protocol().map(|p| p.as_str()))
        .put("ProtocolVersion", tg.protocol_version())
        .put("Port", tg.port())
        .put("VpcId", tg.vpc_id())
        .put("TargetType", tg.target_type().map(|t| t.as_str()))
        .put("IpAddressType", tg.ip_address_type().map(|t| t.as_str()))
        .put(
            "HealthCheckProtocol",
            tg.health_check_protocol().map(|p| p.as_str()),
        )
        .put("HealthCheckPort", tg.health_check_port())
        .put("HealthCheckEnabled", tg.health_check_enabled())
        .put("HealthCheckPath", tg.health_check_path())
        .put(
            "HealthCheckIntervalSeconds",
            tg.health_check_interval_seconds(),
        )
        .put(
            "HealthCheckTimeoutSeconds",
            tg.health_check_timeout_seconds(),
        )
        .put("HealthyThresholdCount", tg.healthy_threshold_count())
        .put("UnhealthyThresholdCount", tg.unhealthy_threshold_count())
        .put(
            "Matcher",
            tg.matcher().map(|m| {
                Fields::new()
                    .put("HttpCode", m.http_code())
                    .put("GrpcCode", m.grpc_code())
                    .value()
            }),
        )
        .map();
    if req.properties.contains_key("Targets") {
        let health = client
            .describe_target_health()
            .target_group_arn(arn)
            .send()
            .await
            .map_err(|e| ELBV2.err(req, "DescribeTargetHealth", arn, &e))?;
        let listed: Vec<Value> = health
            .target_health_descriptions()
            .iter()
            .filter_map(|h| h.target())
            .map(|t| {
                Fields::new()
                    .put("Id", t.id())
                    .put("Port", t.port())
                    .put("AvailabilityZone", t.availability_zone())
                    .value()
            })
            .collect();
        live.insert("Targets".into(), Value::Array(listed));
    }
    let attrs = client
        .describe_target_group_attributes()
        .target_group_arn(arn)
        .send()
        .await
        .map_err(|e| ELBV2.err(req, "DescribeTargetGroupAttributes", arn, &e))?;
    attributes::read_into(
        &mut live,
        req,
        "TargetGroupAttributes",
        attributes::pairs_of(attrs.attributes()),
    )?;
    let mut props = as_asked(req, live);
    read_tags(client, req, arn, &mut props).await?;
    Ok(Some(props))
}
