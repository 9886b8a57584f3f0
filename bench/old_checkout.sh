# Sourced by the bench/*_vs.sh scripts: REV checked out in a temporary git worktree ($old, under
# $work) beside this checkout's compiled dependencies ($work/target, so only the workspace crates
# rebuild), both removed on exit. Usage: . bench/old_checkout.sh; old_checkout REV
old_checkout() {
    work=$(mktemp -d)
    old="$work/old"
    trap 'git worktree remove --force "$old" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
    git worktree add -f "$old" "$1" >/dev/null
    cp -r target "$work/target" 2>/dev/null || true
}
# REV's native module built into its checkout, so that PYTHONPATH=$old/python imports REV's tcplab.
old_native() {
    (cd "$old" && CARGO_TARGET_DIR="$work/target" cargo build -q --release -p tcplab-py)
    cp "$work/target/release/lib_native.so" "$old/python/tcplab/_native.abi3.so"
}
