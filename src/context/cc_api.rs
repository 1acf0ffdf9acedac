//! `cc-api-provider`: the generic lookup newer constructs use (`Role.fromLookup` and friends),
//! through the Cloud Control API: one resource by `exactIdentifier` (GetResource), or the
//! resources of a type whose properties match `propertyMatch` (ListResources, with the
//! `resourceModel` a sub-resource listing needs). The answer is a list with, per resource, the
//! `propertiesToReturn` (dotted paths) and its `Identifier`.

use aws_config::SdkConfig;
use aws_sdk_cloudcontrol::Client;
use serde_json::{Map, Value};

use super::query::{LookupError, Query};

pub async fn lookup(config: &SdkConfig, query: Query<'_>) -> Result<Value, LookupError> {
    let type_name = query.str("typeName")?;
    let exact = query.opt_str("exactIdentifier")?;
    let property_match = query.opt_object("propertyMatch")?;
    if exact.is_some() && property_match.is_some() {
        return Err(LookupError::failed(format!(
            "Provider protocol error: specify either exactIdentifier or propertyMatch, but not both (got {})",
            query.json()
        )));
    }
    if query.opt_bool("ignoreErrorOnMissingContext")? == Some(true) {
        match query.get("dummyValue") {
            None => {
                return Err(LookupError::failed(format!(
                    "Provider protocol error: if ignoreErrorOnMissingContext is set, a dummyValue must be supplied (got {})",
                    query.json()
                )))
            }
            Some(Value::Array(items)) if items.iter().all(Value::is_object) => {}
            Some(other) => {
                return Err(LookupError::failed(format!(
                    "Provider protocol error: dummyValue must be an array of objects (got {other})"
                )))
            }
        }
    }
    let returned = query.opt_strings("propertiesToReturn")?.unwrap_or_default();
    let client = Client::new(config);
    let found = match (exact, property_match) {
        (Some(id), _) => vec![get(&client, type_name, id).await?],
        (None, Some(wanted)) => {
            let model = query.opt_object("resourceModel")?;
            let found = list(&client, type_name, model, wanted).await?;
            check_count(query.opt_str("expectedMatchCount")?, found.len(), wanted)?;
            found
        }
        (None, None) => {
            return Err(LookupError::failed(format!(
                "Provider protocol error: neither exactIdentifier nor propertyMatch is specified in {}.",
                query.json()
            )))
        }
    };
    found
        .iter()
        .map(|(id, props)| answer(id, props, &returned))
        .collect::<Result<Vec<_>, _>>()
        .map(Value::Array)
}

async fn get(client: &Client, type_name: &str, id: &str) -> Result<(String, Value), LookupError> {
    let out = client
        .get_resource()
        .type_name(type_name)
        .identifier(id)
        .send()
        .await
        .map_err(
            |e| match LookupError::call("cloudcontrol", "GetResource", id, &e) {
                LookupError::NotFound(_) => LookupError::not_found(format!(
                    "No resource of type {type_name} with identifier: {id}"
                )),
                LookupError::Failed(m) => LookupError::failed(format!(
                    "Encountered CC API error while getting {type_name} resource {id}: {m}"
                )),
            },
        )?;
    let desc = out.resource_description().ok_or_else(|| {
        LookupError::failed("Unexpected CloudControl API behavior: returned empty response")
    })?;
    Ok(described(desc.identifier(), desc.properties()))
}

async fn list(
    client: &Client,
    type_name: &str,
    model: Option<&Map<String, Value>>,
    wanted: &Map<String, Value>,
) -> Result<Vec<(String, Value)>, LookupError> {
    let mut found = Vec::new();
    let mut token = None;
    let wanted_text = Value::Object(wanted.clone()).to_string();
    loop {
        let out = client
            .list_resources()
            .type_name(type_name)
            .set_resource_model(model.map(|m| Value::Object(m.clone()).to_string()))
            .set_next_token(token)
            .send()
            .await
            .map_err(|e| {
                LookupError::failed(format!(
                    "Could not get resources {wanted_text}: {}",
                    LookupError::call("cloudcontrol", "ListResources", type_name, &e)
                ))
            })?;
        for desc in out.resource_descriptions() {
            let (id, props) = described(desc.identifier(), desc.properties());
            if wanted
                .iter()
                .all(|(path, expected)| at_path(&props, path) == Some(expected))
            {
                found.push((id, props));
            }
        }
        token = out.next_token.filter(|t| !t.is_empty());
        if token.is_none() {
            return Ok(found);
        }
    }
}

fn described(identifier: Option<&str>, properties: Option<&str>) -> (String, Value) {
    let props = properties
        .and_then(|p| serde_json::from_str(p).ok())
        .unwrap_or_else(|| Value::Object(Map::new()));
    (identifier.unwrap_or("*MISSING*").to_owned(), props)
}

/// `expectedMatchCount` against what was found.
pub fn check_count(
    expected: Option<&str>,
    count: usize,
    wanted: &Map<String, Value>,
) -> Result<(), LookupError> {
    let expected = expected.unwrap_or("any");
    let at_least_one = matches!(expected, "at-least-one" | "exactly-one");
    let at_most_one = matches!(expected, "at-most-one" | "exactly-one");
    let text = Value::Object(wanted.clone());
    let said = match expected {
        "at-least-one" => "at least one match",
        "at-most-one" => "at most one match",
        "exactly-one" => "exactly one match",
        _ => "any number of matches",
    };
    if count == 0 && at_least_one {
        return Err(LookupError::not_found(format!(
            "Could not find any resources matching {text}; expected {said}."
        )));
    }
    if count > 1 && at_most_one {
        return Err(LookupError::failed(format!(
            "Found {count} resources matching {text}; expected {said}. Please narrow the search criteria"
        )));
    }
    Ok(())
}

/// The value at a dotted path (`Tags.0.Key`: object fields and list indexes).
pub fn at_path<'a>(value: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.').try_fold(value, |v, part| match v {
        Value::Object(m) => m.get(part),
        Value::Array(items) => part.parse::<usize>().ok().and_then(|i| items.get(i)),
        _ => None,
    })
}

/// One resource's answer: each returned property by its path, plus `Identifier`.
pub fn answer(id: &str, props: &Value, returned: &[String]) -> Result<Value, LookupError> {
    let mut out = Map::new();
    for path in returned {
        let value = at_path(props, path).ok_or_else(|| {
            LookupError::failed(format!(
                "Cannot read field '{path}' of resource {id}: it is not in what Cloud Control returned"
            ))
        })?;
        out.insert(path.clone(), value.clone());
    }
    out.insert("Identifier".into(), Value::String(id.to_owned()));
    Ok(Value::Object(out))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn properties_are_read_by_dotted_path() {
        let props =
            json!({"Arn": "arn:x", "Tags": [{"Key": "k", "Value": "v"}], "Nested": {"A": 1}});
        assert_eq!(at_path(&props, "Tags.0.Value"), Some(&json!("v")));
        assert_eq!(at_path(&props, "Nested.A"), Some(&json!(1)));
        assert_eq!(at_path(&props, "Nested.B"), None);
        let got = answer("id-1", &props, &["Arn".into(), "Nested.A".into()]).unwrap();
        assert_eq!(
            got,
            json!({"Arn": "arn:x", "Nested.A": 1, "Identifier": "id-1"})
        );
        assert!(answer("id-1", &props, &["Missing".into()]).is_err());
    }

    #[test]
    fn expected_match_counts_are_enforced() {
        let w = Map::new();
        assert!(check_count(None, 0, &w).is_ok());
        assert!(matches!(
            check_count(Some("exactly-one"), 0, &w),
            Err(LookupError::NotFound(_))
        ));
        assert!(matches!(
            check_count(Some("exactly-one"), 2, &w),
            Err(LookupError::Failed(_))
        ));
        assert!(check_count(Some("at-least-one"), 3, &w).is_ok());
        assert!(check_count(Some("at-most-one"), 0, &w).is_ok());
    }
}
