"""Reads an Iceberg table the loader committed, with pyiceberg, and prints
what a user of the table sees as one JSON object:

  read_iceberg.py TABLE_LOCATION [FROM_PREFIX LOCAL_DIR]

TABLE_LOCATION is the table's directory (pyiceberg finds the current
metadata through metadata/version-hint.text). With FROM_PREFIX and
LOCAL_DIR, every path starting with FROM_PREFIX (an hdfs:// table's
location) is read from the local copy at LOCAL_DIR instead.

Output: the schema (field ids, names, types), the partition spec, the
snapshots (id, parent, summary, the row count of a scan at that snapshot:
time travel), and the current snapshot's (_partition, _offset) pairs and
the schema ids of the columns a scan returns.
"""
import json
import sys

from pyiceberg.io.pyarrow import PyArrowFileIO
from pyiceberg.table import StaticTable


class MappedIO(PyArrowFileIO):
    """A local FileIO that reads hdfs:// paths from a local copy."""

    def _map(self, location):
        src = self.properties.get("tributary.map-from")
        if src and location.startswith(src):
            return self.properties["tributary.map-to"] + location[len(src):]
        return location

    def new_input(self, location):
        return super().new_input(self._map(location))

    def new_output(self, location):
        raise PermissionError("read only")


def main():
    location = sys.argv[1]
    props = {}
    if len(sys.argv) > 3:
        props = {"py-io-impl": "read_iceberg.MappedIO", "tributary.map-from": sys.argv[2], "tributary.map-to": sys.argv[3]}
    table = StaticTable.from_metadata(location, props)
    schema = table.schema()
    out = {
        "format_version": table.metadata.format_version,
        "schema": [{"id": f.field_id, "name": f.name, "type": str(f.field_type), "required": f.required} for f in schema.fields],
        "schema_ids": [s.schema_id for s in table.schemas().values()],
        "spec": [{"source": f.source_id, "id": f.field_id, "name": f.name, "transform": str(f.transform)} for f in table.spec().fields],
        "snapshots": [],
    }
    for s in table.snapshots():
        rows = table.scan(snapshot_id=s.snapshot_id).to_arrow().num_rows
        summary = dict(s.summary.additional_properties) if s.summary else {}
        summary["operation"] = str(s.summary.operation.value) if s.summary else ""
        out["snapshots"].append({"id": s.snapshot_id, "parent": s.parent_snapshot_id, "seq": s.sequence_number, "summary": summary, "rows": rows})
    data = table.scan(selected_fields=("_partition", "_offset", "_event_time")).to_arrow()
    out["offsets"] = [[p, o] for p, o in zip(data.column("_partition").to_pylist(), data.column("_offset").to_pylist())]
    # Partition pruning: a filter on the event time's hour reads only the
    # files of that hour, as the manifests' partition values say.
    files = list(table.scan().plan_files())
    out["files"] = len(files)
    out["hours"] = sorted({f.file.partition[0] for f in files})
    if out["hours"]:
        import datetime
        h = out["hours"][0]
        lo = datetime.datetime.fromtimestamp(h * 3600, datetime.timezone.utc)
        hi = lo + datetime.timedelta(hours=1)
        expr = "_event_time >= '%s' and _event_time < '%s'" % (lo.isoformat(), hi.isoformat())
        pruned = list(table.scan(row_filter=expr).plan_files())
        out["files_first_hour"] = len(pruned)
        out["files_first_hour_want"] = sum(1 for f in files if f.file.partition[0] == h)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
