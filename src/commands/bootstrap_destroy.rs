//! `cdkd bootstrap --destroy`: opt a region back out of cdkd-owned asset storage, the reverse
//! of bootstrap's order: the asset bucket (every version) and the container repository (every
//! image) first, the marker last, so a failure part-way leaves a marker that still names what is
//! left and a re-run finishes the job. With `--include-state-bucket` the state bucket goes too.
//!
//! Refused, before anything is deleted:
//! - while any state record in the bucket names the asset bucket or the repository (a deployed
//!   stack's Lambda code or image would be gone), unless `--force`;
//! - `--include-state-bucket` while any stack has state, or another region's marker is still in
//!   the bucket (its storage would survive with no record of its names).

use serde_json::Value;

use super::asset_storage::{empty_and_delete_bucket, get_object, list_keys, read_marker};
use super::Session;
use crate::aws::{classify, AwsError, ErrorKind};
use crate::cli::BootstrapArgs;
use crate::error::{Error, ExitStatus, Result};
use crate::state::bucket::default_bucket_name;
use crate::state::keys::bootstrap_marker_key;
use crate::state::purge::purge_noncurrent_versions;
use crate::ui;

/// Where bootstrap markers live in the state bucket (outside any state prefix).
const MARKER_PREFIX: &str = "cdkd-bootstrap/";

pub async fn run(session: &Session, args: &BootstrapArgs) -> Result<ExitStatus> {
    let clients = session.clients().await;
    let region = clients.default_region().ok_or_else(|| {
        Error::Usage("no region to tear down: pass --region or set AWS_REGION".into())
    })?;
    let state_bucket = match &session.settings.state_bucket {
        Some(name) => name.clone(),
        None => default_bucket_name(&clients.account_id().await?),
    };
    let state_region = match crate::state::bucket::bucket_region(clients, &state_bucket).await {
        Ok(r) => r,
        Err(crate::state::bucket::BucketError::Missing { .. }) => {
            ui::info(format!(
                "State bucket {state_bucket} does not exist: this account was never \
                 bootstrapped; nothing to delete"
            ));
            return Ok(ExitStatus::Success);
        }
        Err(e) => return Err(e.into()),
    };
    let state_s3 = clients.s3(Some(&state_region));
    let Some(keys) = list_keys(&state_s3, &state_bucket, "").await? else {
        ui::info(format!(
            "State bucket {state_bucket} does not exist; nothing to delete"
        ));
        return Ok(ExitStatus::Success);
    };
    let marker_key = bootstrap_marker_key(&region);
    let marker = read_marker(&state_s3, &state_bucket, &marker_key).await?;
    let records: Vec<&str> = keys
        .iter()
        .map(|(k, _, _)| k.as_str())
        .filter(|k| k.ends_with("/state.json"))
        .collect();

    if marker.is_none() && !args.include_state_bucket {
        ui::info(format!(
            "{region} has no bootstrap marker (s3://{state_bucket}/{marker_key}): it is not \
             opted in to cdkd asset storage, or was torn down already; nothing to delete"
        ));
        return Ok(ExitStatus::Success);
    }
    if let (Some(m), false) = (&marker, args.force) {
        let names: Vec<&str> = std::iter::once(m.asset_bucket.as_str())
            .chain(m.container_repository.as_deref())
            .collect();
        let users = referencing_records(&state_s3, &state_bucket, &records, &names).await?;
        if !users.is_empty() {
            return Err(Error::Usage(format!(
                "refusing to delete {region}'s asset storage ({}): {} state record(s) still \
                 reference it ({}); destroy those stacks first, or pass --force to delete it \
                 anyway",
                names.join(", "),
                users.len(),
                users.join(", ")
            )));
        }
    }
    if args.include_state_bucket {
        if let Some(first) = records.first() {
            return Err(Error::Usage(format!(
                "refusing to delete state bucket {state_bucket}: {} stack record(s) are still \
                 in it (s3://{state_bucket}/{first}{}); destroy every stack (`cdkd destroy`, \
                 `cdkd state destroy`) first",
                records.len(),
                if records.len() > 1 { ", ..." } else { "" }
            )));
        }
        let others: Vec<&str> = keys
            .iter()
            .map(|(k, _, _)| k.as_str())
            .filter(|k| k.starts_with(MARKER_PREFIX) && *k != marker_key)
            .collect();
        if !others.is_empty() {
            return Err(Error::Usage(format!(
                "refusing to delete state bucket {state_bucket}: other regions are still opted \
                 in to cdkd asset storage ({}); run `cdkd bootstrap --destroy --region R` for \
                 each first",
                others.join(", ")
            )));
        }
    }

    let mut plan = Vec::new();
    if let Some(m) = &marker {
        plan.push(format!(
            "asset bucket s3://{} (every object and version)",
            m.asset_bucket
        ));
        if let Some(repo) = &m.container_repository {
            plan.push(format!("container repository {repo} (every image)"));
        }
        plan.push(format!("marker s3://{state_bucket}/{marker_key} (last)"));
    }
    if args.include_state_bucket {
        plan.push(format!(
            "state bucket s3://{state_bucket} (everything in it, every version)"
        ));
    }
    for line in &plan {
        ui::info(format!("  {line}"));
    }
    super::orphan_state::confirm(session, &format!("Delete these ({region})?"))?;

    if let Some(m) = &marker {
        let s3 = clients.s3(Some(&region));
        if empty_and_delete_bucket(&s3, &m.asset_bucket).await? {
            ui::info(format!("Deleted asset bucket {}", m.asset_bucket));
        }
        if let Some(repo) = &m.container_repository {
            delete_repository(&clients.ecr(Some(&region)), repo).await?;
        }
        state_s3
            .delete_object()
            .bucket(&state_bucket)
            .key(&marker_key)
            .send()
            .await
            .map_err(|e| {
                AwsError::call(
                    "s3",
                    "DeleteObject",
                    format!("s3://{state_bucket}/{marker_key}"),
                    &e,
                )
            })?;
        let purge = purge_noncurrent_versions(&state_s3, &state_bucket, &marker_key).await;
        if let Some(why) = purge.failure_description() {
            ui::warn(format!("the marker's earlier versions stay: {why}"));
        }
        ui::info(format!(
            "cdkd asset storage is off in {region}: deploys there publish to the CDK \
             bootstrap's bucket and repository unless it is bootstrapped again"
        ));
    }
    if args.include_state_bucket && empty_and_delete_bucket(&state_s3, &state_bucket).await? {
        ui::info(format!("Deleted state bucket {state_bucket}"));
    }
    Ok(ExitStatus::Success)
}

/// The records (by key) whose text names any of `names`.
async fn referencing_records(
    s3: &aws_sdk_s3::Client,
    bucket: &str,
    records: &[&str],
    names: &[&str],
) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for key in records {
        let Some(object) = get_object(s3, bucket, key).await? else {
            continue;
        };
        // A record that does not parse counts as using the storage: never delete on doubt.
        let text = match serde_json::from_slice::<Value>(&object.body) {
            Ok(v) => v.to_string(),
            Err(_) => {
                out.push(format!("{key} (unreadable)"));
                continue;
            }
        };
        if names.iter().any(|n| text.contains(n)) {
            out.push((*key).to_owned());
        }
    }
    Ok(out)
}

async fn delete_repository(ecr: &aws_sdk_ecr::Client, repository: &str) -> Result<()> {
    match ecr
        .delete_repository()
        .repository_name(repository)
        .force(true)
        .send()
        .await
    {
        Ok(_) => {
            ui::info(format!("Deleted container repository {repository}"));
            Ok(())
        }
        Err(e) if classify(&e) == ErrorKind::NotFound => Ok(()),
        Err(e) => Err(AwsError::call("ecr", "DeleteRepository", repository, &e).into()),
    }
}
