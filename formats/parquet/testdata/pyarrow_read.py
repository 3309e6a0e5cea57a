"""Read Parquet files with pyarrow and print them as JSON lines for
formats/parquet's round-trip test (pyarrow_test.go).

For each file given: one line {"file", "rows", "row_groups", "types",
"parquet"} with the Arrow type of each column as pyarrow reads it and the
Parquet schema as pyarrow prints it, then one line per row. Values are
canonical: timestamps as integer microseconds since the epoch, dates as
days, bytes as base64, maps as [key, value] pairs in file order,
non-finite floats as "NaN", "Infinity", "-Infinity".
"""
import base64
import datetime
import json
import math
import sys

import pyarrow.parquet as pq

EPOCH = datetime.datetime(1970, 1, 1, tzinfo=datetime.timezone.utc)
EPOCH_DAY = datetime.date(1970, 1, 1)


def conv(v):
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        if math.isnan(v):
            return "NaN"
        if math.isinf(v):
            return "Infinity" if v > 0 else "-Infinity"
        return v
    if isinstance(v, bytes):
        return base64.b64encode(v).decode()
    if isinstance(v, datetime.datetime):
        if v.tzinfo is None:
            raise ValueError("timestamp without a time zone: %r" % v)
        return (v - EPOCH) // datetime.timedelta(microseconds=1)
    if isinstance(v, datetime.date):
        return (v - EPOCH_DAY).days
    if isinstance(v, tuple):
        return [conv(e) for e in v]
    if isinstance(v, list):
        return [conv(e) for e in v]
    if isinstance(v, dict):
        return {k: conv(e) for k, e in v.items()}
    raise TypeError("no conversion for %r" % type(v))


def main():
    for path in sys.argv[1:]:
        f = pq.ParquetFile(path)
        table = f.read()
        head = {
            "file": path,
            "rows": table.num_rows,
            "row_groups": f.metadata.num_row_groups,
            "types": {field.name: str(field.type) for field in table.schema},
            "parquet": str(f.schema),
        }
        print(json.dumps(head))
        for row in table.to_pylist():
            print(json.dumps({k: conv(v) for k, v in row.items()}))


if __name__ == "__main__":
    main()
