//! Physical names for resources the template leaves unnamed, generated the way CloudFormation
//! does: `{stack}-{logicalId}-{RANDOM}`, shortened to fit each service's length limit and
//! filtered to its character set.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use sha2::{Digest, Sha256};

/// A service's naming rules.
#[derive(Debug, Clone, Copy)]
pub struct NameRules {
    pub max_len: usize,
    pub lowercase: bool,
    /// Characters the service accepts besides ASCII letters and digits.
    pub extra_chars: &'static str,
    /// A required ending, such as `.fifo` (counted in `max_len`).
    pub suffix: &'static str,
}

pub const S3_BUCKET: NameRules = NameRules {
    max_len: 63,
    lowercase: true,
    extra_chars: "-",
    suffix: "",
};
pub const SQS_QUEUE: NameRules = NameRules {
    max_len: 80,
    lowercase: false,
    extra_chars: "-_",
    suffix: "",
};
pub const SQS_FIFO_QUEUE: NameRules = NameRules {
    max_len: 80,
    lowercase: false,
    extra_chars: "-_",
    suffix: ".fifo",
};
pub const SNS_TOPIC: NameRules = NameRules {
    max_len: 256,
    lowercase: false,
    extra_chars: "-_",
    suffix: "",
};
pub const SNS_FIFO_TOPIC: NameRules = NameRules {
    max_len: 256,
    lowercase: false,
    extra_chars: "-_",
    suffix: ".fifo",
};
pub const IAM_NAME: NameRules = NameRules {
    max_len: 64,
    lowercase: false,
    extra_chars: "+=,.@-_",
    suffix: "",
};
pub const IAM_POLICY_NAME: NameRules = NameRules {
    max_len: 128,
    lowercase: false,
    extra_chars: "+=,.@-_",
    suffix: "",
};
pub const LAMBDA_FUNCTION: NameRules = NameRules {
    max_len: 64,
    lowercase: false,
    extra_chars: "-_",
    suffix: "",
};
pub const DYNAMODB_TABLE: NameRules = NameRules {
    max_len: 255,
    lowercase: false,
    extra_chars: "-_.",
    suffix: "",
};
pub const LOG_GROUP: NameRules = NameRules {
    max_len: 512,
    lowercase: false,
    extra_chars: "-_./#",
    suffix: "",
};
pub const SSM_PARAMETER: NameRules = NameRules {
    max_len: 1011,
    lowercase: false,
    extra_chars: "-_.",
    suffix: "",
};
pub const SECRET: NameRules = NameRules {
    max_len: 512,
    lowercase: false,
    extra_chars: "-_/+=.@",
    suffix: "",
};

const RANDOM_LEN: usize = 12;

/// `{stack}-{logicalId}-{RANDOM}{suffix}` within `rules`.
pub fn generate(stack_name: &str, logical_id: &str, rules: NameRules) -> String {
    let name = compose(stack_name, logical_id, &random_token(logical_id), rules);
    let _ = CREATE_TOKEN.try_with(|t| {
        *t.generated.lock().unwrap_or_else(|p| p.into_inner()) = Some(name.clone());
    });
    name
}

/// The create token of the create running in this task (the engine's create-token ledger),
/// and the name [`generate`] made under it.
pub struct CreateToken {
    token: String,
    generated: std::sync::Mutex<Option<String>>,
}

tokio::task_local! {
    static CREATE_TOKEN: CreateToken;
}

/// Runs `create` with `token` as its create token: inside it, [`random_token`] derives its
/// value from the token and the seed instead of the clock, so a re-run of an interrupted
/// create (same token, read back from the ledger) generates the same physical name. Returns
/// the create's result and the name [`generate`] made, if it made one.
pub async fn with_create_token<F: std::future::Future>(
    token: &str,
    create: F,
) -> (F::Output, Option<String>) {
    let scope = CreateToken {
        token: token.to_owned(),
        generated: std::sync::Mutex::new(None),
    };
    CREATE_TOKEN
        .scope(scope, async move {
            let out = create.await;
            let name = CREATE_TOKEN
                .try_with(|t| {
                    t.generated
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .clone()
                })
                .ok()
                .flatten();
            (out, name)
        })
        .await
}

/// `name` without two hyphens in a row, which ELBv2 names and RDS identifiers refuse (a
/// shortened stack name may end with a hyphen, joined to the next part by another).
pub fn single_hyphens(mut name: String) -> String {
    while name.contains("--") {
        name = name.replace("--", "-");
    }
    name
}

/// The deterministic part of [`generate`], for tests and for names derived from a token.
pub fn compose(stack_name: &str, logical_id: &str, token: &str, rules: NameRules) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .filter(|c| c.is_ascii_alphanumeric() || rules.extra_chars.contains(*c))
            .map(|c| {
                if rules.lowercase {
                    c.to_ascii_lowercase()
                } else {
                    c
                }
            })
            .collect()
    };
    let token: String = clean(token);
    let stack = clean(stack_name);
    let logical = clean(logical_id);
    let fixed = token.len() + rules.suffix.len() + 2;
    let budget = rules.max_len.saturating_sub(fixed);
    // Give the logical id at least half the room; the stack name gets what is left.
    let logical_len = logical
        .len()
        .min(budget.saturating_sub(stack.len().min(budget / 2)));
    let stack_len = stack.len().min(budget.saturating_sub(logical_len));
    let mut name = format!(
        "{}-{}-{}",
        &stack[..stack_len],
        &logical[..logical_len],
        token
    );
    if rules.lowercase {
        name = name.to_ascii_lowercase();
    }
    name.push_str(rules.suffix);
    name
}

/// Twelve upper-case letters and digits, unique per call; under [`with_create_token`], derived
/// from the create token and `seed` instead.
pub fn random_token(seed: &str) -> String {
    if let Ok(derived) =
        CREATE_TOKEN.try_with(|t| crate::state::ledger::name_suffix(&t.token, seed))
    {
        return derived;
    }
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let mut hasher = Sha256::new();
    hasher.update(nanos.to_le_bytes());
    hasher.update(std::process::id().to_le_bytes());
    hasher.update(COUNTER.fetch_add(1, Ordering::Relaxed).to_le_bytes());
    hasher.update(seed.as_bytes());
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    hasher
        .finalize()
        .iter()
        .take(RANDOM_LEN)
        .map(|b| ALPHABET[usize::from(*b) % ALPHABET.len()] as char)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_cloudformation_shape_and_limits() {
        let n = compose("MyStack", "MyBucket", "ABCDEF123456", S3_BUCKET);
        assert_eq!(n, "mystack-mybucket-abcdef123456");
        let long = "S".repeat(100);
        for rules in [
            S3_BUCKET,
            SQS_QUEUE,
            SQS_FIFO_QUEUE,
            IAM_NAME,
            LAMBDA_FUNCTION,
        ] {
            let n = compose(&long, &"L".repeat(100), "ABCDEF123456", rules);
            assert!(n.len() <= rules.max_len, "{n} ({})", n.len());
            assert!(n.ends_with(&format!(
                "-{}{}",
                if rules.lowercase {
                    "abcdef123456"
                } else {
                    "ABCDEF123456"
                },
                rules.suffix
            )));
            assert!(
                n.contains("-LLLL") || n.contains("-llll"),
                "logical id kept: {n}"
            );
        }
        assert_eq!(compose("A B", "Q/x", "T", SQS_QUEUE), "AB-Qx-T");
        assert!(compose("s", "q", "T", SQS_FIFO_QUEUE).ends_with(".fifo"));
    }

    #[test]
    fn tokens_are_unique_and_well_formed() {
        let a = random_token("x");
        let b = random_token("x");
        assert_ne!(a, b);
        assert_eq!(a.len(), 12);
        assert!(a
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit()));
    }
}
