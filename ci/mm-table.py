#!/usr/bin/env python3
"""The mm library's table in docs/mm-library.md, from the kept A/A runs.

Reads every results/mm/<run>/ (campaign.yaml as run, results.json) and
prints one Markdown row per run: the benchmark and its spec, the
parameters run (beyond tasks and ops), the tree and online vCPUs, what the
spec needs, the mean kernel instructions per operation over every sample,
the within-boot CV of ops_kernel_insns per boot (smallest to largest),
whether the largest is within issue 49's 0.1%, whether the kernel ran the
RCU barrier at the window's edges, and the kept report.

    python3 ci/mm-table.py            # from the checkout's root
"""
import json
import pathlib
import statistics
import sys

import yaml  # python3-yaml (Debian)

ROOT = pathlib.Path(__file__).resolve().parent.parent
TARGET = 0.1


def row(run: pathlib.Path):
    campaign = yaml.safe_load((run / "campaign.yaml").read_text())
    results = json.loads((run / "results.json").read_text())
    work = campaign["workload"]
    kind = work["kind"]
    spec = yaml.safe_load((ROOT / "workloads" / f"{kind}.yaml").read_text())
    def shown(v):
        if isinstance(v, bool):
            return str(v).lower()
        if isinstance(v, dict):
            return ", ".join(f"{k} {x}" for k, x in sorted(v.items()))
        return str(v)

    params = ", ".join(
        f"{k} {shown(v)}" for k, v in sorted(work.items()) if k not in ("kind", "tasks", "ops")
    )
    facts = results["boots"][0].get("facts") or {}
    release = facts.get("kernel_release", "?").rstrip("+")
    tree = "6.12" if release.startswith("6.12") else release
    online = facts.get("online_cpus", "")
    if online == "0":
        tree += ", 1 vCPU"
    needs = ", ".join(spec.get("needs") or []) or "—"
    barrier = facts.get("rcu_barrier")
    barrier = {True: "yes", False: "no", None: "—"}[barrier]
    failed = [b for b in results["boots"] if not b["samples"]]
    if failed:
        what = failed[0].get("failure", {}).get("what", "no sample")
        what = what.splitlines()[0].split(" (MemFree")[0].rstrip(":; ").replace("|", "/")
        return (
            f"| [{kind}](../workloads/{kind}.yaml) | {params} | {tree} | {needs} "
            f"| stopped: {what} | | | {barrier} | [{run.name}](../results/mm/{run.name}/report.md) |"
        )
    metric = next(
        m for m in ("ops_kernel_insns", "run_kernel_insns")
        if m in results["boots"][0]["samples"][0]["metrics"]
    )
    cvs, per_op = [], []
    for boot in results["boots"]:
        samples = [s["metrics"] for s in boot["samples"]]
        xs = [m[metric] for m in samples]
        per_op += [m[metric] / m["ops"] for m in samples if m.get("ops")]
        if len(xs) > 1:
            cvs.append(100 * statistics.stdev(xs) / statistics.mean(xs))
    met = "met" if max(cvs) <= TARGET else "not met"
    return (
        f"| [{kind}](../workloads/{kind}.yaml) | {params} | {tree} | {needs} "
        f"| {f'{statistics.mean(per_op):,.0f}' if per_op else 'a run: ' + f'{statistics.mean(xs):,.0f}'} | {min(cvs):.3f}–{max(cvs):.3f}% | {met} "
        f"| {barrier} | [{run.name}](../results/mm/{run.name}/report.md) |"
    )


def main():
    print("| workload | parameters run | tree | needs | kernel insns/op "
          "| within-boot CV (per boot) | ≤ 0.1% | RCU barrier | kept run |")
    print("|---|---|---|---|---|---|---|---|---|")
    for run in sorted((ROOT / "results" / "mm").iterdir()):
        if (run / "results.json").exists():
            line = row(run)
            if line:
                print(line)


if __name__ == "__main__":
    sys.exit(main())
