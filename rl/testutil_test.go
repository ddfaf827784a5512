package rl

import (
	"math/rand/v2"
)

// randMatrix returns a (B, L) matrix of normal values.
func randMatrix(rng *rand.Rand, b, l int) Matrix {
	m := NewMatrix(b, l)
	for k := range m.Data {
		m.Data[k] = rng.NormFloat64()
	}
	return m
}

// agentMask returns a (B, L) multi-turn mask: leading prompt-like zeros sometimes, interior
// tool-response spans, trailing padding; row 0 is always fully valid so the batch has tokens.
func agentMask(rng *rand.Rand, b, l int) Matrix {
	m := NewMatrix(b, l)
	for i := 0; i < b; i++ {
		row := m.Row(i)
		if i == 0 {
			for t := range row {
				row[t] = 1
			}
			continue
		}
		on := rng.IntN(4) != 0
		for t := range row {
			if rng.IntN(3) == 0 {
				on = !on
			}
			if on {
				row[t] = 1
			}
		}
		if end := l - rng.IntN(l/2+1); end < l {
			for t := end; t < l; t++ {
				row[t] = 0
			}
		}
	}
	return m
}
