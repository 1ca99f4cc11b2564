#!/usr/bin/env bash
# The watch loop end to end on a synthetic history (issue 40): a local git
# repository of the smoke tree (Debian's 6.12 with seed 000's hierarchical
# zswap counter) and 16 commits on top, one of which reverts the counter,
# adding back a forced stats flush for every page zswap stores. The branch
# grows over 16 "nights" of `patchbench watch` with the smoke campaign
# (icount): one commit a night, four on night 6 (the revert third of
# them), then two nights with nothing new. Expected: one change point, at
# night 6, in pageout_cpu_ns, and none elsewhere; the hunt across night 6's
# four commits names the revert in at most 1 + log2(4) = 3 kernel pairs;
# nights 14 and 15 measure nothing.
#
#   ci/watch-synthetic.sh [WORKDIR]     # default /tmp/pb-watch; ~25 min here
#
# Keeps what it measured (without console logs) in results/watch-synthetic.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
work=${1:-/tmp/pb-watch}
pb=${PATCHBENCH:-$root/target/release/patchbench}
[ -x "$pb" ] || { echo "build it first: cargo build --release --workspace --locked" >&2; exit 2; }
rm -rf "$work"
mkdir -p "$work"

# The smoke tree, imported into the cache by any command that reads it.
"$pb" apply --series patches/zswap-counter >/dev/null
cache=${PATCHBENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/patchbench}
tree=$(ls -d "$cache"/trees/linux-source-6.12-*/ | head -1)
git clone --quiet --shared --branch patchbench-base "$tree" "$work/linux"
cd "$work/linux"
git config user.name "patchbench synthetic"
git config user.email "synthetic@patchbench.invalid"
export GIT_AUTHOR_DATE="2026-12-01T00:00:00Z" GIT_COMMITTER_DATE="2026-12-01T00:00:00Z"
git am --quiet "$root"/patches/zswap-counter/*.patch
counter=$(git rev-parse HEAD)

# Commit a comment line at the end of FILE.
note() { # FILE SUBJECT
  printf '/* %s */\n' "$2" >> "$1"
  git commit --quiet -am "$2"
}
commits=()
add() { commits+=("$(git rev-parse HEAD)"); }
note mm/vmscan.c      "mm: vmscan: a comment on night 1";        add
note mm/zswap.c       "mm: zswap: a comment on night 2";         add
note mm/memcontrol.c  "mm: memcontrol: a comment on night 3";    add
note mm/page_io.c     "mm: page_io: a comment on night 4";       add
note init/main.c      "init: a comment on night 5";              add
note mm/vmscan.c      "mm: vmscan: the first of night 6";        add
note mm/swapfile.c    "mm: swapfile: the second of night 6";     add
git revert --no-edit "$counter" >/dev/null
git commit --quiet --amend -m "mm: memcg: flush the stats for every page zswap stores

Reverts the hierarchical zswap counter: obj_cgroup_may_zswap() flushes
the memcg's stats again before every check, once per stored page."
add
note mm/zswap.c       "mm: zswap: the fourth of night 6";        add
for n in 7 8 9 10 11 12 13; do
  files=(mm/vmscan.c mm/zswap.c mm/memcontrol.c mm/page_io.c init/main.c mm/swapfile.c mm/rmap.c)
  note "${files[$((n % 7))]}" "mm: a comment on night $n";       add
done
[ "${#commits[@]}" -eq 16 ] || { echo "expected 16 commits, made ${#commits[@]}" >&2; exit 1; }

# Night -> the index (in commits) of its head; night 0 is the counter.
heads=(-1 0 1 2 3 4 8 9 10 11 12 13 14 15 15 15)
cd "$root"
: > "$work/nights.txt"
for night in "${!heads[@]}"; do
  i=${heads[$night]}
  head=$counter
  [ "$i" -ge 0 ] && head=${commits[$i]}
  git -C "$work/linux" branch -f watched "$head"
  start=$(date +%s)
  set +e
  "$pb" watch --tree "$work/linux" --branch watched --history "$work/history" ci/smoke.yaml \
    > "$work/night-$night.out" 2> "$work/night-$night.err"
  code=$?
  set -e
  echo "night $night head ${head:0:12} exit $code $(( $(date +%s) - start ))s" | tee -a "$work/nights.txt"
  grep -E "^(change point|night [0-9]+:|smoke at)|nothing new" "$work/night-$night.out" || true
  if [ "$code" -gt 1 ]; then
    tail -20 "$work/night-$night.err" >&2
    exit "$code"
  fi
done

"$pb" publish --history "$work/history" --pages "$work/site"

# Keep it: the history, the reports, each run's results and report, the
# hunt's documents; not the console logs. Paths are made relative to the
# work directory (the tree is `linux`, the history `history`), and each
# run is judged again so that its report.md renders the rewritten results
# (tests/kept.rs holds every kept run to both, and to naming no path of
# one machine).
keep=results/watch-synthetic
rm -rf "$keep"
mkdir -p "$keep"
(cd "$work/history" && find . -name 'console.log' -prune -o -type f \
   \( -name '*.json' -o -name '*.md' -o -name '*.patch' -o -name '*.yaml' \) -print) |
  while read -r f; do
    mkdir -p "$keep/$(dirname "$f")"
    cp "$work/history/$f" "$keep/$f"
  done
cp "$work/nights.txt" "$keep/nights.txt"
grep -rlF "$work/" "$keep" | while read -r f; do sed -i "s|$work/||g" "$f"; done
find "$keep" -name results.json | while read -r f; do
  "$pb" --quiet judge "$f" >/dev/null || [ $? -eq 1 ]
done
echo "kept in $keep"
