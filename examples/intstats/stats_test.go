package intstats

import (
	"errors"
	"testing"
)

func TestMean(t *testing.T) {
	got, err := Mean([]int{1, 2, 3, 4})
	if err != nil || got != 2.5 {
		t.Fatalf("Mean = %v, %v; want 2.5, nil", got, err)
	}
}

func TestMedian(t *testing.T) {
	cases := []struct {
		name   string
		values []int
		want   float64
	}{
		{"odd", []int{5, 1, 3}, 3},
		{"even", []int{4, 1, 3, 2}, 2.5},
		{"single", []int{7}, 7},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Median(tc.values)
			if err != nil || got != tc.want {
				t.Fatalf("Median(%v) = %v, %v; want %v", tc.values, got, err, tc.want)
			}
		})
	}
}

func TestMedianKeepsInput(t *testing.T) {
	values := []int{3, 1, 2}
	if _, err := Median(values); err != nil {
		t.Fatal(err)
	}
	if values[0] != 3 || values[1] != 1 || values[2] != 2 {
		t.Fatalf("Median changed its input: %v", values)
	}
}

func TestEmpty(t *testing.T) {
	if _, err := Mean(nil); !errors.Is(err, ErrEmpty) {
		t.Fatalf("Mean(nil) error = %v; want ErrEmpty", err)
	}
	if _, err := Median(nil); !errors.Is(err, ErrEmpty) {
		t.Fatalf("Median(nil) error = %v; want ErrEmpty", err)
	}
}
