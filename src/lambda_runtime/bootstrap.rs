//! The bootstraps the runner starts: our own small Runtime API clients for Node.js and
//! Python, embedded in the binary so a `cdkd` executable carries everything it needs, and
//! the interpreter each runtime needs (found on PATH, its version reported).

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{Language, RunnerError};

const NODE: &str = include_str!("bootstrap/node.cjs");
const PYTHON: &str = include_str!("bootstrap/python.py");

/// The interpreter for a runtime and the script it runs.
#[derive(Debug, Clone)]
pub struct Interpreter {
    pub program: String,
    /// What `--version` said (`v20.20.2`, `Python 3.11.7`).
    pub version: String,
}

impl Interpreter {
    /// Finds the interpreter `runtime` needs on PATH (or at CDKD_LAMBDA_NODE /
    /// CDKD_LAMBDA_PYTHON), asking it its version.
    pub fn find(runtime: &str, language: Language) -> Result<Interpreter, RunnerError> {
        let (program, var, name) = match language {
            Language::Node { .. } => ("node", crate::env::CDKD_LAMBDA_NODE, "Node.js"),
            Language::Python { .. } => ("python3", crate::env::CDKD_LAMBDA_PYTHON, "Python 3"),
        };
        let program = std::env::var(var)
            .ok()
            .filter(|p| !p.is_empty())
            .unwrap_or_else(|| program.to_owned());
        let output = Command::new(&program).arg("--version").output();
        let output = match output {
            Ok(o) if o.status.success() => o,
            _ => {
                return Err(RunnerError::NotInstalled {
                    runtime: runtime.to_owned(),
                    program,
                    language: name,
                })
            }
        };
        // Python 3 before 3.4 printed its version on stderr.
        let text = if output.stdout.is_empty() {
            output.stderr
        } else {
            output.stdout
        };
        Ok(Interpreter {
            program,
            version: String::from_utf8_lossy(&text).trim().to_owned(),
        })
    }

    /// A note when the interpreter's version is not the one the runtime names, else `None`.
    pub fn mismatch(&self, runtime: &str, language: Language) -> Option<String> {
        let digits: Vec<u32> = self
            .version
            .trim_start_matches(|c: char| !c.is_ascii_digit())
            .split('.')
            .map_while(|p| p.parse().ok())
            .collect();
        let same = match language {
            Language::Node { major } => digits.first() == Some(&major),
            Language::Python { minor } => {
                digits.first() == Some(&3) && digits.get(1) == Some(&minor)
            }
        };
        (!same).then(|| {
            format!(
                "{runtime} runs on the local {} ({}), not the version Lambda uses",
                self.program, self.version
            )
        })
    }
}

/// Writes the bootstrap for `language` into `dir`; returns its path.
pub fn write(language: Language, dir: &Path) -> Result<PathBuf, RunnerError> {
    let (name, text) = match language {
        Language::Node { .. } => ("cdkd-bootstrap.cjs", NODE),
        Language::Python { .. } => ("cdkd_bootstrap.py", PYTHON),
    };
    let path = dir.join(name);
    std::fs::write(&path, text)
        .map_err(|e| RunnerError::io(format!("writing {}", path.display()), e))?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_version_other_than_the_runtimes_is_noted() {
        let node = Interpreter {
            program: "node".into(),
            version: "v20.20.2".into(),
        };
        assert_eq!(
            node.mismatch("nodejs20.x", Language::Node { major: 20 }),
            None
        );
        let note = node
            .mismatch("nodejs22.x", Language::Node { major: 22 })
            .unwrap();
        assert!(
            note.contains("v20.20.2") && note.contains("nodejs22.x"),
            "{note}"
        );
        let py = Interpreter {
            program: "python3".into(),
            version: "Python 3.11.7".into(),
        };
        assert_eq!(
            py.mismatch("python3.11", Language::Python { minor: 11 }),
            None
        );
        assert!(py
            .mismatch("python3.12", Language::Python { minor: 12 })
            .is_some());
    }

    #[test]
    fn a_missing_interpreter_is_an_error_naming_the_runtime_and_program() {
        std::env::set_var("CDKD_LAMBDA_PYTHON", "/nonexistent/python3-for-cdkd-test");
        let err = Interpreter::find("python3.12", Language::Python { minor: 12 })
            .unwrap_err()
            .to_string();
        std::env::remove_var("CDKD_LAMBDA_PYTHON");
        assert!(
            err.contains("python3.12") && err.contains("/nonexistent/python3-for-cdkd-test"),
            "{err}"
        );
    }
}
