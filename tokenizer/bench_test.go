package tokenizer

import (
	"testing"
)

// benchPassages is how many mhqa corpus passages the encoding benchmarks encode per iteration.
const benchPassages = 2000

// BenchmarkEncode encodes the first 2000 passages of the mhqa corpus with the Qwen3 tokenizer on
// one goroutine; MB/s counts input bytes. The word cache is warm after the first iteration, as
// it is when a corpus or a run's observations are encoded.
//
//	go test -run XXX -bench 'Encode' -benchtime 20x ./tokenizer/
func BenchmarkEncode(b *testing.B) {
	tok := loadQwen3(b)
	texts := corpusPassages(b, benchPassages)
	b.Run("tokenizer=qwen3", func(b *testing.B) {
		benchEncode(b, tok, texts, false)
	})
}

// BenchmarkEncodeCold is BenchmarkEncode with an empty word cache at every iteration: the cost
// of text never seen before.
func BenchmarkEncodeCold(b *testing.B) {
	tok := loadQwen3(b)
	texts := corpusPassages(b, benchPassages)
	b.Run("tokenizer=qwen3", func(b *testing.B) {
		benchEncode(b, tok, texts, true)
	})
}

func benchEncode(b *testing.B, tok *Tokenizer, texts []string, cold bool) {
	var nbytes, ntokens int
	for _, s := range texts {
		nbytes += len(s)
	}
	b.SetBytes(int64(nbytes))
	e := newEncoder(tok)
	ids := make([]int, 0, 1<<12)
	for b.Loop() {
		if cold {
			e = newEncoder(tok)
		}
		ntokens = 0
		for _, s := range texts {
			ids = e.appendEncode(ids[:0], s)
			ntokens += len(ids)
		}
	}
	b.ReportMetric(float64(ntokens)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}

// BenchmarkEncodeBatch encodes the same passages with EncodeBatch on all cores.
func BenchmarkEncodeBatch(b *testing.B) {
	tok := loadQwen3(b)
	texts := corpusPassages(b, benchPassages)
	b.Run("tokenizer=qwen3", func(b *testing.B) {
		var nbytes, ntokens int
		for _, s := range texts {
			nbytes += len(s)
		}
		b.SetBytes(int64(nbytes))
		for b.Loop() {
			ntokens = 0
			for _, ids := range tok.EncodeBatch(texts) {
				ntokens += len(ids)
			}
		}
		b.ReportMetric(float64(ntokens)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
	})
}
