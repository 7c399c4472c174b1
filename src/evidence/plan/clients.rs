//! `--clients`: how many client processes the flows are sharded over, and what that allows.

use super::error::PlanError;
use super::{ClientPlacement, MAX_FLOWS_PER_PROTOCOL, PlanInput, Platform};

/// Refuses a client count the platform cannot run or the flows cannot fill, and flow counts
/// past the trial's cap (`MAX_FLOWS_PER_PROTOCOL`) or the 4-digit ids of one client process.
pub(super) fn check(p: &PlanInput) -> Result<(), PlanError> {
    if p.clients == 0 {
        return Err(PlanError::ZeroClients);
    }
    let host_placed = p
        .kubernetes
        .as_ref()
        .is_some_and(|k| k.client == ClientPlacement::Host);
    // --target with --client host is refused before this, by its own name.
    if p.clients > 1 && p.platform == Platform::Kubernetes && !host_placed {
        return Err(PlanError::ClientsOnKubernetes(p.clients));
    }
    let flows = p.tcp_flows.max(p.udp_flows);
    // One client is the default and always fits (an attach run may dial without held flows).
    if p.clients > 1 && p.clients > flows {
        return Err(PlanError::ClientsAboveFlows {
            clients: p.clients,
            flows,
        });
    }
    for (flag, count) in [("--tcp-flows", p.tcp_flows), ("--udp-flows", p.udp_flows)] {
        if count > MAX_FLOWS_PER_PROTOCOL {
            return Err(PlanError::FlowsAboveTrialCap { flag, count });
        }
        // The 4-digit id limit holds per client process; sharded ids continue past it.
        if count.div_ceil(p.clients.max(1)) > 9999 {
            return Err(PlanError::TooManyFlows { flag, count });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::super::tests::input;
    use super::*;

    #[test]
    fn the_four_digit_limit_holds_per_client_process() {
        let mut i = input();
        (i.tcp_flows, i.udp_flows) = (18_000, 18_000);
        assert_eq!(
            i.validate().unwrap_err(),
            PlanError::TooManyFlows {
                flag: "--tcp-flows",
                count: 18_000
            }
        );
        let e = i.validate().unwrap_err().to_string();
        assert!(e.contains("--clients 2 or more"), "{e}");
        i.clients = 2;
        assert_eq!(i.validate().unwrap().clients, 2);
        i.clients = 0;
        assert_eq!(i.validate().unwrap_err(), PlanError::ZeroClients);
    }

    #[test]
    fn a_trial_holds_at_most_the_cap_of_flows_however_sharded() {
        let mut i = input();
        i.clients = 20;
        (i.tcp_flows, i.udp_flows) = (MAX_FLOWS_PER_PROTOCOL, 1);
        assert_eq!(i.validate().unwrap().tcp_flows, MAX_FLOWS_PER_PROTOCOL);
        i.udp_flows = MAX_FLOWS_PER_PROTOCOL + 1;
        assert_eq!(
            i.validate().unwrap_err(),
            PlanError::FlowsAboveTrialCap {
                flag: "--udp-flows",
                count: MAX_FLOWS_PER_PROTOCOL + 1
            }
        );
        let e = i.validate().unwrap_err().to_string();
        assert!(
            e.contains("at most 100000 flows of one protocol per trial"),
            "{e}"
        );
    }

    #[test]
    fn kubernetes_shards_only_from_the_host() {
        let mut i = super::super::tests::k8s_input();
        i.clients = 2;
        assert_eq!(i.validate().unwrap_err(), PlanError::ClientsOnKubernetes(2));
        if let Some(k) = i.kubernetes.as_mut() {
            k.client = ClientPlacement::Host;
        }
        assert_eq!(i.validate().unwrap().clients, 2);
    }
}
