#!/usr/bin/env python3
"""Flow level against step level over a generated set (docs/simulator.md, "Levels").

Every preset of `cclab topo --list`, on each machine count of --machines, every collective of
COLLS with ring (and tree for all_reduce, the only collective NCCL runs as a tree), at the sizes
-b .. -e (factor 8): `cclab sim --level step` and `--level flow`, busbw compared. Prints every
combination whose flow busbw differs from step's by more than --tol, worst first, then a summary;
exits 1 when any does (issue 23, item 6: the goal is none at 2%).

    bench/flow_vs_step.py [--cclab build/runtime/cli/cclab] [--presets a,b] [--machines 1,2,3] [-b 1M] [-e 64M]
                          [--tol 0.02] [--loose MODEL=TOL,...] [--nvls] [--nics K] [--pat]

--nvls runs NVLS instead (the presets with an NVLS-capable NVSwitch): all_reduce, all_gather and
reduce_scatter by NVLS on one machine (all_gather and reduce_scatter only up to 32 GPUs, NCCL's rule:
gb200-nvl72 runs all_reduce alone, with 32 heads), all_reduce by NVLS-Tree on several. --nics K keeps K
NICs per machine (--nics-per-node: NVLS-Tree with a head per NIC).

--pat runs PAT instead (all_gather and reduce_scatter; NCCL runs PAT at one GPU per machine, so give
presets such as pcie-1gpu and machine counts above 1).

--loose gives named models (PRESET:MACHINES) their own tolerance: where the step level itself is not
continuous (docs/simulator.md, "Levels": on pcie-8gpu-2socket over several machines a 2% change of a NIC's
efficiency moves the step level's time by up to 6%, back and forth, and the flow level's smoothly).
"""
import argparse, csv, io, subprocess, sys, time

COLLS = [('all_reduce', 'ring'), ('all_reduce', 'tree'), ('all_gather', 'ring'),
         ('reduce_scatter', 'ring'), ('broadcast', 'ring'), ('reduce', 'ring')]
NVLS_ONE = [('all_reduce', 'nvls'), ('all_gather', 'nvls'), ('reduce_scatter', 'nvls')]
NVLS_MANY = [('all_reduce', 'nvlstree')]
PAT = [('all_gather', 'pat'), ('reduce_scatter', 'pat')]


def presets(cclab):
    out = subprocess.run([cclab, 'topo', '--list'], capture_output=True, text=True, check=True).stdout
    return [l.split(':')[0] for l in out.splitlines() if l[:1].isalpha() and ':' in l]


def run(cclab, coll, topo, algo, level, b, e, nics=0, optional=False):
    out = subprocess.run([cclab, 'sim', coll, '--topo', topo, '-b', b, '-e', e, '-f', '8', '--algo', algo,
                          '--level', level, '--csv', '-', '--no-progress'] +
                         (['--nics-per-node', str(nics)] if nics else []), capture_output=True, text=True)
    rows = list(csv.DictReader(io.StringIO('\n'.join(l for l in out.stdout.splitlines() if not l.startswith('#')))))
    if optional and out.returncode != 0 and 'no algorithm/protocol is available' in out.stderr:
        return None  # NCCL has no such algorithm there (NVLS all_gather beyond 32 GPUs)
        sys.exit(f'cclab sim {coll} --topo {topo} --algo {algo} --level {level} failed: {out.stderr.strip()[:300]}')
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--cclab', default='build/runtime/cli/cclab')
    ap.add_argument('--presets', default='', help='comma-separated presets (default: every one)')
    ap.add_argument('--machines', default='1,2,3')
    ap.add_argument('-b', default='1M')
    ap.add_argument('-e', default='64M')
    ap.add_argument('--tol', type=float, default=0.02)
    ap.add_argument('--loose', default='', help='MODEL=TOL,...: a tolerance of its own for a model')
    ap.add_argument('--nvls', action='store_true', help='NVLS on one machine, NVLS-Tree on several')
    ap.add_argument('--nics', type=int, default=0, help='NICs kept per machine (--nics-per-node)')
    ap.add_argument('--pat', action='store_true', help='PAT all_gather and reduce_scatter')
    a = ap.parse_args()
    t0 = time.time()
    points = []
    names = a.presets.split(',') if a.presets else presets(a.cclab)
    combos = [(p, m, c) for p in names for m in (int(x) for x in a.machines.split(','))
              for c in (PAT if a.pat else COLLS if not a.nvls else NVLS_ONE if m == 1 else NVLS_MANY)]
    for p, m, (coll, algo) in combos:
        topo = f'{p}:{m}'
        step = run(a.cclab, coll, topo, algo, 'step', a.b, a.e, a.nics, optional=a.nvls and coll != 'all_reduce')
        if step is None:
            print(f'# skipped: {coll} --algo {algo} on {topo} (no such algorithm there)')
            continue
        flow = run(a.cclab, coll, topo, algo, 'flow', a.b, a.e, a.nics)
        for s, f in zip(step, flow):
            sb, fb = float(s['busbw']), float(f['busbw'])
            if sb == 0 and fb == 0:  # one rank (pcie-1gpu:1): nothing crosses a link at either level
                continue
            d = fb / sb - 1 if sb > 0 else float('inf')
            points.append((abs(d), topo, coll, algo, int(s['bytes']), s['proto'], s['nchannels'],
                           float(s['busbw']), float(f['busbw']), d))
    loose = {}
    for item in filter(None, a.loose.split(',')):
        model, _, tol = item.partition('=')
        loose[model] = float(tol)
    points.sort(reverse=True)
    bad = [q for q in points if q[0] > loose.get(q[1], a.tol)]
    print(f'# {"model":<22} {"collective":<14} {"algo":<8} {"bytes":>9} {"proto":<6} {"nch":>3} '
          f'{"step GB/s":>9} {"flow GB/s":>9} {"flow/step":>9}')
    for q in bad:
        print(f'  {q[1]:<22} {q[2]:<14} {q[3]:<8} {q[4]:>9} {q[5]:<6} {q[6]:>3} {q[7]:>9.2f} {q[8]:>9.2f} {q[9]*100:>+8.2f}%')
    within = f'{a.tol*100:g}%' + ''.join(f', {m} {t*100:g}%' for m, t in loose.items())
    print(f'# {len(points)} points, {len(bad)} beyond {within}, worst {points[0][9]*100:+.2f}% '
          f'({points[0][1]} {points[0][2]} {points[0][3]} {points[0][4]} B), {time.time()-t0:.1f} s wall')
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
