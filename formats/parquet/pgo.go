package parquet

import (
	"fmt"
	"io"
	"strings"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/klauspost/compress/s2"
	kzstd "github.com/klauspost/compress/zstd"
	pgo "github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/compress/gzip"
	pgosnappy "github.com/parquet-go/parquet-go/compress/snappy"
	"github.com/parquet-go/parquet-go/compress/zstd"
)

// pgoEngine writes through github.com/parquet-go/parquet-go. It does not
// convert batches to rows: each leaf column of a batch is turned into
// parquet-go values with their repetition and definition levels
// (leaves.go) and handed to that column's writer, so the per-row work is
// what any column-oriented writer does anyway.
type pgoEngine struct {
	w      *pgo.Writer
	leaves []*leafWriter // in column order
	pages  *pagePool
	vals   []pgo.Value
	// chunk is the number of rows given to a column writer at once. A
	// column writer ends a page only between calls, once the page reaches
	// Options.PageBytes, so pages overshoot by up to a chunk.
	chunk int
}

// pageBufferPool holds the compressed pages of row groups being built,
// shared by every writer so that buffers outlive a file.
var pageBufferPool = pgo.NewBufferPool()

func newPgoEngine(out io.Writer, schema *arrow.Schema, opts Options) (*pgoEngine, error) {
	dictCols := map[string]bool{}
	for _, c := range opts.DictionaryColumns {
		dictCols[c] = true
	}
	dict := func(path string, k pkind) bool {
		if opts.NoDictionary {
			return false
		}
		if len(opts.DictionaryColumns) > 0 {
			return dictCols[path]
		}
		return true
	}
	ps, nodes, err := pgoSchema(schema, dict)
	if err != nil {
		return nil, err
	}
	pages := &pagePool{BufferPool: pageBufferPool}
	wopts := []pgo.WriterOption{
		ps,
		pgo.Compression(opts.Codec.pgo(opts.Level)),
		pgo.PageBufferSize(int(opts.PageBytes)),
		pgo.DictionaryMaxBytes(opts.DictionaryPageBytes),
		// Row groups are ended by Writer; parquet-go's own limit would
		// end one behind its back.
		pgo.MaxRowsPerRowGroup(1 << 62),
		// Data pages v1, which every Hive and Spark version reads.
		pgo.DataPageVersion(1),
		// Statistics go to the column chunks and the column index, which
		// truncates long values; page headers would repeat them in full
		// (twice, with the deprecated fields) for every page: a column of
		// 30 KB strings wrote three times its data.
		pgo.DataPageStatistics(false),
		createdBy("tributary (parquet-go/parquet-go)"),
		pgo.ColumnPageBuffers(pages),
		// Pages are buffered until their row group is complete and
		// written in large pieces; what is left (magic, footer) is small.
		// Unbuffered, Bytes counts what really reached the io.Writer.
		pgo.WriteBufferSize(0),
	}
	if opts.NoStatistics {
		for _, p := range ps.Columns() {
			wopts = append(wopts, pgo.SkipPageBounds(p...))
		}
	}
	if !opts.NoArrowSchema {
		s, err := arrowSchemaFooter(schema, opts.Allocator)
		if err != nil {
			return nil, err
		}
		wopts = append(wopts, pgo.KeyValueMetadata("ARROW:schema", s))
	}
	e := &pgoEngine{w: pgo.NewWriter(out, wopts...), pages: pages, chunk: 256}
	for i, n := range nodes {
		e.leaves = appendLeaves(e.leaves, i, []*pnode{n}, nil)
	}
	return e, nil
}

func (e *pgoEngine) write(rec arrow.Record) error {
	cols := e.w.ColumnWriters()
	n := int(rec.NumRows())
	for _, lw := range e.leaves {
		lw.bind(rec.Column(lw.field))
		cw := cols[lw.col]
		for r := 0; r < n; r += e.chunk {
			end := min(r+e.chunk, n)
			vals := lw.appendRows(e.vals[:0], r, end)
			if !lw.allNull {
				e.vals = vals // else vals may be the leaf's own run of nulls
			}
			if lw.err != nil {
				err := lw.err
				lw.err = nil
				return err
			}
			if _, err := cw.WriteRowValues(vals); err != nil {
				return fmt.Errorf("column %s: %w", lw.path(), err)
			}
		}
		lw.unbind()
	}
	clear(e.vals[:cap(e.vals)]) // drop references to the batch's bytes
	return nil
}

func (e *pgoEngine) flushRowGroup() error {
	err := e.w.Flush()
	e.pages.n = 0
	return err
}

func (e *pgoEngine) buffered() int64 { return e.pages.n }

func (e *pgoEngine) close() error { return e.w.Close() }

// createdBy sets the footer's created_by as is: parquet-go's CreatedBy
// option formats it as "<app> version <v> (build <b>)", which readers
// parse for known writer bugs (of parquet-mr, parquet-cpp); ours matches
// none, as pqarrow's "tributary (parquet-go arrow v15)" does not.
type createdBy string

func (c createdBy) ConfigureWriter(cfg *pgo.WriterConfig) { cfg.CreatedBy = string(c) }

// pgo is c as a parquet-go codec at the given level (0: the codec's
// default).
func (c Codec) pgo(level int) compress.Codec {
	switch c {
	case Zstd:
		if level == 0 {
			return &pgo.Zstd
		}
		return &zstd.Codec{Level: kzstd.EncoderLevelFromZstd(level)}
	case Gzip:
		if level == 0 {
			return &pgo.Gzip
		}
		return &gzip.Codec{Level: level}
	case None:
		return &pgo.Uncompressed
	}
	return &fastSnappy{}
}

// fastSnappy is snappy through s2's fast mode: parquet-go's codec calls
// klauspost's snappy.Encode, which is s2's "better" mode, measured twice as
// slow for pages 1-2% smaller. The output is standard snappy either way.
type fastSnappy struct{ pgosnappy.Codec }

func (*fastSnappy) Encode(dst, src []byte) ([]byte, error) {
	return s2.EncodeSnappy(dst[:cap(dst)], src), nil
}

// pagePool counts the bytes of the pages written into its buffers: the
// compressed size of the completed pages of the current row group, which
// a RollingWriter needs to know when a file is full.
type pagePool struct {
	pgo.BufferPool
	n int64
}

func (p *pagePool) GetBuffer() io.ReadWriteSeeker {
	return &countedBuffer{ReadWriteSeeker: p.BufferPool.GetBuffer(), p: p}
}

func (p *pagePool) PutBuffer(b io.ReadWriteSeeker) {
	if c, ok := b.(*countedBuffer); ok {
		b = c.ReadWriteSeeker
	}
	p.BufferPool.PutBuffer(b)
}

type countedBuffer struct {
	io.ReadWriteSeeker
	p *pagePool
}

func (b *countedBuffer) Write(p []byte) (int, error) {
	n, err := b.ReadWriteSeeker.Write(p)
	b.p.n += int64(n)
	return n, err
}

// WriteTo keeps the underlying buffer's copy without an intermediate
// buffer when the row group is written out.
func (b *countedBuffer) WriteTo(w io.Writer) (int64, error) {
	if wt, ok := b.ReadWriteSeeker.(io.WriterTo); ok {
		return wt.WriteTo(w)
	}
	return io.Copy(w, struct{ io.Reader }{b.ReadWriteSeeker})
}

// path is the dotted Parquet path of a leaf, as Options.DictionaryColumns
// names it.
func (lw *leafWriter) path() string {
	var sb strings.Builder
	for i, n := range lw.nodes {
		if i > 0 {
			sb.WriteByte('.')
			switch lw.nodes[i-1].kind {
			case pList:
				sb.WriteString("list.")
			case pMap:
				sb.WriteString("key_value.")
			}
		}
		sb.WriteString(n.name)
	}
	return sb.String()
}
