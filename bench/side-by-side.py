#!/usr/bin/env python3
"""Prints cgdr-bench JSON results of one directory side by side, one table per benchmark.

usage: side-by-side.py DIR   (files named <test>-<SR>-<variant>.json, e.g. latency-DD-cgdr.json)
"""
import json
import pathlib
import sys


def main(folder):
    runs, units = {}, {}
    for f in sorted(pathlib.Path(folder).glob("*.json")):
        try:
            data = json.loads(f.read_text())
        except ValueError:
            continue
        test, _, variant = f.stem.partition("-")
        runs.setdefault(test, {})[variant] = {r["size"]: r["value"] for r in data["results"]}
        units[test] = data.get("unit", "")
    for test, variants in runs.items():
        names = sorted(variants)
        unit = units[test]
        print(f"\n{test} ({unit})")
        print(f"{'size':>10}" + "".join(f"{n:>16}" for n in names))
        sizes = sorted({s for v in variants.values() for s in v})
        for s in sizes:
            row = "".join(f"{variants[n].get(s, float('nan')):>16.2f}" for n in names)
            print(f"{s:>10}{row}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else ".")
