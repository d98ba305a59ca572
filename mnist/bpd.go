package mnist

import (
	"github.com/dfx-lab/dfx/dfx/likelihood"
)

// Quant is 8-bit MNIST in [−1, 1]: bpd = −log₂ p/d + 7.
var Quant = likelihood.Quantization{Levels: 256, Lo: -1, Hi: 1}
