//! How `--clients N` divides the flows: contiguous slices of the global ids, one per client
//! (a child process or a client pod). Pure, so the report can tell which flows a lost shard
//! held from the configuration alone.

use crate::event::{self, EventLine};
use crate::flow::Proto;

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
    /// Whether flow `id` is one of this slice's: a probe flow (`tcp-0012`, `udp-0003`) by its
    /// protocol's range, an attach client's held connection (`http-0012`, `ws-0003`: every
    /// held connection is one of the TCP flows) by the TCP range.
    pub fn holds(&self, id: &str) -> bool {
        let Some(n) = id.rsplit_once('-').and_then(|(_, n)| n.parse::<u64>().ok()) else {
            return false;
        };
        let (first, count) = match Proto::of_flow_id(id) {
            Some(Proto::Udp) => (self.first_udp, self.udp),
            Some(Proto::Tcp) | None => (self.first_tcp, self.tcp),
        };
        n >= u64::from(first) && n < u64::from(first) + u64::from(count)
    }

    /// `http-0011..http-0020`: the slice's held connections of an attach client whose ids
    /// carry `prefix`, for messages.
    pub fn describe_tcp(&self, prefix: &str) -> String {
        range(prefix, self.first_tcp, self.tcp, "connections")
    }

    /// `tcp-0011..tcp-0020 + udp-0011..udp-0020`, for messages.
    pub fn describe(&self) -> String {
        format!(
            "{} + {}",
            range(Proto::Tcp.as_str(), self.first_tcp, self.tcp, "flows"),
            range(Proto::Udp.as_str(), self.first_udp, self.udp, "flows")
        )
    }
}

/// `tcp-0011..tcp-0020`, or `no tcp flows` when `n` is 0: ids as
/// [`crate::flow::flow_id`] writes them.
fn range(prefix: &str, first: u32, n: u32, noun: &str) -> String {
    match n {
        0 => format!("no {prefix} {noun}"),
        _ => format!("{prefix}-{first:04}..{prefix}-{:04}", first + n - 1),
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

/// Which flows the trial's lost clients leave not-measured: every flow for a lost whole client
/// (one client, or a `client_lost` line without a shard), a shard's slice for a lost shard.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Losses<'a> {
    /// Why the whole client was lost, if it was.
    whole: Option<&'a str>,
    /// Each lost shard's slice and why.
    shards: Vec<(Slice, &'a str)>,
}

impl<'a> Losses<'a> {
    /// The losses `lines` record, sliced as `--clients clients` divides `tcp` and `udp` flows
    /// (the trial's configuration). A shard the configuration does not have stands for the
    /// whole client: more not-measured, never less.
    pub fn of(lines: &'a [EventLine], tcp: u32, udp: u32, clients: u32) -> Self {
        let parts = slices(tcp, udp, clients);
        let mut losses = Self::default();
        for (shard, why) in event::client_losses(lines) {
            let slice = shard
                .filter(|_| parts.len() > 1)
                .and_then(|k| k.checked_sub(1))
                .and_then(|k| parts.get(usize::try_from(k).ok()?));
            match slice {
                Some(s) => losses.shards.push((*s, why)),
                None => {
                    losses.whole.get_or_insert(why);
                }
            }
        }
        losses
    }

    /// The losses `lines` record for a trial of one client: each is the whole client's.
    #[cfg(test)]
    pub fn unsharded(lines: &'a [EventLine]) -> Self {
        Self::of(lines, 0, 0, 1)
    }

    /// Why the whole client was lost, if it was.
    pub fn whole(&self) -> Option<&'a str> {
        self.whole
    }

    /// Each lost shard's slice and why, in the order they were lost.
    pub fn shards(&self) -> &[(Slice, &'a str)] {
        &self.shards
    }

    /// Why flow `id`'s client was lost before the window closed, if it was.
    pub fn why(&self, id: &str) -> Option<&'a str> {
        self.whole.or_else(|| {
            self.shards
                .iter()
                .find(|(s, _)| s.holds(id))
                .map(|(_, why)| *why)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::flow::flow_id;

    /// The ids one client numbers: TCP first, then UDP.
    fn ids(first_tcp: u32, tcp: u32, first_udp: u32, udp: u32) -> Vec<String> {
        (first_tcp..first_tcp + tcp)
            .map(|n| flow_id(Proto::Tcp, n))
            .chain((first_udp..first_udp + udp).map(|n| flow_id(Proto::Udp, n)))
            .collect()
    }

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
        let mut all: Vec<String> = s
            .iter()
            .flat_map(|s| ids(s.first_tcp, s.tcp, s.first_udp, s.udp))
            .collect();
        let mut expected = ids(1, 30, 1, 7);
        all.sort();
        expected.sort();
        assert_eq!(all, expected);
        assert_eq!(s[1].describe(), "tcp-0011..tcp-0020 + udp-0004..udp-0005");
        assert_eq!(
            slices(0, 2, 2)[0].describe(),
            "no tcp flows + udp-0001..udp-0001"
        );
    }

    #[test]
    fn every_id_is_held_by_exactly_one_slice() {
        let s = slices(30, 7, 3);
        for id in ids(1, 30, 1, 7) {
            assert_eq!(s.iter().filter(|s| s.holds(&id)).count(), 1, "{id}");
        }
        assert!(s[1].holds("tcp-0011") && !s[1].holds("tcp-0021"));
        assert!(s[2].holds("udp-0007") && !s[2].holds("udp-0008"));
        assert!(!s[0].holds("tcp-x"));
        // An attach client's held connections are its TCP flows.
        assert!(s[1].holds("http-0011") && !s[1].holds("ws-0001"));
        // Ids past 9,999 take a fifth digit and still fall in their slice.
        let big = slices(20_000, 0, 2);
        assert!(big[1].holds("tcp-10001") && !big[0].holds("tcp-10001"));
    }

    fn lost(shard: Option<u32>, why: &str) -> EventLine {
        let mut l = EventLine::new(
            crate::event::Source::Orchestrator,
            crate::event::EventName::ClientLost,
            1,
        )
        .detail(why);
        l.shard = shard;
        l
    }

    #[test]
    fn a_lost_shard_leaves_only_its_slice_unmeasured() {
        // 4 TCP and 2 UDP flows over 2 shards.
        let mut clients = 2;
        assert_eq!(Losses::of(&[], 4, 2, clients).why("tcp-0001"), None);
        let lines = [lost(Some(2), "pod b deleted")];
        let l = Losses::of(&lines, 4, 2, clients);
        assert_eq!(
            ids(1, 4, 1, 2)
                .iter()
                .map(|id| l.why(id).is_some())
                .collect::<Vec<_>>(),
            [false, false, true, true, false, true]
        );
        assert_eq!(l.why("tcp-0003"), Some("pod b deleted"));
        // Both shards lost: every flow.
        let lines = [lost(Some(2), "b"), lost(Some(1), "a")];
        let l = Losses::of(&lines, 4, 2, clients);
        assert_eq!(l.why("tcp-0001"), Some("a"));
        assert_eq!(l.why("udp-0002"), Some("b"));
        // No shard named, or one the run did not have: the whole client.
        for shard in [None, Some(3), Some(0)] {
            let lines = [lost(shard, "gone")];
            let l = Losses::of(&lines, 4, 2, clients);
            assert!(
                ids(1, 4, 1, 2).iter().all(|id| l.why(id) == Some("gone")),
                "{shard:?}"
            );
        }
        // One client: a shard number means nothing, the whole client was lost.
        clients = 1;
        let lines = [lost(Some(1), "gone")];
        assert_eq!(
            Losses::of(&lines, 4, 2, clients).why("udp-0002"),
            Some("gone")
        );
    }
}
