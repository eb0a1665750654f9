//go:build purego || !amd64

package vec

func maxVec(x []float32) float32                 { return maxRef(x) }
func scaleF64(x []float32, c float64)            { scaleF64Ref(x, c) }
func softmaxGrad(x, y []float32, c, dot float64) { softmaxGradRef(x, y, c, dot) }
