package vec

import "math"

// Go references: the assembly must match them bit for bit, and builds
// without assembly run them.

func reluRef(dst, x []float32) {
	dst = dst[:len(x)]
	for i, v := range x {
		if v > 0 || v != v {
			dst[i] = v
		} else {
			dst[i] = 0
		}
	}
}

func reluBackwardRef(dst, dy, x []float32) {
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

func sgdRef(w, g []float32, lr float32) {
	w = w[:len(g)]
	for i := range g {
		w[i] = w[i] - float32(lr*g[i])
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
