package models

// goBackendOptions configures GoMLX's Go backend (github.com/gomlx/compute
// v0.1.6). Its default op scheduler runs independent graph nodes in
// goroutines that each hold a slot of the backend's worker pool (2 ×
// GOMAXPROCS slots); a DotGeneral node then waits in the pool's Saturate
// for more workers. When as many independent DotGenerals as there are
// slots become ready together (the residual MLP's embedding products, any
// backward pass's dW and dX products), every slot is held by a node waiting
// for a slot: the execution never ends. ops_parallel and every bounded
// parallelism=N hang the same way; ops_sequential runs each node on the
// calling goroutine, which holds no slot, so it cannot deadlock, and each
// kernel still uses every core. It measured as fast as any other safe
// configuration on the residual-MLP forward, gradient and training step.
// TestResidualMLPForwardAndTrainStepFinishUnderADeadline guards it.
const goBackendOptions = "ops_sequential"

// GoBackendOptions is the Go backend's configuration that dfx runs (for
// gobackend.New where a Go backend is wanted whatever GOMLX_BACKEND says).
const GoBackendOptions = goBackendOptions
