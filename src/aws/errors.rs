//! AWS error classification, done once so callers ask "is this not-found?" instead of matching
//! service-specific codes. Precondition failures (HTTP 412) arrive as a code, not a modelled
//! variant, which is exactly why this lives here.

use aws_sdk_s3::error::SdkError;
use aws_smithy_types::error::metadata::ProvideErrorMetadata;

use super::diagnose;

/// The kinds of failure callers decide on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    NotFound,
    Throttled,
    PreconditionFailed,
    AccessDenied,
    Conflict,
    NotImplemented,
    ServiceUnavailable,
    Other,
}

const NOT_FOUND_CODES: &[&str] = &[
    "NoSuchKey",
    "NoSuchBucket",
    "NotFound",
    "NoSuchEntity",
    "ResourceNotFoundException",
    "ResourceNotFound",
    "NoSuchVersion",
    "ParameterNotFound",
    "NonExistentQueue",
    "AWS.SimpleQueueService.NonExistentQueue",
    "QueueDoesNotExist",
    "NotFoundException",
];

const THROTTLE_CODES: &[&str] = &[
    "Throttling",
    "ThrottlingException",
    "ThrottledException",
    "TooManyRequestsException",
    "RequestLimitExceeded",
    "SlowDown",
    "ProvisionedThroughputExceededException",
];

/// The AWS error code of a failed call, when the service sent one.
pub fn error_code<E: ProvideErrorMetadata, R>(err: &SdkError<E, R>) -> Option<&str> {
    match err {
        SdkError::ServiceError(service) => service.err().code(),
        _ => None,
    }
}

fn http_status<E, R>(err: &SdkError<E, R>) -> Option<u16>
where
    R: HttpStatus,
{
    err.raw_response().map(HttpStatus::status_code)
}

/// Access to the HTTP status of a raw response, whatever the response type.
pub trait HttpStatus {
    fn status_code(&self) -> u16;
}

impl HttpStatus for aws_smithy_runtime_api::http::Response {
    fn status_code(&self) -> u16 {
        self.status().as_u16()
    }
}

/// Classifies a failed SDK call by its code, falling back to the HTTP status.
pub fn classify<E: ProvideErrorMetadata, R: HttpStatus>(err: &SdkError<E, R>) -> ErrorKind {
    if let Some(code) = error_code(err) {
        if NOT_FOUND_CODES.contains(&code) {
            return ErrorKind::NotFound;
        }
        if THROTTLE_CODES.contains(&code) {
            return ErrorKind::Throttled;
        }
        match code {
            "PreconditionFailed" => return ErrorKind::PreconditionFailed,
            "AccessDenied" | "AccessDeniedException" | "Forbidden" => {
                return ErrorKind::AccessDenied
            }
            "ConditionalRequestConflict" | "OperationAborted" => return ErrorKind::Conflict,
            "NotImplemented" => return ErrorKind::NotImplemented,
            "ServiceUnavailable" => return ErrorKind::ServiceUnavailable,
            _ => {}
        }
    }
    match http_status(err) {
        Some(404) => ErrorKind::NotFound,
        Some(412) => ErrorKind::PreconditionFailed,
        Some(403) => ErrorKind::AccessDenied,
        Some(409) => ErrorKind::Conflict,
        Some(429) => ErrorKind::Throttled,
        Some(501) => ErrorKind::NotImplemented,
        Some(503) => ErrorKind::ServiceUnavailable,
        _ => ErrorKind::Other,
    }
}

/// A failed AWS interaction, as one line naming the call and its target.
#[derive(Debug, thiserror::Error)]
pub enum AwsError {
    #[error("{service} {operation} on {target} failed: {message}")]
    Call {
        service: &'static str,
        operation: &'static str,
        target: String,
        kind: ErrorKind,
        message: String,
    },
    #[error("{0}")]
    Unexpected(String),
}

impl AwsError {
    /// Wraps a failed SDK call, keeping its classification and a one-line message.
    pub fn call<E, R>(
        service: &'static str,
        operation: &'static str,
        target: impl Into<String>,
        err: &SdkError<E, R>,
    ) -> Self
    where
        E: ProvideErrorMetadata + std::error::Error + 'static,
        R: HttpStatus + std::fmt::Debug + 'static,
    {
        let message = match err {
            SdkError::ServiceError(service_err) => {
                let e = service_err.err();
                let detail = match (e.code(), e.message()) {
                    (Some(code), Some(msg)) => format!("{code}: {msg}"),
                    (Some(code), None) => code.to_owned(),
                    _ => match http_status(err) {
                        Some(status) => format!("HTTP {status}: {}", diagnose::messages(err)),
                        None => diagnose::messages(err),
                    },
                };
                diagnose::service_error(service, operation, e.code(), http_status(err), &detail)
                    .unwrap_or(detail)
            }
            _ => diagnose::failure(err),
        };
        AwsError::Call {
            service,
            operation,
            target: target.into(),
            kind: classify(err),
            message,
        }
    }

    pub fn kind(&self) -> ErrorKind {
        match self {
            AwsError::Call { kind, .. } => *kind,
            AwsError::Unexpected(_) => ErrorKind::Other,
        }
    }
}
