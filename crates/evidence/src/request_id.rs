//! The id each HTTP/1.1 request and dial of the attach client carries in its
//! `X-Drainwatch-Request` header. A proxy in front of the pods (an ingress) logs that header
//! beside the upstream it chose, so its access log joins the client's record one request to
//! one line, without clocks. The id is a pure function of the trial's prefix (recorded in its
//! config), the flow and the request number the events already carry: the client spells it
//! with [`Spelling::value`] and the log follower reads a logged value back with
//! [`Spelling::read`], one spelling for both.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The request header that carries the id (HTTP header names are case-insensitive; proxies
/// often log them as configured, so this is the spelling to configure).
pub const HEADER: &str = "X-Drainwatch-Request";

/// One request of a held connection, or one prober dial.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RequestId {
    /// Request `seq` (from 1) of held connection `flow` (`http-0001/7`).
    Request {
        /// The held connection's flow id.
        flow: String,
        /// The request's number on that connection.
        seq: u64,
    },
    /// A prober dial (`dial-000123`): one request on its own connection.
    Dial {
        /// The dial's flow id.
        flow: String,
    },
}

impl RequestId {
    /// The id of request `seq` on held connection `flow`.
    pub fn request(flow: &str, seq: u64) -> Self {
        Self::Request {
            flow: flow.to_string(),
            seq,
        }
    }

    /// The id of dial `flow`.
    pub fn dial(flow: &str) -> Self {
        Self::Dial {
            flow: flow.to_string(),
        }
    }

    /// The header's value: `FLOW/SEQ` for a request, `FLOW` for a dial.
    pub fn header_value(&self) -> String {
        self.to_string()
    }

    /// Reads a logged header value back; `None` when it is not one this client sends (another
    /// client's request through the same ingress, or no header at all).
    pub fn parse(value: &str) -> Option<Self> {
        let value = value.trim();
        match value.split_once('/') {
            Some((flow, seq)) => {
                let seq = seq.parse::<u64>().ok().filter(|s| *s > 0)?;
                flow_id(flow).then(|| Self::request(flow, seq))
            }
            None => (value.starts_with("dial-") && flow_id(value)).then(|| Self::dial(value)),
        }
    }
}

/// The prefix a trial's ids carry (`config.attach.request_id_prefix`): the orchestrator's run
/// id and trial number, so that two runs through one ingress, or one run's trials, never claim
/// each other's logged requests. Checked when made: it cannot hold the `.` that ends it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct RequestIdPrefix(String);

/// Why a request-id prefix is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "request-id prefix {0:?} is not 1 to {PREFIX_MAX} lowercase letters, digits and '-' (it is sent in every request's {HEADER} header)"
)]
pub struct PrefixError(pub String);

/// The longest prefix accepted: a run id and a trial number fit with room to spare.
pub const PREFIX_MAX: usize = 48;

impl TryFrom<String> for RequestIdPrefix {
    type Error = PrefixError;

    fn try_from(p: String) -> Result<Self, PrefixError> {
        let valid = !p.is_empty()
            && p.len() <= PREFIX_MAX
            && p.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if valid {
            Ok(Self(p))
        } else {
            Err(PrefixError(p))
        }
    }
}

impl std::str::FromStr for RequestIdPrefix {
    type Err = PrefixError;

    fn from_str(s: &str) -> Result<Self, PrefixError> {
        Self::try_from(s.to_string())
    }
}

impl From<RequestIdPrefix> for String {
    fn from(p: RequestIdPrefix) -> Self {
        p.0
    }
}

impl RequestIdPrefix {
    /// The prefix as sent.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// How one trial spells its ids in the header: `PREFIX.ID` under its prefix, the bare id
/// without one (a manual client run, a recording from before the prefix). The client spells
/// with it and the log follower reads with it, one spelling for both.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Spelling {
    prefix: Option<RequestIdPrefix>,
}

impl Spelling {
    /// Ids under `prefix`; bare when `None`.
    pub fn new(prefix: Option<&RequestIdPrefix>) -> Self {
        Self {
            prefix: prefix.cloned(),
        }
    }

    /// The header's value of `id`: `PREFIX.FLOW/SEQ` (or `PREFIX.FLOW` for a dial).
    pub fn value(&self, id: &RequestId) -> String {
        match &self.prefix {
            Some(p) => format!("{}.{id}", p.as_str()),
            None => id.header_value(),
        }
    }

    /// Reads a logged header value back: `None` when it is not one of this trial's (another
    /// run's or trial's prefix, a bare id when this trial has a prefix, another client's value).
    pub fn read(&self, value: &str) -> Option<RequestId> {
        let value = value.trim();
        match &self.prefix {
            Some(p) => RequestId::parse(value.strip_prefix(p.as_str())?.strip_prefix('.')?),
            None => RequestId::parse(value),
        }
    }
}

/// A flow id as the client writes them: `PREFIX-DIGITS`.
fn flow_id(s: &str) -> bool {
    s.split_once('-').is_some_and(|(prefix, n)| {
        !prefix.is_empty()
            && prefix
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
            && !n.is_empty()
            && n.bytes().all(|b| b.is_ascii_digit())
    })
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Request { flow, seq } => write!(f, "{flow}/{seq}"),
            Self::Dial { flow } => f.write_str(flow),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{PREFIX_MAX, PrefixError, RequestId, RequestIdPrefix, Spelling};
    use proptest::prelude::*;

    #[test]
    fn requests_and_dials_are_spelled_and_read_back() {
        let cases = [
            (RequestId::request("http-0001", 7), "http-0001/7"),
            (RequestId::dial("dial-000123"), "dial-000123"),
        ];
        assert_eq!(cases.len(), 2);
        for (id, spelled) in cases {
            assert_eq!(id.header_value(), spelled);
            assert_eq!(RequestId::parse(spelled), Some(id));
        }
    }

    #[test]
    fn values_another_client_sends_are_not_ids() {
        let foreign = [
            "",
            "-",
            "abc",
            "http-0001/0",
            "http-0001/x",
            "http-/3",
            "HTTP-0001/3",
            "http-0001/3/4",
            "dial-",
            "dial-12a",
            "4f9c2b1e-preflight",
        ];
        assert_eq!(foreign.len(), 11);
        for v in foreign {
            assert_eq!(RequestId::parse(v), None, "{v:?}");
        }
    }

    #[test]
    fn a_prefixed_spelling_reads_back_only_its_own_ids() {
        let prefix: RequestIdPrefix = "20261206-063311-3fa9c01b-001".parse().unwrap();
        let ours = Spelling::new(Some(&prefix));
        let id = RequestId::request("http-0001", 7);
        assert_eq!(ours.value(&id), "20261206-063311-3fa9c01b-001.http-0001/7");
        assert_eq!(ours.read(&ours.value(&id)), Some(id.clone()));
        let dial = RequestId::dial("dial-000012");
        assert_eq!(ours.read(&ours.value(&dial)), Some(dial));
        // Another trial of the same run, another run, and a bare id are not this trial's.
        let foreign = [
            "20261206-063311-3fa9c01b-002.http-0001/7",
            "20261206-070000-99999999-001.http-0001/7",
            "http-0001/7",
            "20261206-063311-3fa9c01b-001http-0001/7",
            "20261206-063311-3fa9c01b-001.",
        ];
        assert_eq!(foreign.len(), 5);
        for v in foreign {
            assert_eq!(ours.read(v), None, "{v:?}");
        }
        // Without a prefix the bare ids are read, and a prefixed one is not.
        let bare = Spelling::default();
        assert_eq!(bare.value(&id), "http-0001/7");
        assert_eq!(bare.read("http-0001/7"), Some(id));
        assert_eq!(bare.read("20261206-063311-3fa9c01b-001.http-0001/7"), None);
    }

    #[test]
    fn a_prefix_that_could_not_be_read_back_is_refused() {
        let bad = ["", "Run", "a.b", "a/b", "a b", &"x".repeat(PREFIX_MAX + 1)];
        assert_eq!(bad.len(), 6);
        for p in bad {
            assert_eq!(
                p.parse::<RequestIdPrefix>(),
                Err(PrefixError(p.to_string())),
                "{p:?}"
            );
        }
        assert!("x".repeat(PREFIX_MAX).parse::<RequestIdPrefix>().is_ok());
        // A report read back checks it too.
        let read: Result<RequestIdPrefix, _> = serde_json::from_str("\"a.b\"");
        assert!(read.is_err());
        let read: RequestIdPrefix = serde_json::from_str("\"run-1\"").unwrap();
        assert_eq!(serde_json::to_string(&read).unwrap(), "\"run-1\"");
    }

    proptest! {
        #[test]
        fn every_request_id_reads_back(prefix in "[a-z][a-z0-9]{0,5}", n in 0u32..100_000, seq in 1u64..u64::MAX) {
            let id = RequestId::request(&format!("{prefix}-{n:04}"), seq);
            prop_assert_eq!(RequestId::parse(&id.header_value()), Some(id));
        }
    }
}
