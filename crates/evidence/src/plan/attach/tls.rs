//! TLS of an attach trial (`run --target … --tls`): which flags go together is decided here,
//! purely; whether the CA file reads as PEM is the command's check before any trial (it needs
//! the filesystem), and how the CA reaches the client pod is the platform's.

use serde::{Deserialize, Serialize};

use super::super::error::PlanError;

/// The TLS flags (or policy keys) as given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TlsInput {
    /// `--tls` / `tls = true`.
    pub tls: bool,
    /// `--ca-file` / `ca-file`: a PEM file on the host running drainwatch.
    pub ca_file: Option<String>,
    /// `--server-name` / `server-name`.
    pub server_name: Option<String>,
    /// `--insecure-skip-verify` / `insecure-skip-verify = true`.
    pub insecure_skip_verify: bool,
}

impl TlsInput {
    /// Whether any TLS flag was given.
    pub fn any(&self) -> bool {
        self.tls
            || self.ca_file.is_some()
            || self.server_name.is_some()
            || self.insecure_skip_verify
    }

    /// The TLS of the trial: none without `--tls`; with it, exactly one way to trust the server
    /// (a CA file, or verification off), never an implicit default.
    pub fn validate(&self) -> Result<Option<TargetTls>, PlanError> {
        if !self.tls {
            let flag = [
                ("--ca-file", self.ca_file.is_some()),
                ("--server-name", self.server_name.is_some()),
                ("--insecure-skip-verify", self.insecure_skip_verify),
            ]
            .into_iter()
            .find(|(_, given)| *given);
            return match flag {
                Some((flag, _)) => Err(PlanError::TlsFlagWithoutTls(flag)),
                None => Ok(None),
            };
        }
        match (&self.ca_file, self.insecure_skip_verify) {
            (None, false) => return Err(PlanError::TlsTrust),
            (Some(_), true) => return Err(PlanError::TlsTrustBoth),
            (Some(f), false) if f.trim().is_empty() => return Err(PlanError::TlsTrust),
            _ => {}
        }
        if let Some(n) = self.server_name.as_deref().filter(|n| !server_name(n)) {
            return Err(PlanError::BadServerName(n.to_string()));
        }
        Ok(Some(TargetTls {
            ca_file: self.ca_file.clone(),
            server_name: self.server_name.clone(),
            insecure_skip_verify: self.insecure_skip_verify,
        }))
    }
}

/// A DNS name or an IP address, as SNI and certificate matching take it (no spaces, no
/// scheme or port).
fn server_name(n: &str) -> bool {
    (1..=253).contains(&n.len())
        && n.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b':' | b'*'))
}

/// TLS as asked for (`config.kubernetes.attach.tls`): what the client pod verified against is
/// the trial's `config.attach.tls`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetTls {
    /// The CA file on the host, as given (it reaches the client pod as a ConfigMap); null with
    /// `insecure_skip_verify`.
    pub ca_file: Option<String>,
    /// `--server-name`; null means the Service's name, `SERVICE.NAMESPACE.svc`.
    pub server_name: Option<String>,
    /// Certificate verification off: the server's identity is not checked.
    pub insecure_skip_verify: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn input(tls: bool, ca: Option<&str>, name: Option<&str>, insecure: bool) -> TlsInput {
        TlsInput {
            tls,
            ca_file: ca.map(str::to_string),
            server_name: name.map(str::to_string),
            insecure_skip_verify: insecure,
        }
    }

    #[test]
    fn tls_needs_exactly_one_way_to_trust() {
        assert_eq!(input(false, None, None, false).validate(), Ok(None));
        let t = input(true, Some("ca.pem"), Some("web.shop.svc"), false)
            .validate()
            .unwrap()
            .unwrap();
        assert_eq!(t.ca_file.as_deref(), Some("ca.pem"));
        assert_eq!(t.server_name.as_deref(), Some("web.shop.svc"));
        assert!(!t.insecure_skip_verify);
        assert!(
            input(true, None, None, true)
                .validate()
                .unwrap()
                .unwrap()
                .insecure_skip_verify
        );
        assert_eq!(
            input(true, None, None, false).validate(),
            Err(PlanError::TlsTrust)
        );
        assert_eq!(
            input(true, Some("ca.pem"), None, true).validate(),
            Err(PlanError::TlsTrustBoth)
        );
        assert_eq!(
            input(true, Some("ca.pem"), Some("a b"), false).validate(),
            Err(PlanError::BadServerName("a b".into()))
        );
    }

    #[test]
    fn tls_flags_without_tls_name_the_flag() {
        for (i, flag) in [
            (input(false, Some("ca.pem"), None, false), "--ca-file"),
            (input(false, None, Some("web"), false), "--server-name"),
            (input(false, None, None, true), "--insecure-skip-verify"),
        ] {
            assert!(i.any());
            assert_eq!(i.validate(), Err(PlanError::TlsFlagWithoutTls(flag)));
        }
        assert!(!TlsInput::default().any());
    }
}
