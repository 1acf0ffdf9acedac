//! Connection failures that say where they were going.
//!
//! The SDK's connector error for a refused connection, a DNS miss or a TLS failure names the
//! socket address only in its `Debug` dump, never in its message; the endpoint a request was
//! sent to is known only here, on the way out. This wrapper of the shared HTTP client puts the
//! request's `scheme://host[:port]` into each connector error as an [`Unreachable`] source,
//! keeping the error's kind (io, timeout, user, other), so the SDK retries exactly as before
//! and [`super::diagnose`] can name the endpoint in one line.

use aws_smithy_runtime_api::client::http::{
    HttpClient, HttpConnector, HttpConnectorFuture, HttpConnectorSettings, SharedHttpClient,
    SharedHttpConnector,
};
use aws_smithy_runtime_api::client::orchestrator::HttpRequest;
use aws_smithy_runtime_api::client::result::ConnectorError;
use aws_smithy_runtime_api::client::runtime_components::RuntimeComponents;

/// A connector failure and the endpoint it happened on.
#[derive(Debug, thiserror::Error)]
#[error("cannot connect to {endpoint}")]
pub struct Unreachable {
    pub endpoint: String,
    #[source]
    pub source: ConnectorError,
}

/// `inner`, with each connector error naming its endpoint.
pub fn naming(inner: SharedHttpClient) -> SharedHttpClient {
    SharedHttpClient::new(NamingClient { inner })
}

#[derive(Debug)]
struct NamingClient {
    inner: SharedHttpClient,
}

impl HttpClient for NamingClient {
    fn http_connector(
        &self,
        settings: &HttpConnectorSettings,
        components: &RuntimeComponents,
    ) -> SharedHttpConnector {
        SharedHttpConnector::new(NamingConnector {
            inner: self.inner.http_connector(settings, components),
        })
    }
}

#[derive(Debug)]
struct NamingConnector {
    inner: SharedHttpConnector,
}

impl HttpConnector for NamingConnector {
    fn call(&self, request: HttpRequest) -> HttpConnectorFuture {
        let endpoint = origin(request.uri()).to_owned();
        let fut = self.inner.call(request);
        HttpConnectorFuture::new(async move { fut.await.map_err(|e| wrap(endpoint, e)) })
    }
}

/// `scheme://authority` of a request URI (no path, query or credentials).
pub fn origin(uri: &str) -> &str {
    let after_scheme = uri.find("://").map_or(0, |i| i + 3);
    let end = uri[after_scheme..]
        .find(['/', '?', '#'])
        .map_or(uri.len(), |i| after_scheme + i);
    &uri[..end]
}

/// The same kind of connector error, with the endpoint in its source chain.
fn wrap(endpoint: String, err: ConnectorError) -> ConnectorError {
    let (timeout, io, user, other) = (err.is_timeout(), err.is_io(), err.is_user(), err.as_other());
    let source = Box::new(Unreachable {
        endpoint,
        source: err,
    });
    if timeout {
        ConnectorError::timeout(source)
    } else if io {
        ConnectorError::io(source)
    } else if user {
        ConnectorError::user(source)
    } else {
        ConnectorError::other(source, other)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origin_keeps_scheme_host_and_port_only() {
        assert_eq!(
            origin("http://127.0.0.1:1/bucket/key?x=1"),
            "http://127.0.0.1:1"
        );
        assert_eq!(
            origin("https://sts.us-east-1.amazonaws.com/"),
            "https://sts.us-east-1.amazonaws.com"
        );
        assert_eq!(
            origin("https://s3.amazonaws.com"),
            "https://s3.amazonaws.com"
        );
        assert_eq!(origin("https://h?Action=X"), "https://h");
    }

    #[test]
    fn a_wrapped_error_keeps_its_kind() {
        let io = wrap("http://h".into(), ConnectorError::io("refused".into()));
        assert!(io.is_io());
        let timeout = wrap("http://h".into(), ConnectorError::timeout("slow".into()));
        assert!(timeout.is_timeout());
        let user = wrap("http://h".into(), ConnectorError::user("bad".into()));
        assert!(user.is_user());
        let source = std::error::Error::source(&io).expect("a source");
        let unreachable = source.downcast_ref::<Unreachable>().expect("Unreachable");
        assert_eq!(unreachable.endpoint, "http://h");
    }
}
