//! Which Service and which port of it the flows dial: pure functions of the objects read, so
//! every choice and refusal is tested without a cluster.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Service, ServicePort};

use super::{Refusal, Workload};
use crate::evidence::plan::attach::PortRef;

/// Whether a Service's `selector` (equality only) selects a pod with `labels`. An empty or
/// absent selector selects nothing: such a Service's endpoints are managed by hand.
pub fn selects(selector: &BTreeMap<String, String>, labels: &BTreeMap<String, String>) -> bool {
    !selector.is_empty() && selector.iter().all(|(k, v)| labels.get(k) == Some(v))
}

fn selector_of(s: &Service) -> BTreeMap<String, String> {
    s.spec
        .as_ref()
        .and_then(|s| s.selector.clone())
        .unwrap_or_default()
}

/// A headless Service (clusterIP None) has no virtual IP.
pub(super) fn headless(s: &Service) -> bool {
    s.spec.as_ref().and_then(|s| s.cluster_ip.as_deref()) == Some("None")
}

fn describe_selector(sel: &BTreeMap<String, String>) -> String {
    if sel.is_empty() {
        return "no selector".into();
    }
    sel.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// The Service to dial: `wanted` if given (it must select at least one of the target's pods),
/// else the only Service in `services` that does.
pub fn pick_service<'a>(
    services: &'a [Service],
    wanted: Option<&str>,
    w: &Workload,
) -> Result<&'a Service, Refusal> {
    let name = |s: &Service| s.metadata.name.clone().unwrap_or_default();
    let hits = |s: &Service| {
        let sel = selector_of(s);
        w.pods.values().filter(|l| selects(&sel, l)).count()
    };
    let target = format!("{}/{}", w.kind.as_str(), w.name);
    if let Some(wanted) = wanted {
        let Some(s) = services.iter().find(|s| name(s) == wanted) else {
            return Err(Refusal::Service(format!(
                "service {wanted} not found in namespace {} (services there: {})",
                w.namespace,
                list(services.iter().map(name))
            )));
        };
        if hits(s) == 0 {
            return Err(Refusal::Service(format!(
                "service {wanted} ({}) selects none of the {} pods of {target} (selector {})",
                describe_selector(&selector_of(s)),
                w.pods.len(),
                w.selector
            )));
        }
        return Ok(s);
    }
    let matching: Vec<&Service> = services.iter().filter(|s| hits(s) > 0).collect();
    // A StatefulSet's governing Service is usually headless: it names the pods in DNS and has
    // no virtual IP whose routing could be measured, so it does not compete with one that has.
    let routed: Vec<&Service> = matching.iter().copied().filter(|s| !headless(s)).collect();
    let matching = if routed.is_empty() { matching } else { routed };
    match matching.as_slice() {
        [one] => Ok(*one),
        [] => Err(Refusal::Service(format!(
            "no Service in namespace {} selects a pod of {target} (services there: {}); a Service whose selector selects the target's pods is needed, or name one with --service",
            w.namespace,
            list(services.iter().map(name))
        ))),
        many => Err(Refusal::Service(format!(
            "several Services select the pods of {target}: {}; choose one with --service",
            list(many.iter().map(|s| name(s)))
        ))),
    }
}

pub(super) fn list(names: impl Iterator<Item = String>) -> String {
    let v: Vec<String> = names.collect();
    if v.is_empty() {
        "none".into()
    } else {
        v.join(", ")
    }
}

fn describe_port(p: &ServicePort) -> String {
    format!(
        "{}{}/{}",
        p.name
            .as_deref()
            .map(|n| format!("{n}="))
            .unwrap_or_default(),
        p.port,
        p.protocol.as_deref().unwrap_or("TCP")
    )
}

/// The Service port: `wanted` by number or name, else the Service's only port; it must be TCP.
pub fn pick_port<'a>(s: &'a Service, wanted: Option<&PortRef>) -> Result<&'a ServicePort, Refusal> {
    let svc = s.metadata.name.clone().unwrap_or_default();
    let ports: Vec<&ServicePort> = s
        .spec
        .as_ref()
        .and_then(|s| s.ports.as_ref())
        .map(|p| p.iter().collect())
        .unwrap_or_default();
    let have = list(ports.iter().map(|p| describe_port(p)));
    let p = match wanted {
        Some(PortRef::Number(n)) => ports.iter().find(|p| p.port == i32::from(*n)).copied(),
        Some(PortRef::Name(n)) => ports
            .iter()
            .find(|p| p.name.as_deref() == Some(n.as_str()))
            .copied(),
        None if ports.len() == 1 => ports.first().copied(),
        None => {
            return Err(Refusal::Port(format!(
                "service {svc} has {} ports ({have}); choose one with --port",
                ports.len()
            )));
        }
    };
    let Some(p) = p else {
        return Err(Refusal::Port(format!(
            "service {svc} has no port {} (its ports: {have})",
            wanted.map_or_else(String::new, ToString::to_string)
        )));
    };
    if p.protocol.as_deref().is_some_and(|pr| pr != "TCP") {
        return Err(Refusal::Port(format!(
            "port {} of service {svc} is not TCP: attach flows are tcp or http",
            describe_port(p)
        )));
    }
    Ok(p)
}
