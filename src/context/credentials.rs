//! Which credentials answer a lookup: the query names its account and region and, for
//! bootstrapped environments, the lookup role (`lookupRoleArn`) to read it with.
//!
//! As the CDK CLI does: the role is assumed unless the caller already is that role; when it
//! cannot be assumed but the caller's own credentials are for the query's account, the lookup
//! goes on with them (and says so); otherwise the error names the role and the account. A query
//! without a role must be answered by credentials for its own account. Configurations are built
//! once per (region, role) and shared by the parallel lookups of one synthesis round.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use aws_config::{Region, SdkConfig};
use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};
use tokio::sync::OnceCell;

use super::query::LookupError;
use crate::aws::Clients;

/// Who the caller is, from STS GetCallerIdentity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Caller {
    pub account: String,
    pub arn: String,
}

impl Caller {
    /// Whether these credentials already are `role_arn` (an assumed-role session of it).
    pub fn is_role(&self, role_arn: &str) -> bool {
        let Some((role_account, role_name)) = role_parts(role_arn) else {
            return false;
        };
        // arn:aws:sts::111122223333:assumed-role/NAME/session
        let mut parts = self.arn.splitn(6, ':');
        let (Some("arn"), Some(_), Some("sts"), Some(_), Some(account), Some(resource)) = (
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
            parts.next(),
        ) else {
            return false;
        };
        let name = resource
            .strip_prefix("assumed-role/")
            .and_then(|r| r.split('/').next());
        account == role_account && name == Some(role_name)
    }
}

/// (account, role name) of `arn:aws:iam::ACCOUNT:role/path/NAME`.
fn role_parts(arn: &str) -> Option<(&str, &str)> {
    let mut parts = arn.splitn(6, ':');
    let (Some("arn"), Some(_), Some("iam"), Some(_), Some(account), Some(resource)) = (
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
        parts.next(),
    ) else {
        return None;
    };
    let name = resource.strip_prefix("role/")?.rsplit('/').next()?;
    (!name.is_empty()).then_some((account, name))
}

/// What to do for one query, decided from who the caller is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// The caller's credentials answer it.
    Caller,
    /// Assume this role; `fallback` when the caller may answer if that fails.
    Assume { role: String, fallback: bool },
    /// Refused before any call: the message says why.
    Refuse(String),
}

/// The decision alone (no AWS call), so it can be tested: see the module comment.
pub fn plan(caller: Option<&Caller>, account: &str, role: Option<&str>) -> Plan {
    match (role, caller) {
        (Some(role), Some(c)) if c.is_role(role) => Plan::Caller,
        (Some(role), c) => Plan::Assume {
            role: role.to_owned(),
            fallback: c.is_some_and(|c| c.account == account),
        },
        (None, Some(c)) if c.account != account => Plan::Refuse(format!(
            "the credentials are for account {} but this lookup is for account {account} and names no lookup role; run with credentials for account {account}",
            c.account
        )),
        (None, _) => Plan::Caller,
    }
}

/// Lookup credentials for one command run, shared by every lookup it makes.
pub struct Lookups {
    base: SdkConfig,
    caller: OnceCell<Option<Caller>>,
    configs:
        Mutex<HashMap<(String, Option<String>), Arc<OnceCell<Result<SdkConfig, LookupError>>>>>,
}

impl Lookups {
    /// Lookups made with the command's own credentials (`--profile`, `--role-arn`, the chain).
    pub fn new(clients: &Clients) -> Self {
        Lookups {
            base: clients.config(None),
            caller: OnceCell::new(),
            configs: Mutex::new(HashMap::new()),
        }
    }

    /// The caller's identity, asked once; `None` when STS cannot tell (the lookups then try
    /// with what they have, and AWS's own answer says what is wrong).
    pub async fn caller(&self) -> Option<Caller> {
        self.caller
            .get_or_init(|| async {
                match aws_sdk_sts::Client::new(&self.base)
                    .get_caller_identity()
                    .send()
                    .await
                {
                    Ok(out) => Some(Caller {
                        account: out.account.unwrap_or_default(),
                        arn: out.arn.unwrap_or_default(),
                    }),
                    Err(e) => {
                        tracing::debug!(
                            "STS GetCallerIdentity failed: {}",
                            aws_smithy_types::error::display::DisplayErrorContext(&e)
                        );
                        None
                    }
                }
            })
            .await
            .clone()
    }

    /// The configuration that answers a query for `account` / `region` read with `role`.
    pub async fn config_for(
        &self,
        account: &str,
        region: &str,
        role: Option<&str>,
        external_id: Option<&str>,
    ) -> Result<SdkConfig, LookupError> {
        let cell = {
            let mut configs = self.configs.lock().unwrap_or_else(|p| p.into_inner());
            configs
                .entry((region.to_owned(), role.map(str::to_owned)))
                .or_default()
                .clone()
        };
        cell.get_or_init(|| self.build(account, region, role, external_id))
            .await
            .clone()
    }

    async fn build(
        &self,
        account: &str,
        region: &str,
        role: Option<&str>,
        external_id: Option<&str>,
    ) -> Result<SdkConfig, LookupError> {
        let regional = self
            .base
            .to_builder()
            .region(Region::new(region.to_owned()))
            .build();
        let caller = self.caller().await;
        match plan(caller.as_ref(), account, role) {
            Plan::Caller => Ok(regional),
            Plan::Refuse(message) => Err(LookupError::Failed(message)),
            Plan::Assume { role, fallback } => {
                match assume(&regional, region, &role, external_id).await {
                    Ok(config) => Ok(config),
                    Err(e) if fallback => {
                        crate::ui::warn(format!(
                            "cannot assume the lookup role {role} ({e}); the current credentials are for account {account}, so the lookup uses them"
                        ));
                        Ok(regional)
                    }
                    Err(e) => Err(LookupError::Failed(format!(
                        "cannot assume the lookup role {role} for account {account}: {e}; bootstrap the environment (cdk bootstrap aws://{account}/{region}) or run with credentials for account {account}"
                    ))),
                }
            }
        }
    }
}

/// `regional` with the role's credentials, checked now so a role that cannot be assumed is
/// reported as that and not as the first lookup call's credentials error.
async fn assume(
    regional: &SdkConfig,
    region: &str,
    role: &str,
    external_id: Option<&str>,
) -> Result<SdkConfig, String> {
    let mut builder = aws_config::sts::AssumeRoleProvider::builder(role)
        .session_name("cdkd-lookup")
        .configure(regional)
        .region(Region::new(region.to_owned()));
    if let Some(id) = external_id {
        builder = builder.external_id(id);
    }
    let provider = builder.build().await;
    provider
        .provide_credentials()
        .await
        .map_err(|e| crate::aws::describe_failure(&e))?;
    Ok(regional
        .to_builder()
        .credentials_provider(SharedCredentialsProvider::new(provider))
        .build())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caller(account: &str, arn: &str) -> Caller {
        Caller {
            account: account.into(),
            arn: arn.into(),
        }
    }

    const ROLE: &str =
        "arn:aws:iam::111122223333:role/cdk-hnb659fds-lookup-role-111122223333-us-east-1";

    #[test]
    fn the_lookup_role_is_assumed_unless_the_caller_already_is_it() {
        let user = caller("111122223333", "arn:aws:iam::111122223333:user/dev");
        assert_eq!(
            plan(Some(&user), "111122223333", Some(ROLE)),
            Plan::Assume {
                role: ROLE.into(),
                fallback: true
            }
        );
        let session = caller(
            "111122223333",
            "arn:aws:sts::111122223333:assumed-role/cdk-hnb659fds-lookup-role-111122223333-us-east-1/s",
        );
        assert_eq!(
            plan(Some(&session), "111122223333", Some(ROLE)),
            Plan::Caller
        );
        // Same role name in another account is not the same role.
        let other = caller(
            "444455556666",
            "arn:aws:sts::444455556666:assumed-role/cdk-hnb659fds-lookup-role-111122223333-us-east-1/s",
        );
        assert_eq!(
            plan(Some(&other), "111122223333", Some(ROLE)),
            Plan::Assume {
                role: ROLE.into(),
                fallback: false
            }
        );
    }

    #[test]
    fn without_a_role_the_caller_must_be_in_the_query_account() {
        let user = caller("444455556666", "arn:aws:iam::444455556666:user/dev");
        match plan(Some(&user), "111122223333", None) {
            Plan::Refuse(m) => assert!(
                m.contains("444455556666") && m.contains("111122223333"),
                "{m}"
            ),
            other => panic!("{other:?}"),
        }
        assert_eq!(plan(None, "111122223333", None), Plan::Caller);
        let same = caller("111122223333", "arn:aws:iam::111122223333:user/dev");
        assert_eq!(plan(Some(&same), "111122223333", None), Plan::Caller);
    }

    #[test]
    fn role_arns_with_paths_are_matched_by_name() {
        assert_eq!(
            role_parts("arn:aws:iam::1:role/some/path/Name"),
            Some(("1", "Name"))
        );
        assert_eq!(role_parts("arn:aws:iam::1:user/Name"), None);
        assert_eq!(role_parts("nonsense"), None);
    }
}
