//! The provider layer: how cdkd creates, updates, reads and deletes each resource, through
//! the service SDKs or the Cloud Control API. The providers themselves are still to come;
//! for now this holds [`schema`], the registry metadata (identifiers, create-only,
//! write-only and read-only properties) they will rely on.

pub mod schema;
