#!/usr/bin/env python3
"""Builds measured.csv from the verbatim table extracts in raw/.
Numbers are copied as printed (strings), never recomputed."""
import csv, re, os
HERE = os.path.dirname(os.path.abspath(__file__))
RAW = os.path.join(HERE, "raw")
HDR = ["curve","system","gpu","gpus","nodes","fabric","nccl_version","env","nvls","collective","dtype",
       "size_bytes","time_us","algbw_gbs","busbw_gbs","source"]
rows = []

def unit_bytes(label):
    m = re.fullmatch(r"(\d+)(KiB|MiB|GiB)", label)
    return str(int(m.group(1)) * {"KiB": 2**10, "MiB": 2**20, "GiB": 2**30}[m.group(2)])

def nccltests(fname, meta, nvls_fn=None, skip_zero=False):
    for line in open(os.path.join(RAW, fname)):
        line = re.sub(r"^\s*(\[1,0\]<stdout>:|0:)", "", line)
        f = line.split()
        if len(f) < 8 or f[2] != "float":
            continue
        size, t, alg, bus = f[0], f[5], f[6], f[7]
        r = dict(meta, dtype="float", size_bytes=size, time_us=t, algbw_gbs=alg, busbw_gbs=bus)
        if nvls_fn:
            r["nvls"] = nvls_fn(int(size))
        rows.append(r)

ML = "stas00/ml-engineering"
MLHEAD = "744d01e18b79512572f64a6bbd8b5f4a725203a7"
AWS = "aws-samples/awsome-distributed-training (now awslabs/)"
AWSHEAD = "7217859f67bc693c52ff175ccc6082c41dbd7a1b"

# 1. A100 x8 single node, nccl-tests, ml-engineering
base = dict(curve="a100x8-mleng-ar", system="single A100 node (8 GPUs, NVLink3/NVSwitch)", gpu="A100 (SXM, exact SKU not stated)",
            gpus="8", nodes="1", fabric="NVLink3+NVSwitch", nccl_version="unstated", env="all_reduce_perf -b 32k -e 16G -f 2 -g 8 -n 50",
            nvls="no", collective="all_reduce",
            source=f"https://github.com/{ML}/blob/master/network/README.md#real-network-throughput ; repo {ML} path network/README.md commit {MLHEAD} (table first added in 48b75dd, 2023-12-15)")
for line in open(os.path.join(RAW, "a100_mleng.txt")):
    f = line.split()
    if len(f) == 4 and re.fullmatch(r"[\d_]+", f[0]):
        rows.append(dict(base, dtype="float", size_bytes=f[0].replace("_", ""), time_us=f[1], algbw_gbs=f[2], busbw_gbs=f[3]))

# 2. H200 x8 single node, all_reduce_bench.py (PyTorch), ml-engineering
base = dict(curve="h200x8-mleng-ar-torch", system="single 8x H200 SXM node, all pairs NV18", gpu="H200 SXM 141GB",
            gpus="8", nodes="1", fabric="NVLink4+NVSwitch", nccl_version="2.27.7",
            env="all_reduce_bench.py (torch 2.9.1+cu130, CUDA 13.0), NCCL defaults; 5 warmup/20 trials; NOT nccl-tests",
            collective="all_reduce",
            source=f"https://github.com/{ML}/blob/c53741b8b7dcc17b152757f104398c6dd6f231b3/network/benchmarks/results/all-reduce-8xH200.md ; repo {ML} path network/benchmarks/results/all-reduce-8xH200.md commit c53741b8b7dcc17b152757f104398c6dd6f231b3 (file later deleted in 15d78dd; same table at HEAD {MLHEAD} network/README.md)")
for line in open(os.path.join(RAW, "h200_mleng.txt")):
    c = [x.strip() for x in line.strip().strip("|").split("|")]
    sz = int(unit_bytes(c[0]))
    rows.append(dict(base, dtype="float", size_bytes=str(sz), time_us="", algbw_gbs=c[2].replace("GBps",""),
                     busbw_gbs=c[1].replace("GBps",""), nvls=("no" if sz <= 2**20 else "yes")))

# 3. H100 x8 single node (p5.48xlarge), nccl-tests via AWS Batch job
meta = dict(curve="h100x8-aws-p5-batch-ar", system="AWS p5.48xlarge, 8 ranks on one instance (mpirun -np 8 -N 8)", gpu="H100 SXM 80GB",
            gpus="8", nodes="1", fabric="NVLink4+NVSwitch (EFA present but unused by 1-node run)", nccl_version="unstated (image public.ecr.aws/hpc-cloud/nccl-tests:latest)",
            env="NCCL_BUFFSIZE=8388608; NCCL_P2P_NET_CHUNKSIZE=524288; NCCL_TUNER_PLUGIN=libnccl-ofi-tuner.so; -c 1 (per job definition, inferred)",
            nvls="yes", collective="all_reduce",
            source=f"https://github.com/awslabs/awsome-distributed-training/blob/main/micro-benchmarks/nccl-tests/aws-batch/README.md ; repo {AWS} path micro-benchmarks/nccl-tests/aws-batch/README.md commit {AWSHEAD}")
nccltests("p5_batch.txt", meta)

# 4. H100 2x p5.48xlarge EFA
meta = dict(curve="h100x16-aws-p5-2node-efa-ar", system="2x AWS p5.48xlarge", gpu="H100 SXM 80GB", gpus="16", nodes="2",
            fabric="NVLink4+NVSwitch intra; EFAv2 3200 Gbps/node (32 EFA devices) inter - NOT InfiniBand",
            nccl_version="unstated (README at commit 88c2e71b lists NCCL 2.20.3 for the container; not tied to this table)",
            env="aws-ofi-nccl (Libfabric EFA); NCCL defaults otherwise", nvls="yes", collective="all_reduce",
            source=f"https://github.com/awslabs/awsome-distributed-training/blob/main/micro-benchmarks/nccl-tests/README.md#results ; repo {AWS} path micro-benchmarks/nccl-tests/README.md commit {AWSHEAD}")
nccltests("p5_2node.txt", meta)

# 5. H100 2x p5 EFA, EKS run, NCCL 2.18.5 (partial)
meta = dict(meta, curve="h100x16-aws-p5-2node-efa-eks-ar", nccl_version="2.18.5",
            env="EKS MPIJob; EFA installer 1.28.0, aws-ofi-nccl v1.7.3-aws, nccl-tests master; table elided ('...') between 0 B and 64 MiB")
nccltests("p5_2node_eks.txt", meta)

# 6. A100 2x p4de.24xlarge EFA
meta = dict(curve="a100x16-aws-p4de-2node-efa-ar", system="2x AWS p4de.24xlarge", gpu="A100 SXM4 80GB", gpus="16", nodes="2",
            fabric="NVLink3+NVSwitch intra; EFA 400 Gbps/node (4x100G EFAv1) inter - NOT InfiniBand",
            nccl_version="unstated", env="aws-ofi-nccl (Libfabric EFA); NCCL defaults otherwise", nvls="no", collective="all_reduce",
            source=f"https://github.com/awslabs/awsome-distributed-training/blob/main/micro-benchmarks/nccl-tests/README.md#results ; repo {AWS} path micro-benchmarks/nccl-tests/README.md commit {AWSHEAD}")
nccltests("p4de_2node.txt", meta)

# 7. OCI BM.GPU.H100.8 x2, RoCEv2, NCCL 2.21.5
meta = dict(curve="h100x16-oci-2node-roce-ar", system="2x OCI BM.GPU.H100.8 (cluster network)", gpu="H100 SXM 80GB", gpus="16", nodes="2",
            fabric="NVLink4+NVSwitch intra; RoCEv2 cluster network, 16 RDMA ports/node (mlx5, NCCL_IB_HCA lists 16) inter",
            nccl_version="2.21.5",
            env="NCCL_CUMEM_ENABLE=0 NCCL_IB_SPLIT_DATA_ON_QPS=0 NCCL_IB_GID_INDEX=3 NCCL_IB_TC=41 NCCL_NET_PLUGIN=none NCCL_IGNORE_CPU_AFFINITY=1; -b 1G -e 16G -f 2",
            nvls="yes", collective="all_reduce",
            source="oracle-japan/ocitutorials page 'NCCL Tests実行方法（BM.GPU.H100.8編）' (https://oracle-japan.github.io/ocitutorials/ - exact path not resolved; index file id 5466886451)")
nccltests("oci_h100_2node.txt", meta)

# 8. GCP A3 Mega 2 nodes
meta = dict(curve="h100x16-gcp-a3mega-2node-ar", system="2x GCP A3 Mega (a3-megagpu-8g inferred from repo name)", gpu="H100 SXM 80GB", gpus="16", nodes="2",
            fabric="NVLink4+NVSwitch intra; GCP GPUDirect-TCPXO Ethernet inter (per repo name; NOT InfiniBand)",
            nccl_version="unstated", env="mpirun -np 16 -npernode 8 -x ${HOST_VARS} (contents not shown); -b 8 -e 8G -f 2 -g 1",
            nvls="unknown", collective="all_reduce",
            source="https://github.com/lessizzmore/create-a3mega-ztan-fork/blob/02dd8f455c43ced1cf442ef29334bda97149264b/ztan-NCCL-test-result ; repo lessizzmore/create-a3mega-ztan-fork path ztan-NCCL-test-result commit 02dd8f455c43ced1cf442ef29334bda97149264b")
nccltests("gcp_a3mega_2node.txt", meta)

# 9/10. B200 1 node and 4 nodes (p6-b200, EFA v4), all_reduce_bench.py
src = f"https://github.com/{ML}/blob/master/network/README.md#inter-node-speed-depends-on-intra-node-speed ; repo {ML} path network/README.md commit {MLHEAD}"
for line in open(os.path.join(RAW, "b200_mleng.txt")):
    c = [x.strip() for x in line.strip().strip("|").split("|")]
    sz = unit_bytes(c[0])
    com = dict(gpu="B200", fabric="NVLink5+NVSwitch intra; EFA v4 8x400 Gbps/node inter - NOT InfiniBand", nccl_version="2.27.7",
               env="all_reduce_bench.py (torch 2.9.1+cu130, CUDA 13.0); NOT nccl-tests; only busbw printed",
               collective="all_reduce", dtype="float", size_bytes=sz, time_us="", algbw_gbs="", source=src)
    rows.append(dict(com, curve="b200x8-mleng-ar-torch", system="1x AWS p6-b200.48xlarge", gpus="8", nodes="1", nvls="yes", busbw_gbs=c[1].replace("GBps","")))
    rows.append(dict(com, curve="b200x32-mleng-4node-efa-ar-torch", system="4x AWS p6-b200.48xlarge", gpus="32", nodes="4", nvls="unknown", busbw_gbs=c[2].replace("GBps","")))

# 11-13. Azure ND A100 v4 / H100 v5 / H200 v5, busbw only, in-place, NCCL_ALGO=NVLS per text
AZ = "Azure/AI-benchmarking-guide"; AZC = "8fd0c6e1bd0f853ef8f0500a3640a7d80a2a92ef"
for fn, cid, gpu, ver, nv in [("ND_A100_v4","a100x8-azure-ndv4-ar-inplace","A100 SXM4 80GB","2.18.5","no"),
                              ("ND_H100_v5","h100x8-azure-ndv5-ar-inplace","H100 SXM 80GB","2.18.5","yes"),
                              ("ND_H200_v5","h200x8-azure-ndh200v5-ar-inplace","H200 141GB","2.20.5","yes")]:
    for i, line in enumerate(open(os.path.join(RAW, f"azure_{fn}.txt"))):
        c = [x.strip() for x in line.strip().strip("|").split("|")]
        rows.append(dict(curve=cid, system=f"Azure {fn.replace('_',' ')} (single VM, 8 GPUs)", gpu=gpu, gpus="8", nodes="1",
                         fabric=("NVLink3+NVSwitch" if "A100" in gpu else "NVLink4+NVSwitch"), nccl_version=ver,
                         env=f"NCCL_ALGO=NVLS (per page text); all_reduce_perf -b 8 -e 8G -f 2 -g 8 -n 40; IN-PLACE busbw only; printed size label '{c[0]}'",
                         nvls=nv, collective="all_reduce", dtype="float", size_bytes=str(2**(10+i)), time_us="", algbw_gbs="", busbw_gbs=c[1],
                         source=f"https://github.com/{AZ}/blob/{AZC}/Azure_Results/{fn}_results.md ; repo {AZ} path Azure_Results/{fn}_results.md commit {AZC}"))

# 14. H200 point measurements (ml-engineering prose tables)
src = f"https://github.com/{ML}/blob/master/network/README.md#sharp ; repo {ML} path network/README.md commit {MLHEAD}"
pt = dict(system="single 8x H200 SXM node", gpu="H200 SXM 141GB", nodes="1", fabric="NVLink4+NVSwitch", dtype="float", time_us="", algbw_gbs="", source=src)
for coll, env, nv, bus in [("all_reduce","NCCL_NVLS_ENABLE=1; nccl-tests -b 16G -e 16G -g 8 -z 1","yes","480.0"),
                           ("all_reduce","NCCL_NVLS_ENABLE=0; nccl-tests -b 16G -e 16G -g 8 -z 1 (Ring)","no","367.2"),
                           ("all_gather","nccl-tests all_gather_perf -b 16G -e 16G -g 8 -z 1 (Ring)","no","361.4"),
                           ("reduce_scatter","nccl-tests reduce_scatter_perf -b 16G -e 16G -g 8 -z 1 (Ring)","no","362.9")]:
    rows.append(dict(pt, curve="h200x8-mleng-16g-points", gpus="8", nccl_version="unstated (same node as the nccl=2.27.7 runs, not stated for this table)",
                     env=env, nvls=nv, collective=coll, size_bytes=str(16*2**30), busbw_gbs=bus))
rows.append(dict(pt, curve="h200x8-mleng-ar-torch-ring-16g", gpus="8", nccl_version="2.27.7",
                 env="NCCL_NVLS_ENABLE=0; all_reduce_bench.py (Ring/Simple per NCCL log)", nvls="no", collective="all_reduce",
                 size_bytes=str(16*2**30), busbw_gbs="367.61"))
for g, algo, bus_def, bus_off in [("4","Ring","363.3","363.3"),("5","NVLS","414.2","364.4"),("6","NVLS","435.6","365.1"),
                                  ("7","NVLS","460.0","365.7"),("8","NVLS","473.1","365.6")]:
    rows.append(dict(pt, curve="h200-mleng-8g-gpusweep-default", gpus=g, nccl_version="unstated",
                     env=f"nccl-tests, NCCL defaults (algo NCCL picks: {algo})", nvls=("yes" if algo=="NVLS" else "no"),
                     collective="all_reduce", size_bytes=str(8*2**30), busbw_gbs=bus_def))
    rows.append(dict(pt, curve="h200-mleng-8g-gpusweep-nvlsoff", gpus=g, nccl_version="unstated",
                     env="nccl-tests, NCCL_NVLS_ENABLE=0 (Ring)", nvls="no", collective="all_reduce", size_bytes=str(8*2**30), busbw_gbs=bus_off))

# 15. 4-node p5en H200 EFA points
src = f"https://github.com/{ML}/blob/master/network/README.md#multiple-node-training ; repo {ML} path network/README.md commit {MLHEAD}"
for env, nv, bus in [("NCCL defaults + NCCL_TUNER_PLUGIN=ofi (selected Ring)","no","364.87"),
                     ("NCCL_ALGO=allreduce:ring","no","364.65"),
                     ("NCCL_ALGO=allreduce:nvlstree","yes","310.07")]:
    rows.append(dict(curve="h200x32-mleng-p5en-4node-efa-4g-points", system="4x AWS p5en.48xlarge", gpu="H200 SXM 141GB", gpus="32", nodes="4",
                     fabric="NVLink4+NVSwitch intra; EFA (p5en) inter - NOT InfiniBand", nccl_version="2.27.7",
                     env=env+"; benchmark tool not named (likely all_reduce_bench.py)", nvls=nv, collective="all_reduce", dtype="float",
                     size_bytes=str(4*2**30), time_us="", algbw_gbs="", busbw_gbs=bus, source=src))

# 16. H100 x8 single node, NCCL_ALGO=RING NVLS off, nccl-tests -g 8, Together AI
TG = "togethercomputer/together-nccl-tests"; TGC = "6698e53c1dc519f8ab54f72193630849f5abf178"
meta = dict(curve="h100x8-together-ring-ar", system="single 8x H100 SXM node (Together AI cluster, host gpu-dp-2jvzl-pqq7p)", gpu="H100 80GB HBM3",
            gpus="8", nodes="1", fabric="NVLink4+NVSwitch", nccl_version="2.26.2 (nccl-library=22602)",
            env="NCCL_ALGO=RING NCCL_NVLS_ENABLE=0 NCCL_COLLNET_ENABLE=0 (run_nccl_sharp_test.sh config 'ring'); all_reduce_perf -b 8 -e 8G -f 2 -g 8 -w 5 -n 20",
            nvls="no", collective="all_reduce",
            source=f"https://github.com/{TG}/blob/{TGC}/benchmarks/H100/results/20260305_220043/all_reduce_ring.out ; repo {TG} path benchmarks/H100/results/20260305_220043/all_reduce_ring.out commit {TGC}")
nccltests("h100_together_ring.txt", meta)

# 17-19. 2x H100 nodes over InfiniBand NDR, NVIDIA/nccl-tests issue #309
I309 = "https://github.com/NVIDIA/nccl-tests/issues/309"
meta = dict(curve="h100x16-ib-xe9680-2node-ar", system="2x Dell HGX XE9680 (bm-h100-01/02)", gpu="H100 80GB HBM3", gpus="16", nodes="2",
            fabric="NVLink4+NVSwitch intra; InfiniBand 8x ConnectX-7 400 Gb/s per node inter (NCCL_IB_HCA mlx5_0-7)",
            nccl_version="2.26.2",
            env="NCCL defaults (NVLS/NVLSTree possible; not forced); NCCL_NET_GDR_LEVEL=1 NCCL_P2P_LEVEL=NVL NCCL_IB_GID_INDEX=0; all_reduce_perf_mpi -b 8 -e 16g -f 2 -g 1",
            nvls="yes", collective="all_reduce",
            source=f"{I309} (first post, qoofyk, 2025-05); read from a stored copy of the thread (code index file id 69388150450)")
nccltests("ib_h100_2node_ncclt309.txt", meta)
meta = dict(meta, curve="h100x16-ib-aion-2node-ring-ar", system="2 of an 8-node H100 cluster (hosts 0666a154, b749a9b0)",
            fabric="NVLink4+NVSwitch intra; InfiniBand 400G inter ('IB 400G network' per the poster; NIC count not stated, 8 implied by 'the 400 GB/s IB limit')",
            nccl_version="unstated", env="NCCL_ALGO=Ring NCCL_MIN_CTAS=24 NCCL_IB_QPS_PER_CONNECTION=2; all_reduce_perf -b 1M -e 8G -f 2 -g 1",
            nvls="no", source=f"{I309} (comment by gj-aion, 2025-06-18); read from a stored copy of the thread (code index file id 69388150450)")
nccltests("ib_h100_2node_ring_ncclt309.txt", meta)
meta = dict(meta, curve="h100x16-ib-aion-2node-ar", env="NCCL defaults (NVLS/NVLSTree possible); all_reduce_perf -b 1M -e 8G -f 2 -g 1", nvls="yes")
nccltests("ib_h100_2node_default_ncclt309.txt", meta)

# 20. A100 x16 (2x OCI A100-SXM4-40GB bare metal), RoCEv2, oracle-quickstart/oci-hpc-oke README
OKE = "oracle-quickstart/oci-hpc-oke"; OKEC = "1402938d8c77b586e20ec9d40849e2177feef411"
meta = dict(curve="a100x16-oci-2node-roce-ar", system="2x OCI bare-metal A100-SXM4-40GB nodes on OKE (shape BM.GPU4.8 inferred from the GPU model)",
            gpu="A100-SXM4-40GB", gpus="16", nodes="2",
            fabric="NVLink3+NVSwitch intra; OCI RDMA cluster network (RoCEv2, NCCL_IB_GID_INDEX=3 NCCL_IB_TC=41, NCCL_IB_HCA=mlx5) inter - NOT InfiniBand",
            nccl_version="2.19.3 (from the container tag pytorch-23.10-nccl-2.19.3-1 in manifests/a100-nccl-test.yaml)",
            env="NCCL_CROSS_NIC=1 NCCL_IB_QPS_PER_CONNECTION=4 NCCL_IB_SL=0 NCCL_TOPO_FILE=/topo/topo.xml, NCCL defaults otherwise; all_reduce_perf -b 8 -f 2 -g 1 -e 8G -c 1",
            nvls="no", collective="all_reduce",
            source=f"https://github.com/{OKE}/blob/{OKEC}/README.md ; repo {OKE} path README.md commit {OKEC} (output under '##### A100'; kept until 134b4e5)")
nccltests("oci_a100_2node_roce.txt", meta)

with open(os.path.join(HERE, "measured.csv"), "w", newline="") as fh:
    w = csv.DictWriter(fh, fieldnames=HDR, quoting=csv.QUOTE_MINIMAL)
    w.writeheader()
    for r in rows:
        w.writerow({k: r.get(k, "") for k in HDR})
print(len(rows))
