//! `--clients`: how many clients the flows are sharded over, and what that allows.

use super::error::PlanError;
use super::{ClientPlacement, MAX_FLOWS_PER_PROTOCOL, PlanInput, ShardPlacement};
use crate::trigger::Trigger;

/// Refuses a client count the flows cannot fill, a placement with nothing to place, and flow
/// counts past the trial's cap (`MAX_FLOWS_PER_PROTOCOL`) or the 4-digit ids of one client.
pub(super) fn check(p: &PlanInput) -> Result<(), PlanError> {
    if p.clients == 0 {
        return Err(PlanError::ZeroClients);
    }
    if let Some(k) = &p.kubernetes {
        if k.shard_placement.is_some() && (p.clients < 2 || k.client == ClientPlacement::Host) {
            return Err(PlanError::PlacementWithoutShards(if p.clients < 2 {
                "one client"
            } else {
                "--client host (client processes on this machine)"
            }));
        }
        if k.shard_placement == Some(ShardPlacement::Spread) && p.trigger == Trigger::DrainNode {
            return Err(PlanError::SpreadShardsWithDrain);
        }
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

/// The placement the report records: per-node unless asked otherwise when client pods are
/// sharded; none with one client or client processes on this machine.
pub(super) fn placement(p: &PlanInput) -> Option<ShardPlacement> {
    let k = p.kubernetes.as_ref()?;
    (p.clients > 1 && k.client == ClientPlacement::Pod)
        .then(|| k.shard_placement.unwrap_or(ShardPlacement::PerNode))
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
    fn kubernetes_shards_are_client_pods_per_node_unless_asked_otherwise() {
        let mut i = super::super::tests::k8s_input();
        i.clients = 2;
        let k = |c: &super::super::TrialConfig| c.kubernetes.clone().unwrap();
        let c = i.validate().unwrap();
        assert_eq!(
            (c.clients, k(&c).shard_placement),
            (2, Some(ShardPlacement::PerNode))
        );
        i.kubernetes.as_mut().unwrap().shard_placement = Some(ShardPlacement::Spread);
        assert_eq!(
            k(&i.validate().unwrap()).shard_placement,
            Some(ShardPlacement::Spread)
        );
        // Spread shards could land on the node drain-node drains; per-node ones never do.
        let t = i.trigger;
        i.trigger = Trigger::DrainNode;
        assert_eq!(i.validate().unwrap_err(), PlanError::SpreadShardsWithDrain);
        i.trigger = t;
        // Host shards are processes here: nothing to place.
        i.kubernetes.as_mut().unwrap().client = ClientPlacement::Host;
        let e = i.validate().unwrap_err().to_string();
        assert!(e.contains("--client host"), "{e}");
        i.kubernetes.as_mut().unwrap().shard_placement = None;
        let c = i.validate().unwrap();
        assert_eq!((c.clients, k(&c).shard_placement), (2, None));
        // One client pod: nothing to place either.
        i.clients = 1;
        i.kubernetes.as_mut().unwrap().client = ClientPlacement::Pod;
        assert_eq!(k(&i.validate().unwrap()).shard_placement, None);
        i.kubernetes.as_mut().unwrap().shard_placement = Some(ShardPlacement::PerNode);
        let e = i.validate().unwrap_err().to_string();
        assert!(e.contains("one client"), "{e}");
    }
}
