//! The shapes listeners and rules share: actions (`DefaultActions`, `Actions`), rule
//! `Conditions` and `Certificates`, from CloudFormation's properties into ELBv2's request
//! types and back. A nested key this provider does not send is refused by name
//! ([`Obj`]), never dropped. An OIDC action's `ClientSecret` is sent and never read back
//! (AWS does not return it; the schema marks it write-only).

use aws_sdk_elasticloadbalancingv2::types::{
    Action, ActionTypeEnum, AuthenticateCognitoActionConditionalBehaviorEnum,
    AuthenticateCognitoActionConfig, AuthenticateOidcActionConditionalBehaviorEnum,
    AuthenticateOidcActionConfig, Certificate, FixedResponseActionConfig, ForwardActionConfig,
    HostHeaderConditionConfig, HttpHeaderConditionConfig, HttpRequestMethodConditionConfig,
    PathPatternConditionConfig, QueryStringConditionConfig, QueryStringKeyValuePair,
    RedirectActionConfig, RedirectActionStatusCodeEnum, RuleCondition, SourceIpConditionConfig,
    TargetGroupStickinessConfig, TargetGroupTuple,
};
use serde_json::{json, Value};

use crate::provider::sdk::scaffold::nested::{list_of, Fields, Obj};
use crate::provider::{ProviderError, ResourceRequest};

const ACTION_KEYS: &[&str] = &[
    "Type",
    "Order",
    "TargetGroupArn",
    "ForwardConfig",
    "RedirectConfig",
    "FixedResponseConfig",
    "AuthenticateCognitoConfig",
    "AuthenticateOidcConfig",
];
const COGNITO_KEYS: &[&str] = &[
    "UserPoolArn",
    "UserPoolClientId",
    "UserPoolDomain",
    "SessionCookieName",
    "Scope",
    "SessionTimeout",
    "AuthenticationRequestExtraParams",
    "OnUnauthenticatedRequest",
];
const OIDC_KEYS: &[&str] = &[
    "Issuer",
    "AuthorizationEndpoint",
    "TokenEndpoint",
    "UserInfoEndpoint",
    "ClientId",
    "ClientSecret",
    "SessionCookieName",
    "Scope",
    "SessionTimeout",
    "AuthenticationRequestExtraParams",
    "OnUnauthenticatedRequest",
    "UseExistingClientSecret",
];
const CONDITION_KEYS: &[&str] = &[
    "Field",
    "Values",
    "HostHeaderConfig",
    "PathPatternConfig",
    "HttpHeaderConfig",
    "QueryStringConfig",
    "HttpRequestMethodConfig",
    "SourceIpConfig",
];

/// The actions of list property `name` (`DefaultActions`, `Actions`), as ELBv2 takes them.
pub(super) fn actions(req: &ResourceRequest<'_>, name: &str) -> Result<Vec<Action>, ProviderError> {
    list_of(req, name, ACTION_KEYS)?
        .iter()
        .map(action)
        .collect()
}

fn action(a: &Obj<'_>) -> Result<Action, ProviderError> {
    let forward = a
        .object(
            "ForwardConfig",
            &["TargetGroups", "TargetGroupStickinessConfig"],
        )?
        .map(|f| forward_config(&f))
        .transpose()?;
    let redirect = a
        .object(
            "RedirectConfig",
            &["Protocol", "Port", "Host", "Path", "Query", "StatusCode"],
        )?
        .map(|r| {
            Ok::<_, ProviderError>(
                RedirectActionConfig::builder()
                    .set_protocol(r.str("Protocol")?)
                    .set_port(r.str("Port")?)
                    .set_host(r.str("Host")?)
                    .set_path(r.str("Path")?)
                    .set_query(r.str("Query")?)
                    .set_status_code(
                        r.str("StatusCode")?
                            .map(|s| RedirectActionStatusCodeEnum::from(s.as_str())),
                    )
                    .build(),
            )
        })
        .transpose()?;
    let fixed = a
        .object(
            "FixedResponseConfig",
            &["MessageBody", "StatusCode", "ContentType"],
        )?
        .map(|f| {
            Ok::<_, ProviderError>(
                FixedResponseActionConfig::builder()
                    .set_message_body(f.str("MessageBody")?)
                    .set_status_code(f.str("StatusCode")?)
                    .set_content_type(f.str("ContentType")?)
                    .build(),
            )
        })
        .transpose()?;
    let cognito = a
        .object("AuthenticateCognitoConfig", COGNITO_KEYS)?
        .map(|c| {
            Ok::<_, ProviderError>(
                AuthenticateCognitoActionConfig::builder()
                    .set_user_pool_arn(c.str("UserPoolArn")?)
                    .set_user_pool_client_id(c.str("UserPoolClientId")?)
                    .set_user_pool_domain(c.str("UserPoolDomain")?)
                    .set_session_cookie_name(c.str("SessionCookieName")?)
                    .set_scope(c.str("Scope")?)
                    .set_session_timeout(c.i64("SessionTimeout")?)
                    .set_authentication_request_extra_params(
                        c.string_map("AuthenticationRequestExtraParams")?,
                    )
                    .set_on_unauthenticated_request(c.str("OnUnauthenticatedRequest")?.map(|s| {
                        AuthenticateCognitoActionConditionalBehaviorEnum::from(s.as_str())
                    }))
                    .build(),
            )
        })
        .transpose()?;
    let oidc =
        a.object("AuthenticateOidcConfig", OIDC_KEYS)?
            .map(|c| {
                Ok::<_, ProviderError>(
                    AuthenticateOidcActionConfig::builder()
                        .set_issuer(c.str("Issuer")?)
                        .set_authorization_endpoint(c.str("AuthorizationEndpoint")?)
                        .set_token_endpoint(c.str("TokenEndpoint")?)
                        .set_user_info_endpoint(c.str("UserInfoEndpoint")?)
                        .set_client_id(c.str("ClientId")?)
                        .set_client_secret(c.str("ClientSecret")?)
                        .set_session_cookie_name(c.str("SessionCookieName")?)
                        .set_scope(c.str("Scope")?)
                        .set_session_timeout(c.i64("SessionTimeout")?)
                        .set_authentication_request_extra_params(
                            c.string_map("AuthenticationRequestExtraParams")?,
                        )
                        .set_on_unauthenticated_request(c.str("OnUnauthenticatedRequest")?.map(
                            |s| AuthenticateOidcActionConditionalBehaviorEnum::from(s.as_str()),
                        ))
                        .set_use_existing_client_secret(c.bool("UseExistingClientSecret")?)
                        .build(),
                )
            })
            .transpose()?;
    Ok(Action::builder()
        .set_type(a.str("Type")?.map(|t| ActionTypeEnum::from(t.as_str())))
        .set_order(a.i32("Order")?)
        .set_target_group_arn(a.str("TargetGroupArn")?)
        .set_forward_config(forward)
        .set_redirect_config(redirect)
        .set_fixed_response_config(fixed)
        .set_authenticate_cognito_config(cognito)
        .set_authenticate_oidc_config(oidc)
        .build())
}

fn forward_config(f: &Obj<'_>) -> Result<ForwardActionConfig, ProviderError> {
    let groups = f
        .objects("TargetGroups", &["TargetGroupArn", "Weight"])?
        .iter()
        .map(|g| {
            Ok(TargetGroupTuple::builder()
                .set_target_group_arn(g.str("TargetGroupArn")?)
                .set_weight(g.i32("Weight")?)
                .build())
        })
        .collect::<Result<Vec<_>, ProviderError>>()?;
    let stickiness = f
        .object(
            "TargetGroupStickinessConfig",
            &["Enabled", "DurationSeconds"],
        )?
        .map(|s| {
            Ok::<_, ProviderError>(
                TargetGroupStickinessConfig::builder()
                    .set_enabled(s.bool("Enabled")?)
                    .set_duration_seconds(s.i32("DurationSeconds")?)
                    .build(),
            )
        })
        .transpose()?;
    Ok(ForwardActionConfig::builder()
        .set_target_groups((!groups.is_empty()).then_some(groups))
        .set_target_group_stickiness_config(stickiness)
        .build())
}

/// An action as CloudFormation writes it.
pub(super) fn action_value(a: &Action) -> Value {
    let forward = a.forward_config().map(|f| {
        Fields::new()
            .list(
                "TargetGroups",
                f.target_groups()
                    .iter()
                    .map(|g| {
                        Fields::new()
                            .put("TargetGroupArn", g.target_group_arn())
                            .put("Weight", g.weight())
                            .value()
                    })
                    .collect(),
            )
            .put(
                "TargetGroupStickinessConfig",
                f.target_group_stickiness_config().map(|s| {
                    Fields::new()
                        .put("Enabled", s.enabled())
                        .put("DurationSeconds", s.duration_seconds())
                        .value()
                }),
            )
            .value()
    });
    let redirect = a.redirect_config().map(|r| {
        Fields::new()
            .put("Protocol", r.protocol())
            .put("Port", r.port())
            .put("Host", r.host())
            .put("Path", r.path())
            .put("Query", r.query())
            .put("StatusCode", r.status_code().map(|s| s.as_str()))
            .value()
    });
    let fixed = a.fixed_response_config().map(|f| {
        Fields::new()
            .put("MessageBody", f.message_body())
            .put("StatusCode", f.status_code())
            .put("ContentType", f.content_type())
            .value()
    });
    let cognito = a.authenticate_cognito_config().map(|c| {
        Fields::new()
            .put("UserPoolArn", c.user_pool_arn())
            .put("UserPoolClientId", c.user_pool_client_id())
            .put("UserPoolDomain", c.user_pool_domain())
            .put("SessionCookieName", c.session_cookie_name())
            .put("Scope", c.scope())
            .put("SessionTimeout", c.session_timeout())
            .put(
                "AuthenticationRequestExtraParams",
                c.authentication_request_extra_params().map(|m| json!(m)),
            )
            .put(
                "OnUnauthenticatedRequest",
                c.on_unauthenticated_request().map(|b| b.as_str()),
            )
            .value()
    });
    let oidc = a.authenticate_oidc_config().map(|c| {
        Fields::new()
            .put("Issuer", c.issuer())
            .put("AuthorizationEndpoint", c.authorization_endpoint())
            .put("TokenEndpoint", c.token_endpoint())
            .put("UserInfoEndpoint", c.user_info_endpoint())
            .put("ClientId", c.client_id())
            .put("SessionCookieName", c.session_cookie_name())
            .put("Scope", c.scope())
            .put("SessionTimeout", c.session_timeout())
            .put(
                "AuthenticationRequestExtraParams",
                c.authentication_request_extra_params().map(|m| json!(m)),
            )
            .put(
                "OnUnauthenticatedRequest",
                c.on_unauthenticated_request().map(|b| b.as_str()),
            )
            .value()
    });
    Fields::new()
        .put("Type", a.r#type().map(|t| t.as_str()))
        .put("Order", a.order())
        .put("TargetGroupArn", a.target_group_arn())
        .put("ForwardConfig", forward)
        .put("RedirectConfig", redirect)
        .put("FixedResponseConfig", fixed)
        .put("AuthenticateCognitoConfig", cognito)
        .put("AuthenticateOidcConfig", oidc)
        .value()
}

/// A rule's `Conditions`, as ELBv2 takes them.
pub(super) fn conditions(req: &ResourceRequest<'_>) -> Result<Vec<RuleCondition>, ProviderError> {
    list_of(req, "Conditions", CONDITION_KEYS)?
        .iter()
        .map(condition)
        .collect()
}

fn condition(c: &Obj<'_>) -> Result<RuleCondition, ProviderError> {
    let values = |key: &str| -> Result<Option<Vec<String>>, ProviderError> {
        c.object(key, &["Values"])?
            .map(|o| o.strings("Values"))
            .transpose()
            .map(Option::flatten)
    };
    let header = c
        .object("HttpHeaderConfig", &["HttpHeaderName", "Values"])?
        .map(|h| {
            Ok::<_, ProviderError>(
                HttpHeaderConditionConfig::builder()
                    .set_http_header_name(h.str("HttpHeaderName")?)
                    .set_values(h.strings("Values")?)
                    .build(),
            )
        })
        .transpose()?;
    let query = c
        .object("QueryStringConfig", &["Values"])?
        .map(|q| {
            let pairs = q
                .objects("Values", &["Key", "Value"])?
                .iter()
                .map(|p| {
                    Ok(QueryStringKeyValuePair::builder()
                        .set_key(p.str("Key")?)
                        .set_value(p.str("Value")?)
                        .build())
                })
                .collect::<Result<Vec<_>, ProviderError>>()?;
            Ok::<_, ProviderError>(
                QueryStringConditionConfig::builder()
                    .set_values(Some(pairs))
                    .build(),
            )
        })
        .transpose()?;
    let host = values("HostHeaderConfig")?;
    let path = values("PathPatternConfig")?;
    let method = values("HttpRequestMethodConfig")?;
    let source = values("SourceIpConfig")?;
    Ok(RuleCondition::builder()
        .set_field(c.str("Field")?)
        .set_values(c.strings("Values")?)
        .set_host_header_config(host.map(|v| {
            HostHeaderConditionConfig::builder()
                .set_values(Some(v))
                .build()
        }))
        .set_path_pattern_config(path.map(|v| {
            PathPatternConditionConfig::builder()
                .set_values(Some(v))
                .build()
        }))
        .set_http_header_config(header)
        .set_query_string_config(query)
        .set_http_request_method_config(method.map(|v| {
            HttpRequestMethodConditionConfig::builder()
                .set_values(Some(v))
                .build()
        }))
        .set_source_ip_config(source.map(|v| {
            SourceIpConditionConfig::builder()
                .set_values(Some(v))
                .build()
        }))
        .build())
}

/// A rule condition as CloudFormation writes it.
pub(super) fn condition_value(c: &RuleCondition) -> Value {
    let values = |v: &[String]| Fields::new().put("Values", Some(json!(v))).value();
    Fields::new()
        .put("Field", c.field())
        .put(
            "Values",
            (!c.values().is_empty()).then(|| json!(c.values())),
        )
        .put(
            "HostHeaderConfig",
            c.host_header_config().map(|h| values(h.values())),
        )
        .put(
            "PathPatternConfig",
            c.path_pattern_config().map(|p| values(p.values())),
        )
        .put(
            "HttpHeaderConfig",
            c.http_header_config().map(|h| {
                Fields::new()
                    .put("HttpHeaderName", h.http_header_name())
                    .put("Values", Some(json!(h.values())))
                    .value()
            }),
        )
        .put(
            "QueryStringConfig",
            c.query_string_config().map(|q| {
                let pairs: Vec<Value> = q
                    .values()
                    .iter()
                    .map(|p| {
                        Fields::new()
                            .put("Key", p.key())
                            .put("Value", p.value())
                            .value()
                    })
                    .collect();
                json!({"Values": pairs})
            }),
        )
        .put(
            "HttpRequestMethodConfig",
            c.http_request_method_config().map(|m| values(m.values())),
        )
        .put(
            "SourceIpConfig",
            c.source_ip_config().map(|s| values(s.values())),
        )
        .value()
}

/// A listener's `Certificates`, as ELBv2 takes them.
pub(super) fn certificates(req: &ResourceRequest<'_>) -> Result<Vec<Certificate>, ProviderError> {
    list_of(req, "Certificates", &["CertificateArn"])?
        .iter()
        .map(|c| {
            Ok(Certificate::builder()
                .set_certificate_arn(c.str("CertificateArn")?)
                .build())
        })
        .collect()
}

pub(super) fn certificate_value(c: &Certificate) -> Value {
    Fields::new()
        .put("CertificateArn", c.certificate_arn())
        .value()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Map;

    fn req(props: &Map<String, Value>) -> ResourceRequest<'_> {
        ResourceRequest {
            logical_id: "L",
            resource_type: super::super::LISTENER,
            properties: props,
            client_token: None,
        }
    }

    #[test]
    fn actions_and_conditions_round_trip_as_cloudformation_writes_them() {
        let props = json!({
            "DefaultActions": [
                {"Type": "forward", "TargetGroupArn": "arn:tg", "Order": 1},
                {"Type": "redirect", "RedirectConfig": {"Protocol": "HTTPS", "Port": "443", "StatusCode": "HTTP_301"}},
                {"Type": "fixed-response", "FixedResponseConfig": {"StatusCode": "404", "ContentType": "text/plain"}},
                {"Type": "forward", "ForwardConfig": {"TargetGroups": [{"TargetGroupArn": "arn:a", "Weight": 2}],
                    "TargetGroupStickinessConfig": {"Enabled": true, "DurationSeconds": 60}}}
            ],
            "Conditions": [
                {"Field": "path-pattern", "PathPatternConfig": {"Values": ["/api/*"]}},
                {"Field": "query-string", "QueryStringConfig": {"Values": [{"Key": "v", "Value": "1"}]}}
            ]
        });
        let props = props.as_object().cloned().expect("object");
        let r = req(&props);
        let back: Vec<Value> = actions(&r, "DefaultActions")
            .expect("actions")
            .iter()
            .map(action_value)
            .collect();
        assert_eq!(Value::Array(back), props["DefaultActions"]);
        let back: Vec<Value> = conditions(&r)
            .expect("conditions")
            .iter()
            .map(condition_value)
            .collect();
        assert_eq!(Value::Array(back), props["Conditions"]);
    }

    #[test]
    fn an_action_key_the_provider_does_not_send_is_refused() {
        let props =
            json!({"DefaultActions": [{"Type": "jwt-validation", "JwtValidationConfig": {}}]});
        let props = props.as_object().cloned().expect("object");
        let err = actions(&req(&props), "DefaultActions").expect_err("refused");
        assert!(
            err.to_string()
                .contains("DefaultActions[0].JwtValidationConfig"),
            "{err}"
        );
    }
}
