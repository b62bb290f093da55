#!/usr/bin/env python3
"""How many transfers each rank receives at once, over a traced run (docs/simulator.md, "PAT at one GPU
per machine"): reads `cclab trace dump --csv` of a step-level trace of one size and prints, per tenth of
the run, the mean, least and most concurrent incoming transfers per receiving rank, and the spread at a
few instants. A step counts from the end of its wait (`begin_us + wait_us`: its data can move) to its
end.

    cclab sim reduce_scatter --topo pcie-1gpu:64 -b 512M -e 512M --algo PAT --level step --trace t.cctrace
    cclab trace dump t.cctrace --csv | python3 bench/receivers.py
"""
import collections
import csv
import sys


def main():
    incoming = collections.defaultdict(list)  # receiver -> [(begin, end)] of the steps sent to it
    end = 0.0
    for row in csv.DictReader(sys.stdin):
        b, d, w = float(row["begin_us"]), float(row["dur_us"]), float(row["wait_us"])
        end = max(end, b + d)
        if row["to"] not in ("-", "") and d > w:
            incoming[int(row["to"])].append((b + w, b + d))
    if not incoming or end <= 0:
        sys.exit("receivers.py: no transfers in the input (a step-level trace's `cclab trace dump --csv`)")
    ranks = sorted(incoming)
    print("# tenth  mean  least  most   (incoming transfers per receiving rank, time-averaged)")
    for k in range(10):
        t0, t1 = k * end / 10, (k + 1) * end / 10
        conc = [sum(max(0.0, min(e, t1) - max(b, t0)) for b, e in incoming[r]) / (t1 - t0) for r in ranks]
        print(f"  {k:5d} {sum(conc) / len(conc):5.2f} {min(conc):6.2f} {max(conc):5.2f}")
    print("# instant (share of the run): receivers by incoming transfers")
    for frac in (0.05, 0.5, 0.75):
        t = frac * end
        counts = collections.Counter(sum(1 for b, e in incoming[r] if b <= t < e) for r in ranks)
        print(f"  {frac:4.2f}  " + ", ".join(f"{n} ranks: {c}" for c, n in sorted(counts.items())))


if __name__ == "__main__":
    main()
