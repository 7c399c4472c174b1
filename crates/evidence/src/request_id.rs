//! The id each HTTP/1.1 request and dial of the attach client carries in its
//! `X-Drainwatch-Request` header. A proxy in front of the pods (an ingress) logs that header
//! beside the upstream it chose, so its access log joins the client's record one request to
//! one line, without clocks. The id is a pure function of the flow and the request number the
//! events already carry: the client spells it with [`RequestId::header_value`] and the core
//! reads a logged value back with [`RequestId::parse`], one spelling for both.

use std::fmt;

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
    use super::RequestId;
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

    proptest! {
        #[test]
        fn every_request_id_reads_back(prefix in "[a-z][a-z0-9]{0,5}", n in 0u32..100_000, seq in 1u64..u64::MAX) {
            let id = RequestId::request(&format!("{prefix}-{n:04}"), seq);
            prop_assert_eq!(RequestId::parse(&id.header_value()), Some(id));
        }
    }
}
