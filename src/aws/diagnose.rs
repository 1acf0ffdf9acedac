//! What a failed AWS call means to the person running cdkd, in one line with its remedy.
//!
//! [`super::AwsError::call`] names the service, the operation and the target; this module
//! writes the rest: an endpoint that cannot be reached (named by [`super::endpoint`]), no
//! credentials, expired or rejected credentials, a denied call. Each names the endpoint or the
//! profile and says what to do. Anything else is the chain of the error's messages, never the
//! SDK's `Debug` dump of its error structs.

use std::error::Error;
use std::sync::OnceLock;

use aws_credential_types::provider::error::CredentialsError;

use super::endpoint::Unreachable;
use crate::env;

/// The `--profile` of this run, recorded once when the clients are built.
static PROFILE: OnceLock<Option<String>> = OnceLock::new();

/// Records the profile named on the command line (the environment's is read when needed).
pub fn set_profile(profile: Option<&str>) {
    let _ = PROFILE.set(profile.map(str::to_owned));
}

/// The profile the credentials come from: `--profile`, else `AWS_PROFILE`.
fn profile() -> Option<String> {
    PROFILE
        .get()
        .cloned()
        .flatten()
        .or_else(|| std::env::var(env::AWS_PROFILE).ok())
        .filter(|p| !p.is_empty())
}

/// " of profile `x`" when a profile is in use.
fn of_profile() -> String {
    profile().map_or_else(String::new, |p| format!(" of profile `{p}`"))
}

/// `aws sso login [--profile x]`.
fn sso_login() -> String {
    match profile() {
        Some(p) => format!("`aws sso login --profile {p}`"),
        None => "`aws sso login`".to_owned(),
    }
}

/// Error codes saying the credentials' session has ended.
const EXPIRED_CODES: &[&str] = &[
    "ExpiredToken",
    "ExpiredTokenException",
    "TokenRefreshRequired",
];

/// Error codes saying the credentials are not valid at all.
const REJECTED_CODES: &[&str] = &[
    "InvalidClientTokenId",
    "UnrecognizedClientException",
    "InvalidAccessKeyId",
    "SignatureDoesNotMatch",
    "AuthFailure",
    "InvalidSignatureException",
];

/// Error codes of a call the identity may not make.
const DENIED_CODES: &[&str] = &[
    "AccessDenied",
    "AccessDeniedException",
    "UnauthorizedOperation",
    "AuthorizationError",
    "AuthorizationErrorException",
];

/// The IAM action prefix of a service (Cloud Control's actions are CloudFormation's).
fn iam_prefix(service: &str) -> &str {
    match service {
        "cloudcontrol" => "cloudformation",
        "elbv2" => "elasticloadbalancing",
        other => other,
    }
}

/// The message for an error the service answered with, when its code is one people need told
/// what to do about; `detail` is the service's `code: message`.
pub fn service_error(
    service: &str,
    operation: &str,
    code: Option<&str>,
    status: Option<u16>,
    detail: &str,
) -> Option<String> {
    let code = code.unwrap_or_default();
    if EXPIRED_CODES.contains(&code) {
        return Some(format!(
            "the AWS credentials{} have expired ({detail}); refresh them ({} or new session \
             keys) and run again",
            of_profile(),
            sso_login()
        ));
    }
    if REJECTED_CODES.contains(&code) {
        return Some(format!(
            "the AWS credentials{} were rejected ({detail}); check the access key and secret \
             (AWS_ACCESS_KEY_ID, ~/.aws/credentials) and the clock",
            of_profile()
        ));
    }
    if DENIED_CODES.contains(&code) || (code.is_empty() && status == Some(403)) {
        return Some(format!(
            "access denied ({detail}); allow {}:{operation} for the identity{}, or run with \
             --profile / --role-arn naming one that has it",
            iam_prefix(service),
            of_profile()
        ));
    }
    None
}

/// The message for a call that got no answer from the service: a connection failure, missing
/// or unusable credentials, or (otherwise) the chain of the error's messages.
pub fn failure(err: &(dyn Error + 'static)) -> String {
    let chain: Vec<&(dyn Error + 'static)> = chain(err).collect();
    if let Some(unreachable) = chain.iter().find_map(|e| e.downcast_ref::<Unreachable>()) {
        return unreachable_message(unreachable);
    }
    if let Some(creds) = chain
        .iter()
        .find_map(|e| e.downcast_ref::<CredentialsError>())
    {
        return credentials_message(creds);
    }
    messages(err)
}

fn unreachable_message(u: &Unreachable) -> String {
    let cause = root_cause(&u.source);
    let what = if u.source.is_timeout() {
        format!("no answer from {} in time ({cause})", u.endpoint)
    } else {
        format!("cannot connect to {} ({cause})", u.endpoint)
    };
    let overridden = std::env::vars_os().any(|(k, v)| {
        k.to_str()
            .is_some_and(|k| k == env::AWS_ENDPOINT_URL || k.starts_with("AWS_ENDPOINT_URL_"))
            && !v.is_empty()
    });
    if overridden {
        format!("{what}; start the service it names or correct AWS_ENDPOINT_URL")
    } else {
        format!("{what}; check the network, the proxy (HTTPS_PROXY) and the region")
    }
}

fn credentials_message(e: &CredentialsError) -> String {
    let cause = root_cause(e);
    match e {
        CredentialsError::CredentialsNotLoaded(_) => match profile() {
            Some(p) => format!(
                "no AWS credentials found for profile `{p}`; configure it (`aws configure \
                 --profile {p}` or `aws sso login --profile {p}`) or name another with --profile"
            ),
            None => "no AWS credentials found (environment, default profile, SSO, container \
                     and instance metadata were tried); pass --profile, set AWS_PROFILE, or \
                     export AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
                .to_owned(),
        },
        CredentialsError::InvalidConfiguration(_) => format!(
            "the AWS configuration{} is invalid ({cause}); correct ~/.aws/config",
            of_profile()
        ),
        CredentialsError::ProviderTimedOut(_) => format!(
            "loading the AWS credentials{} timed out; check the network to the credential \
             source (SSO, STS, instance metadata)",
            of_profile()
        ),
        _ if cause.to_ascii_lowercase().contains("expired") => format!(
            "the AWS credentials{} have expired ({cause}); refresh them ({}) and run again",
            of_profile(),
            sso_login()
        ),
        _ => format!(
            "the AWS credentials{} could not be loaded ({cause}); check the profile's \
             configuration, or pass --profile naming another",
            of_profile()
        ),
    }
}

/// `err` and its sources, outermost first.
fn chain<'a>(err: &'a (dyn Error + 'static)) -> impl Iterator<Item = &'a (dyn Error + 'static)> {
    std::iter::successors(Some(err), |e| {
        let e: &'a (dyn Error + 'static) = *e;
        e.source()
    })
}

/// The message of the innermost error, on one line.
fn root_cause(e: &(dyn Error + 'static)) -> String {
    let last = chain(e).last().unwrap_or(e);
    one_line(&last.to_string())
}

/// Every message of the chain, outermost first, joined by ": ", each once.
pub fn messages(err: &(dyn Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    for e in chain(err) {
        let text = one_line(&e.to_string());
        if !text.is_empty() && !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
    }
    parts.join(": ")
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use aws_credential_types::provider::error::CredentialsError;
    use aws_smithy_runtime_api::client::result::ConnectorError;

    #[test]
    fn a_refused_connection_names_the_endpoint_and_the_cause() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "Connection refused");
        let err = ConnectorError::io(Box::new(Unreachable {
            endpoint: "http://127.0.0.1:1".into(),
            source: ConnectorError::io(Box::new(io)),
        }));
        let text = failure(&err);
        assert!(
            text.starts_with("cannot connect to http://127.0.0.1:1 (Connection refused); "),
            "{text}"
        );
        assert!(!text.contains("ConnectorError"), "{text}");
    }

    #[test]
    fn missing_credentials_say_how_to_get_some() {
        let err = ConnectorError::other(
            Box::new(CredentialsError::not_loaded("no credentials in chain")),
            None,
        );
        let text = failure(&err);
        assert!(text.starts_with("no AWS credentials found"), "{text}");
        assert!(text.contains("--profile"), "{text}");
    }

    #[test]
    fn an_expired_provider_session_is_named_expired() {
        let err = CredentialsError::provider_error("The SSO session has expired");
        let text = failure(&err);
        assert!(text.contains("have expired"), "{text}");
        assert!(text.contains("aws sso login"), "{text}");
    }

    #[test]
    fn service_codes_for_expiry_rejection_and_denial() {
        let expired = service_error("sts", "GetCallerIdentity", Some("ExpiredToken"), None, "x")
            .expect("expired");
        assert!(expired.contains("have expired (x)"), "{expired}");
        let rejected = service_error("s3", "ListBuckets", Some("InvalidAccessKeyId"), None, "x")
            .expect("rejected");
        assert!(rejected.contains("were rejected"), "{rejected}");
        let denied = service_error("cloudcontrol", "CreateResource", None, Some(403), "403")
            .expect("denied");
        assert!(
            denied.contains("allow cloudformation:CreateResource"),
            "{denied}"
        );
        assert_eq!(
            service_error("s3", "GetObject", Some("NoSuchKey"), Some(404), "x"),
            None
        );
    }

    #[test]
    fn other_failures_are_their_messages_without_repeats() {
        #[derive(Debug, thiserror::Error)]
        #[error("outer")]
        struct Outer(#[source] std::io::Error);
        let err = Outer(std::io::Error::other("inner cause"));
        assert_eq!(messages(&err), "outer: inner cause");
    }
}
