package trainer

import "agentr1/rl"

// ResponseLogp is ResponseColumns under its former name, which said "log-prob" of a method
// that reads entropies too.
//
// Deprecated: use ResponseColumns. Kept only while rl/pipeline/sft.go calls it; delete this
// file once it does not.
func (v *View) ResponseLogp(out []float32) rl.Matrix { return v.ResponseColumns(out) }

// LogpGrad is TokenGrad under its former name, which said "log-prob" of a method that lays
// out entropy gradients too.
//
// Deprecated: use TokenGrad. Kept only while rl/pipeline/sft.go calls it; delete this file
// once it does not.
func (v *View) LogpGrad(g rl.Matrix) []float32 { return v.TokenGrad(g) }
