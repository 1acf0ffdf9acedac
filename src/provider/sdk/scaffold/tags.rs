//! CloudFormation `Tags` on update and read-back, the same for every service that tags:
//! what to set (new keys and new values) and what to remove, and the list CloudFormation shows.
//! Keys under the reserved `aws:` prefix belong to AWS and are never removed or shown.

use std::collections::BTreeMap;

use serde_json::{json, Value};

use crate::provider::props::Props;
use crate::provider::sdk::with_properties;
use crate::provider::{ProviderError, ResourceRequest};

/// What an update does to a resource's tags.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct TagChanges {
    /// Tags to set: new keys and keys whose value changed, sorted by key.
    pub set: BTreeMap<String, String>,
    /// Keys to remove, sorted.
    pub remove: Vec<String>,
}

fn reserved(key: &str) -> bool {
    key.starts_with("aws:")
}

/// The changes that take tags from `previous` to `desired` (key/value pairs, in any order).
pub fn changes<'a>(
    previous: impl IntoIterator<Item = (&'a String, &'a String)>,
    desired: impl IntoIterator<Item = (&'a String, &'a String)>,
) -> TagChanges {
    let old: BTreeMap<&String, &String> = previous.into_iter().collect();
    let new: BTreeMap<&String, &String> = desired.into_iter().collect();
    TagChanges {
        set: new
            .iter()
            .filter(|(k, v)| old.get(*k) != Some(*v))
            .map(|(k, v)| ((*k).clone(), (*v).clone()))
            .collect(),
        remove: old
            .keys()
            .filter(|k| !new.contains_key(*k) && !reserved(k))
            .map(|k| (*k).clone())
            .collect(),
    }
}

/// [`changes`] over the `(key, value)` lists `Props::tags` returns.
pub fn list_changes(previous: &[(String, String)], desired: &[(String, String)]) -> TagChanges {
    changes(
        previous.iter().map(|(k, v)| (k, v)),
        desired.iter().map(|(k, v)| (k, v)),
    )
}

/// What an update does to the tags under property `name` (`Tags`, Route 53's
/// `HostedZoneTags`): from the previous properties' list to the request's.
pub fn moved(
    req: &ResourceRequest<'_>,
    previous: &serde_json::Map<String, Value>,
    name: &str,
) -> Result<TagChanges, ProviderError> {
    let before = with_properties(req, previous);
    Ok(list_changes(
        &Props::new(&before).tags_at(name)?,
        &Props::new(req).tags_at(name)?,
    ))
}

/// Moves the tags under property `name` from `previous` to the request's, when they changed:
/// `remove` untags the keys the template dropped, `add` sets the new and changed ones, each
/// called only when it has something to do. Every service spells those two calls its own
/// way; what they are sent is decided here.
pub async fn update<R, FR, A, FA>(
    req: &ResourceRequest<'_>,
    previous: &serde_json::Map<String, Value>,
    name: &str,
    remove: R,
    add: A,
) -> Result<(), ProviderError>
where
    R: FnOnce(Vec<String>) -> FR,
    FR: std::future::Future<Output = Result<(), ProviderError>>,
    A: FnOnce(BTreeMap<String, String>) -> FA,
    FA: std::future::Future<Output = Result<(), ProviderError>>,
{
    if !crate::provider::props::changed(previous, req.properties, name) {
        return Ok(());
    }
    let TagChanges { set, remove: gone } = moved(req, previous, name)?;
    if !gone.is_empty() {
        remove(gone).await?;
    }
    if !set.is_empty() {
        add(set).await?;
    }
    Ok(())
}

/// Tags as CloudFormation lists them, `[{Key, Value}]` sorted by key; `None` when there are
/// none besides the reserved ones.
pub fn value<'a>(tags: impl IntoIterator<Item = (&'a String, &'a String)>) -> Option<Value> {
    let sorted: BTreeMap<&String, &String> =
        tags.into_iter().filter(|(k, _)| !reserved(k)).collect();
    if sorted.is_empty() {
        return None;
    }
    Some(Value::Array(
        sorted
            .into_iter()
            .map(|(k, v)| json!({"Key": k, "Value": v}))
            .collect(),
    ))
}

/// A live resource's tags, as `(key, value)` pairs from its service, into `props` under
/// `name` as CloudFormation lists them (nothing when there are none besides reserved ones).
pub fn read_into(
    props: &mut serde_json::Map<String, Value>,
    name: &str,
    pairs: impl IntoIterator<Item = (String, String)>,
) {
    let pairs: Vec<(String, String)> = pairs.into_iter().collect();
    if let Some(list) = value(pairs.iter().map(|(k, v)| (k, v))) {
        props.insert(name.to_owned(), list);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn changes_set_new_and_changed_and_remove_dropped_but_never_reserved() {
        let c = list_changes(
            &t(&[("a", "1"), ("b", "2"), ("aws:x", "y")]),
            &t(&[("b", "3"), ("c", "4")]),
        );
        assert_eq!(c.set, t(&[("b", "3"), ("c", "4")]).into_iter().collect());
        assert_eq!(c.remove, ["a"]);
        assert_eq!(
            list_changes(&t(&[("a", "1")]), &t(&[("a", "1")])),
            TagChanges::default()
        );
    }

    #[test]
    fn value_is_sorted_without_reserved_keys() {
        let tags = t(&[("b", "2"), ("aws:x", "y"), ("a", "1")]);
        assert_eq!(
            value(tags.iter().map(|(k, v)| (k, v))),
            Some(json!([{"Key": "a", "Value": "1"}, {"Key": "b", "Value": "2"}]))
        );
        assert_eq!(
            value(t(&[("aws:x", "y")]).iter().map(|(k, v)| (k, v))),
            None
        );
    }
}
