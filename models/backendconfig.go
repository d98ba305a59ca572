package models

// goBackendOptions configures GoMLX's Go backend (github.com/gomlx/compute
// v0.1.6). Its default parallel op scheduler can deadlock on a 2-core
// machine: two DotGeneral kernels running in parallel ops each wait for
// pool workers that the other holds while the executor waits to start a
// third (see models/deadlock_test.go). Running ops one at a time, each op
// still using every core for its own kernel, never deadlocks.
const goBackendOptions = "ops_sequential"
