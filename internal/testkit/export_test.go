package testkit

// AwaitWithin exposes Await's timeout path to the package's tests.
var AwaitWithin = awaitWithin
