// Planted by bench/verify_corpus: an integration test binary with one failing test.

#[test]
fn planted_integration_passes() {
    assert_eq!(cfg_if::planted_double(5), 10);
}

#[test]
fn planted_integration_fails() {
    assert_eq!(cfg_if::planted_double(5), 11, "planted integration failure");
}
