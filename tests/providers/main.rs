//! Integration tests of the providers (one module per service, plus Cloud Control and custom
//! resources) and of the emulator itself, through the real SDK clients.
//!
//! One test binary for all of them, because every binary links the whole AWS SDK. Each module
//! is one former `tests/<name>.rs`, so a narrow run names it as a filter:
//! `./scripts/test --test providers -- provider_s3::`.
//! Tests of different modules run in parallel in one process against one emulator: a fault a
//! module injects is scoped to a resource type no other module of this binary creates.

#[path = "../support/mod.rs"]
mod support;

mod cloudcontrol_emulator;
mod emulator_smoke;
mod provider_cloudcontrol;
mod provider_custom;
mod provider_dynamodb;
mod provider_ec2;
mod provider_elbv2;
mod provider_iam;
mod provider_iam_access_key;
mod provider_kms;
mod provider_lambda;
mod provider_lambda_layer;
mod provider_logs;
mod provider_rds;
mod provider_route53;
mod provider_s3;
mod provider_secretsmanager;
mod provider_sns;
mod provider_sqs;
mod provider_ssm;
mod sdk_env;
