//! Per-resource operation deadlines: `--resource-timeout` and `--resource-warn-after`, with
//! upstream cdkd's meaning.
//!
//! Every create, update and delete the engine sends to a provider runs under a wall-clock
//! budget. Past the warn-after mark one line says the resource is still being waited for; past
//! the timeout the operation is abandoned and the resource fails (so the deploy's usual failure
//! path, rollback unless `--no-rollback`, follows). The budget wraps the provider call from the
//! outside, so the Cloud Control poller, the custom-resource response wait and every SDK
//! provider's stabilization wait honour it without each carrying it. A provider whose own wait
//! is longer by design (a custom resource answers within an hour) reports it through
//! [`super::Provider::min_operation_timeout`], and only a per-type `TYPE=DURATION` cuts it.
//!
//! The budget is per process: one cdkd process runs one command, whose flags [`configure`]
//! sets once. A process that never configures (library tests) gets the defaults.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use super::{
    Provider, ProviderContext, ProviderError, Provisioned, ResourceRequest, UpdateOutcome,
};

/// The warn-after mark when no flag sets one (upstream's 5 minutes).
pub const DEFAULT_WARN_AFTER: Duration = Duration::from_secs(5 * 60);
/// The timeout when no flag sets one (upstream's 30 minutes).
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30 * 60);

/// What kind of operation runs under the deadline, for its messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    Create,
    Update,
    Delete,
}

impl Operation {
    fn verb(self) -> &'static str {
        match self {
            Operation::Create => "creating",
            Operation::Update => "updating",
            Operation::Delete => "deleting",
        }
    }

    fn name(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
        }
    }
}

/// One flag's values: the last bare duration, and the `TYPE=DURATION` overrides.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Budget {
    pub global: Option<Duration>,
    pub by_type: BTreeMap<String, Duration>,
}

impl Budget {
    fn for_type(&self, resource_type: &str) -> Option<Duration> {
        self.by_type.get(resource_type).copied()
    }
}

/// The two flags together, validated ([`Deadlines::new`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Deadlines {
    warn_after: Budget,
    timeout: Budget,
}

/// The two budgets of one operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    pub warn_after: Duration,
    pub timeout: Duration,
}

impl Deadlines {
    /// Validates the pair as upstream does: a warn-after at or past its timeout is refused when
    /// the user set both; when only the timeout was set (or the warn-after is inherited), the
    /// warn-after is lowered to half the timeout (at most the default) with a notice in the
    /// returned list; a warn-after alone at or past the default timeout is refused (the
    /// timeout is never raised behind the user's back).
    pub fn new(warn_after: Budget, timeout: Budget) -> Result<(Deadlines, Vec<String>), String> {
        let mut warn_after = warn_after;
        let mut notices = Vec::new();
        match (warn_after.global, timeout.global) {
            (Some(w), Some(t)) if w >= t => {
                return Err(format!(
                    "--resource-warn-after {} must be less than --resource-timeout {}",
                    format_duration(w),
                    format_duration(t)
                ))
            }
            (None, Some(t)) if DEFAULT_WARN_AFTER >= t => {
                let lowered = lowered_warn(t);
                warn_after.global = Some(lowered);
                notices.push(format!(
                    "--resource-warn-after defaulted to {} because --resource-timeout {} is \
                     shorter than the {} default; pass --resource-warn-after to choose",
                    format_duration(lowered),
                    format_duration(t),
                    format_duration(DEFAULT_WARN_AFTER)
                ));
            }
            (Some(w), None) if w >= DEFAULT_TIMEOUT => {
                return Err(format!(
                    "--resource-warn-after {} must be less than --resource-timeout (default {}); \
                     pass --resource-timeout with it to raise the deadline",
                    format_duration(w),
                    format_duration(DEFAULT_TIMEOUT)
                ))
            }
            _ => {}
        }
        let types: Vec<String> = warn_after
            .by_type
            .keys()
            .chain(timeout.by_type.keys())
            .cloned()
            .collect();
        for t in types {
            let own_warn = warn_after.by_type.get(&t).copied();
            let own_timeout = timeout.by_type.get(&t).copied();
            let warn = own_warn.or(warn_after.global).unwrap_or(DEFAULT_WARN_AFTER);
            let limit = own_timeout.or(timeout.global).unwrap_or(DEFAULT_TIMEOUT);
            if warn < limit {
                continue;
            }
            if let Some(w) = own_warn {
                return Err(format!(
                    "--resource-warn-after {t}={} must be less than the --resource-timeout of \
                     {t} ({}); pass --resource-timeout {t}=<duration> with it",
                    format_duration(w),
                    format_duration(limit)
                ));
            }
            let lowered = lowered_warn(limit);
            warn_after.by_type.insert(t.clone(), lowered);
            notices.push(format!(
                "--resource-warn-after for {t} defaulted to {} because its --resource-timeout \
                 ({}) is shorter than the inherited {}; pass --resource-warn-after {t}=<duration> \
                 to choose",
                format_duration(lowered),
                format_duration(limit),
                format_duration(warn)
            ));
        }
        Ok((
            Deadlines {
                warn_after,
                timeout,
            },
            notices,
        ))
    }

    /// The budgets of one operation on `resource_type`: a per-type override wins; else the
    /// longer of the provider's own minimum and the global (or default) timeout. The
    /// warn-after stays below the timeout.
    pub fn limits(&self, resource_type: &str, provider_minimum: Option<Duration>) -> Limits {
        let timeout = self.timeout.for_type(resource_type).unwrap_or_else(|| {
            let global = self.timeout.global.unwrap_or(DEFAULT_TIMEOUT);
            provider_minimum.map_or(global, |m| m.max(global))
        });
        let warn_after = self
            .warn_after
            .for_type(resource_type)
            .or(self.warn_after.global)
            .unwrap_or(DEFAULT_WARN_AFTER);
        let warn_after = if warn_after >= timeout {
            lowered_warn(timeout)
        } else {
            warn_after
        };
        Limits {
            warn_after,
            timeout,
        }
    }
}

/// Half the timeout, at most the default warn-after, at least a millisecond.
fn lowered_warn(timeout: Duration) -> Duration {
    (timeout / 2)
        .min(DEFAULT_WARN_AFTER)
        .max(Duration::from_millis(1))
}

static CONFIGURED: OnceLock<Deadlines> = OnceLock::new();

/// Sets this process's deadlines (the command's flags); a second call is ignored.
pub fn configure(deadlines: Deadlines) {
    let _ = CONFIGURED.set(deadlines);
}

fn current() -> &'static Deadlines {
    static DEFAULTS: OnceLock<Deadlines> = OnceLock::new();
    CONFIGURED
        .get()
        .unwrap_or_else(|| DEFAULTS.get_or_init(Deadlines::default))
}

/// What the deadline needs to know about the operation it guards.
pub struct Guarded<'a> {
    pub operation: Operation,
    pub logical_id: &'a str,
    pub resource_type: &'a str,
    pub region: &'a str,
    /// The provider's own minimum ([`super::Provider::min_operation_timeout`]).
    pub provider_minimum: Option<Duration>,
}

/// `provider.create` under the deadline.
pub async fn create(
    provider: &dyn Provider,
    ctx: &ProviderContext<'_>,
    req: &ResourceRequest<'_>,
) -> Result<Provisioned, ProviderError> {
    let what = Guarded::of(Operation::Create, provider, ctx, req);
    guard(what, provider.create(ctx, req)).await
}

/// `provider.update` under the deadline.
pub async fn update(
    provider: &dyn Provider,
    ctx: &ProviderContext<'_>,
    req: &ResourceRequest<'_>,
    physical_id: &str,
    previous: &Map<String, Value>,
) -> Result<UpdateOutcome, ProviderError> {
    let what = Guarded::of(Operation::Update, provider, ctx, req);
    guard(what, provider.update(ctx, req, physical_id, previous)).await
}

/// `provider.delete` under the deadline.
pub async fn delete(
    provider: &dyn Provider,
    ctx: &ProviderContext<'_>,
    req: &ResourceRequest<'_>,
    physical_id: &str,
) -> Result<(), ProviderError> {
    let what = Guarded::of(Operation::Delete, provider, ctx, req);
    guard(what, provider.delete(ctx, req, physical_id)).await
}

impl<'a> Guarded<'a> {
    fn of(
        operation: Operation,
        provider: &dyn Provider,
        ctx: &ProviderContext<'a>,
        req: &ResourceRequest<'a>,
    ) -> Guarded<'a> {
        Guarded {
            operation,
            logical_id: req.logical_id,
            resource_type: req.resource_type,
            region: ctx.region,
            provider_minimum: provider.min_operation_timeout(),
        }
    }
}

/// Runs `operation` under this process's deadline for `what`: one warning line at the
/// warn-after mark, [`ProviderError::Timeout`] at the timeout (the future is dropped, which
/// stops its polling).
pub async fn guard<T, F>(what: Guarded<'_>, operation: F) -> Result<T, ProviderError>
where
    F: Future<Output = Result<T, ProviderError>>,
{
    let limits = current().limits(what.resource_type, what.provider_minimum);
    run_within(&what, limits, operation).await
}

async fn run_within<T, F>(
    what: &Guarded<'_>,
    limits: Limits,
    operation: F,
) -> Result<T, ProviderError>
where
    F: Future<Output = Result<T, ProviderError>>,
{
    let started = Instant::now();
    let deadline = tokio::time::sleep(limits.timeout);
    let warn = tokio::time::sleep(limits.warn_after);
    tokio::pin!(operation, deadline, warn);
    let mut warned = false;
    loop {
        tokio::select! {
            biased;
            result = &mut operation => return result,
            () = &mut deadline => return Err(timed_out(what, limits.timeout)),
            () = &mut warn, if !warned => {
                warned = true;
                crate::ui::warn(format!(
                    "{} ({}) has been {} for {}: still waiting (--resource-warn-after {}; \
                     --resource-timeout {} ends it)",
                    what.logical_id,
                    what.resource_type,
                    what.operation.verb(),
                    format_elapsed(started.elapsed()),
                    format_duration(limits.warn_after),
                    format_duration(limits.timeout),
                ));
            }
        }
    }
}

fn timed_out(what: &Guarded<'_>, timeout: Duration) -> ProviderError {
    ProviderError::Timeout {
        logical_id: what.logical_id.to_owned(),
        resource_type: what.resource_type.to_owned(),
        seconds: timeout.as_secs(),
        detail: format!(
            "{} in {} exceeded --resource-timeout {} and was abandoned (it may still complete \
             in AWS); pass --resource-timeout {}=<duration> to give this type longer",
            what.operation.name(),
            what.region,
            format_duration(timeout),
            what.resource_type
        ),
    }
}

/// A time that has passed, in whole seconds from one second on (`2s`, `5m`).
fn format_elapsed(d: Duration) -> String {
    if d >= Duration::from_secs(1) {
        format_duration(Duration::from_secs(d.as_secs()))
    } else {
        format_duration(Duration::from_millis(d.as_millis() as u64))
    }
}

/// `90s`, `5m`, `1h`, `1.5s`: the flags' own grammar, so a message can be pasted back.
pub fn format_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms % 3_600_000 == 0 && ms > 0 {
        format!("{}h", ms / 3_600_000)
    } else if ms % 60_000 == 0 && ms > 0 {
        format!("{}m", ms / 60_000)
    } else if ms % 1000 == 0 {
        format!("{}s", ms / 1000)
    } else {
        format!("{}s", d.as_secs_f64())
    }
}

/// Parses `30s`, `5m`, `1h`, `1.5h`: a positive number and one unit.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let bad = || {
        format!(
            "invalid duration {text:?}: expected <number>s, <number>m or <number>h (e.g. 30s, \
             5m, 1h)"
        )
    };
    let unit = text.chars().last().ok_or_else(bad)?;
    let scale = match unit {
        's' => 1.0,
        'm' => 60.0,
        'h' => 3600.0,
        _ => return Err(bad()),
    };
    let number = &text[..text.len() - 1];
    if number.is_empty() || !number.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return Err(bad());
    }
    let value: f64 = number.parse().map_err(|_| bad())?;
    if !value.is_finite() || value <= 0.0 {
        return Err(format!(
            "invalid duration {text:?}: it must be greater than zero"
        ));
    }
    let ms = (value * scale * 1000.0).round();
    if ms < 1.0 {
        return Err(format!(
            "invalid duration {text:?}: it must be at least 1 ms"
        ));
    }
    Ok(Duration::from_millis(ms as u64))
}

/// One value of `--resource-timeout` / `--resource-warn-after`: a bare duration (the global
/// default, the last one wins) or `TYPE=DURATION` (that resource type only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token {
    Global(Duration),
    Type(String, Duration),
}

/// Parses one flag value. The type is checked for shape (`AWS::Service::Resource`, or a
/// custom resource's `Custom::Name`), so a typo is refused instead of never matching.
pub fn parse_token(text: &str) -> Result<Token, String> {
    let Some((ty, duration)) = text.split_once('=') else {
        return parse_duration(text).map(Token::Global);
    };
    let ty = ty.trim();
    let parts: Vec<&str> = ty.split("::").collect();
    let shaped = (2..=3).contains(&parts.len())
        && parts.iter().all(|p| {
            p.chars().next().is_some_and(|c| c.is_ascii_uppercase())
                && p.chars().all(|c| c.is_ascii_alphanumeric())
        })
        && (parts.len() == 3 || parts[0] == "Custom");
    if !shaped {
        return Err(format!(
            "{text:?}: the left-hand side must be a resource type like AWS::Service::Resource \
             or Custom::Name (got {ty:?})"
        ));
    }
    let duration = parse_duration(duration).map_err(|e| format!("{text:?}: {e}"))?;
    Ok(Token::Type(ty.to_owned(), duration))
}

/// Folds a flag's tokens into its [`Budget`].
pub fn budget(tokens: &[Token]) -> Budget {
    let mut budget = Budget::default();
    for token in tokens {
        match token {
            Token::Global(d) => budget.global = Some(*d),
            Token::Type(t, d) => {
                budget.by_type.insert(t.clone(), *d);
            }
        }
    }
    budget
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: u64) -> Duration {
        Duration::from_secs(s)
    }

    #[test]
    fn durations_parse_in_the_flags_grammar_and_print_back() {
        assert_eq!(parse_duration("30s"), Ok(secs(30)));
        assert_eq!(parse_duration("5m"), Ok(secs(300)));
        assert_eq!(parse_duration("1.5h"), Ok(secs(5400)));
        assert_eq!(parse_duration("0.5s"), Ok(Duration::from_millis(500)));
        for bad in ["30", "0s", "-5m", "5d", "m", "", "1e3s"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
        assert_eq!(format_duration(secs(5400)), "90m");
        assert_eq!(format_duration(secs(3600)), "1h");
        assert_eq!(format_duration(secs(3)), "3s");
        assert_eq!(format_duration(Duration::from_millis(1500)), "1.5s");
    }

    #[test]
    fn tokens_are_a_global_duration_or_a_type_override() {
        assert_eq!(parse_token("2m"), Ok(Token::Global(secs(120))));
        assert_eq!(
            parse_token("AWS::CloudFront::Distribution=1h"),
            Ok(Token::Type(
                "AWS::CloudFront::Distribution".into(),
                secs(3600)
            ))
        );
        assert_eq!(
            parse_token("Custom::Seeder=10s"),
            Ok(Token::Type("Custom::Seeder".into(), secs(10)))
        );
        for bad in [
            "s3:bucket=1m",
            "AWS::S3=1m",
            "AWS::S3::Bucket=",
            "AWS::S3::Bucket=5",
        ] {
            assert!(parse_token(bad).is_err(), "{bad}");
        }
        let b = budget(&[
            Token::Global(secs(1)),
            Token::Type("AWS::S3::Bucket".into(), secs(9)),
            Token::Global(secs(2)),
        ]);
        assert_eq!(b.global, Some(secs(2)), "the last bare value wins");
        assert_eq!(b.by_type["AWS::S3::Bucket"], secs(9));
    }

    #[test]
    fn the_pair_is_validated_and_an_inherited_warn_after_is_lowered() {
        let only = |t: Duration| Budget {
            global: Some(t),
            by_type: BTreeMap::new(),
        };
        assert!(Deadlines::new(only(secs(60)), only(secs(60))).is_err());
        assert!(Deadlines::new(only(secs(3600)), Budget::default()).is_err());
        let (d, notices) = Deadlines::new(Budget::default(), only(secs(4))).expect("valid");
        assert_eq!(notices.len(), 1, "{notices:?}");
        assert_eq!(d.limits("AWS::SQS::Queue", None).warn_after, secs(2));
        let mut per_type = Budget::default();
        per_type.by_type.insert("AWS::SQS::Queue".into(), secs(10));
        assert!(Deadlines::new(per_type.clone(), only(secs(5))).is_err());
        let (d, notices) = Deadlines::new(Budget::default(), per_type).expect("valid");
        assert_eq!(notices.len(), 1);
        let l = d.limits("AWS::SQS::Queue", None);
        assert_eq!((l.warn_after, l.timeout), (secs(5), secs(10)));
    }

    #[test]
    fn a_provider_minimum_lifts_the_global_timeout_but_not_a_type_override() {
        let mut timeout = Budget {
            global: Some(secs(5)),
            by_type: BTreeMap::new(),
        };
        timeout.by_type.insert("Custom::Fast".into(), secs(2));
        let (d, _) = Deadlines::new(Budget::default(), timeout).expect("valid");
        let hour = Some(secs(3600));
        assert_eq!(d.limits("Custom::Slow", hour).timeout, secs(3600));
        assert_eq!(d.limits("Custom::Fast", hour).timeout, secs(2));
        assert_eq!(d.limits("AWS::SQS::Queue", None).timeout, secs(5));
        let l = Deadlines::default().limits("AWS::SQS::Queue", None);
        assert_eq!(
            (l.warn_after, l.timeout),
            (DEFAULT_WARN_AFTER, DEFAULT_TIMEOUT)
        );
    }

    #[tokio::test]
    async fn an_operation_past_its_timeout_fails_naming_the_flag() {
        let what = Guarded {
            operation: Operation::Create,
            logical_id: "Slow",
            resource_type: "AWS::SQS::Queue",
            region: "us-east-1",
            provider_minimum: None,
        };
        let limits = Limits {
            warn_after: Duration::from_millis(10),
            timeout: Duration::from_millis(60),
        };
        let never = std::future::pending::<Result<(), ProviderError>>();
        let err = run_within(&what, limits, never)
            .await
            .expect_err("times out");
        let text = err.to_string();
        assert!(
            text.contains("CREATE in us-east-1 exceeded --resource-timeout 0.06s"),
            "{text}"
        );
        let quick = async { Ok::<_, ProviderError>(7) };
        assert_eq!(run_within(&what, limits, quick).await.expect("in time"), 7);
    }
}
