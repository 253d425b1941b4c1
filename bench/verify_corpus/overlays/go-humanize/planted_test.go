package humanize

// Planted by bench/verify_corpus: table-driven subtests, one failing row among passing ones
// in two tests, names with spaces and regexp characters (go test rewrites spaces to '_').

import "testing"

func TestPlantedComma(t *testing.T) {
	cases := []struct {
		name string
		in   int64
		want string
	}{
		{"zero", 0, "0"},
		{"one thousand", 1000, "1,000"},
		{"a million (planted)", 1000000, "1.000.000"},
		{"negative", -1234, "-1,234"},
		{"small", 12, "12"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Comma(c.in); got != c.want {
				t.Errorf("Comma(%d) = %q, want %q", c.in, got, c.want)
			}
		})
	}
}

func TestPlantedOrdinal(t *testing.T) {
	cases := []struct {
		name string
		in   int
		want string
	}{
		{"1st", 1, "1st"},
		{"2nd", 2, "2nd"},
		{"11th+ (planted)", 11, "11st"},
		{"23rd", 23, "23rd"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Ordinal(c.in); got != c.want {
				t.Errorf("Ordinal(%d) = %q, want %q", c.in, got, c.want)
			}
		})
	}
}

func TestPlantedWhole(t *testing.T) {
	t.Error("planted failure of a test without subtests")
}

func TestPlantedPasses(t *testing.T) {}
