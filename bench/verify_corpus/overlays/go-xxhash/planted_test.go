package xxhash

import "testing"

// Planted failure (sandlot's verify corpus); a test of the same name fails in ./planted too.
func TestPlantedSum(t *testing.T) {
	if got := Sum64String(""); got != 0 {
		t.Errorf("Sum64String(\"\") = %#x, want 0", got)
	}
}
