package model

import "agentr1/tensor"

// The weight reads of the forward pass, training or inference: each takes a parameter from its
// Data, as a model that trains holds it, or from its packed panels, as a model held for
// inference holds it (inference.go). The decoder embeds with embedTokens too, but multiplies
// by its own packed copies of a trainable model's matrices (Decoder.project and
// Decoder.accumulate, decoder.go).

// embedTokens writes the embedding of each token into x (n, C): a row of embed_tokens, read
// back from its packed form in a model held for inference.
func (m *Model) embedTokens(x []float32, tokens []int) {
	C := m.Config.HiddenSize
	if m.embed.Packed == nil {
		tensor.EmbeddingForward(x, m.embed.Data, tokens, C) // x (n, C) = embed_tokens[tokens]
		return
	}
	for i, id := range tokens {
		m.embed.Packed.Column(id, x[i*C:(i+1)*C])
	}
}

// linearForward computes y (N, out) = x (N, in) @ W^T + bias (bias may be nil), W (out, in)
// the parameter w: from its Data, or from its packed panels in a model held for inference.
func linearForward(y, x []float32, w, bias *Param, N, in, out int) {
	if w.Packed == nil {
		tensor.LinearForward(y, x, w.Data, data(bias), N, in, out)
		return
	}
	tensor.GemmPacked(false, N, 1, x, in, w.Packed, 0, y, out)
	if bias != nil {
		addBias(y, bias.Data, N)
	}
}

// linearAccumulate adds to y (N, out) the product x (N, in) @ W^T, W (out, in) the parameter
// w, from its Data or its packed panels: a residual branch's output projection.
func linearAccumulate(y, x []float32, w *Param, N, in, out int) {
	if w.Packed == nil {
		tensor.Gemm(false, true, N, out, in, 1, x, in, w.Data, in, 1, y, out)
		return
	}
	tensor.GemmPacked(false, N, 1, x, in, w.Packed, 1, y, out)
}
