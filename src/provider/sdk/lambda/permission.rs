//! `AWS::Lambda::Permission`: one statement in a function's resource policy.
//!
//! Physical id, `Ref` and `Fn::GetAtt Id`: the statement id, which CloudFormation generates
//! as `{stack}-{logicalId}-{RANDOM}` (the template cannot name it). Every property is
//! create-only, so any change replaces the statement. Deleting needs the function, which
//! comes from the recorded `FunctionName`; an id recorded as `function|statement` (Cloud
//! Control's composite identifier) is understood too.

use async_trait::async_trait;
use serde_json::{json, Map, Value};

use super::{client, is_not_found, put, Obj, API};
use crate::provider::naming::{self, NameRules};
use crate::provider::props::changed_properties;
use crate::provider::{
    Provider, ProviderContext, ProviderError, Provisioned, ResourceRequest, UpdateOutcome,
};

const PERMISSION: &str = "AWS::Lambda::Permission";

/// The top-level CloudFormation properties this provider sends (any other routes the
/// resource through Cloud Control: `Provider::supported_properties`).
const PERMISSION_PROPERTIES: &[&str] = &[
    "Action",
    "EventSourceToken",
    "FunctionName",
    "FunctionUrlAuthType",
    "InvokedViaFunctionUrl",
    "Principal",
    "PrincipalOrgID",
    "SourceAccount",
    "SourceArn",
];

/// Statement ids: up to 100 characters of `[A-Za-z0-9_-]`.
const STATEMENT_ID: NameRules = NameRules {
    max_len: 100,
    lowercase: false,
    extra_chars: "-_",
    suffix: "",
};

/// The SDK provider for Lambda permissions.
pub struct PermissionProvider;

fn attributes(statement_id: &str) -> Map<String, Value> {
    let mut m = Map::new();
    m.insert("Id".into(), json!(statement_id));
    m
}

/// The function and statement id of a recorded permission.
fn target(req: &ResourceRequest<'_>, physical_id: &str) -> Result<(String, String), ProviderError> {
    if let Some((function, sid)) = physical_id.split_once('|') {
        return Ok((function.to_owned(), sid.to_owned()));
    }
    let function = Obj::root(req).required_str("FunctionName")?;
    Ok((function, physical_id.to_owned()))
}

/// The statement `sid` of the function's policy, when there is one.
async fn find_statement(
    ctx: &ProviderContext<'_>,
    req: &ResourceRequest<'_>,
    function: &str,
    sid: &str,
) -> Result<Option<Value>, ProviderError> {
    let out = match client(ctx)
        .get_policy()
        .function_name(function)
        .send()
        .await
    {
        Ok(out) => out,
        Err(e) if is_not_found(&e) => return Ok(None),
        Err(e) => return Err(API.err(req, "GetPolicy", function, &e)),
    };
    let policy: Value = match out.policy().map(serde_json::from_str) {
        Some(Ok(v)) => v,
        Some(Err(e)) => {
            return Err(ProviderError::failed(
                req,
                format!("the policy of {function} is not JSON: {e}"),
            ))
        }
        None => return Ok(None),
    };
    let statements = match policy.get("Statement") {
        Some(Value::Array(list)) => list.clone(),
        Some(single @ Value::Object(_)) => vec![single.clone()],
        _ => Vec::new(),
    };
    Ok(statements
        .into_iter()
        .find(|s| s.get("Sid").and_then(Value::as_str) == Some(sid)))
}

/// A policy statement back in CloudFormation's properties.
fn statement_properties(function: &str, statement: &Value) -> Map<String, Value> {
    let mut out = Map::new();
    out.insert("FunctionName".into(), json!(function));
    let action = match statement.get("Action") {
        Some(Value::Array(a)) if a.len() == 1 => a[0].clone(),
        other => other.cloned().unwrap_or(Value::Null),
    };
    put(&mut out, "Action", (!action.is_null()).then_some(action));
    let principal = match statement.get("Principal") {
        Some(Value::String(p)) => Some(p.clone()),
        Some(Value::Object(p)) => p
            .get("Service")
            .or_else(|| p.get("AWS"))
            .and_then(Value::as_str)
            .map(|p| account_of_root(p).unwrap_or(p).to_owned()),
        _ => None,
    };
    put(&mut out, "Principal", principal.map(Value::String));
    let condition = statement.get("Condition");
    let cond = |op: &str, key: &str| -> Option<Value> {
        condition?
            .get(op)?
            .as_object()?
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v.clone())
    };
    put(&mut out, "SourceArn", cond("ArnLike", "AWS:SourceArn"));
    put(
        &mut out,
        "SourceAccount",
        cond("StringEquals", "AWS:SourceAccount"),
    );
    put(
        &mut out,
        "PrincipalOrgID",
        cond("StringEquals", "aws:PrincipalOrgID"),
    );
    put(
        &mut out,
        "FunctionUrlAuthType",
        cond("StringEquals", "lambda:FunctionUrlAuthType"),
    );
    put(
        &mut out,
        "EventSourceToken",
        cond("StringEquals", "lambda:EventSourceToken"),
    );
    if cond("Bool", "lambda:InvokedViaFunctionUrl").is_some() {
        out.insert("InvokedViaFunctionUrl".into(), json!(true));
    }
    out
}

/// `123456789012` for `arn:aws:iam::123456789012:root` (how Lambda stores an account principal).
fn account_of_root(principal: &str) -> Option<&str> {
    let account = principal
        .strip_prefix("arn:")?
        .split_once(":iam::")?
        .1
        .strip_suffix(":root")?;
    (account.len() == 12 && account.bytes().all(|b| b.is_ascii_digit())).then_some(account)
}

#[async_trait]
impl Provider for PermissionProvider {
    fn resource_types(&self) -> &'static [&'static str] {
        &[PERMISSION]
    }

    fn supported_properties(&self, _resource_type: &str) -> Option<Vec<&'static str>> {
        Some(PERMISSION_PROPERTIES.to_vec())
    }

    async fn create(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
    ) -> Result<Provisioned, ProviderError> {
        let root = Obj::root(req);
        let function = root.required_str("FunctionName")?;
        let sid = naming::generate(ctx.stack_name, req.logical_id, STATEMENT_ID);
        client(ctx)
            .add_permission()
            .function_name(&function)
            .statement_id(&sid)
            .action(root.required_str("Action")?)
            .principal(root.required_str("Principal")?)
            .set_source_arn(root.str("SourceArn")?)
            .set_source_account(root.str("SourceAccount")?)
            .set_event_source_token(root.str("EventSourceToken")?)
            .set_principal_org_id(root.str("PrincipalOrgID")?)
            .set_function_url_auth_type(
                root.str("FunctionUrlAuthType")?
                    .map(|t| aws_sdk_lambda::types::FunctionUrlAuthType::from(t.as_str())),
            )
            .set_invoked_via_function_url(root.bool("InvokedViaFunctionUrl")?)
            .send()
            .await
            .map_err(|e| API.err(req, "AddPermission", &function, &e))?;
        Ok(Provisioned {
            physical_id: sid.clone(),
            attributes: attributes(&sid),
        })
    }

    async fn update(
        &self,
        _ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
        previous: &Map<String, Value>,
    ) -> Result<UpdateOutcome, ProviderError> {
        let changes = changed_properties(previous, req.properties);
        if !changes.is_empty() {
            return Ok(UpdateOutcome::NeedsReplacement {
                reason: format!(
                    "{} cannot change in place (every Lambda permission property is create-only)",
                    changes.join(", ")
                ),
            });
        }
        let sid = physical_id.rsplit('|').next().unwrap_or(physical_id);
        Ok(UpdateOutcome::Updated(Provisioned {
            physical_id: physical_id.to_owned(),
            attributes: attributes(sid),
        }))
    }

    async fn delete(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<(), ProviderError> {
        let (function, sid) = target(req, physical_id)?;
        match client(ctx)
            .remove_permission()
            .function_name(&function)
            .statement_id(&sid)
            .send()
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if is_not_found(&e) => Ok(()),
            Err(e) => Err(API.err(req, "RemovePermission", &format!("{function} {sid}"), &e)),
        }
    }

    async fn read(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<Option<Map<String, Value>>, ProviderError> {
        let (function, sid) = target(req, physical_id)?;
        Ok(find_statement(ctx, req, &function, &sid)
            .await?
            .map(|s| statement_properties(&function, &s)))
    }

    async fn import(
        &self,
        ctx: &ProviderContext<'_>,
        req: &ResourceRequest<'_>,
        physical_id: &str,
    ) -> Result<Provisioned, ProviderError> {
        let (function, sid) = target(req, physical_id)?;
        match find_statement(ctx, req, &function, &sid).await? {
            Some(_) => Ok(Provisioned {
                physical_id: sid.clone(),
                attributes: attributes(&sid),
            }),
            None => Err(ProviderError::failed(
                req,
                format!("function {function} has no permission statement {sid}"),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_read_back_as_properties() {
        let s = json!({
            "Sid": "x", "Effect": "Allow", "Action": "lambda:InvokeFunction",
            "Principal": {"Service": "s3.amazonaws.com"},
            "Resource": "arn:aws:lambda:us-east-1:123456789012:function:f",
            "Condition": {
                "ArnLike": {"AWS:SourceArn": "arn:aws:s3:::b"},
                "StringEquals": {"AWS:SourceAccount": "123456789012"}
            }
        });
        let p = statement_properties("f", &s);
        assert_eq!(p["Action"], "lambda:InvokeFunction");
        assert_eq!(p["Principal"], "s3.amazonaws.com");
        assert_eq!(p["SourceArn"], "arn:aws:s3:::b");
        assert_eq!(p["SourceAccount"], "123456789012");
        let acct = json!({"Sid": "y", "Action": ["lambda:InvokeFunction"],
            "Principal": {"AWS": "arn:aws:iam::123456789012:root"}});
        let p = statement_properties("f", &acct);
        assert_eq!(p["Principal"], "123456789012");
        assert_eq!(p["Action"], "lambda:InvokeFunction");
    }
}
