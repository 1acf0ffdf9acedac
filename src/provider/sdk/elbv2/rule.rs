//! `AWS::ElasticLoadBalancingV2::ListenerRule`: physical id and `Ref` the rule's ARN;
//! `Fn::GetAtt` `RuleArn` and `IsDefault`.
//!
//! `ListenerArn` replaces the rule (create-only); its conditions and actions change in place
//! (ModifyRule), its priority through SetRulePriorities (ModifyRule cannot move it).

use aws_sdk_elasticloadbalancingv2::types::{Rule, RulePriorityPair};
use aws_sdk_elasticloadbalancingv2::Client;
use serde_json::{json, Map, Value};

use super::actions::{action_value, actions, condition_value, conditions};
use super::{i32_prop, unless_gone, ELBV2};
use crate::provider::props::{changed, Props};
use crate::provider::sdk::scaffold::lifecycle::{create_only_change, provisioned};
use crate::provider::sdk::scaffold::nested::Fields;
use crate::provider::sdk::scaffold::readback::as_asked;
use crate::provider::{
    ProviderContext, ProviderError, Provisioned, ResourceRequest, UpdateOutcome,
};

/// The top-level CloudFormation properties this provider sends (any other routes the
/// resource through Cloud Control).
pub(super) const PROPERTIES: &[&str] = &["Actions", "Conditions", "ListenerArn", "Priority"];

async fn describe(
    client: &Client,
    req: &ResourceRequest<'_>,
    arn: &str,
) -> Result<Option<Rule>, ProviderError> {
    Ok(unless_gone(
        client.describe_rules().rule_arns(arn).send().await,
        req,
        "DescribeRules",
        arn,
    )?
    .and_then(|out| out.rules().first().cloned()))
}

fn reported(arn: &str, rule: Option<&Rule>) -> Provisioned {
    let default = rule.and_then(|r| r.is_default()).unwrap_or(false);
    provisioned(
        arn,
        &[("RuleArn", json!(arn)), ("IsDefault", json!(default))],
    )
}

pub(super) async fn provisioned_of(
    _ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
    arn: &str,
) -> Result<Option<Provisioned>, ProviderError> {
    Ok(describe(client, req, arn)
        .await?
        .map(|r| reported(arn, Some(&r))))
}

pub(super) async fn create(
    _ctx: &ProviderContext<'_>,
    client: &Client,
    req: &ResourceRequest<'_>,
) -> Result<Provisioned, ProviderError> {
    let listener = Props::new(req).required_str("ListenerArn")?;
    let out = client
        .create_rule()
        .listener_arn(&listener)
        .set_priority(i32_prop(req, "Priority")?)
        .set_conditions(Some(conditions(req)?))
        .set_actions(Some(actions(req, "Actions")?))
        .send()
        .await
        .map_err(|e| ELBV2.err(req, "CreateRule", &listener, &e))?;
    let rule = out.rules().first();
    let arn = ELBV2.required(req, rule.and_then(|r| r.rule_arn()), "rule ARN")?;
    Ok(reported(arn, rule))
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
    let moved = |n: &str| changed(previous, req.properties, n);
    if moved("Conditions") || moved("Actions") {
        client
            .modify_rule()
            .rule_arn(arn)
            .set_conditions(Some(conditions(req)?))
            .set_actions(Some(actions(req, "Actions")?))
            .send()
            .await
            .map_err(|e| ELBV2.err(req, "ModifyRule", arn, &e))?;
    }
    if moved("Priority") {
        let priority =
            i32_prop(req, "Priority")?.ok_or_else(|| ProviderError::missing(req, "Priority"))?;
        client
            .set_rule_priorities()
            .rule_priorities(
                RulePriorityPair::builder()
                    .rule_arn(arn)
                    .priority(priority)
                    .build(),
            )
            .send()
            .await
            .map_err(|e| ELBV2.err(req, "SetRulePriorities", arn, &e))?;
    }
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
        client.delete_rule().rule_arn(arn).send().await,
        req,
        "DeleteRule",
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
    let Some(rule) = describe(client, req, arn).await? else {
        return Ok(None);
    };
    // The listener is not in DescribeRules' answer: the rule's ARN names it
    // (`...:listener-rule/app/<lb>/<id>/<listener id>/<rule id>`).
    let listener = arn
        .rsplit_once('/')
        .map(|(head, _)| head.replacen(":listener-rule/", ":listener/", 1));
    let live = Fields::new()
        .put("ListenerArn", listener)
        .put(
            "Priority",
            rule.priority().and_then(|p| p.parse::<i64>().ok()),
        )
        .put(
            "Conditions",
            Some(Value::Array(
                rule.conditions().iter().map(condition_value).collect(),
            )),
        )
        .put(
            "Actions",
            Some(Value::Array(
                rule.actions().iter().map(action_value).collect(),
            )),
        )
        .map();
    Ok(Some(as_asked(req, live)))
}
