//! How to write the preStop delay a finding recommends, for the cluster the report ran on: the
//! Sleep action (`lifecycle.preStop.sleep.seconds`, KEP-3960: alpha in Kubernetes 1.29 behind
//! the PodLifecycleSleepAction gate, beta and on by default from 1.30, GA in 1.34) needs no
//! shell and no `sleep` binary, so it works in FROM-scratch and distroless images; before 1.30
//! the way is an exec hook running `sleep`, which needs that binary in the image. Chosen by the
//! API server version recorded in `environment.kubernetes_version`; when it is unknown, both.

/// The first minor version whose API servers accept the Sleep action without a feature gate.
pub(super) const SLEEP_ACTION_MINOR: u32 = 30;

/// Whether the cluster accepts `lifecycle.preStop.sleep`, from its recorded server version
/// (`v1.34.4`, `v1.30.2-gke.1`, `1.29`); `None` when the version is unknown or unreadable.
pub(super) fn sleep_action_supported(version: Option<&str>) -> Option<bool> {
    let v = version?.trim();
    let v = v.strip_prefix('v').unwrap_or(v);
    let mut parts = v.split('.');
    let major: u32 = parts.next()?.parse().ok()?;
    let minor_text = parts.next()?;
    let digits: String = minor_text
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    let minor: u32 = digits.parse().ok()?;
    Some(major > 1 || (major == 1 && minor >= SLEEP_ACTION_MINOR))
}

/// The preStop hook to write for a delay of `seconds` (or `N` when not derived), on the
/// cluster whose server version the report recorded.
pub(super) fn prestop_hook(version: Option<&str>, seconds: Option<u64>) -> String {
    let n = seconds.map_or_else(|| "N".to_string(), |s| s.to_string());
    let sleep = format!(
        "`lifecycle.preStop.sleep.seconds: {n}` (the Sleep action: no shell or sleep binary needed, so it works in FROM-scratch images)"
    );
    let exec = format!(
        "`lifecycle.preStop.exec.command: [\"sleep\", \"{n}\"]` (needs a sleep binary in the image)"
    );
    match sleep_action_supported(version) {
        Some(true) => format!(
            "{sleep}, which this cluster's Kubernetes {} accepts",
            version.unwrap_or_default().trim()
        ),
        Some(false) => format!(
            "{exec}: this cluster's Kubernetes {} predates the Sleep action (on by default from 1.{SLEEP_ACTION_MINOR})",
            version.unwrap_or_default().trim()
        ),
        None => format!(
            "{sleep} on Kubernetes 1.{SLEEP_ACTION_MINOR} or later, else {exec}; the report records no readable Kubernetes version"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sleep_action_is_chosen_from_1_30_on() {
        for (v, want) in [
            ("v1.29.9", Some(false)),
            ("v1.30.0", Some(true)),
            ("v1.34.4", Some(true)),
            ("1.29", Some(false)),
            ("v1.30.2-gke.1105000", Some(true)),
            ("v1.29.3+k3s1", Some(false)),
            ("v2.0.0", Some(true)),
            ("v1.9.11", Some(false)),
            ("v1", None),
            ("vx.y", None),
            ("", None),
        ] {
            assert_eq!(sleep_action_supported(Some(v)), want, "{v}");
        }
        assert_eq!(sleep_action_supported(None), None);
    }

    #[test]
    fn the_hook_names_sleep_seconds_on_1_30_and_exec_sleep_before() {
        let new = prestop_hook(Some("v1.30.0"), Some(4));
        assert!(
            new.contains("`lifecycle.preStop.sleep.seconds: 4`"),
            "{new}"
        );
        assert!(!new.contains("exec"), "{new}");
        let old = prestop_hook(Some("v1.29.9"), Some(4));
        assert!(
            old.contains(r#"`lifecycle.preStop.exec.command: ["sleep", "4"]`"#),
            "{old}"
        );
        assert!(!old.contains("sleep.seconds"), "{old}");
    }

    #[test]
    fn an_unknown_version_names_both_and_an_underived_delay_is_n() {
        let both = prestop_hook(None, None);
        assert!(
            both.contains("`lifecycle.preStop.sleep.seconds: N`"),
            "{both}"
        );
        assert!(
            both.contains(r#"`lifecycle.preStop.exec.command: ["sleep", "N"]`"#),
            "{both}"
        );
        assert!(both.contains("no readable Kubernetes version"), "{both}");
        let unreadable = prestop_hook(Some("unknown"), Some(3));
        assert!(unreadable.contains("sleep.seconds: 3") && unreadable.contains("\"3\"]"));
    }
}
