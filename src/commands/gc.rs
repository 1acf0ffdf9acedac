//! `cdkd gc`: reclaim one region's cdkd-owned asset storage, and the stranded custom-resource
//! response placeholders in the state bucket.
//!
//! Assets are content-addressed and never deleted by `destroy` (another stack, or a rollback,
//! may use the same hash), so the asset bucket and container repository only grow. cdkd can
//! collect them because its records say exactly what is in use. Deleting is the irreversible
//! direction, so every doubt keeps:
//! - the storage's names come from the region's bootstrap marker (no marker: the region is not
//!   opted in, and the CDK bootstrap's storage is never touched);
//! - every state record in the whole bucket is scanned (any prefix, any region), and one that
//!   cannot be read or parsed aborts the run before anything is deleted;
//! - any stack lock in the bucket aborts the run: a deploy in flight may have published assets
//!   its record does not name yet (a crashed run's lock: `cdkd force-unlock`);
//! - nothing younger than `--older-than` (30 days by default) is deleted, referenced or not;
//! - a placeholder is stranded only once older than the longest a handler may take to answer
//!   (one hour) as well; with no lock in the bucket no run is waiting for one. Each goes with
//!   its noncurrent versions (a late answer may hold a handler's secret).

use std::time::Duration;

use aws_sdk_ecr::types::ImageIdentifier;
use aws_sdk_s3::types::ObjectIdentifier;
use serde_json::{json, Value};

use super::asset_storage::{age_of, delete_batch, get_object, list_keys, read_marker, Listed};
use super::Session;
use crate::assets::redirect::Marker;
use crate::assets::references::{References, Scanner};
use crate::aws::{classify, AwsError, ErrorKind};
use crate::cli::GcArgs;
use crate::error::{Error, ExitStatus, Result};
use crate::state::keys::bootstrap_marker_key;
use crate::state::purge::{purge_noncurrent_versions, render_purge_warning};
use crate::ui;

/// Where custom-resource handlers answer (the bucket root, as the spec lays it out).
const PLACEHOLDER_PREFIX: &str = "custom-resource-responses/";
/// The longest a custom-resource handler may take to answer.
const PLACEHOLDER_MIN_AGE: Duration = Duration::from_secs(3600);
const DEFAULT_OLDER_THAN: Duration = Duration::from_secs(30 * 86_400);

/// One thing to delete.
#[derive(Debug, Clone)]
struct Candidate {
    /// The object key, or the image digest.
    id: String,
    tags: Vec<String>,
    size: i64,
    age: Duration,
}

pub async fn run(session: &Session, args: &GcArgs) -> Result<ExitStatus> {
    let older_than = match &args.older_than {
        Some(text) => super::events::parse_duration(text)?,
        None => DEFAULT_OLDER_THAN,
    };
    let clients = session.clients().await;
    let region = clients.default_region().ok_or_else(|| {
        Error::Usage("no region to collect: pass --region or set AWS_REGION".into())
    })?;
    let state = session.state_bucket().await?;
    let state_s3 = clients.s3(Some(&state.region));
    let keys = list_keys(&state_s3, &state.name, "")
        .await?
        .ok_or_else(|| Error::Usage(format!("state bucket {} does not exist", state.name)))?;

    let locks: Vec<&String> = keys
        .iter()
        .map(|(k, _, _)| k)
        .filter(|k| k.ends_with("/lock.json"))
        .collect();
    if let Some(first) = locks.first() {
        return Err(Error::Usage(format!(
            "refusing to collect while {} stack lock(s) exist (s3://{}/{first}{}): a deploy in \
             flight may have published assets its record does not name yet; wait for it, or \
             clear a crashed run's lock with `cdkd force-unlock`, then run `cdkd gc` again",
            locks.len(),
            state.name,
            if locks.len() > 1 { ", ..." } else { "" }
        )));
    }

    let marker_key = bootstrap_marker_key(&region);
    let marker = read_marker(&state_s3, &state.name, &marker_key).await?;
    let placeholders = stranded_placeholders(&keys, older_than);
    let (objects, images) = match &marker {
        Some(m) => {
            let refs = scan_records(&state_s3, &state.name, &keys, m).await?;
            let objects = object_candidates(clients, &region, m, &refs, older_than).await?;
            let images = image_candidates(clients, &region, m, &refs, older_than).await?;
            (objects, images)
        }
        None => (Vec::new(), Vec::new()),
    };
    let bucket = marker.as_ref().map(|m| m.asset_bucket.clone());
    let repository = marker.as_ref().and_then(|m| m.container_repository.clone());

    let nothing = objects.is_empty() && images.is_empty() && placeholders.is_empty();
    let plan = || {
        let list = |c: &[Candidate]| {
            c.iter()
                .map(|c| json!({"id": c.id, "tags": c.tags, "size": c.size, "ageSeconds": c.age.as_secs()}))
                .collect::<Vec<_>>()
        };
        let plan = json!({
            "region": region,
            "dryRun": args.dry_run,
            "assetBucket": bucket,
            "containerRepository": repository,
            "objects": list(&objects),
            "images": list(&images),
            "placeholders": list(&placeholders),
        });
        ui::output(serde_json::to_string_pretty(&plan).unwrap_or_default());
    };
    if args.json && (args.dry_run || nothing) {
        plan();
        return Ok(ExitStatus::Success);
    }
    if !args.json && marker.is_none() {
        ui::info(format!(
            "{region} is not opted in to cdkd asset storage (no s3://{}/{marker_key}): no asset \
             to collect (the CDK bootstrap's storage is `cdk gc`'s)",
            state.name
        ));
    }
    if nothing {
        ui::info(format!(
            "Nothing to collect in {region}: every asset is referenced by a record or newer \
             than {}",
            args.older_than.as_deref().unwrap_or("30d")
        ));
        return Ok(ExitStatus::Success);
    }
    let lines = plan_lines(
        &state.name,
        &bucket,
        &repository,
        &objects,
        &images,
        &placeholders,
    );
    let total: i64 = objects
        .iter()
        .chain(&images)
        .chain(&placeholders)
        .map(|c| c.size)
        .sum();
    let summary = format!(
        "{} object(s), {} image(s), {} placeholder(s): {} reclaimable",
        objects.len(),
        images.len(),
        placeholders.len(),
        bytes(total)
    );
    if args.dry_run {
        ui::output(format!("Would delete, in {region}:"));
        for l in &lines {
            ui::output(format!("  {l}"));
        }
        ui::output(format!("{summary} (dry run: nothing deleted)"));
        return Ok(ExitStatus::Success);
    }
    for l in &lines {
        ui::info(format!("  {l}"));
    }
    // --json changes what is printed, never whether a delete is asked for.
    super::orphan_state::confirm(session, &format!("Delete {summary}?"))?;
    delete_all(
        &state,
        clients,
        &region,
        &marker,
        &objects,
        &images,
        &placeholders,
    )
    .await?;
    if args.json {
        plan();
    } else {
        ui::info(format!("gc: deleted {summary}"));
    }
    Ok(ExitStatus::Success)
}

async fn delete_all(
    state: &crate::state::bucket::StateBucket,
    clients: &crate::aws::Clients,
    region: &str,
    marker: &Option<Marker>,
    objects: &[Candidate],
    images: &[Candidate],
    placeholders: &[Candidate],
) -> Result<()> {
    if let Some(m) = marker {
        delete_objects(&clients.s3(Some(region)), &m.asset_bucket, objects).await?;
        if let Some(repo) = &m.container_repository {
            delete_images(&clients.ecr(Some(region)), repo, images).await?;
        }
    }
    let s3 = clients.s3(Some(&state.region));
    delete_objects(&s3, &state.name, placeholders).await?;
    let mut outcomes = Vec::new();
    for p in placeholders {
        outcomes.push(purge_noncurrent_versions(&s3, &state.name, &p.id).await);
    }
    if let Some(w) = render_purge_warning(
        &state.name,
        "custom-resource response placeholder",
        &outcomes,
    ) {
        ui::warn(w);
    }
    Ok(())
}

fn plan_lines(
    state_bucket: &str,
    bucket: &Option<String>,
    repository: &Option<String>,
    objects: &[Candidate],
    images: &[Candidate],
    placeholders: &[Candidate],
) -> Vec<String> {
    let mut out = Vec::new();
    let bucket = bucket.as_deref().unwrap_or_default();
    let repository = repository.as_deref().unwrap_or_default();
    for c in objects {
        out.push(format!(
            "s3://{bucket}/{} ({}, {})",
            c.id,
            bytes(c.size),
            age(c.age)
        ));
    }
    for c in images {
        let tags = if c.tags.is_empty() {
            String::new()
        } else {
            format!(":{}", c.tags.join(","))
        };
        out.push(format!(
            "{repository}{tags}@{} ({}, {})",
            c.id,
            bytes(c.size),
            age(c.age)
        ));
    }
    for c in placeholders {
        out.push(format!(
            "s3://{state_bucket}/{} (stranded placeholder, {})",
            c.id,
            age(c.age)
        ));
    }
    out
}

fn bytes(n: i64) -> String {
    match n {
        n if n >= 1 << 30 => format!("{:.1} GiB", n as f64 / (1u64 << 30) as f64),
        n if n >= 1 << 20 => format!("{:.1} MiB", n as f64 / (1u64 << 20) as f64),
        n if n >= 1 << 10 => format!("{:.1} KiB", n as f64 / 1024.0),
        n => format!("{n} B"),
    }
}

fn age(d: Duration) -> String {
    match d.as_secs() {
        s if s >= 86_400 => format!("{}d old", s / 86_400),
        s if s >= 3600 => format!("{}h old", s / 3600),
        s if s >= 60 => format!("{}m old", s / 60),
        s => format!("{s}s old"),
    }
}

/// What every state record in the bucket references; an unreadable one aborts.
async fn scan_records(
    s3: &aws_sdk_s3::Client,
    bucket: &str,
    keys: &[Listed],
    marker: &Marker,
) -> Result<References> {
    let scanner = Scanner::new(
        &marker.asset_bucket,
        marker.container_repository.as_deref().unwrap_or_default(),
    );
    let mut refs = References::default();
    for (key, _, _) in keys.iter().filter(|(k, _, _)| k.ends_with("/state.json")) {
        // Destroyed since the listing: its references are gone with it.
        let Some(object) = get_object(s3, bucket, key).await? else {
            continue;
        };
        let record: Value = serde_json::from_slice(&object.body).map_err(|e| {
            Error::Usage(format!(
                "s3://{bucket}/{key} is not valid JSON ({e}): gc must know every referenced \
                 asset before deleting any, so nothing was deleted; repair or remove that record \
                 (`cdkd state show` names its stack), then run `cdkd gc` again"
            ))
        })?;
        scanner.scan(&record, &mut refs);
    }
    Ok(refs)
}

fn stranded_placeholders(keys: &[Listed], older_than: Duration) -> Vec<Candidate> {
    let min_age = older_than.max(PLACEHOLDER_MIN_AGE);
    keys.iter()
        .filter(|(k, _, _)| k.starts_with(PLACEHOLDER_PREFIX))
        .filter_map(|(k, size, age)| {
            Some(Candidate {
                id: k.clone(),
                tags: Vec::new(),
                size: *size,
                age: old_enough(*age, min_age)?,
            })
        })
        .collect()
}

/// `age` when it is at least `guard`; an unknown age never is.
fn old_enough(age: Option<Duration>, guard: Duration) -> Option<Duration> {
    age.filter(|a| *a >= guard)
}

async fn object_candidates(
    clients: &crate::aws::Clients,
    region: &str,
    marker: &Marker,
    refs: &References,
    older_than: Duration,
) -> Result<Vec<Candidate>> {
    let s3 = clients.s3(Some(region));
    let Some(listed) = list_keys(&s3, &marker.asset_bucket, "").await? else {
        ui::warn(format!(
            "asset bucket {} does not exist; no object to collect",
            marker.asset_bucket
        ));
        return Ok(Vec::new());
    };
    Ok(listed
        .into_iter()
        .filter(|(k, _, _)| !refs.uses_key(k))
        .filter_map(|(k, size, age)| {
            let age = old_enough(age, older_than)?;
            Some(Candidate {
                id: k,
                tags: Vec::new(),
                size,
                age,
            })
        })
        .collect())
}

async fn image_candidates(
    clients: &crate::aws::Clients,
    region: &str,
    marker: &Marker,
    refs: &References,
    older_than: Duration,
) -> Result<Vec<Candidate>> {
    let Some(repository) = &marker.container_repository else {
        return Ok(Vec::new());
    };
    let ecr = clients.ecr(Some(region));
    let mut out = Vec::new();
    let mut pages = ecr
        .describe_images()
        .repository_name(repository)
        .into_paginator()
        .send();
    while let Some(page) = pages.next().await {
        let page = match page {
            Ok(p) => p,
            Err(e) if classify(&e) == ErrorKind::NotFound => {
                ui::warn(format!(
                    "container repository {repository} does not exist; no image to collect"
                ));
                return Ok(Vec::new());
            }
            Err(e) => return Err(AwsError::call("ecr", "DescribeImages", repository, &e).into()),
        };
        for image in page.image_details() {
            let Some(digest) = image.image_digest() else {
                continue;
            };
            let tags: Vec<String> = image.image_tags().to_vec();
            let Some(age) = old_enough(age_of(image.image_pushed_at()), older_than) else {
                continue;
            };
            if !refs.uses_image(digest, &tags) {
                out.push(Candidate {
                    id: digest.to_owned(),
                    tags,
                    size: image.image_size_in_bytes().unwrap_or(0),
                    age,
                });
            }
        }
    }
    Ok(out)
}

async fn delete_objects(s3: &aws_sdk_s3::Client, bucket: &str, items: &[Candidate]) -> Result<()> {
    for chunk in items.chunks(1000) {
        let ids = chunk
            .iter()
            .filter_map(|c| ObjectIdentifier::builder().key(&c.id).build().ok())
            .collect();
        delete_batch(s3, bucket, ids).await?;
    }
    Ok(())
}

async fn delete_images(
    ecr: &aws_sdk_ecr::Client,
    repository: &str,
    items: &[Candidate],
) -> Result<()> {
    for chunk in items.chunks(100) {
        let ids: Vec<ImageIdentifier> = chunk
            .iter()
            .map(|c| ImageIdentifier::builder().image_digest(&c.id).build())
            .collect();
        let out = ecr
            .batch_delete_image()
            .repository_name(repository)
            .set_image_ids(Some(ids))
            .send()
            .await
            .map_err(|e| AwsError::call("ecr", "BatchDeleteImage", repository, &e))?;
        if let Some(f) = out.failures().first() {
            return Err(Error::Partial(format!(
                "{repository}: {} ({} of {} images not deleted); run `cdkd gc` again",
                f.failure_reason().unwrap_or("BatchDeleteImage failed"),
                out.failures().len(),
                chunk.len()
            )));
        }
    }
    Ok(())
}
