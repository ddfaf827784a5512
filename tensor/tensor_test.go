package tensor

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestTensor(t *testing.T) {
	x := New(2, 3)
	if x.Numel() != 6 || !slices.Equal(x.Shape, []int{2, 3}) {
		t.Fatalf("New(2, 3): shape %v numel %d", x.Shape, x.Numel())
	}
	x.Set(5, 1, 2)
	if got := x.At(1, 2); got != 5 || x.Data[5] != 5 {
		t.Errorf("Set/At(1, 2): got %v, data %v", got, x.Data)
	}
	y := x.Reshape(3, -1)
	if !slices.Equal(y.Shape, []int{3, 2}) || y.At(2, 1) != 5 {
		t.Errorf("Reshape(3, -1): shape %v, At(2, 1) = %v", y.Shape, y.At(2, 1))
	}
	y.Set(7, 0, 0)
	if x.At(0, 0) != 7 {
		t.Errorf("Reshape should share data: x[0,0] = %v after setting the view", x.At(0, 0))
	}
	c := x.Clone()
	c.Set(9, 0, 0)
	if x.At(0, 0) != 7 {
		t.Errorf("Clone should copy data: x[0,0] = %v after setting the clone", x.At(0, 0))
	}
	s := FromSlice([]float32{1, 2, 3, 4}, 2, 2)
	if s.Dim(-1) != 2 || s.At(1, 0) != 3 {
		t.Errorf("FromSlice: Dim(-1) = %d, At(1, 0) = %v", s.Dim(-1), s.At(1, 0))
	}
	if sc := New(); sc.Numel() != 1 {
		t.Errorf("New(): scalar has %d elements, want 1", sc.Numel())
	}
}

// mustPanic runs f and checks that it panics with a message starting with prefix.
func mustPanic(t *testing.T, name, prefix string, f func()) {
	t.Helper()
	defer func() {
		p := recover()
		if p == nil {
			t.Errorf("%s: did not panic", name)
			return
		}
		if msg := fmt.Sprint(p); !strings.HasPrefix(msg, prefix) {
			t.Errorf("%s: panic %q, want prefix %q", name, msg, prefix)
		}
	}()
	f()
}

func TestPanicsOnMisuse(t *testing.T) {
	f := func(n int) []float32 { return make([]float32, n) }
	rope := NewRoPE(4, 8, 10000)
	cases := []struct {
		name, prefix string
		f            func()
	}{
		{"FromSlice", "tensor.FromSlice:", func() { FromSlice(f(5), 2, 3) }},
		{"New negative", "tensor.New:", func() { New(2, -1) }},
		{"Reshape", "tensor.Tensor.Reshape:", func() { New(2, 3).Reshape(4, -1) }},
		{"At rank", "tensor.Tensor.At:", func() { New(2, 3).At(1) }},
		{"At range", "tensor.Tensor.At:", func() { New(2, 3).At(2, 0) }},
		{"MatMulForward", "tensor.MatMulForward:", func() { MatMulForward(f(6), f(6), f(5), 2, 3, 3) }},
		{"MatMulBackward", "tensor.MatMulBackward:", func() { MatMulBackward(f(5), nil, f(4), f(6), f(6), 2, 3, 2) }},
		{"LinearForward bias", "tensor.LinearForward:", func() { LinearForward(f(4), f(6), f(6), f(3), 2, 3, 2) }},
		{"LinearBackward", "tensor.LinearBackward:", func() { LinearBackward(nil, f(7), nil, f(4), f(6), f(6), 2, 3, 2) }},
		{"AddForward", "tensor.AddForward:", func() { AddForward(f(6), f(6), f(4)) }},
		{"MulBackward", "tensor.MulBackward:", func() { MulBackward(f(6), f(2), f(5), f(6), f(3)) }},
		{"SoftmaxForward", "tensor.SoftmaxForward:", func() { SoftmaxForward(f(5), f(6), 2, 3) }},
		{"LogSoftmaxBackward", "tensor.LogSoftmaxBackward:", func() { LogSoftmaxBackward(f(6), f(6), f(5), 2, 3) }},
		{"RMSNormForward", "tensor.RMSNormForward:", func() { RMSNormForward(f(6), f(3), f(6), f(3), 2, 3, 1e-6) }},
		{"RMSNormBackward", "tensor.RMSNormBackward:", func() { RMSNormBackward(f(6), f(2), f(6), f(6), f(3), f(2), 2, 3) }},
		{"SiLUForward", "tensor.SiLUForward:", func() { SiLUForward(f(3), f(4)) }},
		{"SwiGLUBackward", "tensor.SwiGLUBackward:", func() { SwiGLUBackward(f(4), nil, f(4), f(4), f(3)) }},
		{"NewRoPE odd", "tensor.NewRoPE:", func() { NewRoPE(5, 8, 10000) }},
		{"RoPE position", "tensor.RoPE.Forward:", func() { rope.Forward(f(8), []int{0, 8}, 2, 1) }},
		{"RoPE length", "tensor.RoPE.Backward:", func() { rope.Backward(f(7), []int{0, 1}, 2, 1) }},
		{"AttentionForward heads", "tensor.AttentionForward:", func() { AttentionForward(f(12), f(27), f(12), f(6), f(6), f(3), 1, 3, 2, 3, 2) }},
		{"AttentionBackward", "tensor.AttentionBackward:", func() { AttentionBackward(f(11), nil, nil, f(12), f(18), f(12), f(6), f(6), 1, 3, 2, 1, 2) }},
		{"EmbeddingForward id", "tensor.EmbeddingForward:", func() { EmbeddingForward(f(4), f(6), []int{0, 3}, 2) }},
		{"EmbeddingBackward width", "tensor.EmbeddingBackward:", func() { EmbeddingBackward(f(7), f(4), []int{0, 1}, 2) }},
		{"LogProbsForward label", "tensor.LogProbsForward:", func() { LogProbsForward(f(2), f(6), []int{0, 3}, 2, 3) }},
		{"LogProbsBackward", "tensor.LogProbsBackward:", func() { LogProbsBackward(f(6), f(1), f(6), f(2), []int{0, 1}, 2, 3) }},
		{"EntropyForward", "tensor.EntropyForward:", func() { EntropyForward(f(3), f(6), 2, 3) }},
		{"EntropyBackward", "tensor.EntropyBackward:", func() { EntropyBackward(f(5), f(2), f(6), f(2), 2, 3) }},
		{"CrossEntropyMaskedForward", "tensor.CrossEntropyMaskedForward:", func() { CrossEntropyMaskedForward(f(6), []int{0, 1}, f(3), 2, 3) }},
		{"CrossEntropyMaskedBackward", "tensor.CrossEntropyMaskedBackward:", func() { CrossEntropyMaskedBackward(f(6), 1, f(6), []int{0}, f(2), 2, 3) }},
		{"MaskedMean", "tensor.MaskedMean:", func() { MaskedMean(f(3), f(2)) }},
		{"MaskedMeanBackward", "tensor.MaskedMeanBackward:", func() { MaskedMeanBackward(f(3), 1, f(2)) }},
		{"AdamW lists", "tensor.AdamW.Update:", func() { (&AdamW{}).Update([][]float32{f(2)}, nil) }},
		{"AdamW lengths", "tensor.AdamW.Update:", func() { (&AdamW{}).Update([][]float32{f(2)}, [][]float32{f(3)}) }},
	}
	for _, c := range cases {
		mustPanic(t, c.name, c.prefix, c.f)
	}
}
