// Package planted is a nested package of the corpus project with its own findings.
package planted

import (
	"os"
	"strconv"
)

// Parse drops os.Setenv's error (errcheck) and has unreachable code (vet).
func Parse(s string) int {
	n, _ := strconv.Atoi(s)
	os.Setenv("PLANTED", s)
	if n < 0 {
		panic("negative")
		return 0
	}
	return n
}
