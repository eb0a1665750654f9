package nn

import "strconv"

// ParamName is the name of parameter or buffer name of layer i of a model,
// as checkpoints, snapshots and ONNX initializers give it: "<i>.<name>",
// such as "0.weight" or "3.running_mean".
func ParamName(i int, name string) string { return strconv.Itoa(i) + "." + name }
