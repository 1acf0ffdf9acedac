//! Keeping secrets out of everything cdkd writes down or prints.
//!
//! Two sources of secrets, two channels (architecture-internals, "Secrets and NoEcho values in
//! state"; state-schema, "version: 11"):
//!
//! - values resolved from secret-bearing dynamic references (`secretsmanager`, `ssm-secure`,
//!   an `ssm` SecureString) are stored as their `{{resolve:...}}` expression, by position;
//! - values of `NoEcho` template parameters are stored as `***` at every position the template
//!   fills from them (listed in `noEchoLeaves`) and wherever else they land.
//!
//! [`positions`] does the first pass (where the template puts a secret), [`needles`] the
//! second (a plaintext found anywhere else), [`record`] applies both to a stack record right
//! before it is written, and [`fold`] reads names as a person sees them, for the export-name
//! refusal.

pub mod attributes;
pub mod fold;
pub mod kept;
pub mod needles;
pub mod positions;
pub mod record;

pub use needles::{Needles, MASK, MIN_NEEDLE_LENGTH};
pub use positions::{comparable, mask_leaves, with_expressions, NoEchoScope};
pub use record::{MaskedFingerprints, RecordRedactor, RecordedReads, StoredProperties};
