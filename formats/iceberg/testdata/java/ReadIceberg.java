import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import org.apache.hadoop.conf.Configuration;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.HasTableOperations;
import org.apache.iceberg.HistoryEntry;
import org.apache.iceberg.PartitionField;
import org.apache.iceberg.Schema;
import org.apache.iceberg.Snapshot;
import org.apache.iceberg.Table;
import org.apache.iceberg.TableProperties;
import org.apache.iceberg.data.IcebergGenerics;
import org.apache.iceberg.data.Record;
import org.apache.iceberg.data.parquet.GenericParquetReaders;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.catalog.Namespace;
import org.apache.iceberg.catalog.TableIdentifier;
import org.apache.iceberg.hadoop.HadoopTables;
import org.apache.iceberg.jdbc.JdbcCatalog;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.mapping.NameMapping;
import org.apache.iceberg.mapping.NameMappingParser;
import org.apache.iceberg.parquet.Parquet;
import org.apache.iceberg.types.Types;

/**
 * The Java reference reader: Apache Iceberg's own library (iceberg-core's
 * HadoopTables and scan planning, iceberg-parquet's reader with
 * iceberg-data's generic records) reads a table Tributary wrote and prints
 * what it saw as one JSON object, which formats/iceberg's TestJavaReader
 * and the loader's TestLoadIceberg compare with what was written.
 *
 * Rows are read file by file as Spark's and Flink's readers do, with the
 * table's schema.name-mapping.default: the loader's Parquet files carry no
 * field ids, and iceberg-data's IcebergGenerics (1.10) ignores the name
 * mapping, falling back to column positions (it reads nulls for columns
 * whose position is not their id).
 *
 * With READ_ICEBERG_BY_ID=1 in the environment, rows are read with
 * iceberg-data's IcebergGenerics instead, which resolves a file's columns
 * by the Parquet field ids alone and never consults the name mapping: the
 * check that the files carry the table's ids. READ_ICEBERG_COLUMNS then
 * names columns (comma-separated, dotted for nested fields) whose values in
 * the current snapshot are printed as "columns": [[v1, v2...], ...] by row.
 *
 * Usage: ReadIceberg <table> <an event time in microseconds: the files
 * planned for _event_time below it are counted> [<column>=<string value>:
 * the files planned for that equality are counted too]
 *
 * <table> is a location (file:///..., hdfs://...) read by HadoopTables, or
 * jdbc:sqlite:<file>#<warehouse>#<namespace>#<table name>: a table of the
 * loader's SQL catalog, loaded through iceberg-core's JdbcCatalog (catalog
 * "tributary"); the table name may hold dots (a Kafka topic web.clicks).
 */
public final class ReadIceberg {
  private ReadIceberg() {}

  public static void main(String[] args) throws Exception {
    Table table = load(args[0]);
    long before = Long.parseLong(args[1]);
    StringBuilder out = new StringBuilder("{");

    int version = ((HasTableOperations) table).operations().current().formatVersion();
    out.append("\"format_version\":").append(version);

    // The name mapping parsed as Spark's and Flink's readers parse it on
    // every scan (a name two ids share fails here): its top-level names by
    // field id.
    String nameMapping = table.properties().get(TableProperties.DEFAULT_NAME_MAPPING);
    if (nameMapping != null) {
      out.append(",\"name_mapping\":{");
      String msep = "";
      for (org.apache.iceberg.mapping.MappedField f : NameMappingParser.fromJson(nameMapping).asMappedFields().fields()) {
        out.append(msep).append(quote(String.valueOf(f.id()))).append(":[");
        String nsep = "";
        for (String n : f.names()) {
          out.append(nsep).append(quote(n));
          nsep = ",";
        }
        out.append(']');
        msep = ",";
      }
      out.append('}');
    }

    out.append(",\"schema\":[");
    String sep = "";
    for (Types.NestedField f : table.schema().columns()) {
      out.append(sep).append("{\"id\":").append(f.fieldId())
          .append(",\"name\":").append(quote(f.name()))
          .append(",\"type\":").append(quote(f.type().toString()))
          .append(",\"required\":").append(f.isRequired()).append('}');
      sep = ",";
    }

    out.append("],\"spec\":[");
    sep = "";
    for (PartitionField f : table.spec().fields()) {
      out.append(sep).append("{\"source\":").append(f.sourceId())
          .append(",\"name\":").append(quote(f.name()))
          .append(",\"transform\":").append(quote(f.transform().toString())).append('}');
      sep = ",";
    }

    out.append("],\"snapshots\":[");
    sep = "";
    for (Snapshot s : table.snapshots()) {
      out.append(sep).append("{\"id\":").append(s.snapshotId())
          .append(",\"parent\":").append(s.parentId())
          .append(",\"sequence\":").append(s.sequenceNumber())
          .append(",\"operation\":").append(quote(s.operation()))
          .append(",\"summary\":{");
      String sep2 = "";
      for (Map.Entry<String, String> e : s.summary().entrySet()) {
        out.append(sep2).append(quote(e.getKey())).append(':').append(quote(e.getValue()));
        sep2 = ",";
      }
      out.append("}}");
      sep = ",";
    }

    out.append("],\"history\":[");
    sep = "";
    for (HistoryEntry h : table.history()) {
      out.append(sep).append(h.snapshotId());
      sep = ",";
    }
    out.append(']');

    List<Snapshot> all = new ArrayList<>();
    table.snapshots().forEach(all::add);
    out.append(",\"current\":").append(offsets(table, table.currentSnapshot().snapshotId()));
    out.append(",\"first\":").append(offsets(table, all.get(0).snapshotId()));

    // Hidden partitioning: the scan plans only the files whose hour (or
    // column bounds) can hold rows before the given time.
    int planned = 0;
    try (CloseableIterable<FileScanTask> tasks =
        table.newScan().filter(Expressions.lessThan("_event_time", before)).planFiles()) {
      for (FileScanTask ignored : tasks) {
        planned++;
      }
    }
    out.append(",\"files_before\":").append(planned);
    int files = 0;
    try (CloseableIterable<FileScanTask> tasks = table.newScan().planFiles()) {
      for (FileScanTask ignored : tasks) {
        files++;
      }
    }
    out.append(",\"files\":").append(files);
    if (args.length > 2) {
      // Pruning by an identity partition value.
      String[] kv = args[2].split("=", 2);
      int equal = 0;
      try (CloseableIterable<FileScanTask> tasks =
          table.newScan().filter(Expressions.equal(kv[0], kv[1])).planFiles()) {
        for (FileScanTask ignored : tasks) {
          equal++;
        }
      }
      out.append(",\"files_equal\":").append(equal);
    }
    String columns = System.getenv("READ_ICEBERG_COLUMNS");
    if (byId() && columns != null && !columns.isEmpty()) {
      String[] cols = columns.split(",");
      out.append(",\"columns\":[");
      sep = "";
      try (CloseableIterable<Record> rows = IcebergGenerics.read(table).select(cols).build()) {
        for (Record r : rows) {
          out.append(sep).append('[');
          String sep2 = "";
          for (String c : cols) {
            Object v = r;
            for (String part : c.split("\\.")) {
              v = v == null ? null : ((Record) v).getField(part);
            }
            out.append(sep2).append(v == null ? "null" : quote(v.toString()));
            sep2 = ",";
          }
          out.append(']');
          sep = ",";
        }
      }
      out.append(']');
    }
    out.append('}');
    System.out.println(out);
  }

  private static Table load(String where) {
    if (!where.startsWith("jdbc:")) {
      return new HadoopTables(new Configuration()).load(where);
    }
    String[] parts = where.split("#", 4);
    JdbcCatalog catalog = new JdbcCatalog();
    catalog.setConf(new Configuration());
    catalog.initialize("tributary", Map.of("uri", parts[0], "warehouse", parts[1]));
    return catalog.loadTable(TableIdentifier.of(Namespace.of(parts[2]), parts[3]));
  }

  private static boolean byId() {
    return "1".equals(System.getenv("READ_ICEBERG_BY_ID"));
  }

  /** The [partition, offset] pairs of a snapshot's rows, as a JSON array. */
  private static String offsets(Table table, long snapshotId) throws IOException {
    if (byId()) {
      StringBuilder b = new StringBuilder("[");
      String sep = "";
      try (CloseableIterable<Record> rows =
          IcebergGenerics.read(table).useSnapshot(snapshotId).select("_partition", "_offset").build()) {
        for (Record r : rows) {
          b.append(sep).append('[').append(r.getField("_partition")).append(',')
              .append(r.getField("_offset")).append(']');
          sep = ",";
        }
      }
      return b.append(']').toString();
    }
    Schema projected = table.schema().select("_partition", "_offset");
    String json = table.properties().get(TableProperties.DEFAULT_NAME_MAPPING);
    NameMapping mapping = json == null ? null : NameMappingParser.fromJson(json);
    StringBuilder b = new StringBuilder("[");
    String sep = "";
    try (CloseableIterable<FileScanTask> tasks = table.newScan().useSnapshot(snapshotId).planFiles()) {
      for (FileScanTask task : tasks) {
        Parquet.ReadBuilder read = Parquet.read(table.io().newInputFile(task.file().location()))
            .project(projected)
            .createReaderFunc(fileSchema -> GenericParquetReaders.buildReader(projected, fileSchema));
        if (mapping != null) {
          read = read.withNameMapping(mapping);
        }
        try (CloseableIterable<Record> rows = read.build()) {
          for (Record r : rows) {
            b.append(sep).append('[').append(r.getField("_partition")).append(',')
                .append(r.getField("_offset")).append(']');
            sep = ",";
          }
        }
      }
    }
    return b.append(']').toString();
  }

  private static String quote(String s) {
    if (s == null) {
      return "null";
    }
    StringBuilder b = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      switch (c) {
        case '"': b.append("\\\""); break;
        case '\\': b.append("\\\\"); break;
        default:
          if (c < 0x20) {
            b.append(String.format("\\u%04x", (int) c));
          } else {
            b.append(c);
          }
      }
    }
    return b.append('"').toString();
  }
}
