"""Plans and reads a scan of an Iceberg table filtered on an identity
partition column, with pyiceberg, and prints what pruning did as JSON:

  read_iceberg_filter.py METADATA COLUMN VALUE

METADATA is the table's directory (version-hint.text) or a metadata file
(what a SQL catalog's row points at).

Output: the partition spec's fields, the files of the whole table with
their partition tuples, the files a scan filtered on COLUMN == VALUE plans,
how many files hold that value by their partition tuple, and the filtered
scan's rows: their count and the distinct values of COLUMN; and, for every
file of the table, whether the distinct values of each identity column in
its rows are exactly the value its partition tuple records ("mismatched"
lists the files that are not, "checked" counts the files read).
"""
import json
import sys

import pyarrow.parquet as pq

from pyiceberg.expressions import EqualTo
from pyiceberg.table import StaticTable


def main():
    location, column, value = sys.argv[1], sys.argv[2], sys.argv[3]
    table = StaticTable.from_metadata(location)
    spec = table.spec()
    names = [f.name for f in spec.fields]
    idx = names.index(column)
    files = list(table.scan().plan_files())
    planned = list(table.scan(row_filter=EqualTo(column, value)).plan_files())
    rows = table.scan(row_filter=EqualTo(column, value), selected_fields=(column, "_partition", "_offset")).to_arrow()
    identity = [(i, f.name) for i, f in enumerate(spec.fields) if str(f.transform) == "identity"]
    mismatched, checked = [], 0
    for f in files:
        path = f.file.file_path.removeprefix("file://")
        got = pq.read_table(path, columns=[name for _, name in identity])
        checked += 1
        for i, name in identity:
            values = set(got.column(name).to_pylist())
            if values != {f.file.partition[i]}:
                mismatched.append({"file": path, "column": name, "tuple": f.file.partition[i], "rows": sorted(map(str, values))})
    out = {
        "spec": [{"name": f.name, "transform": str(f.transform), "source": f.source_id} for f in spec.fields],
        "files": len(files),
        "partitions": sorted({json.dumps([str(v) if v is not None else None for v in f.file.partition]) for f in files}),
        "planned": len(planned),
        "planned_want": sum(1 for f in files if f.file.partition[idx] == value),
        "rows": rows.num_rows,
        "values": sorted({str(v) for v in rows.column(column).to_pylist()}),
        "checked": checked,
        "mismatched": mismatched,
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
