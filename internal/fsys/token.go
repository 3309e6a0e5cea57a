package fsys

// What a Kerberized YARN submission needs from HDFS: an HDFS delegation
// token for the application (the NodeManagers localize its files with it,
// the ApplicationMaster reads HDFS with it; the ResourceManager renews it),
// and the keys the workers log in with.
//
// colinmarc/hdfs v2.4.0 has no GetDelegationToken, and its NameNode
// connection is unexported. The call goes through that connection anyway
// (reflect on the pinned version's unexported field: one RPC on the
// already authenticated, already SASL-wrapped connection), with messages
// whose wire form equals ClientNamenodeProtocol's:
// GetDelegationTokenRequestProto is {string renewer = 1}, a StringValue;
// GetDelegationTokenResponseProto is {TokenProto token = 1}, read as the
// bytes of a BytesValue. TestDelegationToken fails if a new version of
// the library moves the field.

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"strings"

	krb "github.com/jcmturner/gokrb5/v8/client"
	"github.com/jcmturner/gokrb5/v8/keytab"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/types/known/emptypb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// Token is a Hadoop security token (org.apache.hadoop.security.token.Token).
type Token struct {
	Identifier, Password []byte
	Kind, Service        string
}

// URLString is Token.encodeToUrlString(): the token's Writable form in
// URL-safe base64, what the ResourceManager's REST API takes in an
// application's credentials.
func (t Token) URLString() string {
	var b bytes.Buffer
	writeVInt(&b, int64(len(t.Identifier)))
	b.Write(t.Identifier)
	writeVInt(&b, int64(len(t.Password)))
	b.Write(t.Password)
	for _, s := range []string{t.Kind, t.Service} {
		writeVInt(&b, int64(len(s)))
		b.WriteString(s)
	}
	return base64.RawURLEncoding.EncodeToString(b.Bytes())
}

// writeVInt is Hadoop's WritableUtils.writeVLong.
func writeVInt(b *bytes.Buffer, i int64) {
	if i >= -112 && i <= 127 {
		b.WriteByte(byte(i))
		return
	}
	n := int64(-112)
	if i < 0 {
		i = ^i
		n = -120
	}
	for tmp := i; tmp != 0; tmp >>= 8 {
		n--
	}
	b.WriteByte(byte(n))
	if n < -120 {
		n = -(n + 120)
	} else {
		n = -(n + 112)
	}
	for idx := n; idx != 0; idx-- {
		b.WriteByte(byte(i >> ((idx - 1) * 8)))
	}
}

// DelegationToken asks the NameNode of f (a Kerberos-authenticated HDFS
// target) for a delegation token that renewer (a principal, e.g. the
// ResourceManager's rm/host@REALM) may renew. Its service is the
// NameNode's ip:port, as Hadoop's clients select tokens by.
func DelegationToken(f FS, renewer string) (Token, error) {
	h, ok := f.(*hdfsFS)
	if !ok {
		return Token{}, fmt.Errorf("delegation token: %s is not on HDFS", f)
	}
	if h.krb == nil {
		return Token{}, errors.New("delegation token: the NameNode gives them to Kerberos-authenticated clients only")
	}
	req, resp := wrapperspb.String(renewer), &wrapperspb.BytesValue{}
	if err := namenodeExecute(h.c, "getDelegationToken", req, resp); err != nil {
		return Token{}, fmt.Errorf("delegation token from the NameNode (renewer %s): %w", renewer, err)
	}
	t, err := parseTokenProto(resp.Value)
	if err != nil {
		return Token{}, err
	}
	if len(t.Identifier) == 0 {
		return Token{}, errors.New("delegation token: the NameNode returned none (are tokens enabled? a NameNode without Kerberos gives none)")
	}
	addr, err := net.ResolveTCPAddr("tcp", h.nameNode())
	if err != nil {
		return Token{}, fmt.Errorf("delegation token: the NameNode's address: %w", err)
	}
	t.Service = addr.String()
	return t, nil
}

// nameNode is the address of the NameNode the client talks to.
func (h *hdfsFS) nameNode() string {
	if len(h.streams.opts.Addresses) > 0 {
		return h.streams.opts.Addresses[0]
	}
	return ""
}

// parseTokenProto reads hadoop.common.TokenProto.
func parseTokenProto(b []byte) (Token, error) {
	var t Token
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return t, fmt.Errorf("delegation token: %w", protowire.ParseError(n))
		}
		b = b[n:]
		if typ != protowire.BytesType {
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n < 0 {
				return t, fmt.Errorf("delegation token: %w", protowire.ParseError(n))
			}
			b = b[n:]
			continue
		}
		v, n := protowire.ConsumeBytes(b)
		if n < 0 {
			return t, fmt.Errorf("delegation token: %w", protowire.ParseError(n))
		}
		b = b[n:]
		switch num {
		case 1:
			t.Identifier = append([]byte(nil), v...)
		case 2:
			t.Password = append([]byte(nil), v...)
		case 3:
			t.Kind = string(v)
		case 4:
			t.Service = string(v)
		}
	}
	return t, nil
}

// KerberosClient is the Kerberos login f's HDFS client holds (nil without
// Kerberos): the yarn executor's SPNEGO to the ResourceManager reuses it.
func KerberosClient(f FS) *krb.Client {
	if h, ok := f.(*hdfsFS); ok {
		return h.krb
	}
	return nil
}

// PrincipalKeytab is the keytab file holding only principal's keys
// (user[/host]@REALM; without @REALM, any realm): what is shipped to
// the containers, never the other principals a shared keytab holds.
func PrincipalKeytab(file, principal string) ([]byte, error) {
	kt, err := keytab.Load(file)
	if err != nil {
		return nil, fmt.Errorf("keytab %s: %w", file, err)
	}
	keep := kt.Entries[:0]
	for _, e := range kt.Entries {
		name := strings.Join(e.Principal.Components, "/")
		if name+"@"+e.Principal.Realm == principal || (!strings.Contains(principal, "@") && name == principal) {
			keep = append(keep, e)
		}
	}
	if len(keep) == 0 {
		return nil, fmt.Errorf("keytab %s holds no keys of %s", file, principal)
	}
	kt.Entries = keep
	return kt.Marshal()
}

// CancelDelegationToken cancels t at the NameNode of f: a token fetched
// for an application that was never submitted (the RM cancels the tokens
// of the ones it ran) would otherwise stay valid, and tracked by nobody,
// until it expires.
func CancelDelegationToken(f FS, t Token) error {
	h, ok := f.(*hdfsFS)
	if !ok {
		return fmt.Errorf("delegation token: %s is not on HDFS", f)
	}
	// CancelDelegationTokenRequestProto is {TokenProto token = 1}: the
	// bytes of a BytesValue; its response is empty.
	var tp []byte
	tp = protowire.AppendTag(tp, 1, protowire.BytesType)
	tp = protowire.AppendBytes(tp, t.Identifier)
	tp = protowire.AppendTag(tp, 2, protowire.BytesType)
	tp = protowire.AppendBytes(tp, t.Password)
	tp = protowire.AppendTag(tp, 3, protowire.BytesType)
	tp = protowire.AppendString(tp, t.Kind)
	tp = protowire.AppendTag(tp, 4, protowire.BytesType)
	tp = protowire.AppendString(tp, t.Service)
	if err := namenodeExecute(h.c, "cancelDelegationToken", wrapperspb.Bytes(tp), &emptypb.Empty{}); err != nil {
		return fmt.Errorf("cancelling a delegation token at the NameNode: %w", err)
	}
	return nil
}
