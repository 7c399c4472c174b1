//! `--ingress-service` and `--ingress-host`: the attach client goes through the user's ingress
//! controller instead of the target Service's ClusterIP. The controller is located by its
//! Service; drainwatch follows its pods' access log and joins each request to the upstream pod
//! (`evidence::ingress`).

use std::fmt;

use serde::{Deserialize, Serialize};

use super::config::AttachProtocol;
use super::{PortRef, dns_name};
use crate::plan::PlanError;

/// The ingress controllers whose access log drainwatch reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IngressController {
    /// Traefik (v3), with its JSON access log keeping `X-Drainwatch-Request`.
    Traefik,
}

impl IngressController {
    /// The name flags and reports use.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Traefik => "traefik",
        }
    }
}

impl fmt::Display for IngressController {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The ingress flags as given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IngressInput {
    /// `--ingress` (default traefik).
    pub controller: Option<IngressController>,
    /// `--ingress-service NAMESPACE/NAME[:PORT]`.
    pub service: Option<String>,
    /// `--ingress-host`.
    pub host: Option<String>,
}

/// The ingress a trial goes through (`config.kubernetes.attach.ingress`, schema 5.2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IngressTarget {
    /// Which controller it is (how its access log reads).
    pub controller: IngressController,
    /// The controller Service's namespace.
    pub namespace: String,
    /// The controller's Service, dialled by its ClusterIP.
    pub service: String,
    /// Its port; null means the Service's only port.
    pub port: Option<PortRef>,
    /// The `Host` header every request carries: the name the Ingress rule matches.
    pub host: String,
}

impl IngressInput {
    /// Whether any ingress flag was given.
    pub fn any(&self) -> bool {
        self.controller.is_some() || self.service.is_some() || self.host.is_some()
    }

    /// The ingress asked for, `None` when no flag was; refused unless the arm speaks HTTP/1.1
    /// in plain text (the access log names requests by a header the client writes itself).
    pub fn validate(
        &self,
        protocol: AttachProtocol,
        tls: bool,
    ) -> Result<Option<IngressTarget>, PlanError> {
        if !self.any() {
            return Ok(None);
        }
        let refuse = |why: String| Err(PlanError::Ingress(why));
        let (Some(service), Some(host)) = (&self.service, &self.host) else {
            return refuse(
                "--ingress-service NAMESPACE/NAME[:PORT] and --ingress-host NAME go together: the controller's Service and the host its Ingress rule matches".into(),
            );
        };
        if protocol != AttachProtocol::Http || tls {
            return refuse(format!(
                "through an ingress the flows speak plain HTTP/1.1 (--protocol http, no --tls), not {protocol}{}",
                if tls { " over TLS" } else { "" }
            ));
        }
        let Some((namespace, rest)) = service.split_once('/') else {
            return refuse(format!(
                "--ingress-service {service:?} is NAMESPACE/NAME[:PORT]"
            ));
        };
        let (name, port) = match rest.split_once(':') {
            Some((n, p)) => (n, Some(p.parse::<PortRef>()?)),
            None => (rest, None),
        };
        if !dns_name(namespace) || !dns_name(name) {
            return refuse(format!(
                "--ingress-service {service:?}: {namespace:?} and {name:?} must be Kubernetes object names"
            ));
        }
        if !dns_name(host) {
            return refuse(format!(
                "--ingress-host {host:?} is not a host name (lower-case letters, digits, '-' and '.')"
            ));
        }
        Ok(Some(IngressTarget {
            controller: self.controller.unwrap_or(IngressController::Traefik),
            namespace: namespace.to_string(),
            service: name.to_string(),
            port,
            host: host.clone(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::{IngressController, IngressInput};
    use crate::plan::attach::{AttachProtocol, PortRef};

    fn input(service: Option<&str>, host: Option<&str>) -> IngressInput {
        IngressInput {
            controller: None,
            service: service.map(str::to_string),
            host: host.map(str::to_string),
        }
    }

    #[test]
    fn a_located_ingress_is_its_service_and_host() {
        let t = input(Some("traefik/traefik:web"), Some("shop.example"))
            .validate(AttachProtocol::Http, false)
            .unwrap()
            .unwrap();
        assert_eq!(t.controller, IngressController::Traefik);
        assert_eq!(
            (t.namespace.as_str(), t.service.as_str()),
            ("traefik", "traefik")
        );
        assert_eq!(t.port, Some(PortRef::Name("web".into())));
        assert_eq!(t.host, "shop.example");
        let none = IngressInput::default().validate(AttachProtocol::Grpc, true);
        assert_eq!(none.unwrap(), None);
    }

    #[test]
    fn refusals_name_what_is_wrong() {
        let cases = [
            (
                input(Some("traefik/traefik"), None),
                AttachProtocol::Http,
                false,
                "go together",
            ),
            (
                input(None, Some("shop.example")),
                AttachProtocol::Http,
                false,
                "go together",
            ),
            (
                input(Some("traefik"), Some("a.b")),
                AttachProtocol::Http,
                false,
                "NAMESPACE/NAME",
            ),
            (
                input(Some("Traefik/x"), Some("a.b")),
                AttachProtocol::Http,
                false,
                "object names",
            ),
            (
                input(Some("t/x"), Some("A B")),
                AttachProtocol::Http,
                false,
                "not a host name",
            ),
            (
                input(Some("t/x"), Some("a.b")),
                AttachProtocol::Http2,
                false,
                "not http2",
            ),
            (
                input(Some("t/x"), Some("a.b")),
                AttachProtocol::Http,
                true,
                "over TLS",
            ),
        ];
        assert_eq!(cases.len(), 7);
        for (i, protocol, tls, why) in cases {
            let e = i.validate(protocol, tls).unwrap_err().to_string();
            assert!(e.contains(why), "{i:?}: {e}");
        }
    }
}
