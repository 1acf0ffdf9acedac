//! `cdkd state migrate`: move the legacy state bucket's objects (`cdkd-state-{account}-{region}`,
//! pre-0.8 cdkd's default) into the current one (`cdkd-state-{account}`), which every command
//! then finds first.
//!
//! The guarantees of any other state write hold:
//! - any stack lock in the source refuses the run (a command in flight writes there);
//! - an object is written to the destination only if the key is free there (If-None-Match): a
//!   destination record is never overwritten. One already there with the same bytes was moved
//!   by an earlier, interrupted run; one with other bytes is a conflict, kept on both sides and
//!   reported (exit 2);
//! - the source object is deleted only if it is still the version that was copied (If-Match
//!   on its ETag). Its earlier versions stay in the legacy bucket as history, unless
//!   `--remove-legacy` deletes that bucket once everything has moved.

use aws_sdk_s3::primitives::ByteStream;

use super::asset_storage::{empty_and_delete_bucket, get_object, list_keys, Object};
use super::bootstrap::{apply_settings, ensure_bucket};
use super::Session;
use crate::aws::{classify, AwsError, ErrorKind};
use crate::cli::StateMigrateArgs;
use crate::error::{Error, ExitStatus, Result};
use crate::state::bucket::{bucket_region, default_bucket_name, legacy_bucket_name, BucketError};
use crate::ui;

/// What became of one object.
enum Moved {
    Moved,
    /// An earlier run copied it; the source copy is removed now.
    AlreadyThere,
    /// The destination holds other bytes under the key (or the source changed meanwhile).
    Conflict(String),
}

pub async fn run(session: &Session, args: &StateMigrateArgs) -> Result<ExitStatus> {
    let clients = session.clients().await;
    let region = clients.default_region().ok_or_else(|| {
        Error::Usage("no region for the legacy bucket: pass --region or set AWS_REGION".into())
    })?;
    let account = clients.account_id().await?;
    let source = args
        .legacy_bucket
        .clone()
        .unwrap_or_else(|| legacy_bucket_name(&account, &region));
    let target = args
        .new_bucket
        .clone()
        .or_else(|| session.settings.state_bucket.clone())
        .unwrap_or_else(|| default_bucket_name(&account));
    if source == target {
        return Err(Error::Usage(format!(
            "the legacy and the new bucket are both {source}; nothing to migrate"
        )));
    }
    let source_region = match bucket_region(clients, &source).await {
        Ok(r) => r,
        Err(BucketError::Missing { .. }) => {
            return Err(Error::Usage(format!(
                "legacy state bucket {source} does not exist: nothing to migrate (`cdkd state \
                 info` shows the bucket in use)"
            )))
        }
        Err(e) => return Err(e.into()),
    };
    let src = clients.s3(Some(&source_region));
    let objects = list_keys(&src, &source, "")
        .await?
        .ok_or_else(|| Error::Usage(format!("legacy state bucket {source} does not exist")))?;
    let locks: Vec<&str> = objects
        .iter()
        .map(|(k, _, _)| k.as_str())
        .filter(|k| k.ends_with("/lock.json") || *k == "lock.json")
        .collect();
    if let Some(first) = locks.first() {
        return Err(Error::Usage(format!(
            "refusing to migrate: {} lock(s) in {source} (s3://{source}/{first}): a command is \
             writing there; wait for it, or clear a crashed run's lock with `cdkd force-unlock`",
            locks.len()
        )));
    }
    ui::info(format!(
        "Moving {} object(s) from {source} ({source_region}) to {target}",
        objects.len()
    ));
    if args.dry_run {
        for (key, _, _) in &objects {
            ui::output(format!("  would move {key}"));
        }
        ui::output("dry run: nothing was changed");
        return Ok(ExitStatus::Success);
    }
    let verb = if args.remove_legacy {
        "and then delete the legacy bucket"
    } else {
        "(the legacy bucket and its history stay)"
    };
    super::orphan_state::confirm(
        session,
        &format!(
            "Move {} object(s) from {source} to {target} {verb}?",
            objects.len()
        ),
    )?;

    let created = ensure_bucket(&clients.s3(Some(&source_region)), &target, &source_region).await?;
    let dst_region = if created {
        apply_settings(&clients.s3(Some(&source_region)), &target).await?;
        ui::info(format!("Created state bucket {target} in {source_region}"));
        source_region.clone()
    } else {
        bucket_region(clients, &target).await?
    };
    let dst = clients.s3(Some(&dst_region));

    let mut conflicts = Vec::new();
    let mut moved = 0;
    for (key, _, _) in &objects {
        match move_object(&src, &source, &dst, &target, key).await? {
            Moved::Moved | Moved::AlreadyThere => {
                moved += 1;
                ui::info(format!("  moved {key}"));
            }
            Moved::Conflict(why) => conflicts.push(format!("{key}: {why}")),
        }
    }
    if !conflicts.is_empty() {
        return Err(Error::Partial(format!(
            "moved {moved} of {} object(s) to {target}; kept in {source}: {}; resolve each (the \
             destination's copy is the one every command reads now) and run `cdkd state \
             migrate` again",
            objects.len(),
            conflicts.join("; ")
        )));
    }
    if args.remove_legacy && empty_and_delete_bucket(&src, &source).await? {
        ui::info(format!("Deleted legacy state bucket {source}"));
    }
    ui::info(format!("Migrated {moved} object(s): {source} -> {target}"));
    Ok(ExitStatus::Success)
}

async fn move_object(
    src: &aws_sdk_s3::Client,
    source: &str,
    dst: &aws_sdk_s3::Client,
    target: &str,
    key: &str,
) -> Result<Moved> {
    let Some(Object {
        body,
        etag,
        content_type,
    }) = get_object(src, source, key).await?
    else {
        // Deleted since the listing: nothing left to move.
        return Ok(Moved::AlreadyThere);
    };
    let put = dst
        .put_object()
        .bucket(target)
        .key(key)
        .set_content_type(content_type)
        .if_none_match("*")
        .body(ByteStream::from(body.clone()))
        .send()
        .await;
    let outcome = match put {
        Ok(_) => Moved::Moved,
        Err(e) if classify(&e) == ErrorKind::PreconditionFailed => {
            match get_object(dst, target, key).await? {
                Some(there) if there.body == body => Moved::AlreadyThere,
                _ => {
                    return Ok(Moved::Conflict(
                        "the new bucket already holds another version".into(),
                    ))
                }
            }
        }
        Err(e) => {
            return Err(
                AwsError::call("s3", "PutObject", format!("s3://{target}/{key}"), &e).into(),
            )
        }
    };
    let delete = src
        .delete_object()
        .bucket(source)
        .key(key)
        .set_if_match(etag)
        .send()
        .await;
    match delete {
        Ok(_) => Ok(outcome),
        Err(e) if classify(&e) == ErrorKind::PreconditionFailed => Ok(Moved::Conflict(
            "it changed in the legacy bucket while being moved".into(),
        )),
        Err(e) if classify(&e) == ErrorKind::NotFound => Ok(outcome),
        Err(e) => {
            Err(AwsError::call("s3", "DeleteObject", format!("s3://{source}/{key}"), &e).into())
        }
    }
}
