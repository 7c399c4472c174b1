use proptest::prelude::*;

use super::*;

fn valid(key: &str) -> bool {
    !key.is_empty()
        && key.len() <= MAX_KEY_LEN
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

#[test]
fn a_job_without_a_matrix_keeps_its_id() {
    for m in [None, Some(""), Some("null"), Some(" {} "), Some("{}\n")] {
        assert_eq!(derive(Some("e2e"), m), Ok("e2e".to_string()), "{m:?}");
    }
    assert_eq!(derive(None, None), Ok(DEFAULT_JOB.to_string()));
    assert_eq!(derive(Some(""), None), Ok(DEFAULT_JOB.to_string()));
}

#[test]
fn matrix_values_follow_the_job_in_key_order_then_the_hash() {
    let k = derive(
        Some("gate"),
        Some(r#"{"service":"good-shutdown","k8s":"v1.31","nodes":2}"#),
    )
    .unwrap();
    // k8s < nodes < service, whatever order toJSON wrote them in.
    let (readable, hash) = k.rsplit_once('-').unwrap();
    assert_eq!(readable, "gate-v1.31-2-good-shutdown");
    assert_eq!(hash.len(), 8);
    assert!(hash.bytes().all(|b| b.is_ascii_hexdigit()));
    let reordered = derive(
        Some("gate"),
        Some(r#"{ "nodes": 2, "k8s": "v1.31", "service": "good-shutdown" }"#),
    )
    .unwrap();
    assert_eq!(k, reordered);
}

#[test]
fn the_key_is_pinned_so_later_runs_find_the_same_artifact() {
    // A change of this value renames every user's artifacts: baselines would no longer be
    // found. Change it only with a migration note.
    assert_eq!(
        derive(Some("gate"), Some(r#"{"service":"bad-shutdown"}"#)).unwrap(),
        format!(
            "gate-bad-shutdown-{}",
            hash_hex(r#"["gate",{"service":"bad-shutdown"}]"#)
        )
    );
    assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
    assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
}

#[test]
fn nested_values_are_compact_json_with_sorted_keys() {
    let a = derive(Some("j"), Some(r#"{"cfg":{"b":[1,2],"a":"x y"}}"#)).unwrap();
    let b = derive(Some("j"), Some(r#"{"cfg":{"a":"x y","b":[1,2]}}"#)).unwrap();
    assert_eq!(a, b);
    assert!(a.starts_with("j-__a___x_y___b___1_2__-"), "{a}");
}

#[test]
fn legs_that_sanitize_alike_still_differ() {
    let one = derive(Some("j"), Some(r#"{"os":"a b"}"#)).unwrap();
    let two = derive(Some("j"), Some(r#"{"os":"a_b"}"#)).unwrap();
    // An include that adds a different key with the same value to another leg.
    let three = derive(Some("j"), Some(r#"{"arch":"a_b"}"#)).unwrap();
    assert_eq!(one.rsplit_once('-').unwrap().0, "j-a_b");
    assert_eq!(two.rsplit_once('-').unwrap().0, "j-a_b");
    assert_ne!(one, two);
    assert_ne!(two, three);
}

#[test]
fn long_keys_keep_a_prefix_and_the_hash() {
    let long = "x".repeat(200);
    let k = derive(Some("job"), Some(&format!(r#"{{"v":"{long}"}}"#))).unwrap();
    assert_eq!(k.len(), MAX_KEY_LEN);
    assert!(k.starts_with("job-xxxx"));
    let k2 = derive(Some("job"), Some(&format!(r#"{{"v":"{long}y"}}"#))).unwrap();
    assert_ne!(k, k2, "the same prefix, a different whole");
}

#[test]
fn an_explicit_key_wins_and_stays_as_given_when_valid() {
    let id = identity(Some("e2e"), Some(r#"{"a":"b"}"#), Some("my-key"), None).unwrap();
    assert_eq!(
        id,
        Identity {
            key: "my-key".into(),
            artifact_name: "drainwatch-my-key".into()
        }
    );
    let id = identity(Some("e2e"), None, Some(" "), Some("reports")).unwrap();
    assert_eq!(id.key, "e2e", "an empty override is no override");
    assert_eq!(id.artifact_name, "reports");
    let odd = explicit("a b");
    assert!(odd.starts_with("a_b-") && valid(&odd), "{odd}");
    assert_ne!(odd, explicit("a_b"));
}

#[test]
fn a_matrix_that_is_not_an_object_is_refused() {
    assert!(matches!(
        derive(Some("j"), Some("{os:")),
        Err(KeyError::NotJson { .. })
    ));
    assert_eq!(
        derive(Some("j"), Some("[1]")),
        Err(KeyError::NotAnObject { kind: "an array" })
    );
    assert_eq!(
        derive(Some("j"), Some("\"x\"")),
        Err(KeyError::NotAnObject { kind: "a string" })
    );
}

fn text() -> impl Strategy<Value = String> {
    // Few characters, so sanitizing and truncation collide often.
    proptest::string::string_regex("[ab_ -é]{0,6}|[a-z]{60,80}").unwrap()
}

fn matrix() -> impl Strategy<Value = BTreeMap<String, String>> {
    proptest::collection::btree_map(text(), text(), 0..4)
}

fn to_json(m: &BTreeMap<String, String>, reversed: bool) -> String {
    let mut pairs: Vec<String> = m
        .iter()
        .map(|(k, v)| format!("{}:{}", Value::String(k.clone()), Value::String(v.clone())))
        .collect();
    if reversed {
        pairs.reverse();
    }
    format!("{{{}}}", pairs.join(","))
}

proptest! {
    #[test]
    fn keys_are_valid_bounded_and_stable(job in "[A-Za-z_][A-Za-z0-9_-]{0,70}", m in matrix()) {
        let k = derive(Some(&job), Some(&to_json(&m, false))).unwrap();
        prop_assert!(valid(&k), "{}", k);
        prop_assert_eq!(&k, &derive(Some(&job), Some(&to_json(&m, true))).unwrap());
        let id = identity(Some(&job), Some(&to_json(&m, false)), None, None).unwrap();
        prop_assert_eq!(id.artifact_name, format!("drainwatch-{k}"));
    }

    #[test]
    fn two_legs_never_share_a_key(job in "[a-c]{1,2}", a in matrix(), b in matrix()) {
        prop_assume!(a != b);
        let ka = derive(Some(&job), Some(&to_json(&a, false))).unwrap();
        let kb = derive(Some(&job), Some(&to_json(&b, false))).unwrap();
        prop_assert_ne!(ka, kb);
    }

    #[test]
    fn two_given_keys_never_share_a_key(a in text(), b in text()) {
        prop_assume!(a.trim() != b.trim() && !a.trim().is_empty() && !b.trim().is_empty());
        let (ka, kb) = (explicit(&a), explicit(&b));
        prop_assert!(valid(&ka) && valid(&kb));
        prop_assert_ne!(ka, kb);
    }
}
