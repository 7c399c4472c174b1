//! The page shell: doctype, the Content-Security-Policy that forbids every load, and the
//! inline stylesheet (system fonts only; colours chosen to read in print and in grey).

use std::fmt::Write;

use super::chart::MARKER_COLOURS;
use super::esc;

/// Nothing may load: no script, no font, no image, no frame, no connection. Inline styles
/// (this sheet and the SVG's attributes) are all the page uses.
const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'";

const CSS: &str = r#"
:root{--fg:#1f2328;--muted:#59636e;--line:#d0d7de;--bg:#fff;--soft:#f6f8fa;
--fail:#cf222e;--warn:#9a6700;--ok:#1a7f37;--info:#0969da}
body{font:14px/1.45 -apple-system,"Segoe UI",Helvetica,Arial,sans-serif;color:var(--fg);
background:var(--bg);max-width:1180px;margin:16px auto;padding:0 16px}
h1{font-size:22px;margin:8px 0}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid var(--line)}
h3{font-size:15px;margin:18px 0 6px}.meta{color:var(--muted);margin:0 0 12px}
table{border-collapse:collapse;margin:6px 0 12px;font-size:13px}
td,th{border:1px solid var(--line);padding:3px 8px;text-align:left;vertical-align:top}
th{background:var(--soft)}td.n{text-align:right;font-variant-numeric:tabular-nums}
.nm{color:var(--muted);font-style:italic}
.verdict{padding:10px 14px;border-radius:6px;border:1px solid var(--line);margin:10px 0}
.verdict.pass{background:#dafbe1;border-color:#4ac26b}.verdict.fail{background:#ffebe9;border-color:#ff8182}
.decision-pass{color:var(--ok);font-weight:600}.decision-fail{color:var(--fail);font-weight:600}.decision-not-judged{color:var(--warn);font-weight:600}
.finding{border-left:4px solid var(--line);padding:4px 12px;margin:8px 0;background:var(--soft)}
.finding.failure{border-color:var(--fail)}.finding.warning{border-color:var(--warn)}.finding.info{border-color:var(--info)}
.finding .sev{font-weight:600;text-transform:uppercase;font-size:11px;margin-right:6px}
.finding.failure .sev{color:var(--fail)}.finding.warning .sev{color:var(--warn)}.finding.info .sev{color:var(--info)}
.finding p{margin:3px 0}.finding .id{font-family:ui-monospace,monospace;font-size:12px}
.refs{color:var(--muted);font-size:12px}code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:12px}
details{margin:6px 0}summary{cursor:pointer;color:var(--info)}
.legend span{display:inline-block;margin-right:14px;font-size:12px}
.legend i{display:inline-block;width:14px;height:10px;margin-right:4px;vertical-align:middle;border:1px solid #8c959f}
svg.timeline{width:100%;height:auto;border:1px solid var(--line);background:#fff;font-family:-apple-system,"Segoe UI",Helvetica,Arial,sans-serif}
svg .lane-bg{fill:#fff}svg .lane-bg.alt{fill:#f6f8fa}
svg .lane-label{font-size:11px;fill:#1f2328}svg .lane-note{font-size:10px;fill:#59636e;font-style:italic}
svg .axis line,svg .axis path{stroke:#8c959f}svg .axis text{font-size:10px;fill:#59636e}
svg .grid{stroke:#eaeef2}
svg .marker line{stroke:#0969da;stroke-width:1.2}svg .marker text{font-size:10px;fill:#0969da}
svg .marker.pod line{stroke-width:1.5}svg .guide{stroke:#0969da;stroke-opacity:.25;stroke-dasharray:3 3}
svg .marker[data-event="sigkill"] line{stroke-width:2}svg .marker[data-event="trigger"] line{stroke-width:1.5}
svg .bound{fill:#0969da;fill-opacity:.15}svg .bound-label{font-size:9px;fill:#0969da}
svg .phase-before-termination{fill:#aceebb}svg .phase-terminating-ready{fill:#ffd8b5}
svg .phase-terminating-not-ready{fill:#fdaeb7}svg .phase-after-endpoint-removal{fill:#d8b9ff}
svg .phase-after-exit{fill:#d0d7de}
svg .flowbar{stroke:#8c959f;stroke-width:3}svg .flowbar.open{stroke-dasharray:6 3}
svg .flowbar.outcome-drained-clean-close,svg .flowbar.outcome-graceful-close{stroke:#4ac26b}
svg .flowbar.close-unannounced-fin{stroke:#d4a72c}
svg .flowbar.outcome-severed,svg .flowbar.outcome-read-timeout{stroke:#ff8182}
svg .flowbar.outcome-not-measured{stroke:#d0d7de;stroke-dasharray:2 3}
svg .fail{stroke:#cf222e;stroke-width:2;fill:none}svg .fail.kind-dial{stroke:#bc4c00}
svg .fail.kind-connection{stroke:#8250df}svg .flow-fail{stroke:#cf222e;stroke-width:1.5}
svg .terminal{fill:#4ac26b;stroke:#1a7f37}svg .terminal.fail{fill:#cf222e;stroke:#82071e;stroke-width:1}
svg .terminal.outcome-survived-observation-window{fill:#fff;stroke:#59636e}
svg .conn-end{fill:#4ac26b}svg .conn-end.outcome-severed{fill:#cf222e}
svg .clipped{fill:#8c959f}.scroll{overflow-x:auto}
svg .node-lag{stroke:#fdaeb7;stroke-width:6}svg .node-last-served{fill:#bf3989}
svg .rehome{fill:#bf8700}svg .window{fill:none;stroke:#8c959f;stroke-dasharray:1 3}
"#;

/// The marker colours, one rule per event kind (the legend draws the same table).
fn marker_css() -> String {
    let mut o = String::new();
    for (event, colour, _) in MARKER_COLOURS {
        let _ = writeln!(
            o,
            "svg .marker[data-event=\"{event}\"] line{{stroke:{colour}}}svg .marker[data-event=\"{event}\"] text{{fill:{colour}}}"
        );
    }
    o
}

/// The whole document around `body`.
pub(super) fn page(title: &str, body: &str) -> String {
    let markers = marker_css();
    format!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <meta name=\"generator\" content=\"drainwatch\">\n\
         <title>{}</title>\n<style>{CSS}{markers}</style>\n</head>\n<body>\n{body}</body>\n</html>\n",
        esc(title)
    )
}
