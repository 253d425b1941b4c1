// Planted by sandlot's verify corpus: the same test name fails in two test binaries.
#[test]
fn formats_negative() {
    let mut buffer = itoa::Buffer::new();
    assert_eq!(buffer.format(i64::MIN), "0", "planted_b");
}

#[test]
fn formats_zero() {
    let mut buffer = itoa::Buffer::new();
    assert_eq!(buffer.format(0u8), "0");
}
