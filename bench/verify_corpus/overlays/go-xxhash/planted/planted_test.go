package planted

import "testing"

func TestPlantedSum(t *testing.T) {
	if got := Parse("41"); got != 42 {
		t.Errorf("Parse(\"41\") = %d, want 42", got)
	}
}

func TestPlantedPasses(t *testing.T) {
	if Parse("7") != 7 {
		t.Fatal("Parse(\"7\") != 7")
	}
}
