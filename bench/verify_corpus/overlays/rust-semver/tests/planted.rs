// Planted by sandlot's verify corpus: a panic (unwrap of an Err), a failed assertion, and a
// clippy finding in a test target.
use semver::{Version, VersionReq};

#[test]
fn parses_a_partial_version() {
    let version = Version::parse("1.2").unwrap();
    assert_eq!(version.major, 1);
}

#[test]
fn caret_excludes_next_major() {
    let req = VersionReq::parse("^1.2.3").unwrap();
    assert!(req.matches(&Version::new(2, 0, 0)), "^1.2.3 should not match 2.0.0");
}

#[test]
fn compares_lengths() {
    let parts = vec![1, 2, 3];
    assert!(parts.len() >= 1);
}
