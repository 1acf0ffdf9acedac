//! Where a stack is deployed: the facts behind the pseudo parameters.

use serde_json::Value;
use sha2::{Digest, Sha256};

use super::error::ResolveErrorKind;

/// An AWS partition and its service URL suffix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Partition {
    /// `aws`, `aws-cn`, `aws-us-gov`, `aws-iso`, `aws-iso-b`, `aws-iso-e`,
    /// `aws-iso-f` or `aws-eusc`.
    pub name: &'static str,
    /// `AWS::URLSuffix` for the partition, e.g. `amazonaws.com.cn`.
    pub url_suffix: &'static str,
}

/// Region-name prefixes of each non-commercial partition, longest first
/// where one prefix extends another.
const PARTITIONS: [(&str, Partition); 7] = [
    ("us-gov-", p("aws-us-gov", "amazonaws.com")),
    ("cn-", p("aws-cn", "amazonaws.com.cn")),
    ("us-isob-", p("aws-iso-b", "sc2s.sgov.gov")),
    ("us-isof-", p("aws-iso-f", "csp.hci.ic.gov")),
    ("us-iso-", p("aws-iso", "c2s.ic.gov")),
    ("eu-isoe-", p("aws-iso-e", "cloud.adc-e.uk")),
    ("eusc-", p("aws-eusc", "amazonaws.eu")),
];

const fn p(name: &'static str, url_suffix: &'static str) -> Partition {
    Partition { name, url_suffix }
}

/// The commercial partition, also used for any region no other matches.
pub const AWS_PARTITION: Partition = p("aws", "amazonaws.com");

/// The partition a region belongs to (the region is compared in lower case).
pub fn partition_for_region(region: &str) -> Partition {
    let region = region.trim().to_ascii_lowercase();
    PARTITIONS
        .iter()
        .find(|(prefix, _)| region.starts_with(prefix))
        .map(|(_, part)| *part)
        .unwrap_or(AWS_PARTITION)
}

/// The deployment target of one stack: what `AWS::Region`, `AWS::AccountId`
/// and the other pseudo parameters evaluate to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolveContext {
    stack_name: String,
    region: String,
    account_id: Option<String>,
    partition: Partition,
    stack_uuid: String,
    stack_id: Option<String>,
}

impl ResolveContext {
    /// A context for `stack_name` in `region` (folded to lower case: AWS
    /// refuses other spellings) and, when known, `account_id`. The
    /// partition and URL suffix follow from the region. `AWS::StackId`
    /// gets an id derived from stack, region and account, stable for the
    /// same inputs; [`ResolveContext::with_stack_id`] overrides it.
    pub fn new(
        stack_name: impl Into<String>,
        region: impl AsRef<str>,
        account_id: Option<String>,
    ) -> Self {
        let stack_name = stack_name.into();
        let region = region.as_ref().trim().to_ascii_lowercase();
        let account_id = account_id.map(|a| a.trim().to_string());
        let partition = partition_for_region(&region);
        let stack_uuid = derived_uuid(&[
            partition.name,
            &region,
            account_id.as_deref().unwrap_or(""),
            &stack_name,
        ]);
        ResolveContext {
            stack_name,
            region,
            account_id,
            partition,
            stack_uuid,
            stack_id: None,
        }
    }

    /// Uses a known stack id: a full `arn:...:stack/<name>/<id>` is taken as
    /// is, anything else as the trailing id part of the ARN.
    pub fn with_stack_id(mut self, id: impl Into<String>) -> Self {
        let id = id.into();
        if id.starts_with("arn:") {
            self.stack_id = Some(id);
        } else {
            self.stack_uuid = id;
        }
        self
    }

    pub fn stack_name(&self) -> &str {
        &self.stack_name
    }

    /// The region, in lower case.
    pub fn region(&self) -> &str {
        &self.region
    }

    pub fn account_id(&self) -> Option<&str> {
        self.account_id.as_deref()
    }

    pub fn partition(&self) -> Partition {
        self.partition
    }

    /// `AWS::StackId`: `arn:{partition}:cloudformation:{region}:{account}:stack/{name}/{id}`;
    /// `None` when the account is unknown (and no full ARN was given).
    pub fn stack_id(&self) -> Option<String> {
        if let Some(id) = &self.stack_id {
            return Some(id.clone());
        }
        let account = self.account_id.as_deref()?;
        Some(format!(
            "arn:{}:cloudformation:{}:{}:stack/{}/{}",
            self.partition.name, self.region, account, self.stack_name, self.stack_uuid
        ))
    }

    /// The value of pseudo parameter `name` (`AWS::...`). `Ok(None)` is
    /// `AWS::NoValue`.
    pub fn pseudo(&self, name: &str) -> Result<Option<Value>, ResolveErrorKind> {
        let s = |v: &str| Ok(Some(Value::String(v.to_string())));
        match name {
            "AWS::Region" => s(&self.region),
            "AWS::Partition" => s(self.partition.name),
            "AWS::URLSuffix" => s(self.partition.url_suffix),
            "AWS::StackName" => s(&self.stack_name),
            "AWS::NotificationARNs" => Ok(Some(Value::Array(Vec::new()))),
            "AWS::NoValue" => Ok(None),
            "AWS::AccountId" => match &self.account_id {
                Some(a) => s(a),
                None => Err(ResolveErrorKind::AccountIdUnknown("AWS::AccountId")),
            },
            "AWS::StackId" => match self.stack_id() {
                Some(id) => s(&id),
                None => Err(ResolveErrorKind::AccountIdUnknown("AWS::StackId")),
            },
            _ => Err(ResolveErrorKind::UnknownPseudoParameter(name.to_string())),
        }
    }
}

/// A UUID-shaped (version 4 layout) id derived from `parts`.
fn derived_uuid(parts: &[&str]) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update(part.as_bytes());
        hasher.update([0u8]);
    }
    let mut b: [u8; 16] = hasher.finalize()[..16].try_into().unwrap_or([0; 16]);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}
