// Package intstats summarises lists of integers: the bundled Go example project that the
// smoke runs (python -m dogfood) check with the verify tools.
package intstats

import (
	"errors"
	"sort"
)

// ErrEmpty is returned for an empty input, which has no mean or median.
var ErrEmpty = errors.New("intstats: no values")

// Mean returns the arithmetic mean of values.
func Mean(values []int) (float64, error) {
	if len(values) == 0 {
		return 0, ErrEmpty
	}
	total := 0
	for _, v := range values {
		total += v
	}
	return float64(total) / float64(len(values)), nil
}

// Median returns the middle value of values (the mean of the two middle ones for an even
// count). The input is not modified.
func Median(values []int) (float64, error) {
	if len(values) == 0 {
		return 0, ErrEmpty
	}
	sorted := append([]int(nil), values...)
	sort.Ints(sorted)
	mid := len(sorted) / 2
	if len(sorted)%2 == 1 {
		return float64(sorted[mid]), nil
	}
	return float64(sorted[mid-1]+sorted[mid]) / 2, nil
}
