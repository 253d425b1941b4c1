package uuid

import "testing"

// Planted failures (sandlot's verify corpus): a table test with one failing case, a failing
// subtest of a passing parent's sibling, and a plain failure.
func TestPlantedTable(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want bool
	}{
		{"valid", "f47ac10b-58cc-0372-8567-0e02b2c3d479", true},
		{"too short", "f47ac10b", true},
		{"empty", "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Validate(c.in) == nil; got != c.want {
				t.Errorf("Validate(%q) ok = %v, want %v", c.in, got, c.want)
			}
		})
	}
}

func TestPlantedVersion(t *testing.T) {
	if v := Must(NewRandom()).Version(); v != 3 {
		t.Fatalf("version = %d, want 3", v)
	}
}

func TestPlantedPanic(t *testing.T) {
	var seen map[UUID]bool
	seen[New()] = true // assignment to entry in nil map
}
