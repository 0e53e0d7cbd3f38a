#!/usr/bin/env python3
"""Table (markdown) and plot (PNG) of bench/gpu-compare.sh results.

usage: compare-report.py OUTDIR TABLE.md PLOT.png
Reads OUTDIR/{latency,bw,bibw}-{native,opt,optstage,optvmm,optvmmall,def}.json (cgdr-bench --json),
the NCCL runs {test}-{ncclnative,ncclnativeblk,ncclpods,ncclpodsid,ncclpodsshm,ncclpodsnet}.json and .log (cgdr-bench --nccl; NCCL_DEBUG
lines name the transport) where they exist,
the further rounds' {test}-{mode}.rN.json (OUTDIR/rounds.txt: how many, then, where the small
sizes ran more rounds, how many there and the largest such size; each size's value is its median
over the rounds that have it), floor.json (cgdr-peer-copy-bench --json) and the CGDR_STATS lines of the
first round's logs (which channel served which sizes). The plot needs matplotlib
(python3-matplotlib); without it only the table is written.
"""
import json
import pathlib
import re
import sys

MODES = [("native", "Native"), ("opt", "Container-Opt"), ("optstage", "Container-Opt (heap off)"),
         ("optvmm", "Container-Opt (V bufs)"),
         ("optvmmall", "Container-Opt (V bufs, all GPUs visible)"), ("def", "Container-Def")]
# cgdr-bench --nccl runs beside cgdr's (one run each): their own table and dotted lines in the plot.
NCCL_MODES = [("ncclnative", "NCCL native"), ("ncclnativeblk", "NCCL native, each call synchronized"),
              ("ncclpods", "NCCL containers"),
              ("ncclpodsid", "NCCL containers, NCCL_HOSTID shared"),
              ("ncclpodsshm", "NCCL containers, NCCL_HOSTID shared, cuMem and P2P off"),
              ("ncclpodsnet", "NCCL containers in the host's network namespace, NCCL_HOSTID shared")]
TESTS = [("latency", "us", "latency (us), lower is better"),
         ("bw", "GB/s", "bandwidth (GB/s), higher is better"),
         ("bibw", "GB/s", "bi-directional bandwidth (GB/s), higher is better")]


def load(path):
    """size -> value; cgdr-bench reports bandwidth in MB/s (as OSU), the table in GB/s. Where the
    JSON is missing (a run stopped by its time limit writes none), the rows its log printed so far
    (OSU format: '# Size  Bandwidth (MB/s)', then 'size value' lines)."""
    try:
        data = json.loads(pathlib.Path(path).read_text())
    except (OSError, ValueError):
        return load_log(pathlib.Path(path).with_suffix(".log"))
    scale = 1e-3 if "MB/s" in data.get("unit", "") else 1.0
    return {int(r["size"]): float(r["value"]) * scale for r in data.get("results", [])}


def load_log(path):
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return {}
    scale = 1e-3 if re.search(r"^# Size.*MB/s", text, re.M) else 1.0
    return {int(m.group(1)): float(m.group(2)) * scale
            for m in re.finditer(r"^(\d+)\s+([0-9.]+)\s*$", text, re.M)}


def load_rounds(folder, test, mode, rounds):
    """The runs of one mode by round: round 1's NAME.json, then NAME.r2.json ... ({} where a round
    has none), so that round i of two modes pair up."""
    return [load(folder / f"{test}-{mode}.json")] + [load(folder / f"{test}-{mode}.r{r}.json")
                                                      for r in range(2, rounds + 1)]


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def median_of(runs):
    """size -> the median of the runs that reported it."""
    sizes = sorted({s for r in runs for s in r})  # ({} rounds add none)
    return {s: median([r[s] for r in runs if s in r]) for s in sizes}


def channels(log):
    """size -> set of channel names from 'stats: sizes LO..HI: a,b' lines."""
    out = []
    try:
        text = pathlib.Path(log).read_text(errors="replace")
    except OSError:
        return out
    for m in re.finditer(r"stats: sizes (\d+)\.\.(\d+): ([\w,-]+)", text):
        out.append((int(m.group(1)), int(m.group(2)), set(m.group(3).split(","))))
    return out


def channel_of(ranges, size):
    names = set()
    for lo, hi, n in ranges:
        if lo <= size <= hi:
            names |= n
    return "+".join(sorted(names)) if names else "-"


def nccl_transports(log):
    """The transports NCCL's INFO lines name for the pair's channels ('via P2P/CUMEM/read',
    'via NET/Socket/0', ...), and the first NCCL error or warning line where the run failed."""
    try:
        text = pathlib.Path(log).read_text(errors="replace")
    except OSError:
        return "not run", ""
    via = sorted(set(re.findall(r"\d+\[\d+\] -> \d+\[\d+\][^\n]* via (\S+)", text)))
    err = re.search(r"^.*(NCCL WARN|ncclSystemError|ncclInternalError|ncclUnhandledCudaError|"
                    r"ncclInvalidUsage|ncclRemoteError|failed:).*$", text, re.M)
    return (", ".join(via) if via else "none named"), (err.group(0).strip()[:160] if err else "")


def nccl_section(folder, test, unit, cgdr):
    """Markdown lines comparing cgdr's Native and Container-Opt with NCCL (empty without NCCL runs)."""
    res = {m: load(folder / f"{test}-{m}.json") for m, _ in NCCL_MODES}
    if not any(res.values()) and not any((folder / f"{test}-{m}.log").exists() for m, _ in NCCL_MODES):
        return [], res
    lat = test == "latency"
    lines = [f"### {test} ({unit}): cgdr beside NCCL", ""]
    for m, label in NCCL_MODES:
        via, err = nccl_transports(folder / f"{test}-{m}.log")
        lines.append(f"- {label}: transport {via}" + (f"; {err}" if err and not res[m] else "") +
                     ("" if res[m] else " (no result)"))
    lines += ["", "Speed-up: cgdr over NCCL (latency: NCCL's time over cgdr's; bandwidth: cgdr's rate over "
              "NCCL's); containers: Container-Opt (its own network namespace per container) against the fastest NCCL container run (the host's network namespace included). NCCL's ranks had four cores each, cgdr's one.", "",
              "| size | Native (cgdr) | Container-Opt (cgdr) | " + " | ".join(n for _, n in NCCL_MODES) +
              " | cgdr native vs NCCL native | vs NCCL native, synchronized | cgdr containers vs NCCL containers |",
              "|---:|---:|---:|" + "---:|" * len(NCCL_MODES) + "---:|---:|---:|"]
    def speed(c, n):
        if not c or not n:
            return "-"
        return f"{(n / c) if lat else (c / n):.2f}x"
    sizes = sorted({s for r in list(res.values()) + [cgdr["native"], cgdr["opt"]] for s in r})
    for s in sizes:
        v = {m: res[m].get(s) for m, _ in NCCL_MODES}
        pods = [x for x in (v["ncclpods"], v["ncclpodsid"], v["ncclpodsshm"], v["ncclpodsnet"]) if x]
        best = (min(pods) if lat else max(pods)) if pods else None
        nat, opt = cgdr["native"].get(s), cgdr["opt"].get(s)
        lines.append(f"| {human(s)} | {fmt(nat)} | {fmt(opt)} | " + " | ".join(fmt(v[m]) for m, _ in NCCL_MODES) +
                     f" | {speed(nat, v['ncclnative'])} | {speed(nat, v['ncclnativeblk'])} | {speed(opt, best)} |")
    lines.append("")
    return lines, res


def fmt(x):
    """A table cell: 3 significant digits below 1 (small-message rates), else 2 decimals, else none."""
    return "-" if x is None else (f"{x:.3g}" if x < 1 else f"{x:.2f}" if x < 1000 else f"{x:.0f}")


def human(n):
    for unit, k in (("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= k and n % k == 0:
            return f"{n // k} {unit}"
    return f"{n} B"


def main(folder, table_path, plot_path):
    folder = pathlib.Path(folder)
    floor, floor_mean = {}, {}
    try:
        f = json.loads((folder / "floor.json").read_text())
        floor = {"latency": {int(k): v for k, v in f["latency"].items()},
                 "bw": {int(k): v for k, v in f["bw"].items()}}
        # the same copies' mean (cgdr-bench's statistic); older floor.json files have none
        floor_mean = {int(k): v for k, v in f.get("latency_mean", {}).items()}
        floor["bibw"] = {k: 2 * v for k, v in floor["bw"].items()}  # one copy each way: no better than 2x
    except (OSError, ValueError, KeyError):
        pass
    # layout.txt: the machine ("one GPU" or "two GPUs"), then who uses which GPU, with its model
    # (results of older runs have none, or one only on a machine of one GPU)
    layout = (folder / "layout.txt").read_text().splitlines() if (folder / "layout.txt").exists() else []
    one_gpu = bool(layout) and layout[0] == "one GPU"
    ranks = layout[1] if len(layout) > 1 else "Two ranks, one GPU each (GPU model not recorded)"
    # rounds.txt: the rounds of every size, then (newer runs) the rounds in all of Native and
    # Container-Opt over the small sizes and the largest of those sizes
    try:
        counts = [int(x) for x in (folder / "rounds.txt").read_text().split()]
        rounds = max(1, counts[0])
    except (OSError, ValueError, IndexError):
        counts, rounds = [], 1
    small, small_max = (counts[1], counts[2]) if len(counts) >= 3 and counts[1] > rounds else (rounds, 0)
    lines = ["# GPU comparison: Container-Def / Container-Opt / Native (bench/gpu-compare.sh)", "",
             f"{ranks}, cudaMalloc buffers (Container-Opt: served by cgdr's exportable heap,",
             "CGDR_CUDA_MALLOC=auto; heap off: the runtime's cudaMalloc, =off) or V (exportable cuMem buffers",
             "the program makes itself), two simulated",
             "containers with separate PID/UTS/net/mount namespaces, " +
             ("both seeing that GPU. Floor: a bare copy within the GPU (bibw floor: twice the one-way copy "
              "bandwidth, which one GPU's memory cannot give both directions at once). Opt/Nat:" if one_gpu else
              "each seeing only its own GPU (all\nGPUs visible: both containers see both GPUs, each rank using "
              "its own). Floor: bare\ncudaMemcpyPeerAsync (bibw floor: twice the one-way peer-copy bandwidth). "
              "Opt/Nat:"),
             "Container-Opt over Native (latency: ratio of times; bandwidth: ratio of rates); Opt(off)/Nat,",
             "Opt(V)/Nat and Opt(V,all)/Nat likewise. Speed-up: Container-Opt over Container-Def.",
             "The floor's latency is the median of its copies; cgdr-bench's the mean of its iterations (as",
             "OSU's): Opt/floor (mean) sets Container-Opt against the floor's mean, the same statistic.",
             (f"Native and the Container-Opt modes with cgdr's heap on: median of {rounds} rounds (each in "
              "another order); Opt/Nat rounds: the lowest and highest ratio of one round's Container-Opt to "
              "the same round's Native. Heap off and Container-Def: one run (\"-\" where not run)." if rounds > 1 else
              "One run per mode.") +
             (f" Up to {human(small_max)}, where one run's ratio to Native moves most from run to run, Native "
              f"and Container-Opt ran {small} rounds (alternating which ran first): their medians and spread "
              f"there are over all {small}." if small > rounds else ""),
             ""]
    results = {}
    for test, unit, title in TESTS:
        runs = {m: load_rounds(folder, test, m, max(rounds, small)) for m, _ in MODES}
        res = {m: median_of(runs[m]) for m, _ in MODES}
        results[test] = res
        if not any(res.values()):
            continue
        ranges = channels(folder / f"{test}-opt.log")
        rstage = channels(folder / f"{test}-optstage.log")
        rnat = channels(folder / f"{test}-native.log")
        cut = [label for m, label in MODES if res[m] and not (folder / f"{test}-{m}.json").exists()]
        cut += [f"{label} round {r}" for m, label in MODES for r in range(2, max(rounds, small) + 1)
                if (folder / f"{test}-{m}.r{r}.log").exists() and not (folder / f"{test}-{m}.r{r}.json").exists()]
        lines += [f"## {test} ({unit})", ""]
        if cut:
            lines += [f"({', '.join(cut)}: stopped by its time limit; the sizes its log printed before.)", ""]
        lines += [
                  "| size | floor | " + " | ".join(n for _, n in MODES) +
                  " | Opt/Nat | Opt/Nat rounds | Opt(off)/Nat | Opt(V)/Nat | Opt(V,all)/Nat | Opt/floor |"
                  " Opt/floor (mean) | speed-up vs Def | channel (Opt) | channel (Opt, heap off) | channel (Native) |",
                  "|---:|---:|" + "---:|" * len(MODES) + "---:|---:|---:|---:|---:|---:|---:|---:|---|---|---|"]
        sizes = sorted({s for r in res.values() for s in r})
        for s in sizes:
            v = {m: res[m].get(s) for m, _ in MODES}
            fl = floor.get(test, {}).get(s)
            lat = test == "latency"
            def ratio(a, b):
                if a is None or b is None or b == 0 or a == 0:
                    return "-"
                return f"{a / b:.2f}"
            opt, nat, de = v["opt"], v["native"], v["def"]
            optnat = ratio(opt, nat)
            per = [o[s] / n[s] for o, n in zip(runs["opt"], runs["native"]) if o.get(s) and n.get(s)]
            spread = f"{min(per):.2f}–{max(per):.2f}" if len(per) > 1 else "-"
            snat = ratio(v["optstage"], nat)
            vnat = ratio(v["optvmm"], nat)
            vall = ratio(v["optvmmall"], nat)
            optfl = ratio(opt, fl)
            optflm = ratio(opt, floor_mean.get(s)) if lat else "-"
            speed = "-"
            if opt and de:
                speed = f"{(de / opt) if lat else (opt / de):.1f}x"
            lines.append(f"| {human(s)} | {fmt(fl)} | " + " | ".join(fmt(v[m]) for m, _ in MODES) +
                         f" | {optnat} | {spread} | {snat} | {vnat} | {vall} | {optfl} | {optflm} | {speed} | {channel_of(ranges, s)} |"
                         f" {channel_of(rstage, s)} | {channel_of(rnat, s)} |")
        lines.append("")
        more, nres = nccl_section(folder, test, unit, res)
        lines += more
        res.update(nres)
    pathlib.Path(table_path).write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"(no matplotlib: {plot_path} not written; apt install python3-matplotlib)")
        return
    fig, axes = plt.subplots(1, 3, figsize=(18, 5.5))
    for ax, (test, unit, title) in zip(axes, TESTS):
        res = results.get(test, {})
        for m, name in MODES + NCCL_MODES:
            r = res.get(m, {})
            if r:
                xs = sorted(x for x in r if r[x] > 0)  # (a log axis: rates that round to 0 are left out)
                ax.plot(xs, [r[x] for x in xs], ":" if m.startswith("nccl") else "-", marker="o", markersize=3,
                        label=name)
        fl = floor.get(test, {})
        if fl:
            xs = sorted(x for x in fl if fl[x] > 0)
            ax.plot(xs, [fl[x] for x in xs], "k--", label="floor (peer copy)")
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xlabel("message size (bytes)")
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    nccl_in = any(results.get(t, {}).get(m) for t, _, _ in TESTS for m, _ in NCCL_MODES)
    fig.suptitle(f"cgdr: {ranks}; two containers (separate PID namespaces) vs native"
                 + (", beside NCCL (dotted)" if nccl_in else "")
                 + (f"; median of {rounds} rounds" if rounds > 1 else "")
                 + (f" ({small} up to {human(small_max)})" if small > rounds else ""))
    fig.tight_layout()
    fig.savefig(plot_path, dpi=110)
    print(f"plot: {plot_path}")


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print(__doc__)
        sys.exit(2)
    main(*sys.argv[1:])
