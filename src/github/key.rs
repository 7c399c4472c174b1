//! The identity of one use of the action: a key for the sticky comment's marker and a default
//! artifact name, derived from the job id and the matrix values, so two legs of a matrix never
//! share a comment or an artifact, and the same leg always gets the same ones (later runs find
//! their baseline by the artifact name).
//!
//! Pure: the caller reads `GITHUB_JOB`, `DRAINWATCH_MATRIX` (`toJSON(matrix)`, since a composite
//! action cannot read `matrix` itself) and the overrides, and hands the strings in.
//!
//! The key is `<job>-<value>-<value>…-<hash>`: the values in the order of their matrix keys
//! (sorted), each sanitized to `[A-Za-z0-9._-]`, then 8 hex digits of a hash of the exact job and
//! matrix. The readable part is for people and may be lossy (sanitizing, truncation, an
//! `include` that adds a key to one leg only); the hash is what keeps two legs apart. A job
//! without a matrix keeps its plain id when that is already a valid key.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde_json::Value;

/// The longest key; longer readable parts are cut, keeping the hash.
pub const MAX_KEY_LEN: usize = 64;
/// The key when no job id is known (outside GitHub Actions).
pub const DEFAULT_JOB: &str = "drainwatch";
/// The prefix of the default artifact name.
pub const ARTIFACT_PREFIX: &str = "drainwatch-";

const HASH_HEX: usize = 8;

/// The key and the artifact name of one use of the action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// Marker key of the PR comment.
    pub key: String,
    /// Name of the uploaded artifact.
    pub artifact_name: String,
}

/// The matrix could not be read: a key from it would be a guess, and a wrong guess is two legs
/// overwriting each other.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// Not JSON.
    #[error("DRAINWATCH_MATRIX is not JSON ({reason}): pass ${{{{ toJSON(matrix) }}}}")]
    NotJson {
        /// The parser's message.
        reason: String,
    },
    /// JSON, but not an object or null.
    #[error(
        "DRAINWATCH_MATRIX is JSON but not an object (it is {kind}): pass ${{{{ toJSON(matrix) }}}}"
    )]
    NotAnObject {
        /// What it is.
        kind: &'static str,
    },
}

/// Every character outside `[A-Za-z0-9._-]` becomes `_`.
pub fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// FNV-1a, 64 bit: a fixed, documented function (no seed), so a key is the same on every
/// machine and in every later version that keeps this function.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

fn hash_hex(canonical: &str) -> String {
    let mut s = String::with_capacity(16);
    let _ = write!(s, "{:016x}", fnv1a(canonical.as_bytes()));
    s.truncate(HASH_HEX);
    s
}

/// `readable` (already sanitized, so ASCII) cut to fit, then `-` and the hash of `canonical`.
fn with_hash(readable: &str, canonical: &str) -> String {
    let room = MAX_KEY_LEN - HASH_HEX - 1;
    let cut = &readable[..readable.len().min(room)];
    format!("{cut}-{}", hash_hex(canonical))
}

/// JSON with every object's keys sorted, at every depth, compact: the same value always
/// prints the same, whatever order the runner wrote its keys in.
fn canonical(v: &Value) -> String {
    match v {
        Value::Object(m) => {
            let sorted: BTreeMap<&String, String> =
                m.iter().map(|(k, v)| (k, canonical(v))).collect();
            let inner: Vec<String> = sorted
                .iter()
                .map(|(k, v)| format!("{}:{v}", Value::String((*k).clone())))
                .collect();
            format!("{{{}}}", inner.join(","))
        }
        Value::Array(a) => format!(
            "[{}]",
            a.iter().map(canonical).collect::<Vec<_>>().join(",")
        ),
        other => other.to_string(),
    }
}

/// A matrix value as text: a string as itself, anything else as canonical JSON.
fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => canonical(other),
    }
}

/// The matrix of `toJSON(matrix)`; empty, `null` and `{}` are no matrix.
fn parse_matrix(matrix: Option<&str>) -> Result<BTreeMap<String, Value>, KeyError> {
    let text = matrix.map(str::trim).unwrap_or_default();
    if text.is_empty() {
        return Ok(BTreeMap::new());
    }
    let v: Value = serde_json::from_str(text).map_err(|e| KeyError::NotJson {
        reason: e.to_string(),
    })?;
    match v {
        Value::Null => Ok(BTreeMap::new()),
        Value::Object(m) => Ok(m.into_iter().collect()),
        Value::Array(_) => Err(KeyError::NotAnObject { kind: "an array" }),
        Value::String(_) => Err(KeyError::NotAnObject { kind: "a string" }),
        Value::Number(_) => Err(KeyError::NotAnObject { kind: "a number" }),
        Value::Bool(_) => Err(KeyError::NotAnObject { kind: "a boolean" }),
    }
}

/// The key of `job` (GITHUB_JOB) in the matrix leg `matrix` (`toJSON(matrix)`).
pub fn derive(job: Option<&str>, matrix: Option<&str>) -> Result<String, KeyError> {
    let job = job.map(str::trim).filter(|j| !j.is_empty());
    let job = job.unwrap_or(DEFAULT_JOB);
    let matrix = parse_matrix(matrix)?;
    if matrix.is_empty() {
        return Ok(explicit(job));
    }
    let mut readable = sanitize(job);
    for v in matrix.values() {
        readable.push('-');
        readable.push_str(&sanitize(&value_text(v)));
    }
    let object: serde_json::Map<String, Value> = matrix.into_iter().collect();
    let whole = canonical(&Value::Array(vec![
        Value::String(job.to_string()),
        Value::Object(object),
    ]));
    Ok(with_hash(&readable, &whole))
}

/// A key given as is (DRAINWATCH_KEY, or a job without a matrix): kept when it is already a
/// valid key; otherwise sanitized and cut, with the hash of the original, so two different
/// given keys stay two keys.
pub fn explicit(given: &str) -> String {
    let given = given.trim();
    let clean = sanitize(given);
    if clean == given && !given.is_empty() && given.len() <= MAX_KEY_LEN {
        return clean;
    }
    with_hash(&clean, given)
}

fn nonempty(s: Option<&str>) -> Option<&str> {
    s.map(str::trim).filter(|s| !s.is_empty())
}

/// The identity: `key` (DRAINWATCH_KEY) wins over the derived key, `artifact` (DRAINWATCH_ARTIFACT_NAME)
/// over `drainwatch-<key>`. Empty overrides are not given (an action input left empty).
pub fn identity(
    job: Option<&str>,
    matrix: Option<&str>,
    key: Option<&str>,
    artifact: Option<&str>,
) -> Result<Identity, KeyError> {
    let key = match nonempty(key) {
        Some(k) => explicit(k),
        None => derive(job, matrix)?,
    };
    let artifact_name = nonempty(artifact).map_or_else(
        || format!("{ARTIFACT_PREFIX}{key}"),
        std::string::ToString::to_string,
    );
    Ok(Identity { key, artifact_name })
}

#[cfg(test)]
mod tests;
