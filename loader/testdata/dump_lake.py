"""Reads every Parquet file of a lake directory with pyarrow and prints, per
file (relative to the lake, in name order), its Arrow schema and every row
with every column, so that two lakes compare as text."""
import json
import os
import sys

import pyarrow.parquet as pq

lake = sys.argv[1]
out = sys.stdout
for root, _, files in sorted(os.walk(lake)):
    for name in sorted(files):
        if not name.endswith(".parquet"):
            continue
        path = os.path.join(root, name)
        table = pq.read_table(path)
        out.write("file %s rows %d\n" % (os.path.relpath(path, lake), table.num_rows))
        out.write("schema %s\n" % table.schema.remove_metadata().to_string().replace("\n", "; "))
        for row in table.to_pylist():
            out.write(json.dumps(row, default=str, sort_keys=True) + "\n")
