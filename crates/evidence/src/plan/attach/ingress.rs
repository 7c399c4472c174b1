//! `--ingress-service` and `--ingress-host`: the attach client goes through the user's ingress
//! controller instead of the target Service's ClusterIP. The controller is located by its
//! Service (the CI and production case), or deployed by drainwatch in each trial's namespace
//! (`--ingress-managed`: the testbed and quick-start case); either way drainwatch follows its
//! pods' access log and joins each request to the upstream pod (`evidence::ingress`).

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
    /// Envoy as Envoy Gateway deploys it, with a JSON access log (an `EnvoyProxy`'s telemetry)
    /// holding `x-drainwatch-request` beside Envoy Gateway's default fields.
    Envoy,
}

impl IngressController {
    /// The name flags and reports use.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Traefik => "traefik",
            Self::Envoy => "envoy",
        }
    }
}

impl fmt::Display for IngressController {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which of Traefik's Kubernetes providers a managed Traefik reads the Ingress with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum IngressProvider {
    /// `kubernetesIngress`: Traefik's own.
    #[default]
    KubernetesIngress,
    /// `kubernetesIngressNGINX`: ingress-nginx's annotations, the migration path off
    /// ingress-nginx; it puts a retry (3 tries on network errors) on every route.
    KubernetesIngressNginx,
}

impl IngressProvider {
    /// The name flags and reports use.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::KubernetesIngress => "kubernetes-ingress",
            Self::KubernetesIngressNginx => "kubernetes-ingress-nginx",
        }
    }
}

impl fmt::Display for IngressProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The Traefik image a managed ingress runs unless `--ingress-image` says otherwise: the
/// release the project measured (`make traefik` builds the same version).
pub const DEFAULT_TRAEFIK_IMAGE: &str = "docker.io/library/traefik:v3.7.13";

/// The Host a managed ingress's rule matches unless `--ingress-host` says otherwise.
pub const MANAGED_HOST: &str = "drainwatch.test";

/// The Service drainwatch gives a managed controller, in the trial's namespace.
pub const MANAGED_SERVICE: &str = "drainwatch-ingress";

/// The Service port a managed controller's clients dial, by name.
pub const MANAGED_PORT: &str = "web";

/// The ingress flags as given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IngressInput {
    /// `--ingress` (default traefik).
    pub controller: Option<IngressController>,
    /// `--ingress-service NAMESPACE/NAME[:PORT]`.
    pub service: Option<String>,
    /// `--ingress-host`.
    pub host: Option<String>,
    /// `--ingress-managed`.
    pub managed: bool,
    /// `--ingress-image` (with `--ingress-managed`).
    pub image: Option<String>,
    /// `--ingress-provider` (with `--ingress-managed`).
    pub provider: Option<IngressProvider>,
}

/// What drainwatch deploys in each trial's namespace with `--ingress-managed`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManagedIngress {
    /// The controller's image.
    pub image: String,
    /// The provider that reads the Ingress drainwatch creates beside the target's Service.
    pub provider: IngressProvider,
}

/// The ingress a trial goes through (`config.kubernetes.attach.ingress`, schema 5.2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IngressTarget {
    /// Which controller it is (how its access log reads).
    pub controller: IngressController,
    /// The controller Service's namespace; null when drainwatch deploys the controller in each
    /// trial's own namespace (`managed`).
    pub namespace: Option<String>,
    /// The controller's Service, dialled by its ClusterIP.
    pub service: String,
    /// Its port; null means the Service's only port.
    pub port: Option<PortRef>,
    /// The `Host` header every request carries: the name the Ingress rule matches.
    pub host: String,
    /// What drainwatch deploys for the trial; null when the controller is the user's, located.
    #[serde(default)]
    pub managed: Option<ManagedIngress>,
}

impl IngressInput {
    /// Whether any ingress flag was given.
    pub fn any(&self) -> bool {
        self.controller.is_some()
            || self.service.is_some()
            || self.host.is_some()
            || self.managed
            || self.image.is_some()
            || self.provider.is_some()
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
        if protocol != AttachProtocol::Http || tls {
            return refuse(format!(
                "through an ingress the flows speak plain HTTP/1.1 (--protocol http, no --tls), not {protocol}{}",
                if tls { " over TLS" } else { "" }
            ));
        }
        if let Some(host) = &self.host
            && !dns_name(host)
        {
            return refuse(format!(
                "--ingress-host {host:?} is not a host name (lower-case letters, digits, '-' and '.')"
            ));
        }
        let controller = self.controller.unwrap_or(IngressController::Traefik);
        if self.managed && controller != IngressController::Traefik {
            return refuse(format!(
                "--ingress-managed deploys Traefik; --ingress {controller} is located: give its Service (--ingress-service NAMESPACE/NAME[:PORT]) and --ingress-host"
            ));
        }
        if self.managed {
            return self.managed(controller).map(Some);
        }
        if let Some(flag) = [
            ("--ingress-image", self.image.is_some()),
            ("--ingress-provider", self.provider.is_some()),
        ]
        .iter()
        .find_map(|(flag, set)| set.then_some(flag))
        {
            return refuse(format!(
                "{flag} says what drainwatch deploys: it goes with --ingress-managed"
            ));
        }
        let (Some(service), Some(host)) = (&self.service, &self.host) else {
            return refuse(
                "--ingress-service NAMESPACE/NAME[:PORT] and --ingress-host NAME go together: the controller's Service and the host its Ingress rule matches (or --ingress-managed: drainwatch deploys Traefik for the trial)".into(),
            );
        };
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
        Ok(Some(IngressTarget {
            controller,
            namespace: Some(namespace.to_string()),
            service: name.to_string(),
            port,
            host: host.clone(),
            managed: None,
        }))
    }

    /// `--ingress-managed`: the controller drainwatch deploys, dialled at its Service's `web`
    /// port in the trial's namespace.
    fn managed(&self, controller: IngressController) -> Result<IngressTarget, PlanError> {
        if let Some(service) = &self.service {
            return Err(PlanError::Ingress(format!(
                "--ingress-managed deploys the controller, --ingress-service {service:?} names yours: give one"
            )));
        }
        let image = self
            .image
            .clone()
            .unwrap_or_else(|| DEFAULT_TRAEFIK_IMAGE.to_string());
        if image.is_empty() || image.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(PlanError::Ingress(format!(
                "--ingress-image {image:?} is not an image reference"
            )));
        }
        Ok(IngressTarget {
            controller,
            namespace: None,
            service: MANAGED_SERVICE.to_string(),
            port: Some(PortRef::Name(MANAGED_PORT.to_string())),
            host: self
                .host
                .clone()
                .unwrap_or_else(|| MANAGED_HOST.to_string()),
            managed: Some(ManagedIngress {
                image,
                provider: self.provider.unwrap_or_default(),
            }),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{
        DEFAULT_TRAEFIK_IMAGE, IngressController, IngressInput, IngressProvider, MANAGED_HOST,
        MANAGED_SERVICE,
    };
    use crate::plan::attach::{AttachProtocol, PortRef};

    fn input(service: Option<&str>, host: Option<&str>) -> IngressInput {
        IngressInput {
            service: service.map(str::to_string),
            host: host.map(str::to_string),
            ..IngressInput::default()
        }
    }

    fn managed(image: Option<&str>, provider: Option<IngressProvider>) -> IngressInput {
        IngressInput {
            managed: true,
            image: image.map(str::to_string),
            provider,
            ..IngressInput::default()
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
            (t.namespace.as_deref(), t.service.as_str()),
            (Some("traefik"), "traefik")
        );
        assert_eq!(t.port, Some(PortRef::Name("web".into())));
        assert_eq!(t.host, "shop.example");
        assert_eq!(t.managed, None);
        let envoy = IngressInput {
            controller: Some(IngressController::Envoy),
            ..input(
                Some("envoy-gateway-system/envoy-shop-web:80"),
                Some("shop.example"),
            )
        }
        .validate(AttachProtocol::Http, false)
        .unwrap()
        .unwrap();
        assert_eq!(envoy.controller, IngressController::Envoy);
        assert_eq!(envoy.port, Some(PortRef::Number(80)));
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
        let managed_cases = [
            (
                IngressInput {
                    service: Some("t/x".into()),
                    ..managed(None, None)
                },
                "give one",
            ),
            (managed(Some("traefik: v3"), None), "not an image reference"),
            (managed(Some(""), None), "not an image reference"),
            (
                IngressInput {
                    host: Some("A B".into()),
                    ..managed(None, None)
                },
                "not a host name",
            ),
            (
                IngressInput {
                    image: Some("traefik:v3.7".into()),
                    ..input(Some("t/x"), Some("a.b"))
                },
                "--ingress-image says what drainwatch deploys",
            ),
            (
                IngressInput {
                    provider: Some(IngressProvider::KubernetesIngressNginx),
                    ..input(Some("t/x"), Some("a.b"))
                },
                "--ingress-provider says what drainwatch deploys",
            ),
            (
                IngressInput {
                    controller: Some(IngressController::Envoy),
                    ..managed(None, None)
                },
                "--ingress-managed deploys Traefik; --ingress envoy is located",
            ),
        ];
        assert_eq!(managed_cases.len(), 7);
        for (i, why) in managed_cases {
            let e = i
                .validate(AttachProtocol::Http, false)
                .unwrap_err()
                .to_string();
            assert!(e.contains(why), "{i:?}: {e}");
        }
        assert_eq!(cases.len(), 7);
        for (i, protocol, tls, why) in cases {
            let e = i.validate(protocol, tls).unwrap_err().to_string();
            assert!(e.contains(why), "{i:?}: {e}");
        }
    }

    #[test]
    fn a_managed_ingress_is_deployed_in_the_trial_namespace() {
        let t = managed(None, None)
            .validate(AttachProtocol::Http, false)
            .unwrap()
            .unwrap();
        assert_eq!(t.namespace, None);
        assert_eq!(t.service, MANAGED_SERVICE);
        assert_eq!(t.port, Some(PortRef::Name("web".into())));
        assert_eq!(t.host, MANAGED_HOST);
        let m = t.managed.unwrap();
        assert_eq!(m.image, DEFAULT_TRAEFIK_IMAGE);
        assert_eq!(m.provider, IngressProvider::KubernetesIngress);

        let nginx = IngressInput {
            host: Some("shop.example".into()),
            ..managed(
                Some("registry.local/traefik:v3.7.13"),
                Some(IngressProvider::KubernetesIngressNginx),
            )
        }
        .validate(AttachProtocol::Http, false)
        .unwrap()
        .unwrap();
        assert_eq!(nginx.host, "shop.example");
        let m = nginx.managed.unwrap();
        assert_eq!(
            (m.image.as_str(), m.provider),
            (
                "registry.local/traefik:v3.7.13",
                IngressProvider::KubernetesIngressNginx
            )
        );
        // Through a managed ingress too, the flows speak plain HTTP/1.1.
        let e = managed(None, None)
            .validate(AttachProtocol::Grpc, false)
            .unwrap_err();
        assert!(e.to_string().contains("plain HTTP/1.1"), "{e}");
    }

    #[test]
    fn a_located_ingress_recorded_before_managed_existed_reads_back() {
        let old = r#"{"controller":"traefik","namespace":"drainwatch-ingress-e2e","service":"traefik","port":"web","host":"bad.drainwatch.test"}"#;
        let t: super::IngressTarget = serde_json::from_str(old).unwrap();
        assert_eq!(t.namespace.as_deref(), Some("drainwatch-ingress-e2e"));
        assert_eq!(t.managed, None);
    }
}
