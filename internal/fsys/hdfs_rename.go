package fsys

import (
	"errors"
	"fmt"
	"os"
	"path"
	"reflect"
	"unsafe"

	"github.com/colinmarc/hdfs/v2"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
)

// RenameNoReplace is the NameNode's rename2 without OVERWRITE, which fails
// with FileAlreadyExistsException when the destination exists (the check
// and the move are one NameNode operation under its lock; this is what
// iceberg-core's HadoopTableOperations relies on through
// FileSystem.rename).
//
// colinmarc/hdfs (v2.4.0) sends rename2 with OVERWRITE only and keeps its
// protocol and RPC packages internal. Rather than fork it, this calls the
// client's own NameNode connection: the request and response types are
// the library's generated messages, found in the protobuf registry by
// their protocol names, and the connection's Execute (which does HA
// failover and retries as for every other call) is reached by reflection.
// TestContract checks that it still works when the library is upgraded.
func (h *hdfsFS) RenameNoReplace(oldname, newname string) error {
	o, err := h.path(oldname)
	if err != nil {
		return err
	}
	n, err := h.path(newname)
	if err != nil {
		return err
	}
	if err := h.c.MkdirAll(path.Dir(n), 0o755); err != nil {
		return err
	}
	req, err := newHDFSMessage("hadoop.hdfs.Rename2RequestProto")
	if err != nil {
		return err
	}
	fields := req.Descriptor().Fields()
	req.Set(fields.ByName("src"), protoreflect.ValueOfString(o))
	req.Set(fields.ByName("dst"), protoreflect.ValueOfString(n))
	req.Set(fields.ByName("overwriteDest"), protoreflect.ValueOfBool(false))
	resp, err := newHDFSMessage("hadoop.hdfs.Rename2ResponseProto")
	if err != nil {
		return err
	}
	if err := namenodeExecute(h.c, "rename2", req.Interface(), resp.Interface()); err != nil {
		return &os.PathError{Op: "rename", Path: newname, Err: hdfsError(err)}
	}
	return nil
}

func newHDFSMessage(name protoreflect.FullName) (protoreflect.Message, error) {
	mt, err := protoregistry.GlobalTypes.FindMessageByName(name)
	if err != nil {
		return nil, fmt.Errorf("fsys: colinmarc/hdfs no longer registers %s: %w", name, err)
	}
	return mt.New(), nil
}

// namenodeExecute calls c.namenode.Execute(method, req, resp).
func namenodeExecute(c *hdfs.Client, method string, req, resp proto.Message) error {
	return executeField(c, method, req, resp)
}

var (
	protoMessageType = reflect.TypeOf((*proto.Message)(nil)).Elem()
	errorType        = reflect.TypeOf((*error)(nil)).Elem()
)

// executeField calls client.namenode.Execute(method, req, resp) by
// reflection, client being a pointer to a struct. Anything other than the
// pinned library's shape (no such field, a nil one, an Execute of another
// signature) is an error, never a panic: the jobs daemon runs this for
// every Kerberized YARN submission and every rename without replace.
func executeField(client any, method string, req, resp proto.Message) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("fsys: colinmarc/hdfs's internals changed: %v", r)
		}
	}()
	v := reflect.ValueOf(client)
	if v.Kind() != reflect.Pointer || v.IsNil() || v.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("fsys: want a pointer to colinmarc/hdfs's Client, have %T", client)
	}
	f := v.Elem().FieldByName("namenode")
	if !f.IsValid() {
		return errors.New("fsys: colinmarc/hdfs's Client has no namenode connection field any more")
	}
	if f.Kind() != reflect.Pointer || f.IsNil() {
		return fmt.Errorf("fsys: colinmarc/hdfs's namenode connection is a %s, not a live pointer", f.Type())
	}
	nn := reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
	exec := nn.MethodByName("Execute")
	if !exec.IsValid() {
		return errors.New("fsys: colinmarc/hdfs's namenode connection has no Execute any more")
	}
	t := exec.Type()
	if t.NumIn() != 3 || t.In(0).Kind() != reflect.String || !protoMessageType.AssignableTo(t.In(1)) || !protoMessageType.AssignableTo(t.In(2)) ||
		t.NumOut() != 1 || t.Out(0) != errorType {
		return fmt.Errorf("fsys: colinmarc/hdfs's namenode Execute is %s now, not func(string, proto.Message, proto.Message) error", t)
	}
	out := exec.Call([]reflect.Value{reflect.ValueOf(method), reflect.ValueOf(&req).Elem(), reflect.ValueOf(&resp).Elem()})
	if err, _ := out[0].Interface().(error); err != nil {
		return err
	}
	return nil
}

// hdfsError maps the Java exceptions a rename reports to the fs errors.
func hdfsError(err error) error {
	var re hdfs.Error
	if errors.As(err, &re) {
		switch re.Exception() {
		case "org.apache.hadoop.fs.FileAlreadyExistsException":
			return ErrExist
		case "java.io.FileNotFoundException":
			return ErrNotExist
		case "org.apache.hadoop.security.AccessControlException":
			return os.ErrPermission
		}
	}
	return err
}
