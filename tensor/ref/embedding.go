package ref

import "golang.org/x/exp/constraints"

// EmbeddingForward gathers rows of an embedding table (torch.nn.functional.embedding),
// overwriting y:
//
//	y_t = table[ids_t]      table: (vocab, d)   ids: (n)   y: (n, d)
func EmbeddingForward[F constraints.Float](y, table []F, ids []int, d int) {
	for t, id := range ids {
		for j := 0; j < d; j++ {
			y[t*d+j] = table[id*d+j]
		}
	}
}

// EmbeddingBackward scatter-adds the output gradient into the table's gradient, rows of
// repeated ids accumulating:
//
//	dtable[ids_t] += dy_t   for t in [0, n)
//
// dtable may be nil.
func EmbeddingBackward[F constraints.Float](dtable, dy []F, ids []int, d int) {
	if dtable == nil {
		return
	}
	for t, id := range ids {
		for j := 0; j < d; j++ {
			dtable[id*d+j] += dy[t*d+j]
		}
	}
}
