#!/usr/bin/env bash
# Whether a refactoring changed the code the compilers make: for each file,
# its code at BASE (a git revision) against the working tree's, compiled as
# the build compiles it (.cu: PTX for sm_90 with nvcc; .cpp: x86-64 assembly
# with g++ -march=native). Needs no GPU.
#
#   scripts/compare-object-code.sh HEAD kernels/lstm_cell.cu lib/ops/lstm_cell.cpp
#
# Per file: "identical"; or "same arithmetic" when only integer arithmetic
# (addresses, loop bounds), parameter loads and register names differ: the
# float operations, loads and stores are the same sequence, so the results
# are the same bits;
# or "differs", with the first lines of the difference. Exit 1 if any differs.
set -euo pipefail
[ $# -ge 2 ] || { sed -n '2,12p' "$0" >&2; exit 2; }
base=$1
shift
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/base"
git -C "$root" archive "$base" kernels lib | tar -x -C "$work/base"
nvcc=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}

compile() {  # tree file out
  local tree=$1 file=$2 out=$3
  case $file in
    *.cu) "$nvcc" -O3 -DNDEBUG -arch=sm_90 -ptx --use_fast_math -std=c++17 -I"$tree/kernels" -I"$tree/lib" -I"$tree/lib/include" \
            "$tree/$file" -o "$out"
          # An anonymous namespace's name carries a hash of the file's path.
          sed -i 's/_GLOBAL__N__[0-9a-f]\{8\}_/_GLOBAL__N__/g' "$out" ;;
    *.cpp) g++ -O3 -DNDEBUG -march=native -fopenmp -std=c++17 -I"$tree/lib/include" -I"$tree/lib" \
             -I/usr/include/stb -isystem /usr/include/x86_64-linux-gnu/openblas-openmp -S "$tree/$file" -o "$out"
           sed -i '/^\s*\.\(file\|ident\)/d' "$out" ;;
    *) echo "$file: neither .cu nor .cpp" >&2; return 1 ;;
  esac
}
# The float operations, loads and stores in order, registers unnamed.
arithmetic() {
  grep -E '^\s+(ld|st|v?[a-z0-9]+(ss|ps|sd|pd)\b|[a-z.]*\.f(16|32|64)\b|[a-z.]+\.(b|bf)16)' "$1" |
    grep -vE '\.(s|u)(32|64)\b|^\s+ld\.param' | sed -E 's/%[a-z]+[0-9]*//g; s/\.L[A-Za-z0-9_]+//g' || true
}

status=0
for file in "$@"; do
  name=$(echo "$file" | tr / _)
  compile "$work/base" "$file" "$work/$name.base"
  compile "$root" "$file" "$work/$name.new"
  if cmp -s "$work/$name.base" "$work/$name.new"; then
    echo "$file: identical"
  elif diff -q <(arithmetic "$work/$name.base") <(arithmetic "$work/$name.new") >/dev/null; then
    echo "$file: same arithmetic ($(arithmetic "$work/$name.new" | wc -l) float operations, loads and stores in the same order)"
  else
    echo "$file: differs"
    diff <(arithmetic "$work/$name.base") <(arithmetic "$work/$name.new") | head -20 || true
    status=1
  fi
done
exit $status
