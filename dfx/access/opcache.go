package access

import (
	"sync"

	"github.com/dfx-lab/dfx/dfx/score"
)

// OperatorCache builds the Fisher operators of one network from spec
// strings (NewOperator), each once per canonical name (a compiled VJP is
// reused), and keeps them; it is safe for concurrent use. A family that
// needs no network (Spec.Needs == 0: DF-EA) is built without Net: it then
// works from the denoiser of the model being sampled, so that it
// approximates that model's Fisher (a guided model's included), not the
// network's.
type OperatorCache struct {
	Net *Net // the network of the operators that need one

	mu  sync.Mutex
	ops map[string]score.FisherOperator
}

// Operator is the Fisher operator spec names, built on its first request.
func (c *OperatorCache) Operator(spec string) (score.FisherOperator, error) {
	s, err := ParseOperator(spec)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if op, ok := c.ops[s.Name]; ok {
		return op, nil
	}
	env := Env{Net: c.Net}
	if s.Needs == 0 {
		env.Net = nil
	}
	op, err := NewOperator(spec, env)
	if err != nil {
		return nil, err
	}
	if c.ops == nil {
		c.ops = map[string]score.FisherOperator{}
	}
	c.ops[s.Name] = op
	return op, nil
}
