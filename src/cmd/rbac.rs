//! `drainwatch rbac`: the shipped RBAC for the user's namespaces, on stdout.

use anyhow::Result;

use drainwatch::cli::RbacArgs;
use drainwatch::k8s::rbac::render;

pub fn cmd_rbac(args: &RbacArgs) -> Result<u8> {
    let req = args.request();
    // Rendered whole before anything is printed: a bad namespace prints nothing but the error.
    let yaml = render(&req)?;
    let mut flags = format!("--namespace {}", req.namespace);
    for t in &req.targets {
        flags.push_str(&format!(" --target-namespace {t}"));
    }
    if req.drain_node {
        flags.push_str(" --drain-node");
    }
    if req.tls_ca {
        flags.push_str(" --tls-ca");
    }
    if req.ingress_managed {
        flags.push_str(" --ingress-managed");
    }
    println!(
        "# drainwatch {} rbac {flags}\n# What each rule is for: deploy/rbac.yaml and deploy/rbac-attach.yaml in drainwatch's repository (docs/permissions.md).",
        env!("CARGO_PKG_VERSION")
    );
    print!("{yaml}");
    Ok(0)
}
