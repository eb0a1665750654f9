package vec

import "math"

// Go references: the assembly must match them bit for bit, and builds
// without assembly run them.

// ReluGo is Relu in Go for either float type: the assembly's reference, and
// the float64 path of ops.
func ReluGo[T float32 | float64](dst, x []T) {
	dst = dst[:len(x)]
	for i, v := range x {
		if v > 0 || v != v {
			dst[i] = v
		} else {
			dst[i] = 0
		}
	}
}

// ReluBackwardGo is ReluBackward in Go for either float type, as ReluGo.
func ReluBackwardGo[T float32 | float64](dst, dy, x []T) {
	dst = dst[:len(x)]
	dy = dy[:len(x)]
	for i, v := range x {
		if v > 0 {
			dst[i] = dy[i]
		} else {
			dst[i] = 0
		}
	}
}

func allFiniteRef(x []float32) bool {
	for _, v := range x {
		if math.Float32bits(v)&0x7f800000 == 0x7f800000 {
			return false
		}
	}
	return true
}

func addRef(dst, x []float32) {
	dst = dst[:len(x)]
	for i, v := range x {
		dst[i] = dst[i] + v
	}
}

func addConstRef(dst []float32, c float32) {
	for i := range dst {
		dst[i] += c
	}
}

func sgdRef(w, g []float32, lr float32) {
	w = w[:len(g)]
	for i := range g {
		w[i] = w[i] - float32(lr*g[i])
	}
}

func adamRef(w, g, m, v []float32, s *AdamStep) {
	g, m, v = g[:len(w)], m[:len(w)], v[:len(w)]
	for i := range w {
		if s.Decouple {
			w[i] = float32(w[i] * s.Decay) // rounded before any sum (no FMA)
		}
		gi := g[i]
		if s.Scaled {
			gi = gi * s.Scale
		}
		if s.Zero {
			g[i] = 0
		} else if s.Scaled {
			g[i] = gi
		}
		if s.Coupled {
			gi = gi + float32(s.WD*w[i])
		}
		if s.Small {
			m[i] = m[i] + float32(s.Lerp*(gi-m[i]))
		} else {
			m[i] = gi - float32((gi-m[i])*s.OneMinus)
		}
		v[i] = float32(v[i]*s.Beta2) + float32(float32(s.OmBeta2*gi)*gi)
		denom := float32(float32(math.Sqrt(float64(v[i])))/s.BC2Sqrt) + s.Eps
		w[i] = w[i] + float32(float32(s.NegStep*m[i])/denom)
	}
}

func sgdMomentumRef(w, g, buf []float32, lr, mom float32) {
	w = w[:len(g)]
	buf = buf[:len(g)]
	for i := range g {
		buf[i] = float32(mom*buf[i]) + g[i]
		w[i] = w[i] - float32(lr*buf[i])
	}
}

func maxPool2x2Ref(dst []float32, arg []uint8, x []float32, rows, ow, stride, w int) {
	for r := range rows {
		top, bottom := x[r*stride:r*stride+2*ow], x[r*stride+w:r*stride+w+2*ow]
		d, a := dst[r*ow:(r+1)*ow], arg[r*ow:(r+1)*ow]
		for j := range d {
			at, m := uint8(0), top[2*j]
			if v := top[2*j+1]; v > m || v != v {
				at, m = 1, v
			}
			if v := bottom[2*j]; v > m || v != v {
				at, m = 2, v
			}
			if v := bottom[2*j+1]; v > m || v != v {
				at, m = 3, v
			}
			d[j], a[j] = m, at
		}
	}
}

func maxPool2x2BackwardRef(dx, g []float32, arg []uint8, rows, ow, stride, w int) {
	for r := range rows {
		top, bottom := dx[r*stride:r*stride+2*ow], dx[r*stride+w:r*stride+w+2*ow]
		for j, v := range g[r*ow : (r+1)*ow] {
			t, b := top[2*j:2*j+2], bottom[2*j:2*j+2]
			t[0], t[1], b[0], b[1] = 0, 0, 0, 0
			switch arg[r*ow+j] {
			case 0:
				t[0] = v
			case 1:
				t[1] = v
			case 2:
				b[0] = v
			case 3:
				b[1] = v
			}
		}
	}
}
