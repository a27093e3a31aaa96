#!/usr/bin/env python3
"""Fits the script-aware estimator's weights (internal/tokens/estimator.cpp).

Reads the CSV of `build/bench/estimator_bench --dump FILE` (features and exact cl100k/o200k
counts per corpus chunk and file) and solves a linear program: non-negative weights that keep
every sample's estimate at or above MARGIN x the larger exact count, minimising the mean
relative over-count. Prints the C++ initialiser. --holdout NAME... fits without those files
and reports how they fare, to check that the weights generalise to unseen text types.

Needs Debian's python3-scipy. Usage:
  build/bench/estimator_bench --dump /tmp/est.csv
  python3 scripts/fit_estimator.py /tmp/est.csv [--margin 1.0] [--holdout a.txt b.txt]
"""
import argparse
import csv
import math

import numpy as np

NFEAT = 17
RARE_BYTES = 16  # kFeatRareBytes: fixed at 1 per byte (a token is at least one byte)
from scipy.optimize import linprog


def load(path):
    rows = []
    with open(path) as f:
        for r in csv.DictReader(f):
            feats = [float(r[f"f{k}"]) for k in range(NFEAT)]
            rows.append((r["file"], r["sample"], np.array(feats), int(r["cl100k"]), int(r["o200k"])))
    return rows


def fit(rows, margin):
    a_ub, b_ub, objective = [], [], np.zeros(NFEAT)
    for _, _, f, cl, o2 in rows:
        real = max(cl, o2, 1)
        a_ub.append(-f)               # -w.f <= -margin * real
        b_ub.append(-margin * real)
        objective += f / real         # sum of estimate / real
    bounds = [(0, None)] * NFEAT
    bounds[RARE_BYTES] = (1.0, 1.0)
    res = linprog(objective, A_ub=np.array(a_ub), b_ub=np.array(b_ub), bounds=bounds,
                  method="highs")
    if not res.success:
        raise SystemExit(f"fit failed: {res.message}")
    return res.x


def report(rows, w, label):
    worst_under, worst_over = 10.0, 0.0
    per_file = {}
    for name, sample, f, cl, o2 in rows:
        est = math.ceil(float(w @ f))
        for real in (cl, o2):
            if real <= 0:
                continue
            r = est / real
            lo, hi = per_file.get(name, (10.0, 0.0))
            per_file[name] = (min(lo, r), max(hi, r) if sample == "file" else hi)
            worst_under = min(worst_under, r)
            if sample == "file":
                worst_over = max(worst_over, r)
    print(f"{label}: lowest estimate/exact {worst_under:.3f}, highest (whole files) {worst_over:.3f}")
    for name, (lo, hi) in sorted(per_file.items()):
        print(f"  {name:30s} min {lo:.3f}  file max {hi:.3f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("csv")
    ap.add_argument("--margin", type=float, default=1.0)
    ap.add_argument("--holdout", nargs="*", default=[])
    ap.add_argument("--leave-one-out", action="store_true",
                    help="fit without each file in turn and report how that file fares")
    args = ap.parse_args()
    rows = load(args.csv)
    if args.leave_one_out:
        names = sorted({r[0] for r in rows})
        print("leave-one-out: lowest estimate/exact of each file when it was not fitted")
        for name in names:
            w = fit([r for r in rows if r[0] != name], args.margin)
            lows = [math.ceil(float(w @ f)) / real for n, _, f, cl, o2 in rows if n == name
                    for real in (cl, o2) if real > 0]
            flag = "  UNDER 10%" if min(lows) < 0.9 else ""
            print(f"  {name:30s} {min(lows):.3f}{flag}")
        return
    train = [r for r in rows if r[0] not in args.holdout]
    w = fit(train, args.margin)
    report(train, w, "fitted files")
    held = [r for r in rows if r[0] in args.holdout]
    if held:
        report(held, w, "held-out files")
    print("  static constexpr EstimatorFeatures kWeights = {" +
          ", ".join(f"{x:.4f}" for x in w) + "};")


if __name__ == "__main__":
    main()
