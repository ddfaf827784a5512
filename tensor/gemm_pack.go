package tensor

// Packing copies a block of op(A) or op(B) into the order the micro-kernel reads it, so the
// kernel streams both operands from contiguous memory whatever the transposes and strides
// (Goto & van de Geijn, "Anatomy of High-Performance Matrix Multiplication", 2008, sec. 4-6).
// Panels narrower than the register tile are padded with zeros: a zero row of A or column of B
// adds nothing, so every kernel call computes a full tile.
//
// Depending on the transpose, packing a panel is one of two moves: a strided copy of short
// contiguous runs (copyRuns, copyStrided), or a transpose gathering element p of up to mr (or
// nr) rows into one run (gatherRuns). The Go loops are written so that the compiler drops the
// bounds checks from their inner loops.

// packA copies op(A)(i0:i0+mb, p0:p0+kb), scaled by alpha, into dst as ceil(mb/mr) micro-panels
// of mr rows each; panel r holds rows i0+r*mr ... at dst[r*mr*kb:], element (i, p) of the
// panel at [p*mr+i].
//
//	a:   (m, k) at stride lda, or (k, m) when transA
//	dst: (ceil(mb/mr), kb, mr)
func packA(dst, a []float32, lda int, transA bool, i0, mb, p0, kb int, alpha float32, mr int) {
	if transA && mb >= 2*mr && (mr == 6 || (mr == 12 && scatter12 != nil)) {
		// Full panels (six or twelve rows) of a transposed A row by row of the stored A: each
		// row's run of op(A) columns is read once, front to back, its mr-float pieces going to
		// consecutive panels. Reading panel by panel instead touches kb rows lda apart for
		// every panel.
		full := mb / mr * mr
		for p := 0; p < kb; p++ {
			row := a[(p0+p)*lda+i0:][:full]
			switch {
			case mr == 12:
				scatter12(dst[p*12:], 12*kb, row, full/12, alpha)
			case scatter6 != nil:
				scatter6(dst[p*6:], 6*kb, row, full/6, alpha)
			default:
				for ir := 0; ir < full; ir += 6 {
					o := ir*kb + p*6
					scale6(dst[o:o+6:o+6], row[ir:ir+6:ir+6], alpha)
				}
			}
		}
		if full < mb {
			packA(dst[full*kb:], a, lda, transA, i0+full, mb-full, p0, kb, alpha, mr)
		}
		return
	}
	for ir := 0; ir < mb; ir += mr {
		panel := dst[ir*kb : ir*kb+mr*kb]
		rows := min(mr, mb-ir)
		if transA {
			// Row p of the stored A holds column p of op(A): contiguous in i.
			copyRuns(panel, mr, a[(p0*lda)+i0+ir:], lda, kb, rows, alpha)
		} else {
			// Row i of the stored A holds row i of op(A): contiguous in p.
			gatherRuns(panel, mr, a[(i0+ir)*lda+p0:], lda, rows, kb, alpha)
		}
	}
}

// packBRowsMinLd is the row stride of a stored B (not transposed), in floats, from which packB
// fills the micro-panels row by row rather than panel by panel. Row by row reads B once front
// to back but writes every panel at a (kb*nr)-float stride, 16 KiB for the avx2 tile; panel by
// panel writes one panel contiguously and reads kb rows at stride ldb. Measured on whole
// single-thread avx2 products (BenchmarkPackBOrder, two sessions of 2-4 runs each): panel by
// panel is 1.1-1.3x faster for the weight and input gradients of bench-s (ldb = 256 and 688)
// and up to 1.1x for square products of 256-1024; row by row is about 1.3x faster at
// ldb = 32000; between 1,536 and 8,192 the two runs disagreed within this machine's noise.
// A variable only so that the benchmark can force either order.
var packBRowsMinLd = 4096

// packB copies op(B)(p0:p0+kb, j0:j0+nb) into dst as ceil(nb/nr) micro-panels of nr columns
// each; panel r holds columns j0+r*nr ... at dst[r*nr*kb:], element (p, j) of the panel at
// [p*nr+j].
//
//	b:   (k, n) at stride ldb, or (n, k) when transB
//	dst: (ceil(nb/nr), kb, nr)
func packB(dst, b []float32, ldb int, transB bool, p0, kb, j0, nb int, nr int) {
	jr := 0
	if !transB && nr%16 == 0 && ldb >= packBRowsMinLd {
		// A wide B's full panels row by row: each row of B is read once, front to back, and its
		// nr-wide pieces go to consecutive panels. Reading panel by panel instead would touch kb
		// rows far apart (a page each) for every panel.
		full := nb / nr
		for p := 0; p < kb; p++ {
			copyStrided(dst[p*nr:], kb*nr, b[(p0+p)*ldb+j0:], nr, full, nr)
		}
		jr = full * nr
	}
	for ; jr < nb; jr += nr {
		panel := dst[jr*kb : jr*kb+nr*kb]
		cols := min(nr, nb-jr)
		if transB {
			// Row j of the stored B holds column j of op(B): contiguous in p.
			src := b[(j0+jr)*ldb+p0:]
			if transpose8x8 != nil && cols == nr && nr%8 == 0 && kb >= 8 {
				// Full panel, 8x8 tiles at a time; the last kb%8 steps by gatherRuns.
				k8 := kb &^ 7
				for j := 0; j < nr; j += 8 {
					transpose8x8(panel[j:], nr, src[j*ldb:], ldb, k8/8)
				}
				gatherRuns(panel[k8*nr:], nr, src[k8:], ldb, cols, kb-k8, 1)
				continue
			}
			gatherRuns(panel, nr, src, ldb, cols, kb, 1)
		} else {
			copyRuns(panel, nr, b[p0*ldb+j0+jr:], ldb, kb, cols, 1)
		}
	}
}

// scale6 sets out[0:6] = s * in[0:6], unrolled: the six-float run of the avx2 tile's panels,
// short enough that a loop's overhead would dominate. Small enough to be inlined.
func scale6(out, in []float32, s float32) {
	out, in = out[:6:6], in[:6:6]
	out[0] = s * in[0]
	out[1] = s * in[1]
	out[2] = s * in[2]
	out[3] = s * in[3]
	out[4] = s * in[4]
	out[5] = s * in[5]
}

// copyRuns copies runs runs of width floats, scaled by scale, from src at stride ld into dst at
// stride w, zero-padding each run to w:
//
//	for r := 0; r < runs; r++ {
//		for i := 0; i < w; i++ {
//			dst[r*w+i] = 0
//			if i < width {
//				dst[r*w+i] = scale * src[r*ld+i]
//			}
//		}
//	}
//
//	src: (runs, width) at stride ld; dst: (runs, w)
func copyRuns(dst []float32, w int, src []float32, ld, runs, width int, scale float32) {
	dst = dst[:runs*w]
	if width == w && scale == 1 && w%16 == 0 {
		copyStrided(dst, w, src, ld, runs, w)
		return
	}
	if width == 6 && w == 6 {
		// The avx2 tile's full panel: six floats per run, unrolled.
		for r := 0; r < runs; r++ {
			scale6(dst[r*6:r*6+6:r*6+6], src[r*ld:r*ld+6:r*ld+6], scale)
		}
		return
	}
	for r := 0; r < runs; r++ {
		out := dst[r*w : r*w+w]
		in := src[r*ld:][:width]
		if scale == 1 {
			// An element loop, not copy: for runs this short, memmove's call costs more.
			for i, v := range in {
				out[i] = v
			}
		} else {
			for i, v := range in {
				out[i] = scale * v
			}
		}
		clear(out[width:])
	}
}

// gatherRuns transposes rows runs of length n from src at stride ld into dst, element p of
// row i landing at dst[p*w+i] scaled by scale, and zeroes the padding i >= rows:
//
//	for p := 0; p < n; p++ {
//		for i := 0; i < w; i++ {
//			dst[p*w+i] = 0
//			if i < rows {
//				dst[p*w+i] = scale * src[i*ld+p]
//			}
//		}
//	}
//
//	src: (rows, n) at stride ld; dst: (n, w)
func gatherRuns(dst []float32, w int, src []float32, ld, rows, n int, scale float32) {
	if w == 12 && rows == 12 && pack12 != nil && n >= 8 {
		// The avx512 tile's full panel: eight columns at a time with pack12, the last n%8 by
		// the loops below.
		p0 := n &^ 7
		pack12(dst, src, ld, p0/8, scale)
		dst, src, n = dst[p0*12:], src[p0:], n-p0
	}
	dst = dst[:n*w]
	if w == 6 && rows == 6 {
		// The avx2 tile's full panel in one pass: six neighbouring floats per p, eight p at a
		// time with pack6 where there is one, the rest here.
		p0 := 0
		if pack6 != nil {
			p0 = n &^ 7
			pack6(dst, src, ld, p0/8, scale)
		}
		r0, r1, r2 := src[:n], src[ld:][:n], src[2*ld:][:n]
		r3, r4, r5 := src[3*ld:][:n], src[4*ld:][:n], src[5*ld:][:n]
		for p := p0; p < n; p++ {
			out := dst[p*6 : p*6+6 : p*6+6]
			out[0] = scale * r0[p]
			out[1] = scale * r1[p]
			out[2] = scale * r2[p]
			out[3] = scale * r3[p]
			out[4] = scale * r4[p]
			out[5] = scale * r5[p]
		}
		return
	}
	// Four rows at a time: each pass writes four neighbouring floats of every group.
	i := 0
	for ; i+4 <= rows; i += 4 {
		r0 := src[i*ld:][:n]
		r1 := src[(i+1)*ld:][:n]
		r2 := src[(i+2)*ld:][:n]
		r3 := src[(i+3)*ld:][:n]
		for p := range r0 {
			out := dst[p*w+i : p*w+i+4 : p*w+i+4]
			out[0] = scale * r0[p]
			out[1] = scale * r1[p]
			out[2] = scale * r2[p]
			out[3] = scale * r3[p]
		}
	}
	for ; i < rows; i++ {
		r := src[i*ld:][:n]
		for p, v := range r {
			dst[p*w+i] = scale * v
		}
	}
	if rows < w {
		for p := 0; p < n; p++ {
			clear(dst[p*w+rows : p*w+w])
		}
	}
}
