# Sourced by the bench scripts: PyTorch set up as its users run it on Debian,
# this machine's FMA peak, and small helpers. Not part of CI.
#
# The reference is Debian's python3-torch (1.13) with OpenBLAS's pthread
# build selected as the system BLAS, oneDNN on (its default),
# OMP_WAIT_POLICY=PASSIVE (spinning OpenMP threads make two threads slower
# than one on two cores), and OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset:
# machines of this kind set them for older OpenBLAS builds, and they slow a
# current one down.

py=/usr/bin/python3

# setup_reference installs the reference where it is missing and selects
# the pthread OpenBLAS.
setup_reference() {
	if ! $py -c "import torch, numpy, threadpoolctl" 2>/dev/null || [ ! -e /usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3 ]; then
		apt-get update -qq
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-torch python3-numpy python3-threadpoolctl libopenblas0-pthread
	fi
	for lib in libblas.so.3 liblapack.so.3; do
		update-alternatives --set "$lib-x86_64-linux-gnu" "/usr/lib/x86_64-linux-gnu/openblas-pthread/$lib" >/dev/null
	done
}

# ref runs a command of the reference in its environment.
ref() { env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE OMP_WAIT_POLICY=PASSIVE "$@"; }

# describe_reference prints the PyTorch, BLAS and instruction sets in use.
describe_reference() {
	ref $py - <<'PY'
import threadpoolctl, torch
torch.ones(2, 2) @ torch.ones(2, 2)  # loads the BLAS
isa = [l.strip() for l in torch.__config__.show().splitlines() if "CPU capability" in l or "MKL-DNN" in l or "oneDNN" in l]
print(f"PyTorch {torch.__version__}: {'; '.join(isa)}")
for lib in threadpoolctl.threadpool_info():
    print(f"  {lib['internal_api']} {lib.get('version')} ({lib.get('threading_layer', '-')}, kernels for {lib.get('architecture', '-')}): {lib['filepath']}")
PY
}

# peak prints this machine's float32 FMA peak, one core and all.
peak() { (cd "$(dirname "${BASH_SOURCE[0]}")/.." && go run ./bench/peak -seconds 0.5); }

# median of the numbers on stdin.
median() { sort -g | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }
