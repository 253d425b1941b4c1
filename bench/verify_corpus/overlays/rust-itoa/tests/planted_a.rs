// Planted by sandlot's verify corpus: the same test name fails in two test binaries.
#[test]
fn formats_negative() {
    let mut buffer = itoa::Buffer::new();
    let spare = itoa::Buffer::new();
    assert_eq!(buffer.format(-7i32), "-8", "planted_a");
}
