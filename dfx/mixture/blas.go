package mixture

// blasName is set by the build-tagged file that installs OpenBLAS.
var blasName = "gonum (pure Go)"

// BLASName says which BLAS the blocked products run on: pure-Go gonum by
// default, OpenBLAS through cgo when built with -tags openblas.
func BLASName() string { return blasName }
