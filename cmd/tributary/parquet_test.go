package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/array"
	"github.com/apache/arrow/go/v15/arrow/memory"
	"github.com/spf13/cobra"

	"github.com/tributary-io/tributary/formats/parquet"
)

// writeExampleParquet writes the file the parquet commands' examples show:
// n rows, written by formats/parquet.
func writeExampleParquet(t *testing.T, path string, n int) {
	t.Helper()
	schema := arrow.NewSchema([]arrow.Field{
		{Name: "type", Type: arrow.BinaryTypes.String},
		{Name: "messageId", Type: arrow.BinaryTypes.String},
		{Name: "userId", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "timestamp", Type: &arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"}},
		{Name: "revenue", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
	defer b.Release()
	for i := range n {
		typ, user := "track", fmt.Sprintf("u-%d", i)
		if i%2 == 1 {
			typ = "page"
		}
		b.Field(0).(*array.StringBuilder).Append(typ)
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("m-%d", i))
		if i%2 == 1 {
			b.Field(2).AppendNull()
			b.Field(4).(*array.Float64Builder).Append(9.99)
		} else {
			b.Field(2).(*array.StringBuilder).Append(user)
			b.Field(4).AppendNull()
		}
		b.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(1700000000000 + int64(i)))
		lb := b.Field(5).(*array.ListBuilder)
		lb.Append(true)
		if i%2 == 0 {
			lb.ValueBuilder().(*array.StringBuilder).Append("a")
		}
	}
	rec := b.NewRecord()
	defer rec.Release()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := parquet.NewWriter(f, schema, parquet.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// exampleOutput is the "# " lines that follow the line running cmd in the
// Example of c: the output the help promises.
func exampleOutput(c string, example string) string {
	var out []string
	in := false
	for _, line := range strings.Split(example, "\n") {
		line = strings.TrimPrefix(line, "  ")
		switch {
		case strings.HasPrefix(line, "tributary "):
			in = strings.HasPrefix(line, c)
		case in && strings.HasPrefix(line, "# "):
			out = append(out, strings.TrimPrefix(line, "# "))
		case line == "":
			in = false
		}
	}
	return strings.Join(out, "\n") + "\n"
}

// TestParquetExamples runs each parquet command as its help shows, on the
// file the help describes, and checks the output the help promises.
func TestParquetExamples(t *testing.T) {
	dir := t.TempDir()
	events := filepath.Join(dir, "events.parquet")
	writeExampleParquet(t, events, 1000)
	writeExampleParquet(t, filepath.Join(dir, "part-0.parquet"), 1000)
	writeExampleParquet(t, filepath.Join(dir, "part-1.parquet"), 250)
	t.Chdir(dir)

	root := newRootCommand()
	find := func(name string) *cobra.Command {
		c, _, err := root.Find([]string{"parquet", name})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	for _, c := range []struct{ sub, cmdline string }{
		{"schema", "tributary parquet schema events.parquet"},
		{"count", "tributary parquet count events.parquet"},
		{"count", "tributary parquet count part-0.parquet part-1.parquet"},
		{"head", "tributary parquet head -n 2 events.parquet"},
	} {
		t.Run(c.cmdline, func(t *testing.T) {
			want := exampleOutput(c.cmdline, find(c.sub).Example)
			out, _, err := execute(t, newRootCommand(), strings.Fields(c.cmdline)[1:]...)
			if err != nil {
				t.Fatal(err)
			}
			if out != want {
				t.Errorf("%s:\n%s\nwant (from the Example):\n%s", c.cmdline, out, want)
			}
		})
	}

	t.Run("schema --meta", func(t *testing.T) {
		out, _, err := execute(t, newRootCommand(), "parquet", "schema", "--meta", "events.parquet")
		want := exampleOutput("tributary parquet schema --meta", find("schema").Example)
		if err != nil || !strings.HasPrefix(out, want) {
			t.Errorf("out %q, err %v; want it to start with %q", out, err, want)
		}
	})
	t.Run("cat", func(t *testing.T) {
		out, _, err := execute(t, newRootCommand(), "parquet", "cat", "events.parquet")
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		if len(lines) != 1000 || !strings.Contains(lines[999], `"messageId":"m-999"`) {
			t.Errorf("%d lines, last %q", len(lines), lines[len(lines)-1])
		}
	})
	t.Run("hdfs", func(t *testing.T) {
		_, _, err := execute(t, newRootCommand(), "parquet", "count", "hdfs://nn:8020/lake/x.parquet")
		if err == nil || !strings.Contains(err.Error(), "hdfs dfs -get") {
			t.Errorf("hdfs:// path: %v", err)
		}
	})
	t.Run("not parquet", func(t *testing.T) {
		os.WriteFile("junk.parquet", []byte("not a parquet file at all"), 0o644)
		if _, _, err := execute(t, newRootCommand(), "parquet", "head", "junk.parquet"); err == nil {
			t.Error("junk read as Parquet")
		}
	})
}
