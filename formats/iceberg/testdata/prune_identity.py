"""Plans scans of an Iceberg table with identity partition fields, with
pyiceberg, and prints the files each filter plans as JSON:

  prune_identity.py TABLE_DIR

The filters are the ones TestIdentityPyiceberg (partition_test.go) asks
about: equality, comparisons and IS NULL on int, long, boolean and string
identity columns.
"""
import json
import sys

from pyiceberg.expressions import EqualTo, GreaterThan, IsNull, LessThan
from pyiceberg.table import StaticTable


def main():
    table = StaticTable.from_metadata(sys.argv[1])

    def files(f):
        return sorted(x.file.file_path.rsplit("/", 1)[1].removesuffix(".parquet") for x in table.scan(row_filter=f).plan_files())

    out = {
        "n=-5": files(EqualTo("n", -5)), "n=7": files(EqualTo("n", 7)), "n>0": files(GreaterThan("n", 0)), "n null": files(IsNull("n")),
        "big=2^40": files(EqualTo("big", 1 << 40)), "big<0": files(LessThan("big", 0)),
        "flag=true": files(EqualTo("flag", True)), "flag=false": files(EqualTo("flag", False)), "flag null": files(IsNull("flag")),
        "s=é": files(EqualTo("s", "é")), "s=''": files(EqualTo("s", "")), "s null": files(IsNull("s")),
    }
    print(json.dumps(out, ensure_ascii=False))


if __name__ == "__main__":
    main()
