//! The CA of `run --target --tls --ca-file` in the client pod: a ConfigMap of the trial
//! (marked with the run like every other object, so teardown and `cleanup --run` remove it),
//! mounted read-only where the client's `--ca-file` points.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    ConfigMap, ConfigMapVolumeSource, KeyToPath, Volume, VolumeMount,
};

use super::meta;
use crate::k8s::{CLIENT_CA_DIR, CLIENT_CA_KEY, CLIENT_CA_NAME};

/// The volume's name in the client pod.
const VOLUME: &str = "ca";

/// The ConfigMap holding the CA's PEM text under [`CLIENT_CA_KEY`]; immutable, since a trial
/// never changes what it verified against.
pub fn client_ca(namespace: &str, instance: &str, run: &str, pem: &str) -> ConfigMap {
    ConfigMap {
        metadata: meta(CLIENT_CA_NAME, namespace, CLIENT_CA_NAME, instance, run),
        data: Some(BTreeMap::from([(
            CLIENT_CA_KEY.to_string(),
            pem.to_string(),
        )])),
        immutable: Some(true),
        ..ConfigMap::default()
    }
}

/// The CA file's path inside the client pod (its `--ca-file`).
pub fn client_ca_path() -> String {
    format!("{CLIENT_CA_DIR}/{CLIENT_CA_KEY}")
}

/// The pod volume of ConfigMap `name`: only the CA key, read-only for everyone (0444; the
/// client runs as a non-root user of the restricted profile).
pub(super) fn volume(name: &str) -> Volume {
    Volume {
        name: VOLUME.into(),
        config_map: Some(ConfigMapVolumeSource {
            name: name.to_string(),
            items: Some(vec![KeyToPath {
                key: CLIENT_CA_KEY.into(),
                path: CLIENT_CA_KEY.into(),
                mode: None,
            }]),
            default_mode: Some(0o444),
            optional: Some(false),
        }),
        ..Volume::default()
    }
}

/// The client container's read-only mount of [`volume`].
pub(super) fn mount() -> VolumeMount {
    VolumeMount {
        name: VOLUME.into(),
        mount_path: CLIENT_CA_DIR.into(),
        read_only: Some(true),
        ..VolumeMount::default()
    }
}
