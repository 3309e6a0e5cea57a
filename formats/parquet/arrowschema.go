package parquet

import (
	"bytes"
	"encoding/base64"

	"github.com/apache/arrow/go/v15/arrow"
	"github.com/apache/arrow/go/v15/arrow/ipc"
	"github.com/apache/arrow/go/v15/arrow/memory"
)

// arrowSchemaFooter is the value of the ARROW:schema footer key that
// pyarrow (and pqarrow) read to restore the Arrow types and metadata: the
// schema as an Arrow IPC stream of no batches, in base64. It is what
// pqarrow writes (through arrow/flight's SerializeSchema, which does the
// same).
func arrowSchemaFooter(schema *arrow.Schema, mem memory.Allocator) (string, error) {
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(schema), ipc.WithAllocator(mem))
	if err := w.Close(); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes()), nil
}
