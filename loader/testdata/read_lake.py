"""Reads every Parquet file of a lake directory with pyarrow and prints one
JSON line per row: the file (relative to the lake), and the columns the
loader tests compare with what was produced."""
import json
import os
import sys

import pyarrow.parquet as pq

lake = sys.argv[1]
cols = sys.argv[2].split(",")
out = sys.stdout
for root, _, files in sorted(os.walk(lake)):
    for name in sorted(files):
        if not name.endswith(".parquet"):
            continue
        path = os.path.join(root, name)
        table = pq.read_table(path, columns=cols)
        rel = os.path.relpath(path, lake)
        for row in table.to_pylist():
            for k, v in row.items():
                if hasattr(v, "isoformat"):
                    row[k] = int(v.timestamp() * 1000)
            row["file"] = rel
            out.write(json.dumps(row, default=str) + "\n")
