package fsys

import (
	"errors"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

type fakeConn3 struct{ called string }

func (c *fakeConn3) Execute(method string, req, resp proto.Message) error {
	c.called = method
	return errors.New("answered " + method)
}

type fakeConn4 struct{}

func (fakeConn4) Execute(ctx any, method string, req, resp proto.Message) error { return nil }

type fakeConnNoResult struct{}

func (fakeConnNoResult) Execute(method string, req, resp proto.Message) {}

type fakeConnNoExecute struct{}

// Review M2: a colinmarc/hdfs whose internals differ from the pinned
// version's gives an error from the reflective call, never a panic (which
// would take the jobs daemon down).
func TestExecuteFieldShapes(t *testing.T) {
	req, resp := wrapperspb.String("x"), &wrapperspb.BytesValue{}
	for _, tc := range []struct {
		name   string
		client any
		want   string
	}{
		{"no field", &struct{ other int }{}, "no namenode connection field"},
		{"an int field", &struct{ namenode int }{}, "not a live pointer"},
		{"a nil field", &struct{ namenode *fakeConn3 }{}, "not a live pointer"},
		{"no Execute", &struct{ namenode *fakeConnNoExecute }{&fakeConnNoExecute{}}, "has no Execute"},
		{"four parameters", &struct{ namenode *fakeConn4 }{&fakeConn4{}}, "is func("},
		{"no result", &struct{ namenode *fakeConnNoResult }{&fakeConnNoResult{}}, "is func("},
		{"not a pointer", struct{ namenode *fakeConn3 }{}, "want a pointer"},
		{"nil", nil, "want a pointer"},
	} {
		var err error
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("%s: panic %v", tc.name, r)
				}
			}()
			err = executeField(tc.client, "getDelegationToken", req, resp)
		}()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error with %q", tc.name, err, tc.want)
		}
	}
	// The pinned shape is called, and its error comes back.
	c := &fakeConn3{}
	if err := executeField(&struct{ namenode *fakeConn3 }{c}, "getDelegationToken", req, resp); err == nil || err.Error() != "answered getDelegationToken" || c.called != "getDelegationToken" {
		t.Errorf("the pinned shape: %v (called %q)", err, c.called)
	}
}
