# Independent derivation of the float32 golden values in sgd_test.go, adam_test.go
# and golden_test.go: PyTorch's single-tensor SGD/Adam/AdamW (torch/optim/sgd.py,
# adam.py, _single_tensor_*) emulated with every tensor operation rounded to float32,
# using the scalar formulas of ATen's CPU kernels. Run: python3 pytorch_float32_emulation.py
# (standard library only; no PyTorch needed).
import struct, math
def f(x): return struct.unpack('f', struct.pack('f', x))[0]
def add(a, b, alpha): return f(a + f(f(alpha) * b))
def mul(a, s): return f(a * f(s))
def lerp(a, e, wt):
    wt = f(wt)
    if abs(wt) < 0.5: return f(a + f(wt * f(e - a)))
    return f(e - f(f(e - a) * f(1 - wt)))
def addcmul(a, t1, t2, v): return f(a + f(f(f(v) * t1) * t2))
def addcdiv(a, t1, t2, v): return f(a + f(f(f(v) * t1) / t2))
def sqrt(a): return f(math.sqrt(a))
def div(a, s): return f(a / f(s))

grads = [[0.1, -0.2], [0.3, 0.05], [-0.4, 0.25]]
lrs = [0.1, 0.05, 0.025]
def sgd(w, mom, wd, nest):
    w = [f(x) for x in w]; buf = None; out = []
    for g, lr in zip(grads, lrs):
        g = [f(x) for x in g]
        if wd != 0: g = [add(gi, wi, wd) for gi, wi in zip(g, w)]
        if mom != 0:
            if buf is None: buf = list(g)
            else: buf = [add(mul(b, mom), gi, 1) for b, gi in zip(buf, g)]
            g = [add(gi, b, mom) for gi, b in zip(g, buf)] if nest else list(buf)
        w = [add(wi, gi, -lr) for wi, gi in zip(w, g)]
        out.append(w)
    return out
def adam(w, b1, b2, eps, wd, decoupled, lrs=lrs):
    w = [f(x) for x in w]; m = [0.0]*len(w); v = [0.0]*len(w); out = []
    for t, (g, lr) in enumerate(zip(grads, lrs), 1):
        g = [f(x) for x in g]
        if wd != 0:
            if decoupled: w = [mul(x, 1 - lr*wd) for x in w]
            else: g = [add(gi, wi, wd) for gi, wi in zip(g, w)]
        m = [lerp(a, gi, 1 - b1) for a, gi in zip(m, g)]
        v = [addcmul(mul(a, b2), gi, gi, 1 - b2) for a, gi in zip(v, g)]
        bc1 = 1 - b1 ** t; bc2 = 1 - b2 ** t
        ss = lr / bc1; bc2s = math.sqrt(bc2)
        denom = [f(div(sqrt(a), bc2s) + f(eps)) for a in v]
        w = [addcdiv(wi, mi, d, -ss) for wi, mi, d in zip(w, m, denom)]
        out.append(w)
    return out
def show(name, seq):
    print(name)
    for w in seq: print("  {" + ", ".join("%.9g" % x for x in w) + "},")
show("sgd nesterov", sgd([1.0, -0.5], 0.9, 0.01, True))
show("adam", adam([0.5, -1.5], 0.9, 0.999, 1e-8, 0.01, False))
show("adamw", adam([0.5, -1.5], 0.9, 0.999, 1e-8, 0.1, True))
show("adam beta1=0.4 (lerp weight 0.6: large-weight branch)", adam([0.5, -1.5], 0.4, 0.99, 1e-8, 0, False))

print("---- wide golden: 24 elements, 6 steps")
N, K = 24, 6
def wide_inputs():
    w0 = [((i * 5) % 11 - 5) / 4 for i in range(N)]
    gs = [[((i * 7 + k * 13) % 17 - 8) / 10 for i in range(N)] for k in range(K)]
    lrs = [0.1, 0.05, 0.025, 0.1, 0.2, 0.01]
    return w0, gs, lrs
w0, gs, ls = wide_inputs()
grads = gs; lrs = ls
def bits(seq):
    return ", ".join("0x%08x" % struct.unpack('<I', struct.pack('<f', x))[0] for x in seq[-1])
print("sgd mom0.9 nest wd0.01:", bits(sgd(w0, 0.9, 0.01, True)))
print("sgd mom0.9 wd0.05:", bits(sgd(w0, 0.9, 0.05, False)))
print("adam wd0.01:", bits(adam(w0, 0.9, 0.999, 1e-8, 0.01, False, ls)))
print("adamw wd0.1:", bits(adam(w0, 0.9, 0.999, 1e-8, 0.1, True, ls)))
print("adam b0.4,0.99:", bits(adam(w0, 0.4, 0.99, 1e-8, 0, False, ls)))
