#!/usr/bin/env python3
"""Reads bench/run-variance.sh's logs in DIR: per run, the GPU's SM clock, power and clock-event
reasons sampled during it, and its GB/s at the smallest and the largest size.
   bench/run-variance-report.py DIR"""
import datetime
import os
import re
import statistics
import sys


def stamp(text):
    return datetime.datetime.strptime(text.strip(), "%Y/%m/%d %H:%M:%S.%f").timestamp()


def main():
    d = sys.argv[1]
    samples = []
    for line in open(os.path.join(d, "rv-smi.csv")):
        f = [x.strip() for x in line.split(",")]
        try:
            samples.append((stamp(f[0]), int(f[2]), float(f[4]), f[6]))
        except (ValueError, IndexError):
            pass
    runs = {}
    for line in open(os.path.join(d, "rv-marks.log")):
        a = line.split()
        runs.setdefault(tuple(a[3:]), {})[a[2]] = stamp(a[0] + " " + a[1])
    print("run                 s  samples  SM MHz min/med/max  W max  reasons  first GB/s  last GB/s")
    for key in sorted(runs, key=lambda k: runs[k]["start"]):
        s, e = runs[key]["start"], runs[key].get("end", runs[key]["start"])
        if key[0] == "bibw":
            log, col, pat, scale = "rv-bibw-%s-%s.log" % (key[1], key[2].replace(",", "_")), 1, r"^[0-9]", 1e3
        else:
            log, col, pat, scale = "rv-floor-%s.log" % key[1], 2, r"^ +[0-9]", 1
        vals = [float(l.split()[col]) / scale for l in open(os.path.join(d, log)) if re.match(pat, l)]
        w = [x for x in samples if s <= x[0] <= e]
        if not w or not vals:
            print("%-16s no samples or no result" % " ".join(key))
            continue
        clk = [x[1] for x in w]
        print("%-16s %5.2f %4d  %5d/%5d/%5d  %5.0f  %s  %9.1f  %9.1f" % (
            " ".join(key), e - s, len(w), min(clk), statistics.median(clk), max(clk), max(x[2] for x in w),
            ",".join(sorted(set("%#x" % int(x[3], 16) for x in w))), vals[0], vals[-1]))


if __name__ == "__main__":
    main()
