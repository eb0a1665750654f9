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
	# the ISA oneDNN dispatches to, and its kernel for a bf16 (autocast) product
	ref ONEDNN_VERBOSE=1 $py -c 'import torch
with torch.autocast("cpu", dtype=torch.bfloat16):
    torch.nn.Linear(64, 64)(torch.ones(8, 64))' | awk -F, '/isa:/ {sub(/^isa:/, "", $4); print "  oneDNN ISA: " $4} /exec,cpu,matmul/ {print "  oneDNN bf16 matmul: " $5; exit}'
}

# peak prints this machine's float32 FMA peak, one core and all.
peak() { (cd "$(dirname "${BASH_SOURCE[0]}")/.." && go run ./bench/peak -seconds 0.5); }

# median of the numbers on stdin.
median() { sort -g | awk '{v[NR]=$1} END {print (NR%2 ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2)}'; }

# start sets the reference up and prints the date, the machine, its peak
# (kept in $peakout) and the reference.
start() {
	setup_reference
	echo "== $(date -u +%F), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores, Go $(go env GOVERSION)"
	peakout=$(peak)
	echo "$peakout"
	describe_reference
}

# build_train makes $tmp, removed on exit, and builds train and epochrate in it.
build_train() {
	tmp=$(mktemp -d)
	trap 'rm -rf "$tmp"' EXIT
	go build -o "$tmp/train" ./cmd/train
	go build -o "$tmp/epochrate" ./bench/epochrate
}

# train_run ROUND NAME GOMAXPROCS CONFIG ARG...: one run of train on CONFIG
# and $data with GOMAXPROCS (empty: all) and the --set ARGs given, logging
# into the round's folder; its samples/s go to $tmp/NAME.
train_run() {
	local name=$2 procs=$3 config=$4 dir="$tmp/logs-$1-$2"
	shift 4
	env ${procs:+GOMAXPROCS=$procs} "$tmp/train" --config "$config" --log-format json \
		--set data.path="$data" --set data.download=false --set log.every=10 --set log.dir="$dir" \
		--set train.checkpoint_dir="$tmp/ck" "$@" 2>/dev/null
	"$tmp/epochrate" "$dir"/*.jsonl >>"$tmp/$name"
}

# The figures of a configuration NAME are the lines of $tmp/NAME (a
# script's PREFIX, when it has one, goes before NAME). m prints their
# median, best the largest median of the names given.
m() { median <"$tmp/$1"; }
best() { for n in "$@"; do m "$n"; done | sort -g | tail -1; }

# latest PREFIX CONFIG... prints each configuration's name (its first word)
# and latest figure, for a line a round.
latest() {
	local pre=$1 c
	shift
	for c in "$@"; do
		set -- $c
		printf '%s %s  ' "$1" "$(tail -1 "$tmp/$pre$1")"
	done
}

# medians FORMAT PREFIX CONFIG... prints each configuration's name and
# median by FORMAT, then its figures in brackets.
medians() {
	local format=$1 pre=$2 c
	shift 2
	for c in "$@"; do
		set -- $c
		printf "$format  (%s)\n" "$1" "$(m "$pre$1")" "$(tr '\n' ' ' <"$tmp/$pre$1")"
	done
}
