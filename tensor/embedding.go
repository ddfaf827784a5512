package tensor

import (
	"fmt"

	"agentr1/tensor/ref"
)

// EmbeddingForward gathers rows of an embedding table (torch.nn.functional.embedding),
// overwriting y:
//
//	y (n, d) = table (vocab, d) [ids (n)]
//
// It panics if len(table) is not a multiple of d, an id is outside [0, vocab), or
// len(y) != len(ids)*d.
func EmbeddingForward(y, table []float32, ids []int, d int) {
	vocab := embeddingRows("EmbeddingForward", table, d)
	mustLen("EmbeddingForward", "y", y, len(ids)*d)
	mustIDs("EmbeddingForward", "ids", ids, vocab)
	if active.ref {
		ref.EmbeddingForward(y, table, ids, d)
		return
	}
	if serial(len(ids), rowChunk(d)) {
		embedRows(y, table, ids, 0, len(ids), d)
		return
	}
	Parallel(len(ids), rowChunk(d), func(lo, hi int) { embedRows(y, table, ids, lo, hi, d) })
}

// embedRows is EmbeddingForward on the tokens [lo, hi).
func embedRows(y, table []float32, ids []int, lo, hi, d int) {
	for t := lo; t < hi; t++ {
		copy(y[t*d:(t+1)*d], table[ids[t]*d:(ids[t]+1)*d])
	}
}

// EmbeddingBackward scatter-adds the output gradient into the table's gradient:
//
//	dtable[ids[t], :] += dy[t, :]   for t in [0, n)
//
// Repeated ids accumulate. dtable may be nil. It panics as EmbeddingForward does.
func EmbeddingBackward(dtable, dy []float32, ids []int, d int) {
	if dtable == nil {
		return
	}
	vocab := embeddingRows("EmbeddingBackward", dtable, d)
	mustLen("EmbeddingBackward", "dy", dy, len(ids)*d)
	mustIDs("EmbeddingBackward", "ids", ids, vocab)
	if active.ref {
		ref.EmbeddingBackward(dtable, dy, ids, d)
		return
	}
	// Split over columns: each worker owns a column range of every table row, so repeated ids
	// never race.
	Parallel(d, max(64, elemChunk/max(len(ids), 1)), func(lo, hi int) {
		for t, id := range ids {
			dst, src := dtable[id*d+lo:id*d+hi], dy[t*d+lo:t*d+hi]
			for j, g := range src {
				dst[j] += g
			}
		}
	})
}

// embeddingRows returns the number of rows of a (rows, d) table, panicking on a bad d.
func embeddingRows(fn string, table []float32, d int) int {
	if d <= 0 || len(table)%d != 0 {
		panic(fmt.Sprintf("tensor.%s: table of len %d is not a whole number of rows of width %d", fn, len(table), d))
	}
	return len(table) / d
}
