//go:build amd64 && !purego

package tensor

// The AVX2 versions of the sigmoid and SwiGLU arithmetic (activation.go): the assembly handles
// the multiple-of-8 prefix with the same float32 operations in the same order, and the generic
// loops the short tail.

// sigmoidFinishAVX2 is sigmoidFinishGeneric with AVX.
func sigmoidFinishAVX2(s []float32) {
	n := len(s) &^ 7
	sigmoidFinishBlocksAVX2(s[:n])
	sigmoidFinishGeneric(s[n:])
}

// swiGLUFinishAVX2 is swiGLUFinishGeneric with AVX.
func swiGLUFinishAVX2(y, gate, up, e []float32) {
	gate, up, e = gate[:len(y)], up[:len(y)], e[:len(y)]
	n := len(y) &^ 7
	swiGLUFinishBlocksAVX2(y[:n], gate[:n], up[:n], e[:n])
	swiGLUFinishGeneric(y[n:], gate[n:], up[n:], e[n:])
}

// swiGLUGradGateAVX2 is swiGLUGradGateGeneric with AVX.
func swiGLUGradGateAVX2(dgate, dy, gate, up, s []float32) {
	dy, gate, up, s = dy[:len(dgate)], gate[:len(dgate)], up[:len(dgate)], s[:len(dgate)]
	n := len(dgate) &^ 7
	swiGLUGradGateBlocksAVX2(dgate[:n], dy[:n], gate[:n], up[:n], s[:n])
	swiGLUGradGateGeneric(dgate[n:], dy[n:], gate[n:], up[n:], s[n:])
}

// swiGLUGradUpAVX2 is swiGLUGradUpGeneric with AVX.
func swiGLUGradUpAVX2(dup, dy, gate, s []float32) {
	dy, gate, s = dy[:len(dup)], gate[:len(dup)], s[:len(dup)]
	n := len(dup) &^ 7
	swiGLUGradUpBlocksAVX2(dup[:n], dy[:n], gate[:n], s[:n])
	swiGLUGradUpGeneric(dup[n:], dy[n:], gate[n:], s[n:])
}

// The Blocks functions take slices whose length is a multiple of 8, the others at least as
// long as the first (the wrappers above check); the assembly does not check.

//go:noescape
func sigmoidFinishBlocksAVX2(s []float32)

//go:noescape
func swiGLUFinishBlocksAVX2(y, gate, up, e []float32)

//go:noescape
func swiGLUGradGateBlocksAVX2(dgate, dy, gate, up, s []float32)

//go:noescape
func swiGLUGradUpBlocksAVX2(dup, dy, gate, s []float32)
