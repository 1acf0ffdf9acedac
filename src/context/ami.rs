//! `ami`: the newest image matching the query's owners and filters (`MachineImage.lookup`).

use aws_config::SdkConfig;
use aws_sdk_ec2::types::Filter;
use serde_json::Value;

use super::query::{LookupError, Query};

pub async fn lookup(config: &SdkConfig, query: Query<'_>) -> Result<Value, LookupError> {
    let owners = query.opt_strings("owners")?;
    let mut filters = Vec::new();
    for (name, values) in query.opt_object("filters")?.into_iter().flatten() {
        let values = values
            .as_array()
            .and_then(|vs| {
                vs.iter()
                    .map(|v| v.as_str().map(str::to_owned))
                    .collect::<Option<Vec<_>>>()
            })
            .ok_or_else(|| {
                LookupError::failed(format!(
                    "the ami lookup query's filter `{name}` must be a list of strings"
                ))
            })?;
        filters.push(
            Filter::builder()
                .name(name)
                .set_values(Some(values))
                .build(),
        );
    }
    let images = aws_sdk_ec2::Client::new(config)
        .describe_images()
        .set_owners(owners)
        .set_filters(Some(filters))
        .send()
        .await
        .map_err(|e| LookupError::call("ec2", "DescribeImages", query.json(), &e))?
        .images
        .unwrap_or_default();
    newest(
        images
            .iter()
            .filter_map(|i| Some((i.image_id()?, i.creation_date()))),
    )
    .map(|id| Value::String(id.to_owned()))
    .ok_or_else(|| LookupError::not_found("No AMI found that matched the search criteria"))
}

/// The id with the latest creation date (ISO 8601 strings order as text; an image without a
/// date counts as 1970); the first of equals wins.
pub fn newest<'a>(images: impl Iterator<Item = (&'a str, Option<&'a str>)>) -> Option<&'a str> {
    let mut best: Option<(&str, &str)> = None;
    for (id, date) in images {
        let date = date.unwrap_or("1970");
        if best.is_none_or(|(_, d)| date > d) {
            best = Some((id, date));
        }
    }
    best.map(|(id, _)| id)
}

#[cfg(test)]
mod tests {
    use super::newest;

    #[test]
    fn the_most_recent_image_wins() {
        let images = [
            ("ami-old", Some("2020-01-01T00:00:00.000Z")),
            ("ami-new", Some("2024-05-01T00:00:00.000Z")),
            ("ami-undated", None),
            ("ami-new-too", Some("2024-05-01T00:00:00.000Z")),
        ];
        assert_eq!(newest(images.into_iter()), Some("ami-new"));
        assert_eq!(newest(std::iter::empty()), None);
    }
}
