package uuid

import "os"

// plantedCleanup holds planted findings: an unchecked error (errcheck) and a self-assignment
// (go vet's assign check, which `go test` does not run, so the tests still build).
func plantedCleanup(path string) {
	os.Remove(path)
	path = path
}
