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
    if spec.get("harness") != "ops":
        return None
    params = ", ".join(
        f"{k} {str(v).lower() if isinstance(v, bool) else v}"
        for k, v in sorted(work.items())
        if k not in ("kind", "tasks", "ops")
    )
    facts = results["boots"][0].get("facts") or {}
    release = facts.get("kernel_release", "?").rstrip("+")
    tree = "6.12" if release.startswith("6.12") else release
    online = facts.get("online_cpus", "")
    if online == "0":
        tree += ", 1 vCPU"
    barrier = facts.get("rcu_barrier")
    barrier = {True: "yes", False: "no", None: "—"}[barrier]
    cvs, per_op = [], []
    for boot in results["boots"]:
        xs = [s["metrics"]["ops_kernel_insns"] for s in boot["samples"]]
        per_op += [s["metrics"]["ops_kernel_insns"] / s["metrics"]["ops"] for s in boot["samples"]]
        if len(xs) > 1:
            cvs.append(100 * statistics.stdev(xs) / statistics.mean(xs))
    needs = ", ".join(spec.get("needs") or []) or "—"
    met = "met" if max(cvs) <= TARGET else "not met"
    return (
        f"| [{kind}](../workloads/{kind}.yaml) | {params} | {tree} | {needs} "
        f"| {statistics.mean(per_op):,.0f} | {min(cvs):.3f}–{max(cvs):.3f}% | {met} "
        f"| {barrier} | [{run.name}](../results/mm/{run.name}/report.md) |"
    )


def main():
    print("| benchmark | parameters run | tree | needs | kernel insns/op "
          "| within-boot CV (per boot) | ≤ 0.1% | RCU barrier | kept run |")
    print("|---|---|---|---|---|---|---|---|---|")
    for run in sorted((ROOT / "results" / "mm").iterdir()):
        if (run / "results.json").exists():
            line = row(run)
            if line:
                print(line)


if __name__ == "__main__":
    sys.exit(main())
