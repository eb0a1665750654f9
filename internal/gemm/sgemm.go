package gemm

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/pipetrain/pipetrain/internal/vec"
)

// microKernel computes one mr×nr tile of C from a packed A micro-panel (k steps
// of mr values) and a packed B micro-panel (k steps of nr values):
// acc = Σ_p a[p]ᵀ·b[p], summed in float32 in the order p = 0..k-1, then
// C = alpha*acc + beta*C, or C = alpha*acc without reading C when beta is 0.
type microKernel func(k int, a, b, c *float32, ldc int, alpha, beta float32)

// kernelSet is a family of micro-kernels sharing a row count and the blocking
// that suits them.
type kernelSet struct {
	name  string
	mr    int           // rows of a tile (the broadcast side, from A)
	vec   int           // columns of a vector register
	kerns []microKernel // kerns[i] computes mr × (i+1)*vec tiles; the last is the widest
	kc    int           // depth of a block: an mr×kc A micro-panel stays in L1
	mc    int           // rows of a packed A block (a multiple of mr)
	nc    int           // columns of a packed kc×nc B block, kept in L2 (a multiple of nr)

	copyPanel, transPanel panelPacker

	// kernPack, if not nil, is the widest kernel that also packs its B
	// micro-panel from row-major B: it reads step p from bsrc[p*lds:] and
	// stores it at b[p*nr:] before using it.
	kernPack func(k int, a, b, c *float32, ldc int, alpha, beta float32, bsrc *float32, lds int)

	// kernPf, if not nil, is the widest kernel that also prefetches one
	// cache line into L2 per step, from pf on; ncPf is the width of B's
	// blocks when it runs (two blocks must fit in L2).
	kernPf func(k int, a, b, c *float32, ldc int, alpha, beta float32, pf *float32)
	ncPf   int

	// pairs marks a bf16 set: its panels hold k in (k, k+1) pairs of bf16,
	// one 32-bit lane a pair, so a panel's step p lies at p/2 and takes half
	// the space an fp32 panel has for it (the rest of the space is unused).
	pairs bool

	// copyA and transA, if not nil, pack A's micro-panels in place of
	// copyPanel and transPanel (the AMX set's A tiles are rows of pairs).
	copyA, transA panelPacker

	// model, for a bf16 set in assembly, is the Go set that gives its bits.
	model *kernelSet

	// tile, if not 0, is the k steps panels are padded to (with zeros):
	// the amx sets' tiles hold 32 steps. Their k blocks are multiples of it.
	tile int

	// begin and release, if not nil, run first and last in run, on its
	// goroutine: amx locks it to its thread and configures the thread's
	// tiles for the kernels and the product's k, then unlocks it (the
	// tiles stay configured for the thread's next run).
	begin   func(k int)
	release func()

	// strip, if not nil, runs the widest kernel on panels full tiles of
	// one row of tiles, side by side, B's panels bstep floats apart, for a
	// k block of one tile (ks.tile steps), alpha 1 and beta 0, with the
	// same bits. At such small k a call per tile costs more than its sums.
	strip func(panels int, a, b, c *float32, ldc, bstep int)

	// fitsK marks a set whose tiles begin fits to k when k is one tile's
	// steps: its kernels then read no pair of a B panel past k's, so its
	// B panels hold k's pairs only (bDepth).
	fitsK bool

	// copyPanels, if not nil, is copyPanel over panels whole nr-wide
	// panels side by side, dstep floats apart in dst, in one call.
	copyPanels func(dst, src []float32, lds, kc, panels, dstep int)
}

// depth is the k steps a panel of kc steps takes in memory.
func (ks *kernelSet) depth(kc int) int {
	if ks.tile > 0 {
		return roundUp(kc, ks.tile)
	}
	return kc
}

// bDepth is the k steps a B panel of the block at p0, kc steps deep, takes
// in memory: depth(kc), or, for a fitsK set whose k is one tile's steps
// (then the first block is one tile deep), k's pairs only.
func (ks *kernelSet) bDepth(p0, kc int) int {
	kd := ks.depth(kc)
	if ks.fitsK && p0 == 0 && kd == ks.tile {
		return roundUp(kc, 2)
	}
	return kd
}

func (ks *kernelSet) nr() int { return ks.vec * len(ks.kerns) }

// kernels is the set Sgemm runs: the first of kernelSets, fastest first.
var kernels = kernelSets()[0]

// sgemmArgs is one call of Sgemm.
type sgemmArgs struct {
	transA, transB bool
	m, n, k        int
	alpha, beta    float32
	a              []float32
	lda            int
	b              []float32
	ldb            int
	c              []float32
	ldc            int
	bpre           *PackedB // op(B) packed in advance, or nil: then b is packed here
	// chunked sums k in chunks of KChunk steps (SgemmChunked): each is summed
	// from zero and added into C in order, as separate calls would.
	chunked bool
	bf16    *kernelSet // products of bf16 operands (SgemmBF16) on this set, or nil
	post    Post       // done on each row of tiles once its last k block is in
}

// kBlock returns the depth of the blocks k is cut into: the fewest blocks of at
// most ks.kc, made about equal and rounded up to a multiple of 4, of ks.tile,
// or of KChunk in chunked mode (kc is a multiple of both, so the bound
// holds). It depends only on k, the set and the mode, never on the thread
// count, so each element of C always sees the same blocks in the same order.
func (ks *kernelSet) kBlock(k int, chunked bool) int {
	nb := (k + ks.kc - 1) / ks.kc
	kb := (k + nb - 1) / nb
	switch {
	case chunked:
		return roundUp(kb, KChunk)
	case ks.tile > 0:
		return roundUp(kb, ks.tile)
	}
	return (kb + 3) &^ 3
}

// segment runs one tile's kernel over a k block of kc steps: at once, or in
// chunked mode once per KChunk steps of the packed panels (A's steps are mr
// wide, B's pw; bsrc, for a packing kernel, advances by lds a step), beta for
// the first chunk and 1 after. The tile stays in L1 between chunks. While pf
// lasts the prefetching kernel runs, pf advancing a cache line a step.
func (ks *kernelSet) segment(chunked bool, kern microKernel, kc int, a, b []float32, pw int, c *float32, ldc int, alpha, beta float32, bsrc []float32, lds int, pf []float32) {
	step := kc
	if chunked {
		step = KChunk
	}
	for s := 0; s < kc; s += step {
		n, at := min(step, kc-s), s
		if ks.pairs {
			at = s / 2 // s is a multiple of KChunk
		}
		switch {
		case bsrc != nil:
			ks.kernPack(n, &a[s*ks.mr], &b[s*pw], c, ldc, alpha, beta, &bsrc[s*lds], lds)
		case s*lineFloats < len(pf):
			ks.kernPf(n, &a[s*ks.mr], &b[s*pw], c, ldc, alpha, beta, &pf[s*lineFloats])
		default:
			kern(n, &a[at*ks.mr], &b[at*pw], c, ldc, alpha, beta)
		}
		beta = 1
	}
}

// lineFloats is the floats of the cache line one prefetch brings in.
const lineFloats = 16

// workspace holds one worker's packing buffers, reused across calls: they
// grow to the largest call seen. A free workspace waits in the slot of the
// CPU that last used it, or when that is full on a shared list, and a call
// takes its CPU's first: the caller's and a helper's packings then stay in
// their own cores' caches call after call rather than trade places. With
// one free list for all, whose workspaces went to either core, an epoch of
// the MNIST MLP on two cores ran 7% slower than with per-P sync.Pool lists
// (which allocate after every collection), as fast as these slots.
type workspace struct {
	ap, bp, tile []float32
}

// cpuSlots is how many CPUs have a slot; workspaces freed on others go to
// the shared list.
const cpuSlots = 256

var (
	wsSlot [cpuSlots]atomic.Pointer[workspace] // by the CPU that last used it
	wsCPUs atomic.Int64                        // slots in use: 1 + the highest CPU seen
	wsMu   sync.Mutex
	wsFree []*workspace
)

// getWorkspace returns a free workspace: the one last used on this CPU, one
// from the shared list, one another CPU freed, or a new one at a new peak of
// overlapping calls (as many exist as calls have overlapped: steady calls
// allocate nothing).
func getWorkspace() *workspace { return getWorkspaceOn(cpuNumber()) }

func getWorkspaceOn(cpu int) *workspace {
	if cpu < cpuSlots {
		if w := wsSlot[cpu].Swap(nil); w != nil {
			return w
		}
	}
	wsMu.Lock()
	if n := len(wsFree); n > 0 {
		w := wsFree[n-1]
		wsFree = wsFree[:n-1]
		wsMu.Unlock()
		return w
	}
	wsMu.Unlock()
	for c := range int(wsCPUs.Load()) {
		if w := wsSlot[c].Swap(nil); w != nil {
			return w
		}
	}
	// Make every buffer at once as large as any call has needed, so the new
	// workspace does not grow again later.
	w := new(workspace)
	if l := int(largest.Load()); l > 0 {
		w.ap, w.bp, w.tile = make([]float32, 0, l), make([]float32, 0, l), make([]float32, 0, l)
	}
	return w
}

// putWorkspace frees w, whose buffers this CPU used last.
func putWorkspace(w *workspace) { putWorkspaceOn(w, cpuNumber()) }

func putWorkspaceOn(w *workspace, cpu int) {
	if cpu < cpuSlots {
		for n := wsCPUs.Load(); int64(cpu) >= n && !wsCPUs.CompareAndSwap(n, int64(cpu)+1); n = wsCPUs.Load() {
		}
		if wsSlot[cpu].CompareAndSwap(nil, w) {
			return
		}
	}
	wsMu.Lock()
	wsFree = append(wsFree, w)
	wsMu.Unlock()
}

// largest is the biggest buffer any workspace has needed: a buffer that must
// grow grows to it, so that buffers settle after a few calls however calls
// and buffers pair up.
var largest atomic.Int64

// grow returns s with length n, made anew at the size of the largest buffer
// (largest) when too small.
func grow(s []float32, n int) []float32 {
	if cap(s) < n {
		for {
			l := largest.Load()
			if int64(n) <= l || largest.CompareAndSwap(l, int64(n)) {
				break
			}
		}
		return make([]float32, n, max(n, int(largest.Load())))
	}
	return s[:n]
}

// nBlock returns the width of the column blocks [0, n) is cut into: about
// nc, equal, and a multiple of nr. One block may reach 1.5·nc rather than
// leave a sliver.
func nBlock(n, nc, nr int) int {
	nb := max(1, (2*n+nc)/(2*nc))
	return roundUp((n+nb-1)/nb, nr)
}

// run computes the block C[i0:i1, j0:j1] of g with kernel set ks.
func (w *workspace) run(ks *kernelSet, g *sgemmArgs, i0, i1, j0, j1 int) {
	mr, nr, vec := ks.mr, ks.nr(), ks.vec
	kcb := ks.kBlock(g.k, g.chunked)
	ncb := nBlock(j1-j0, ks.nc, nr)
	// With B packed in advance and the rows in one A block, the blocks of B
	// lie in memory in the order they are swept: the widest kernel
	// prefetches the next one, a line a step, while this one is reused from
	// L2 for every A micro-panel. Narrow blocks let both fit in L2.
	prefetch := g.bpre != nil && ks.kernPf != nil && i1-i0 <= ks.mc && i1-i0 > ks.mr
	if prefetch {
		ncb = nBlock(j1-j0, ks.ncPf, nr)
	}
	mcb := ks.mc
	w.ap = grow(w.ap, min(mcb, roundUp(i1-i0, mr))*kcb)
	if g.bpre == nil {
		w.bp = grow(w.bp, min(ncb, roundUp(j1-j0, vec))*kcb)
	}
	w.tile = grow(w.tile, mr*nr)
	if ks.begin != nil {
		ks.begin(g.k)
		defer ks.release()
	}
	c, ldc, alpha := g.c, g.ldc, g.alpha
	post := g.post
	// A bias is added to the sums in the epilogue when k is one block,
	// (sums + bias, the bits of bias + sums); over several blocks (or
	// chunks) it must come first, so each row of tiles starts from it.
	var biasFirst []float32
	if post.Bias != nil && (g.chunked || kcb < g.k) {
		biasFirst, post.Bias = post.Bias, nil
	}
	active := post.active()
	for pc := 0; pc < g.k; pc += kcb {
		kc := min(kcb, g.k-pc)
		last := active && pc+kc == g.k
		kd, bd := ks.depth(kc), ks.bDepth(pc, kc)
		beta := g.beta
		if pc > 0 || biasFirst != nil {
			beta = 1
		}
		// Rows of tiles go to the strip kernel when nothing else is asked
		// of a tile: k of one chunk, C = acc, no packing or prefetching.
		strip := ks.strip != nil && kd == ks.tile && alpha == 1 && beta == 0 &&
			(!g.chunked || kc <= KChunk) && ks.kernPack == nil && !prefetch
		for ic := i0; ic < i1; ic += mcb {
			mc := min(mcb, i1-ic)
			a := w.ap
			ks.packA(a, g.a, g.lda, g.transA, ic, mc, pc, kc)
			if post.RowSumsA != nil && j0 == 0 { // once: column parts each pack all of A
				addRowSums(post.RowSumsA, g.a, g.lda, g.transA, ic, mc, pc, kc)
			}
			for jc := j0; jc < j1; jc += ncb {
				bl := tileBlock{pc: pc, kc: kc, bd: bd, jc: jc, nc: min(ncb, j1-jc), beta: beta, strip: strip}
				bl.bpk, bl.fused = w.blockB(ks, g, pc, kc, jc, bl.nc)
				var pf []float32
				if prefetch {
					pf = g.bpre.nextBlock(pc, kcb, jc, ncb, j0, j1)
				}
				for ir := 0; ir < mc; ir += mr {
					mm := min(mr, mc-ir)
					if pc == 0 && biasFirst != nil {
						for i := ic + ir; i < ic+ir+mm; i++ {
							copy(c[i*ldc+jc:i*ldc+jc+bl.nc], biasFirst[jc:jc+bl.nc])
						}
					}
					pf = w.tiles(ks, g, &bl, a[ir*kd:], ic+ir, mm, ir == 0, pf)
					if last {
						post.apply(c, ldc, ic+ir, mm, jc, bl.nc)
					}
				}
			}
		}
	}
}

// tileBlock is what the tiles of a k block's column block share: the k
// block (pc, kc, B's depth bd), the columns [jc, jc+nc), the packed B
// block and whether the kernel packs it as it goes (fused), beta, and
// whether whole rows of tiles may go to the strip kernel.
type tileBlock struct {
	pc, kc, bd, jc, nc int
	bpk                []float32
	fused, strip       bool
	beta               float32
}

// tiles runs the tiles of one row panel of bl, mm rows of C from row on
// the packed A micro-panel a; first tells the block's first panel, which
// packs B when the kernel does. It returns what is left of pf, the
// prefetching kernel's lines.
func (w *workspace) tiles(ks *kernelSet, g *sgemmArgs, bl *tileBlock, a []float32, row, mm int, first bool, pf []float32) []float32 {
	mr, nr, c, ldc := ks.mr, ks.nr(), g.c, g.ldc
	jr0 := 0
	if bl.strip && mm == mr && bl.nc >= 2*nr {
		jr0 = bl.nc / nr * nr
		ks.strip(jr0/nr, &a[0], &bl.bpk[0], &c[row*ldc+bl.jc], ldc, nr*bl.bd)
	}
	for jr := jr0; jr < bl.nc; jr += nr {
		nn := min(nr, bl.nc-jr)
		pw := roundUp(nn, ks.vec)
		kern := ks.kerns[pw/ks.vec-1]
		bp := bl.bpk[jr*bl.bd:]
		ci := row*ldc + bl.jc + jr
		var bsrc []float32
		if bl.fused && first && nn == nr {
			bsrc = g.b[bl.pc*g.ldb+bl.jc+jr:]
		}
		if mm == mr && nn == pw {
			var pfp []float32
			if nn == nr {
				pfp = pf
				pf = pf[min(len(pf), bl.kc*lineFloats):]
			}
			ks.segment(g.chunked, kern, bl.kc, a, bp, pw, &c[ci], ldc, g.alpha, bl.beta, bsrc, g.ldb, pfp)
			continue
		}
		w.edgeTile(ks, g, kern, bl.kc, a, bp, pw, c[ci:], mm, nn, bl.beta, bsrc)
	}
	return pf
}

// fusesB reports whether the kernel packs g's op(B) as it goes (kernPack):
// B is not transposed and was not packed in advance.
func (ks *kernelSet) fusesB(g *sgemmArgs) bool {
	return ks.kernPack != nil && !g.transB && g.bpre == nil
}

// blockB returns the packed kc×nc block of op(B) at (pc, jc): packed in
// advance, packed here, or, with a packing kernel (fused), to be packed by
// the kernel at its first use (ir == 0), all but the last narrow panel.
func (w *workspace) blockB(ks *kernelSet, g *sgemmArgs, pc, kc, jc, nc int) (bpk []float32, fused bool) {
	fused = ks.fusesB(g)
	switch {
	case g.bpre != nil:
		return g.bpre.data[pc*g.bpre.width+jc*ks.bDepth(pc, kc):], false
	case fused:
		if tail := nc % ks.nr(); tail != 0 {
			jr := nc - tail
			ks.copyPanel(w.bp[jr*kc:], g.b[pc*g.ldb+jc+jr:], g.ldb, kc, tail, roundUp(tail, ks.vec))
		}
	default:
		ks.packB(w.bp, g.b, g.ldb, g.transB, jc, nc, pc, kc)
	}
	return w.bp, fused
}

// edgeTile computes an edge tile of mm×nn elements of C at c: the same
// kernel runs on a full tile of scratch, so every element of C sees the
// same arithmetic wherever the tile boundaries fall.
func (w *workspace) edgeTile(ks *kernelSet, g *sgemmArgs, kern microKernel, kc int, a, bp []float32, pw int, c []float32, mm, nn int, beta float32, bsrc []float32) {
	mr, ldc := ks.mr, g.ldc
	t := w.tile[:mr*pw]
	if beta != 0 {
		for r := range mm {
			copy(t[r*pw:r*pw+nn], c[r*ldc:r*ldc+nn])
		}
	}
	ks.segment(g.chunked, kern, kc, a, bp, pw, &t[0], pw, g.alpha, beta, bsrc, g.ldb, nil)
	for r := range mm {
		copy(c[r*ldc:r*ldc+nn], t[r*pw:r*pw+nn])
	}
}

func roundUp(x, m int) int { return (x + m - 1) / m * m }

// A panelPacker packs one micro-panel: for p < kc and c < nn it sets
// dst[p*pw+c] to src[c*lds+p] (transPanel) or src[p*lds+c] (copyPanel), and
// zeroes columns nn <= c < pw. Only those elements of src are read.
type panelPacker func(dst, src []float32, lds, kc, nn, pw int)

// packA copies op(A)[i0:i0+mc, p0:p0+kc] into dst as micro-panels of mr rows:
// panel q holds, for each p, the mr values op(A)[i0+q*mr+r, p0+p], rows past
// mc zero.
func (ks *kernelSet) packA(dst, a []float32, lda int, trans bool, i0, mc, p0, kc int) {
	mr := ks.mr
	copyA, transA := ks.copyPanel, ks.transPanel
	if ks.copyA != nil {
		copyA, transA = ks.copyA, ks.transA
	}
	kd := ks.depth(kc)
	for ir := 0; ir < mc; ir += mr {
		mm := min(mr, mc-ir)
		d := dst[ir*kd : ir*kd+mr*kd]
		if trans {
			// op(A) = Aᵀ: A is k×m, so a step's mr values are contiguous.
			copyA(d, a[p0*lda+i0+ir:], lda, kc, mm, mr)
		} else {
			transA(d, a[(i0+ir)*lda+p0:], lda, kc, mm, mr)
		}
	}
}

// addRowSums adds op(A)[i, p0:p0+kc] into sums[i] for the rows i0 <= i <
// i0+mc, p in order.
func addRowSums(sums, a []float32, lda int, trans bool, i0, mc, p0, kc int) {
	s := sums[i0 : i0+mc]
	if trans {
		for p := p0; p < p0+kc; p++ {
			vec.Add(s, a[p*lda+i0:p*lda+i0+mc])
		}
		return
	}
	for i := range s {
		for _, v := range a[(i0+i)*lda+p0 : (i0+i)*lda+p0+kc] {
			s[i] += v
		}
	}
}

// packB copies op(B)[p0:p0+kc, j0:j0+nc] into dst as micro-panels of nr
// columns: panel q holds, for each p, op(B)[p0+p, j0+q*nr : j0+q*nr+nr]. The
// last panel is only as wide as the remaining columns rounded up to vec, and
// columns past nc are zero.
func (ks *kernelSet) packB(dst, b []float32, ldb int, trans bool, j0, nc, p0, kc int) {
	nr, vec, bd := ks.nr(), ks.vec, ks.bDepth(p0, kc)
	jr0 := 0
	if !trans && ks.copyPanels != nil && nc >= nr {
		jr0 = nc / nr * nr
		ks.copyPanels(dst, b[p0*ldb+j0:], ldb, kc, jr0/nr, nr*bd)
	}
	for jr := jr0; jr < nc; jr += nr {
		nn := min(nr, nc-jr)
		pw := roundUp(nn, vec)
		d := dst[jr*bd : jr*bd+pw*bd]
		if trans {
			// op(B) = Bᵀ: B is n×k, so a column of op(B) is a row of B.
			ks.transPanel(d, b[(j0+jr)*ldb+p0:], ldb, kc, nn, pw)
		} else {
			ks.copyPanel(d, b[p0*ldb+j0+jr:], ldb, kc, nn, pw)
		}
	}
	if bd > kc { // pair steps past kc's, to the tile's depth
		for jr := 0; jr < nc; jr += nr {
			pw := roundUp(min(nr, nc-jr), vec)
			clear(dst[jr*bd+(kc+1)/2*pw : jr*bd+bd/2*pw])
		}
	}
}

// copyPanelGo is the portable copyPanel.
func copyPanelGo(dst, src []float32, lds, kc, nn, pw int) {
	for p := range kc {
		row := dst[p*pw : p*pw+pw]
		copy(row[:nn], src[p*lds:p*lds+nn])
		clear(row[nn:])
	}
}

// transPanelGo is the portable transPanel.
func transPanelGo(dst, src []float32, lds, kc, nn, pw int) {
	dst = dst[:kc*pw]
	for c := range nn {
		col := src[c*lds : c*lds+kc]
		for p, v := range col {
			dst[p*pw+c] = v
		}
	}
	if nn < pw {
		for p := range kc {
			clear(dst[p*pw+nn : p*pw+pw])
		}
	}
}

// sgemm runs a validated, non-degenerate call, splitting C over up to threads
// goroutines.
func sgemm(g *sgemmArgs, threads int) {
	ks := kernels
	if g.bf16 != nil {
		ks = g.bf16
	}
	if g.bpre != nil {
		ks = g.bpre.ks
	}
	parts, alongN := partition(ks, g.m, g.n, g.k, threads, ks.fusesB(g))
	if parts <= 1 {
		w := getWorkspace()
		w.run(ks, g, 0, g.m, 0, g.n)
		putWorkspace(w)
		return
	}
	runParallel(ks, g, parts, alongN, threads)
}

// parallelMin is the smallest m·n·k worth splitting over goroutines; smaller
// problems run on the calling goroutine.
const parallelMin = 1 << 20

// rowSplitMinM and rowSplitMaxB bound the calls partition splits in rows
// although they have columns enough: at least rowSplitMinM rows, and op(B)
// of at most rowSplitMaxB floats (512 KB).
const (
	rowSplitMinM = 256
	rowSplitMaxB = 1 << 17
)

// rowPartsPerThread is how many row parts a call is cut into per thread:
// parts are claimed dynamically, so a goroutine that runs slow (a busy CPU)
// holds up the call by one small part rather than by half of it. Row parts
// share nothing and each packs its own A, so smaller parts cost little.
const rowPartsPerThread = 4

// partition decides how many blocks of C the call is split into and whether
// they are blocks of columns (alongN) or of rows (in whole A micro-panels).
// Work is never split along k. fusedB tells that the kernel packs op(B) as
// it goes.
//
// Column parts are one a thread, each packing all of op(A) for itself: on
// two threads the MNIST MLP's products of 128 rows ran 5-10% faster so than
// in four parts a thread sharing one packing of A, which every part waited
// for and half of which each core read from the other's cache; an epoch on
// two cores, 2-5% faster (three runs of 8 interleaved pairs).
func partition(ks *kernelSet, m, n, k, threads int, fusedB bool) (parts int, alongN bool) {
	work := int64(m) * int64(n) * int64(k)
	if threads <= 1 || work < parallelMin {
		return 1, false
	}
	nUnits := (n + ks.nr() - 1) / ks.nr()
	mUnits := (m + ks.mr - 1) / ks.mr
	// Split columns unless there are too few of them, or each row part can
	// pack all of B itself for little: packed by the kernel, small enough
	// to stay in L2, over rows enough to repay it. (A weight gradient of the
	// MNIST MLP, 512×784×128, ran 5-10% faster on two threads in rows.)
	alongN = (nUnits >= 2*threads || nUnits >= mUnits) &&
		!(fusedB && m >= rowSplitMinM && int64(k)*int64(n) <= rowSplitMaxB)
	units, perThread := mUnits, rowPartsPerThread
	if alongN {
		units, perThread = nUnits, 1
	}
	// Each part gets enough work to pay for handing it over.
	parts = int(min(int64(units), int64(threads*perThread), max(1, work/(parallelMin/4))))
	return parts, alongN
}

// checkSgemm panics, as BLAS does, on negative sizes, leading dimensions
// narrower than a row, and slices too short for the matrices they hold.
func checkSgemm(transA, transB bool, m, n, k int, a []float32, lda int, b []float32, ldb int, c []float32, ldc int) {
	if m < 0 || n < 0 || k < 0 {
		panic(fmt.Sprintf("gemm: negative size m=%d n=%d k=%d", m, n, k))
	}
	ar, ac := stored(transA, m, k)
	br, bc := stored(transB, k, n)
	checkMatrix("a", a, ar, ac, lda)
	checkMatrix("b", b, br, bc, ldb)
	checkMatrix("c", c, m, n, ldc)
}

// stored returns the rows and columns that a rows×cols operand takes in
// memory: swapped when it is stored transposed.
func stored(trans bool, rows, cols int) (int, int) {
	if trans {
		return cols, rows
	}
	return rows, cols
}

// checkMatrix panics when s cannot hold a rows×cols matrix with leading dimension ld.
func checkMatrix(name string, s []float32, rows, cols, ld int) {
	if rows == 0 || cols == 0 {
		return // an empty matrix is never read, whatever its ld
	}
	if ld < cols {
		panic(fmt.Sprintf("gemm: ld%s=%d is less than the %d columns of %s", name, ld, cols, name))
	}
	if len(s) < (rows-1)*ld+cols {
		panic(fmt.Sprintf("gemm: %s has %d elements, want at least %d for %d×%d with ld%s=%d", name, len(s), (rows-1)*ld+cols, rows, cols, name, ld))
	}
}
