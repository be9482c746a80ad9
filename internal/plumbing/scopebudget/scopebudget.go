// Package scopebudget keeps the accounts of what a store holds in memory
// per Scope against a byte budget, and orders the entries by use so the
// least recently used can leave first. pgstore's recall cache and
// sqlitestore's mirror both keep their Scopes in a Ledger.
//
// A Ledger only accounts: it never evicts by itself, and its owner says
// which entry leaves (Oldest) and when (Over, Fits). It is not safe for
// concurrent use; its owner guards it.
package scopebudget

import "container/list"

// Ledger is a set of entries keyed by K, each with a value and an
// estimate of its bytes, ordered from the most to the least recently
// used.
type Ledger[K comparable, V any] struct {
	budget int64
	used   int64
	order  *list.List // of *entry[K, V], most recently used first
	at     map[K]*list.Element
}

type entry[K comparable, V any] struct {
	key   K
	value V
	bytes int64
}

// New returns an empty Ledger of budget bytes.
func New[K comparable, V any](budget int64) *Ledger[K, V] {
	return &Ledger[K, V]{budget: budget, order: list.New(), at: make(map[K]*list.Element)}
}

// Budget is the budget the Ledger was made with.
func (l *Ledger[K, V]) Budget() int64 { return l.budget }

// Used is the sum of the entries' bytes.
func (l *Ledger[K, V]) Used() int64 { return l.used }

// Len is the number of entries.
func (l *Ledger[K, V]) Len() int { return len(l.at) }

// Over reports whether the entries' bytes exceed the budget.
func (l *Ledger[K, V]) Over() bool { return l.used > l.budget }

// Fits reports whether bytes more stay within the budget.
func (l *Ledger[K, V]) Fits(bytes int64) bool { return l.used+bytes <= l.budget }

// Get returns k's value without marking it used.
func (l *Ledger[K, V]) Get(k K) (V, bool) {
	if el := l.at[k]; el != nil {
		return el.Value.(*entry[K, V]).value, true
	}
	var zero V
	return zero, false
}

// Touch returns k's value and marks it the most recently used.
func (l *Ledger[K, V]) Touch(k K) (V, bool) {
	el := l.at[k]
	if el == nil {
		var zero V
		return zero, false
	}
	l.order.MoveToFront(el)
	return el.Value.(*entry[K, V]).value, true
}

// Add enters k with v and bytes as the most recently used entry, or, with
// last set, as the least recently used one (an entry nobody asked for
// yet). An entry already there under k is replaced.
func (l *Ledger[K, V]) Add(k K, v V, bytes int64, last bool) {
	l.Remove(k)
	e := &entry[K, V]{key: k, value: v, bytes: bytes}
	if last {
		l.at[k] = l.order.PushBack(e)
	} else {
		l.at[k] = l.order.PushFront(e)
	}
	l.used += bytes
}

// Grow adds delta to k's bytes, if k is there.
func (l *Ledger[K, V]) Grow(k K, delta int64) {
	if el := l.at[k]; el != nil {
		el.Value.(*entry[K, V]).bytes += delta
		l.used += delta
	}
}

// Remove takes k out and returns its value.
func (l *Ledger[K, V]) Remove(k K) (V, bool) {
	el := l.at[k]
	if el == nil {
		var zero V
		return zero, false
	}
	e := el.Value.(*entry[K, V])
	l.used -= e.bytes
	l.order.Remove(el)
	delete(l.at, k)
	return e.value, true
}

// Oldest returns the least recently used key that skip does not keep
// (skip may be nil).
func (l *Ledger[K, V]) Oldest(skip func(K) bool) (K, bool) {
	for el := l.order.Back(); el != nil; el = el.Prev() {
		k := el.Value.(*entry[K, V]).key
		if skip == nil || !skip(k) {
			return k, true
		}
	}
	var zero K
	return zero, false
}

// Each calls fn with every entry, from the most to the least recently
// used, until fn returns false.
func (l *Ledger[K, V]) Each(fn func(k K, v V, bytes int64) bool) {
	for el := l.order.Front(); el != nil; el = el.Next() {
		e := el.Value.(*entry[K, V])
		if !fn(e.key, e.value, e.bytes) {
			return
		}
	}
}
