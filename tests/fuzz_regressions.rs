//! Inputs the fuzz targets (fuzz/, `make fuzz`) found crashing or hanging a parser, inlined, each
//! with the answer it must get instead: a named result, never a panic or a loop.

use drainwatch::net::attach::grpc_call::serving_status;

/// A HealthCheckResponse field of wire type 2 whose length varint is u64::MAX: adding it to the
/// offset overflowed (a panic in debug builds, a wrap and an endless loop in release). A length
/// past the end of the message is a malformed message: no status.
#[test]
fn grpc_length_delimited_field_longer_than_the_message() {
    let body = [
        0, 0, 0, 0, 12,   // the gRPC frame header
        0x12, // field 2, wire type 2
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, // length u64::MAX
    ];
    assert_eq!(serving_status(&body), None);
    // Length u64::MAX - 10: with the key's byte and its own ten, the wrapped offset came back
    // to the key, so a release build read the same field forever.
    let body = [
        0, 0, 0, 0, 11, 0x12, 0xf5, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
    ];
    assert_eq!(serving_status(&body), None);
    // Merely too long is malformed as well.
    assert_eq!(serving_status(&[0, 0, 0, 0, 3, 0x12, 0x05, 0x00]), None);
    // A well-formed message still reads.
    assert_eq!(
        serving_status(&[0, 0, 0, 0, 5, 0x12, 1, b'x', 0x08, 1]),
        Some(1)
    );
}
