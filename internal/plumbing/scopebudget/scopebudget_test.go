package scopebudget

import (
	"math/rand"
	"testing"
)

// TestLedgerAgainstAModel: random operations on a Ledger agree with a
// plain model (a slice in use order and a map of sizes) on the bytes
// used, the entries, their order and the oldest entry not skipped.
func TestLedgerAgainstAModel(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	l := New[int, string](100)
	var order []int // most recently used first
	sizes := map[int]int64{}
	remove := func(k int) {
		for i, x := range order {
			if x == k {
				order = append(order[:i], order[i+1:]...)
				return
			}
		}
	}
	for step := range 5000 {
		k := rng.Intn(12)
		switch rng.Intn(6) {
		case 0, 1:
			b := int64(rng.Intn(30))
			last := rng.Intn(3) == 0
			l.Add(k, "v", b, last)
			remove(k)
			if last {
				order = append(order, k)
			} else {
				order = append([]int{k}, order...)
			}
			sizes[k] = b
		case 2:
			if _, ok := l.Touch(k); ok != contains(order, k) {
				t.Fatalf("step %d: Touch(%d) = %v", step, k, ok)
			}
			if contains(order, k) {
				remove(k)
				order = append([]int{k}, order...)
			}
		case 3:
			d := int64(rng.Intn(10))
			l.Grow(k, d)
			if contains(order, k) {
				sizes[k] += d
			}
		case 4:
			l.Remove(k)
			remove(k)
			delete(sizes, k)
		case 5:
			skip := func(x int) bool { return x%3 == step%3 }
			got, ok := l.Oldest(skip)
			want, wok := 0, false
			for i := len(order) - 1; i >= 0; i-- {
				if !skip(order[i]) {
					want, wok = order[i], true
					break
				}
			}
			if ok != wok || got != want {
				t.Fatalf("step %d: Oldest = %d, %v; want %d, %v", step, got, ok, want, wok)
			}
		}
		var used int64
		for _, k := range order {
			used += sizes[k]
		}
		if l.Used() != used || l.Len() != len(order) || l.Over() != (used > 100) || l.Fits(5) != (used+5 <= 100) {
			t.Fatalf("step %d: used %d, len %d; want %d, %d", step, l.Used(), l.Len(), used, len(order))
		}
		var seen []int
		l.Each(func(k int, _ string, b int64) bool {
			if b != sizes[k] {
				t.Fatalf("step %d: %d has %d bytes; want %d", step, k, b, sizes[k])
			}
			seen = append(seen, k)
			return true
		})
		if len(seen) != len(order) {
			t.Fatalf("step %d: order %v; want %v", step, seen, order)
		}
		for i := range seen {
			if seen[i] != order[i] {
				t.Fatalf("step %d: order %v; want %v", step, seen, order)
			}
		}
	}
}

func contains(s []int, k int) bool {
	for _, x := range s {
		if x == k {
			return true
		}
	}
	return false
}
