#!/usr/bin/env python3
"""The mm library's timings (issue 49): one Markdown row per A/A run.

  ci/mm-timings.py header                            the table's header
  ci/mm-timings.py row RESULTS.json NAME EXIT WALL   one run (ci/mm-library.sh)
  ci/mm-timings.py suite OUT                         every OUT/<name>/results.json
                                                     of a `run --suite mm --out OUT`

The columns: the run's exit code (in `suite`, its A/A check) and wall
time (in `suite`, the campaign's own boots' wall time,
`boots_wall_seconds`), the host seconds
per sample (a boot's time after the agent's hello over its warm-ups and
samples, the mean over boots), the boots it took, the mean kernel
instructions per operation, and the largest within-boot CV of
ops_kernel_insns (the target is 0.1%).
"""
import json
import os
import statistics as st
import sys

HEADER = (
    "| workload | outcome | wall | s/sample | boots | kernel insns/op | max within-boot CV |\n"
    "|---|---|---|---|---|---|---|"
)


def row(path, name, rc, wall):
    d = json.load(open(path))
    per_sample, cvs, per_op = [], [], []
    for b in d["boots"]:
        runs = len(b["warmups"]) + len(b["samples"])
        if runs and b.get("hello_seconds") is not None and b.get("total_seconds"):
            per_sample.append((b["total_seconds"] - b["hello_seconds"]) / runs)
        xs = [s["metrics"]["ops_kernel_insns"] for s in b["samples"] if "ops_kernel_insns" in s["metrics"]]
        if len(xs) > 1:
            cvs.append(100 * st.stdev(xs) / st.mean(xs))
        per_op += [
            s["metrics"]["ops_kernel_insns_per_op"]
            for s in b["samples"]
            if "ops_kernel_insns_per_op" in s["metrics"]
        ]

    def fmt(v, f):
        return f.format(v) if v is not None else "n/a"

    return (
        f"| {name} | {rc} | {wall} s | {fmt(st.mean(per_sample) if per_sample else None, '{:.1f}')} "
        f"| {len(d['boots'])} | {fmt(st.mean(per_op) if per_op else None, '{:,.0f}')} "
        f"| {fmt(max(cvs) if cvs else None, '{:.3f}%')} |"
    )


def suite(out):
    print(HEADER)
    total = 0.0
    for name in sorted(os.listdir(out)):
        path = os.path.join(out, name, "results.json")
        if not os.path.isfile(path):
            continue
        d = json.load(open(path))
        wall = d.get("boots_wall_seconds") or 0.0
        total += wall
        check = (d.get("judgement") or {}).get("self_check") or {}
        rc = "A/A passed" if check and not check.get("false_calls") else "see report"
        print(row(path, name, rc, f"{wall:.0f}"))
    print(f"\nboots' wall time summed over the campaigns: {total:.0f} s ({total / 60:.1f} min)")


def main(argv):
    if len(argv) == 2 and argv[1] == "header":
        print(HEADER)
    elif len(argv) == 6 and argv[1] == "row":
        print(row(*argv[2:]))
    elif len(argv) == 3 and argv[1] == "suite":
        suite(argv[2])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main(sys.argv)
