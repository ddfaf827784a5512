package model

import "agentr1/tensor"

// decoderPackLimit is the largest model, in parameters, whose weights a Decoder copies into
// packed form (a second copy of every matrix): 2^26 floats, 256 MiB. Larger models that can
// train decode with the unpacked matrix products, which pack their operands on every call; a
// model held for inference (inference.go) has its matrices packed already, whatever its size,
// and every decoder reads them there.
var decoderPackLimit = 1 << 26

// packedWeights are a model's weight matrices packed for tensor.GemmPacked, as the decoding
// steps read them: each step multiplies a few rows (the batch) by every matrix, and packing a
// matrix on every call would cost as much as the product.
type packedWeights struct {
	version uint64 // Model.weightsVersion when packed
	valid   bool
	layers  []packedLayer
	lmHead  *tensor.PackedB  // lm_head (V, C), op(B) = lm_head^T (C, V)
	own     []tensor.PackedB // the decoder's own copies, when the model's matrices are not packed
}

// packedLayer holds one decoder layer's matrices, each packed as op(B) = W^T of y = x W^T.
type packedLayer struct {
	q, k, v, o, gate, up, down *tensor.PackedB
}

// refreshWeights makes d.packed current. A model held for inference lends its packed
// matrices, once. Otherwise the decoder packs copies of them, again whenever they may have
// changed since the last packing: the model's weight version moved (WritableParams,
// MarkWeightsChanged), or the decoder is fed while every row is empty (after Reset of each
// row, the point where a caller may have written the weights directly, since no cache holds
// values computed with the old ones). Models above decoderPackLimit parameters that can train
// are never packed.
func (d *Decoder) refreshWeights() {
	m := d.m
	pw := &d.packed
	if m.Inference() {
		if !pw.valid {
			pw.layers = make([]packedLayer, len(m.layers))
			for l := range m.layers {
				p := &m.layers[l]
				pw.layers[l] = packedLayer{p.q.Packed, p.k.Packed, p.v.Packed, p.o.Packed, p.gate.Packed, p.up.Packed, p.down.Packed}
			}
			pw.lmHead, pw.valid = m.lmHead.Packed, true
		}
		return
	}
	if m.NumParams() > decoderPackLimit {
		return
	}
	version := m.weightsVersion.Load()
	allEmpty := true
	for _, n := range d.lens {
		if n > 0 {
			allEmpty = false
			break
		}
	}
	if pw.valid && pw.version == version && !allEmpty {
		return
	}
	cfg := m.Config
	C, I, V := cfg.HiddenSize, cfg.IntermediateSize, cfg.VocabSize
	Q := cfg.NumAttentionHeads * cfg.HeadSize()
	K := cfg.NumKeyValueHeads * cfg.HeadSize()
	if len(pw.layers) != len(m.layers) {
		pw.own = make([]tensor.PackedB, 7*len(m.layers)+1)
		pw.layers = make([]packedLayer, len(m.layers))
		for l := range pw.layers {
			o := pw.own[7*l:]
			pw.layers[l] = packedLayer{&o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6]}
		}
		pw.lmHead = &pw.own[len(pw.own)-1]
	}
	for l := range m.layers {
		p, pl := &m.layers[l], &pw.layers[l]
		pl.q.Pack(true, C, Q, p.q.Data, C)
		pl.k.Pack(true, C, K, p.k.Data, C)
		pl.v.Pack(true, C, K, p.v.Data, C)
		pl.o.Pack(true, Q, C, p.o.Data, Q)
		pl.gate.Pack(true, C, I, p.gate.Data, C)
		pl.up.Pack(true, C, I, p.up.Data, C)
		pl.down.Pack(true, I, C, p.down.Data, I)
	}
	pw.lmHead.Pack(true, C, V, m.lmHead.Data, C)
	pw.version, pw.valid = version, true
}
