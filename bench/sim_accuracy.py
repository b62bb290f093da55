#!/usr/bin/env python3
"""bench/sim_accuracy.py - `cclab sim` against public, measured NCCL results (issue 23, item 1).

Data (bench/sim_accuracy/):
  measured.csv   one row per measured point: curve, system, ..., size_bytes, time_us, busbw_gbs, source
  curves.csv     how each curve is simulated: curve, topo (a cclab preset[:N]), flags (cclab sim flags,
                 e.g. "--algo ring"), min_bytes, max_bytes (the sizes judged; outside them the curve ran
                 an algorithm the simulator does not model, e.g. NVLS), use (fit / check / skip), note
  SOURCES.md     where every curve comes from

Error of a point: simulated time / measured time - 1 (+: the simulator is slower, its busbw lower).
|error| per curve and overall: the geometric mean of |error| (each floored at 0.1%), as ASTRA-sim
reports it, and the largest |error|.

Modes:
  --check            the built-in calibration (cclab sim's own constants) on every curve: the in-sample
                     table. With --max-geomean G / --max-point M: exit 1 when exceeded (the ctest).
  --fit              fit the constants named in FIT below on the 'fit' curves, starting from their priors
  --loo              leave one curve out: for each 'fit' curve, fit on the others, judge on it; the
                     constants calibration.cc fitted on that curve (FITTED_ON) are refitted without it or,
                     where it was their only curve, set back to their priors
  --agreement        no simulation: where curves simulated alike measured the same point, the least
                     error any model must make there (the measurements' own disagreement)
  (default: --check, then --loo)

The fit minimises the mean over curves of the mean over a curve's points of abs(log(sim/measured)) with a
pattern search in log space (no numpy needed); every evaluation runs cclab sim with --calib.
"""
import argparse
import concurrent.futures
import csv
import io
import math
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "sim_accuracy")

# The constants a fit may move: name (as `cclab sim --calibration` prints it) -> prior (the value the
# constant has from its sources alone, before any fit), lower and upper bound. Defined in
# sim/calibration.cc, with the sources; a fit's result is copied there by hand, with the command.
CANDIDATES = {
    # NVLink payload share; prior: NVLink packet overhead (header/CRC flits around up to 256 B of data)
    "efficiency.nvlink": (0.85, 0.5, 1.0),
    # The host's cost of issuing one collective on one GPU; prior: a cudaLaunchKernel and NCCL's enqueue,
    # a few us; and per channel, a work record per channel, ~0.1 us
    "host_issue": (4.0, 0.1, 40.0),
    "host_issue.per_channel": (0.1, 0.001, 5.0),
    # The network transport's cost per message (proxy progress, RDMA post and completion, flush); prior:
    # NCCL's tuner adds 1-2 us of net overhead per step between nodes (tuning.cc netOverhead)
    "net_message": (2.0, 0.0, 40.0),
    # NVLS beyond its bytes: once per collective, and per head step (multimem load-reduce + multicast);
    # priors: NCCL tuning.cc charges NVLS hwLat[NVLINK][NVLS][Simple] = 25 us in all, and nothing per step
    "nvls.latency": (25.0, 0.0, 200.0),
    "nvls.step": (1.0, 0.0, 40.0),
    # Kernel launch and completion; prior: NCCL's baseLat minus its steps (sim/calibration.cc)
    "launch": (4.0, 0.5, 40.0),
    # Per-step overheads; priors: below NCCL tuning.cc's hwLat[NVLINK] Ring LL .6 / LL128 1.9 / Simple 3.4
    "step_overhead.LL": (0.6, 0.05, 10.0),
    "step_overhead.LL128": (1.0, 0.05, 20.0),
    "step_overhead.Simple": (2.0, 0.05, 40.0),
    # A protocol's data loop at a share of the SM's copy rate; prior: the copy rate
    "loop_share.LL": (1.0, 0.01, 1.0),
    "loop_share.LL128": (1.0, 0.01, 1.0),
    "loop_share.Simple": (1.0, 0.01, 1.0),
}
# What --fit and --loo fit unless --fit-names says otherwise: the host's issue cost alone. The others stay
# as sim/calibration.cc has them (efficiency.nvlink was set there from the large-size figures of
# ../shared/reference/calibration.md, close relatives of this data set's 16 GiB points: --fit-names
# efficiency.nvlink,host_issue refits it too; per channel, step overheads and loop shares: see
# docs/simulator.md, "Accuracy", for what fitting them does in and out of sample).
DEFAULT_FIT = ["host_issue"]
FIT = [(n,) + CANDIDATES[n] for n in DEFAULT_FIT]

# Constants that sim/calibration.cc took from a fit on some curves of this data set, outside FIT (each
# one's source in `cclab sim --calibration` names the command). Leave one curve out must not judge a curve
# with a constant fitted on it: when the judged curve is among these, the constant is fitted again on the
# rest of its curves, or, where none is left, goes back to its prior (CANDIDATES).
FITTED_ON = {
    "net_message": ["h100x16-ib-aion-ring-ar"],
    "nvls.latency": ["h100x8-aws-p5-ar-nvls"],
    "nvls.step": ["h100x8-aws-p5-ar-nvls"],
}


def read_csv(path):
    with open(path, newline="") as f:
        return [r for r in csv.DictReader(row for row in f if not row.startswith("#"))]


# nccl-tests' busbw factor (busbw = algbw x factor) for n ranks.
def bus_factor(coll, n):
    return {"all_reduce": 2.0 * (n - 1) / n, "all_gather": (n - 1) / n, "reduce_scatter": (n - 1) / n,
            "alltoall": (n - 1) / n}.get(coll, 1.0)


def load():
    rows = read_csv(os.path.join(DATA, "measured.csv"))
    curves = []
    for c in read_csv(os.path.join(DATA, "curves.csv")):
        lo, hi = float(c["min_bytes"]), float(c["max_bytes"])
        pts = []
        for p in rows:
            if p["curve"] != c["source"] or p["collective"] != c["collective"]:
                continue
            if c["nvls"] != "any" and p["nvls"] != c["nvls"]:
                continue
            b, n = int(p["size_bytes"]), int(p["gpus"])
            if not (lo <= b <= hi) or b == 0:
                continue
            derived = not p["time_us"]
            if derived:  # time from busbw with nccl-tests' formulas: algbw = busbw / factor, time = bytes / algbw
                t = b / (float(p["busbw_gbs"]) / bus_factor(p["collective"], n) * 1e3)
            else:
                t = float(p["time_us"])
            pts.append({"bytes": b, "ranks": n, "time": t, "derived": derived})
        if not pts:
            sys.exit(f"sim_accuracy: curves.csv's '{c['curve']}' selects no row of measured.csv")
        pts.sort(key=lambda x: (x["ranks"], x["bytes"]))
        first = next(p for p in rows if p["curve"] == c["source"])
        curves.append({"id": c["curve"], "topo": c["topo"], "flags": c["flags"].split(), "use": c["use"],
                       "note": c["note"], "points": pts, "collective": c["collective"], "system": first["system"]})
    return curves


def calib_arg(values):
    return ",".join(f"{k}={v:.6g}" for k, v in sorted(values.items()))


def sizes_runs(sizes):
    """Groups sizes into cclab sim invocations: (min, max) sweeps with factor 2 where possible."""
    runs, cur = [], [sizes[0]]
    for s in sizes[1:]:
        if s == cur[-1] * 2:
            cur.append(s)
        else:
            runs.append((cur[0], cur[-1]))
            cur = [s]
    runs.append((cur[0], cur[-1]))
    return runs


def simulate(cclab, curve, values):
    """Simulated row per (ranks, size) of one curve."""
    out = {}
    by_ranks = {}
    for p in curve["points"]:
        by_ranks.setdefault(p["ranks"], []).append(p["bytes"])
    for ranks, sizes in by_ranks.items():
        for lo, hi in sizes_runs(sorted(set(sizes))):
            # -g G (GPUs per thread) in the flags: the ranks are nprocs x G, as nccl-tests counts them.
            flags = curve["flags"]
            g = int(flags[flags.index("-g") + 1]) if "-g" in flags else 0
            if g and ranks % g:
                sys.exit(f"sim_accuracy: {curve['id']}: {ranks} ranks is not a multiple of -g {g}")
            who = ["--nprocs", str(ranks // g)] if g else ["--ranks", str(ranks)]
            cmd = [cclab, "sim", curve["collective"], "--topo", curve["topo"]] + who + ["-b", str(lo),
                   "-e", str(hi), "-f", "2", "--csv", "-", "--no-progress", "--step-limit", "20000"] + flags
            if values:
                cmd += ["--calib", calib_arg(values)]
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode != 0:
                sys.exit(f"sim_accuracy: {' '.join(cmd)} failed ({p.returncode}):\n{p.stderr}")
            for r in csv.DictReader(io.StringIO(p.stdout)):
                out[(ranks, int(r["bytes"]))] = {"time": float(r["time_us"]), "algo": r["algo"], "proto": r["proto"],
                                                 "nch": r["nchannels"]}
    return out


def evaluate(cclab, curves, values, jobs):
    """Per curve: [(point, simulated row)]."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as ex:
        sims = list(ex.map(lambda c: simulate(cclab, c, values), curves))
    res = []
    for c, s in zip(curves, sims):
        rows = []
        for p in c["points"]:
            key = (p["ranks"], p["bytes"])
            if key not in s:
                sys.exit(f"sim_accuracy: cclab sim printed no row for {p['bytes']} B on {p['ranks']} ranks ({c['id']})")
            rows.append((p, s[key]))
        res.append(rows)
    return res


def err(sim, meas):
    return sim / meas - 1.0


def geomean_abs(errs):
    if not errs:
        return float("nan")
    return math.exp(sum(math.log(max(abs(e), 1e-3)) for e in errs) / len(errs))


def loss(results):
    # Mean over curves of the mean abs(log(sim / measured)) of their points: every curve weighs the same, and
    # (unlike a squared error) a few far points, which no constant here can fix, do not steer the fit.
    per = [sum(abs(math.log(s["time"] / p["time"])) for p, s in rows) / len(rows) for rows in results]
    return sum(per) / len(per)


def fit(cclab, curves, jobs, log=print, base=None):
    """Pattern search over FIT in log space, from the priors, with the constants of `base` (other names) held
    at its values. Returns {name: value} of FIT's names."""
    if not FIT:
        return {}
    x = {n: p for n, p, _, _ in FIT}
    bounds = {n: (lo, hi) for n, _, lo, hi in FIT}
    seen = {}

    def loss_at(v):
        key = calib_arg(v)
        if key not in seen:
            seen[key] = loss(evaluate(cclab, curves, {**(base or {}), **v}, jobs))
            print(f"#     loss {seen[key]:.5f} at {key}", file=sys.stderr, flush=True)
        return seen[key]

    best = loss_at(x)
    evals = 1
    step = math.log(2.0)
    while step > math.log(1.02):
        improved = False
        for n, _, _, _ in FIT:
            for sgn in (+1, -1):
                lo, hi = bounds[n]
                cand = dict(x)
                v = x[n] if x[n] > 0 else lo
                cand[n] = min(hi, max(lo, v * math.exp(sgn * step)))
                if cand[n] == x[n]:
                    continue
                l = loss_at(cand)
                evals += 1
                if l < best:
                    best, x, improved = l, cand, True
                    break
        if not improved:
            step /= 2
    log(f"#   fit: {evals} evaluations, loss {best:.5f}: {calib_arg(x)}")
    return x


def refit_without(cclab, curves, judged, jobs):
    """The FITTED_ON constants fitted on `judged` (FIT's own are refitted by the caller): fitted again on the
    rest of their curves, or at their priors where none is left (leave one curve out). Returns {name: value}."""
    global FIT
    fitted = {n for n, _, _, _ in FIT}
    names = [n for n, on in FITTED_ON.items() if judged["id"] in on and n not in fitted]
    out = {}
    by_rest = {}
    for n in names:
        by_rest.setdefault(tuple(i for i in FITTED_ON[n] if i != judged["id"]), []).append(n)
    for rest, group in by_rest.items():
        rest_curves = [c for c in curves if c["id"] in rest]
        if not rest_curves:
            for n in group:
                out[n] = CANDIDATES[n][0]
            print(f"#   {', '.join(f'{n}={CANDIDATES[n][0]:g}' for n in group)}: the prior (fitted on "
                  f"{judged['id']}; none of its other curves is in this run)  (without {judged['id']})")
            continue
        saved = FIT
        FIT = [(n,) + CANDIDATES[n] for n in group]
        try:
            v = fit(cclab, rest_curves, jobs, log=lambda s: print(s + f"  (without {judged['id']})"))
        finally:
            FIT = saved
        out.update(v)
    return out


def table(curves, results, title, show_points=True):
    """Prints the points and the per-curve summary; returns (geomean, max) over the fit and check curves."""
    print(f"# {title}")
    print("#")
    if show_points:
        print(f"# {'curve':<26} {'ranks':>5} {'size':>12} {'measured':>10} {'cclab sim':>10} {'error':>8}  algo/proto/nch")
    judged, summary = [], []
    for c, rows in zip(curves, results):
        errs = []
        for p, s in rows:
            e = err(s["time"], p["time"])
            errs.append(e)
            if show_points:
                print(f"  {c['id']:<26} {p['ranks']:>5} {p['bytes']:>12} {p['time']:>10.2f}{'*' if p['derived'] else ' '}"
                      f"{s['time']:>10.2f} {100 * e:>+7.1f}%  {s['algo']}/{s['proto']}/{s['nch']}")
        if c["use"] != "other":
            judged += errs
        summary.append((c, geomean_abs(errs), max(abs(e) for e in errs), len(errs)))
    if show_points:
        print("#   * measured time derived from the printed busbw with nccl-tests' formula")
        print("#")
    print(f"# {'curve':<26} {'use':<6} {'points':>6} {'geomean|err|':>12} {'max|err|':>9}  system")
    for c, g, mx, n in summary:
        print(f"  {c['id']:<26} {c['use']:<6} {n:>6} {100 * g:>11.1f}% {100 * mx:>8.1f}%  {c['system']}")
    g = geomean_abs(judged) if judged else float("nan")
    mx = max((abs(e) for e in judged), default=float("nan"))
    print(f"  {'overall (fit + check)':<26} {'':<6} {len(judged):>6} {100 * g:>11.1f}% {100 * mx:>8.1f}%")
    print("#")
    return g, mx


def agreement(curves, floor=0.05):
    """How far the measurements themselves disagree. Curves simulated alike (same topology, flags and
    collective) get one prediction per (ranks, size) from any model of cclab's; where two or more of them
    measured that point, no prediction can be nearer to all of them than (tmax - tmin) / (tmax + tmin),
    the relative error of T = 2 / (1/tmin + 1/tmax). Prints every such point above `floor` and returns the
    largest bound (0 when no point is measured twice). Needs no simulation."""
    groups, shown = {}, {}
    for c in curves:
        if c["use"] not in ("fit", "check"):
            continue
        # Flags as a set for the grouping (their order does not matter), shown as the first curve wrote them.
        key = (c["topo"], tuple(sorted(c["flags"])), c["collective"])
        shown.setdefault(key, c["topo"] + " " + " ".join(c["flags"]))
        for p in c["points"]:
            groups.setdefault(key, {}).setdefault((p["ranks"], p["bytes"]), []).append((p["time"], c["id"]))
    print("# where the judged curves disagree among themselves (points simulated alike, measured by 2+ curves)")
    print(f"# {'topo and flags':<28} {'ranks':>5} {'bytes':>12} {'least':>10} {'most':>10} {'bound':>7}  curves")
    worst, shared, over = 0.0, 0, 0
    for key, pts in sorted(groups.items()):
        for (ranks, b), ms in sorted(pts.items()):
            if len({i for _, i in ms}) < 2:
                continue
            shared += 1
            lo, hi = min(t for t, _ in ms), max(t for t, _ in ms)
            bound = (hi - lo) / (hi + lo)
            worst = max(worst, bound)
            over += bound > 0.15
            if bound > floor:
                print(f"  {shown[key]:<28} {ranks:>5} {b:>12} {lo:>10.2f} {hi:>10.2f} {100 * bound:>6.1f}%  "
                      + ", ".join(sorted({i for _, i in ms})))
    print(f"# {shared} points measured by 2+ judged curves, {over} of them with a bound over 15%; the largest error "
          f"any model must make on one of them: {100 * worst:.1f}%")
    return worst


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cclab", default=os.path.join(os.environ.get("BUILD", "build"), "runtime/cli/cclab"))
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--fit", action="store_true")
    ap.add_argument("--loo", action="store_true")
    ap.add_argument("--agreement", action="store_true",
                    help="only how far the judged curves' own measurements disagree (no simulation)")
    ap.add_argument("--curves", default="", help="comma-separated curve ids (default: all)")
    ap.add_argument("--use", default="", help="comma-separated uses to run: fit, check, other (default: all)")
    ap.add_argument("--max-geomean", type=float, default=0, help="--check: fail above this geomean |error| (%%)")
    ap.add_argument("--max-point", type=float, default=0, help="--check: fail above this |error| of a point (%%)")
    ap.add_argument("--fit-names", default=",".join(DEFAULT_FIT),
                    help="the constants --fit/--loo fit, from: " + ", ".join(CANDIDATES))
    ap.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 2)
    a = ap.parse_args()
    global FIT
    names = [n for n in a.fit_names.split(",") if n]
    for n in names:
        if n not in CANDIDATES:
            sys.exit(f"sim_accuracy: --fit-names: '{n}' is not one of {', '.join(CANDIDATES)}")
    FIT = [(n,) + CANDIDATES[n] for n in names]
    if a.agreement and (a.check or a.fit or a.loo):
        sys.exit("sim_accuracy: --agreement runs no simulation: give it without --check, --fit or --loo")
    if not (a.check or a.fit or a.loo or a.agreement):
        a.check = a.loo = True
    if not a.agreement and not os.access(a.cclab, os.X_OK):
        sys.exit(f"sim_accuracy: no cclab at {a.cclab} (build it, or --cclab PATH / BUILD=DIR)")
    curves = load()
    if a.curves:
        want = a.curves.split(",")
        curves = [c for c in curves if c["id"] in want]
    if a.use:
        uses = a.use.split(",")
        for u in uses:
            if u not in ("fit", "check", "other"):
                sys.exit(f"sim_accuracy: --use: '{u}' is not fit, check or other")
        curves = [c for c in curves if c["use"] in uses]
    if a.agreement:
        agreement(curves)
        return 0
    t0 = time.time()
    rc = 0
    if a.check:
        res = evaluate(a.cclab, curves, {}, a.jobs)
        g, mx = table(curves, res, "in sample: cclab sim's built-in calibration (sim/calibration.cc)")
        if a.max_geomean and 100 * g > a.max_geomean:
            print(f"sim_accuracy: FAIL: overall geomean |error| {100 * g:.1f}% > {a.max_geomean}%")
            rc = 1
        if a.max_point and 100 * mx > a.max_point:
            print(f"sim_accuracy: FAIL: largest |error| {100 * mx:.1f}% > {a.max_point}%")
            rc = 1
    fitted = [c for c in curves if c["use"] == "fit"]
    if a.fit:
        x = fit(a.cclab, fitted, a.jobs)
        res = evaluate(a.cclab, curves, x, a.jobs)
        table(curves, res, f"in sample, fitted on every 'fit' curve: --calib {calib_arg(x)}")
    if a.loo:
        if not FIT:
            print("# leave one curve out: FIT is empty; only the constants fitted on the judged curve alone (FITTED_ON) "
                  "go back to their priors")
        held = []
        for c in fitted:
            others = [o for o in fitted if o is not c]
            # The constants fitted on c alone go back to their priors first, so that FIT is fitted beside them.
            over = refit_without(a.cclab, curves, c, a.jobs)
            x = fit(a.cclab, others, a.jobs, log=lambda s, c=c: print(s + f"  (without {c['id']})"), base=over)
            x.update(over)
            held.append(evaluate(a.cclab, [c], x, a.jobs)[0])
        if fitted:
            table(fitted, held, "leave one curve out: each curve judged with constants fitted on the others")
    print(f"# {time.time() - t0:.0f} s")
    return rc


if __name__ == "__main__":
    sys.exit(main())
