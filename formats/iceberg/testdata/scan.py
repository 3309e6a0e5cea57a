"""Scans an Iceberg table with pyiceberg and prints what a reader sees, as
one JSON object:

  scan.py TABLE_LOCATION [SNAPSHOT_ID ...]

"current": the current snapshot's rows as sorted [partition, offset]
pairs and its number of files (plan_files); "snapshots": the ids of every
snapshot in the metadata; and for each SNAPSHOT_ID given, the same rows
read by time travel.
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
    for sid in sys.argv[2:]:
        out["at"][sid] = rows(table, int(sid))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
