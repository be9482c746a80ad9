// Package apisize is a fixture for the root package's doc-size test.
package apisize

// A and B are one group: one line.
const (
	A = 1
	B = 2
)

// C is its own line.
const C = 3

// V is a variable.
var V = 4

// F is a function.
func F() {}

// T is a type with a constant group and a constructor.
type T int

// T values: one line under T.
const (
	T1 T = 1
	T2 T = 2
)

// NewT returns a T: listed under T.
func NewT() T { return T1 }

// M is a method: not listed.
func (T) M() {}

type unexported int

// U is a type with no constructor.
type U struct{}
