package rl

import "fmt"

// Fill says what SqueezeScatter writes at the masked positions of a row.
type Fill int

const (
	// FillZero writes 0 at every masked position.
	FillZero Fill = iota
	// FillNextAgentToken writes the output of the nearest agent token to the right (0 after the
	// last one). This is what verl's GAE leaves at masked positions, where the carried advantage
	// passes through unchanged.
	FillNextAgentToken
)

// SqueezeScatter applies Agent-R1's advantage mask to one row (docs/PAPER.md §2): it squeezes the
// masked positions (tool responses, padding) out of every input row, runs recur on the n agent
// tokens that remain, and scatters recur's n outputs back to the agent positions of out, filling
// the masked positions as fill says. A backward recursion run this way sees consecutive agent
// tokens only: the last agent token before a tool response bootstraps from the first agent token
// after it, with one discount step whatever the span's length.
//
// mask and out have length L; each inputs[k] has length L (rewards, values, ...). recur receives
// dst (length n) and the squeezed inputs (each length n), and must write all of dst.
// It panics if the lengths differ.
func SqueezeScatter(out, mask []float64, fill Fill, inputs [][]float64, recur func(dst []float64, in [][]float64)) {
	l := len(mask)
	if len(out) != l {
		panic(fmt.Sprintf("rl.SqueezeScatter: out has length %d, mask %d", len(out), l))
	}
	pos := make([]int, 0, l) // (n) agent positions in the row
	for t, m := range mask {
		if m != 0 {
			pos = append(pos, t)
		}
	}
	in := make([][]float64, len(inputs)) // each (n)
	for k, row := range inputs {
		if len(row) != l {
			panic(fmt.Sprintf("rl.SqueezeScatter: input %d has length %d, mask %d", k, len(row), l))
		}
		in[k] = make([]float64, len(pos))
		for j, t := range pos {
			in[k][j] = row[t]
		}
	}
	dst := make([]float64, len(pos)) // (n)
	recur(dst, in)
	next := 0.0 // output of the nearest agent token to the right
	j := len(pos) - 1
	for t := l - 1; t >= 0; t-- {
		if j >= 0 && pos[j] == t {
			out[t] = dst[j]
			next = dst[j]
			j--
			continue
		}
		switch fill {
		case FillNextAgentToken:
			out[t] = next
		default:
			out[t] = 0
		}
	}
}
