//! How `--clients N` divides the flows: contiguous slices of the global ids, one per child.

use crate::evidence::flow::{Proto, flow_id};

/// One child's share of the flows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Slice {
    /// Number of its first TCP flow.
    pub first_tcp: u32,
    /// Its TCP flows.
    pub tcp: u32,
    /// Number of its first UDP flow.
    pub first_udp: u32,
    /// Its UDP flows.
    pub udp: u32,
}

impl Slice {
    /// `tcp-0011..tcp-0020 + udp-0011..udp-0020`, for messages.
    pub fn describe(&self) -> String {
        let range = |proto: Proto, first: u32, n: u32| match n {
            0 => format!("no {} flows", proto.as_str()),
            _ => format!(
                "{}..{}",
                flow_id(proto, first),
                flow_id(proto, first + n - 1)
            ),
        };
        format!(
            "{} + {}",
            range(Proto::Tcp, self.first_tcp, self.tcp),
            range(Proto::Udp, self.first_udp, self.udp)
        )
    }
}

/// Splits `tcp` and `udp` flows into `n` contiguous slices in id order, the first slices taking
/// the remainders, so that the slices together hold exactly the ids of one client.
pub fn slices(tcp: u32, udp: u32, n: u32) -> Vec<Slice> {
    let n = n.max(1);
    let share = |total: u32, i: u32| total / n + u32::from(i < total % n);
    let (mut next_tcp, mut next_udp) = (1, 1);
    (0..n)
        .map(|i| {
            let s = Slice {
                first_tcp: next_tcp,
                tcp: share(tcp, i),
                first_udp: next_udp,
                udp: share(udp, i),
            };
            next_tcp += s.tcp;
            next_udp += s.udp;
            s
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::ClientConfig;

    #[test]
    fn slices_hold_exactly_the_ids_of_one_client() {
        let s = slices(30, 7, 3);
        assert_eq!(
            s.iter().map(|s| (s.first_tcp, s.tcp)).collect::<Vec<_>>(),
            vec![(1, 10), (11, 10), (21, 10)]
        );
        assert_eq!(
            s.iter().map(|s| (s.first_udp, s.udp)).collect::<Vec<_>>(),
            vec![(1, 3), (4, 2), (6, 2)]
        );
        let ids = |s: &Slice| {
            let mut c = ClientConfig::new("h", 1, 2);
            (c.tcp_flows, c.udp_flows) = (s.tcp, s.udp);
            (c.first_tcp_flow, c.first_udp_flow) = (s.first_tcp, s.first_udp);
            c.flow_ids()
        };
        let mut all: Vec<String> = s.iter().flat_map(ids).collect();
        let mut one = ClientConfig::new("h", 1, 2);
        (one.tcp_flows, one.udp_flows) = (30, 7);
        let mut expected = one.flow_ids();
        all.sort();
        expected.sort();
        assert_eq!(all, expected);
        assert_eq!(s[1].describe(), "tcp-0011..tcp-0020 + udp-0004..udp-0005");
        assert_eq!(
            slices(0, 2, 2)[0].describe(),
            "no tcp flows + udp-0001..udp-0001"
        );
    }
}
