"""Checks ONNX models that model.ExportONNX wrote, for model's tests.

    onnx_check.py MODEL.onnx...                       onnx.checker.check_model(full_check=True) on each; prints "ok"
    onnx_check.py --run MODEL.onnx INPUT.json...      also runs each graph on its input; prints a JSON line each

INPUT.json and the outputs are {"shape": [...], "data": [...]} in row-major
order. onnx 1.12 has no evaluator and onnxruntime is not at hand, so the graph
runs here node by node on torch, in float32 as a runtime would: an interpreter
of exactly the opset-13 operators the exporter writes, each with its ONNX
defaults, refusing any attribute or operator it does not know, so that a graph
it runs is one whose every attribute it understood. One process does all the
models, since importing torch takes seconds.
"""

import json
import sys

import onnx
from onnx import helper, numpy_helper

OPSET = 13


def run(model, x):
    import torch
    import torch.nn.functional as F

    def conv_pads(a, rank):
        pads = a.get("pads", [0] * 2 * rank)
        if pads[:rank] != pads[rank:]:
            raise ValueError(f"asymmetric pads {pads}")
        return pads[:rank]

    def gemm(n, a, A, B, C=None):
        A = A.T if a.get("transA", 0) else A
        B = B.T if a.get("transB", 0) else B
        y = a.get("alpha", 1.0) * (A @ B)
        return y if C is None else y + a.get("beta", 1.0) * C

    def conv(n, a, X, W, B=None):
        k = a["kernel_shape"]
        if list(W.shape[2:]) != k or a.get("group", 1) != 1:
            raise ValueError(f"{n.name}: kernel_shape {k}, weights {list(W.shape)}")
        return F.conv2d(X, W, B, stride=a.get("strides", [1, 1]), padding=conv_pads(a, 2),
                        dilation=a.get("dilations", [1, 1]))

    def pool(n, a, X, avg):
        k, s, p = a["kernel_shape"], a.get("strides", [1, 1]), conv_pads(a, 2)
        if avg:
            return F.avg_pool2d(X, k, s, p, ceil_mode=bool(a.get("ceil_mode", 0)),
                                count_include_pad=bool(a.get("count_include_pad", 0)))
        if a.get("storage_order", 0):
            raise ValueError("storage_order")
        return F.max_pool2d(X, k, s, p, dilation=a.get("dilations", [1, 1]), ceil_mode=bool(a.get("ceil_mode", 0)))

    def flatten(n, a, X):
        axis = a.get("axis", 1)
        return X.reshape(int(torch.tensor(X.shape[:axis]).prod()), -1)

    # op: (the attributes it may have, how it computes)
    ops = {
        "Gemm": ({"alpha", "beta", "transA", "transB"}, gemm),
        "Conv": ({"kernel_shape", "strides", "pads", "dilations", "group"}, conv),
        "MaxPool": ({"kernel_shape", "strides", "pads", "dilations", "ceil_mode", "storage_order"},
                    lambda n, a, X: pool(n, a, X, False)),
        "AveragePool": ({"kernel_shape", "strides", "pads", "ceil_mode", "count_include_pad"},
                        lambda n, a, X: pool(n, a, X, True)),
        "BatchNormalization": ({"epsilon", "momentum"},
                               lambda n, a, X, s, b, m, v: F.batch_norm(X, m, v, s, b, False, 0.0, a.get("epsilon", 1e-5))),
        "Flatten": ({"axis"}, flatten),
        "Relu": (set(), lambda n, a, X: torch.relu(X)),
        "LeakyRelu": ({"alpha"}, lambda n, a, X: F.leaky_relu(X, a.get("alpha", 0.01))),
        "PRelu": (set(), lambda n, a, X, s: torch.where(X < 0, s * X, X)),
        "Sigmoid": (set(), lambda n, a, X: torch.sigmoid(X)),
        "Tanh": (set(), lambda n, a, X: torch.tanh(X)),
        "Erf": (set(), lambda n, a, X: torch.erf(X)),
        "Sqrt": (set(), lambda n, a, X: torch.sqrt(X)),
        "Softmax": ({"axis"}, lambda n, a, X: torch.softmax(X, a.get("axis", -1))),
        "ReduceMean": ({"axes", "keepdims"},
                       lambda n, a, X: X.mean(dim=a["axes"], keepdim=bool(a.get("keepdims", 1)))),
        "Add": (set(), lambda n, a, A, B: A + B),
        "Sub": (set(), lambda n, a, A, B: A - B),
        "Mul": (set(), lambda n, a, A, B: A * B),
        "Div": (set(), lambda n, a, A, B: A / B),
        "Identity": (set(), lambda n, a, X: X),
    }
    env = {t.name: torch.from_numpy(numpy_helper.to_array(t).copy()) for t in model.graph.initializer}
    env[model.graph.input[0].name] = x
    for n in model.graph.node:
        if n.domain not in ("", "ai.onnx") or n.op_type not in ops:
            raise ValueError(f"node {n.name}: operator {n.domain}:{n.op_type} is not one this interpreter knows")
        known, f = ops[n.op_type]
        a = {at.name: helper.get_attribute_value(at) for at in n.attribute}
        if set(a) - known:
            raise ValueError(f"node {n.name}: attributes {sorted(set(a) - known)} of {n.op_type} are not handled")
        with torch.no_grad():
            y = f(n, a, *[env[i] for i in n.input])
        if y.dtype != torch.float32:
            raise ValueError(f"node {n.name}: {y.dtype}")
        env[n.output[0]] = y
    return env[model.graph.output[0].name]


def check(path):
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    opsets = {o.domain: o.version for o in model.opset_import}
    if opsets != {"": OPSET}:
        raise SystemExit(f"{path}: opsets {opsets}: this script runs opset {OPSET} only")
    return model


def main(args):
    if args[:1] != ["--run"]:
        for path in args:
            check(path)
        print("ok")
        return
    import torch

    for path, input_path in zip(args[1::2], args[2::2]):
        model = check(path)
        with open(input_path) as f:
            inp = json.load(f)
        x = torch.tensor(inp["data"], dtype=torch.float32).reshape(inp["shape"])
        y = run(model, x)
        print(json.dumps({"shape": list(y.shape), "data": y.reshape(-1).tolist()}))


if __name__ == "__main__":
    main(sys.argv[1:])
