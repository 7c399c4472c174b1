//! Through an ingress: what its access log said of the client's requests, per upstream pod,
//! and how long each controller replica went on choosing each terminated pod.

use std::fmt::Write;

use super::tables::table;
use super::{esc, ms, opt, text};
use crate::data_plane::NodeView;
use crate::ingress::summary::IngressReport;

/// The section, or nothing when the trial did not go through an ingress.
pub(super) fn section(i: Option<&IngressReport>, direct: Option<&[NodeView]>) -> String {
    let Some(i) = i else {
        return String::new();
    };
    let mut o = String::from("<h3>Through the ingress</h3>\n");
    let _ = writeln!(
        o,
        "<p>{} of {} requests and dials in its access log; {} not logged (not measured).</p>",
        i.logged,
        i.logged + i.not_logged,
        i.not_logged
    );
    let upstreams: Vec<Vec<String>> = i
        .upstreams
        .iter()
        .map(|u| vec![text(u.pod.as_deref()), esc(&u.outcomes_phrase())])
        .collect();
    o.push_str(&table(
        &["upstream pod", "what the ingress made of its requests"],
        &upstreams,
    ));
    if let Some(h) = &i.hidden_retries {
        let words = crate::ingress::render::retries_words(h);
        let _ = writeln!(
            o,
            "<p>{}{}.</p>",
            words[..1].to_uppercase(),
            esc(&words[1..])
        );
    }
    let Some(r) = &i.routing else {
        o.push_str("<p class=\"nm\">Its routing was not seen: no logged request was answered by a known pod.</p>\n");
        return o;
    };
    let rows: Vec<Vec<String>> = r
        .replicas
        .iter()
        .flat_map(|rep| {
            rep.pods.iter().map(move |p| {
                vec![
                    text(rep.replica.as_deref()),
                    format!("<span class=\"mono\">{}</span>", esc(&p.pod)),
                    ms(p.last_served_t_ms),
                    ms(p.last_routed_t_ms),
                    opt(p.routed_after_not_ready),
                    ms(p.lag_at_least_ms),
                    ms(p.lag_at_most_ms),
                ]
            })
        })
        .collect();
    o.push_str(&table(
        &[
            "replica",
            "terminated pod",
            "last answered request",
            "last request sent",
            "requests sent after not ready",
            "lag after not ready, at least",
            "at most",
        ],
        &rows,
    ));
    let last = r.last_request_lag_ms.map_or_else(
        || "no terminated pod's endpoint was seen turning not ready".to_string(),
        crate::ingress::render::last_request_words,
    );
    let _ = writeln!(
        o,
        "<p>{}{}; requests after that edge: {} logged, {} not logged.</p>",
        last[..1].to_uppercase(),
        &last[1..],
        super::opt(r.logged_after_not_ready),
        super::opt(r.not_logged_after_not_ready)
    );
    if let Some(v) = &i.view {
        o.push_str("<p>Its own endpoint view, from its API polled through the trial: when each replica stopped listing each terminated pod as a server it may choose.</p>\n");
        let rows: Vec<Vec<String>> = v
            .iter()
            .flat_map(|rep| {
                rep.pods.iter().map(move |p| {
                    vec![
                        text(rep.replica.as_deref()),
                        format!("<span class=\"mono\">{}</span>", esc(&p.pod)),
                        text(p.left_as.as_deref()),
                        ms(p.left_t_ms),
                        ms(p.lag_at_least_ms),
                        ms(p.lag_at_most_ms),
                    ]
                })
            })
            .collect();
        o.push_str(&table(
            &[
                "replica",
                "terminated pod",
                "left its view as",
                "at",
                "lag after not ready, at least",
                "at most",
            ],
            &rows,
        ));
    }
    if let Some(s) = crate::ingress::render::beside_kube_proxy(i, direct) {
        let _ = writeln!(o, "<p>{}{}.</p>", s[..1].to_uppercase(), esc(&s[1..]));
    }
    o
}
