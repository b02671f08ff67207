#!/usr/bin/env bash
# Builds everything a GPU machine needs to run (the coalesce binary, every test
# binary, the bench binaries) and copies it into gpu-bundle/, which is git-ignored.
# Use where you build (no GPU needed); then run scripts/gpu-run.sh on the GPU machine.
set -euo pipefail
cd "$(dirname "$0")/.."
bundle=gpu-bundle
rm -rf "$bundle"
mkdir -p "$bundle"

cargo build --release --bin coalesce
cp target/release/coalesce "$bundle/"

# Test and bench executables, named after their targets.
copy_executables() {
  python3 -c '
import json, sys, shutil
prefix = sys.argv[1]; dest = sys.argv[2]
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["profile"]["test"]:
        t = m["target"]
        pkg = m["package_id"].split("#")[0].split("/")[-1]
        name = prefix + "-" + pkg + "-" + t["kind"][0] + "-" + t["name"]
        shutil.copy(m["executable"], f"{dest}/{name}")
        print(name)
' "$1" "$bundle"
}
# The test binaries include the GPU tests of the deliberately wrong kernels, which
# need their PTX (the broken-kernels feature); the coalesce binary above is built
# without it. Benches share the feature so the library is compiled once.
features=(--features coalesce/broken-kernels)
cargo test --release --workspace --no-run "${features[@]}" --message-format=json 2>/dev/null | copy_executables test
if [ "${BUNDLE_BENCHES:-1}" = 1 ] && ls benches/*.rs >/dev/null 2>&1; then
  cargo bench --workspace --no-run "${features[@]}" --message-format=json 2>/dev/null | copy_executables bench
fi
cp scripts/gpu-run.sh "$bundle/"
# Symbols are a fifth of the bundle, which must travel in 64 MiB with the tree.
if command -v strip >/dev/null; then
  strip "$bundle"/coalesce "$bundle"/test-* "$bundle"/bench-* 2>/dev/null || true
fi
du -sh "$bundle"
