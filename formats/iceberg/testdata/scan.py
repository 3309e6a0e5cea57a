"""Scans an Iceberg table with pyiceberg and prints what a reader sees, as
one JSON object:

  scan.py TABLE_LOCATION [SNAPSHOT_ID ...] [filter=EXPR]

"current": the current snapshot's rows as sorted [partition, offset]
pairs and its number of files (plan_files); "snapshots": the ids of every
snapshot in the metadata; and for each SNAPSHOT_ID given, the same rows
read by time travel; with filter=EXPR, "filtered": the files a scan of
the current snapshot with that row filter plans (pruned by partition
values and column bounds) and the rows it returns.
"""
import json
import sys

from pyiceberg.table import StaticTable


def rows(table, snapshot_id=None):
    scan = table.scan(selected_fields=("_partition", "_offset"), snapshot_id=snapshot_id)
    data = scan.to_arrow()
    pairs = sorted(zip(data.column("_partition").to_pylist(), data.column("_offset").to_pylist()))
    return {"rows": [list(p) for p in pairs], "files": len(list(scan.plan_files()))}


def main():
    table = StaticTable.from_metadata(sys.argv[1])
    out = {"current": rows(table), "snapshots": [s.snapshot_id for s in table.snapshots()],
           "operations": [str(s.summary.operation.value) for s in table.snapshots()], "at": {}}
    for arg in sys.argv[2:]:
        if arg.startswith("filter="):
            scan = table.scan(row_filter=arg[len("filter="):])
            out["filtered"] = {"files": len(list(scan.plan_files())), "rows": scan.to_arrow().num_rows}
            continue
        out["at"][arg] = rows(table, int(arg))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
