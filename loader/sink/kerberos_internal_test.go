package sink

import (
	"strings"
	"testing"

	"github.com/colinmarc/hdfs/v2/hadoopconf"
)

// TestDataTransferProtection: the DataNode connections use SASL
// authentication whenever the cluster accepts it, and a cluster that
// insists on integrity or privacy (which the HDFS client cannot read under)
// is refused before anything is written, with the setting named.
func TestDataTransferProtection(t *testing.T) {
	for _, tc := range []struct {
		conf hadoopconf.HadoopConf
		want string // the protection, or "error: <substring>"
	}{
		{hadoopconf.HadoopConf{}, ""},
		{hadoopconf.HadoopConf{"dfs.data.transfer.protection": "authentication"}, "authentication"},
		{hadoopconf.HadoopConf{"dfs.data.transfer.protection": "privacy,authentication"}, "authentication"},
		{hadoopconf.HadoopConf{"dfs.data.transfer.protection": "integrity"}, "error: dfs.data.transfer.protection=integrity"},
		{hadoopconf.HadoopConf{"dfs.data.transfer.protection": "privacy"}, "error: dfs.data.transfer.protection=privacy"},
		{hadoopconf.HadoopConf{"dfs.encrypt.data.transfer": "true", "dfs.data.transfer.protection": "authentication"}, "error: dfs.encrypt.data.transfer"},
	} {
		o, _, err := Kerberos{}.clientOptions(tc.conf, nil)
		got := o.DataTransferProtection
		if err != nil {
			got = "error: " + err.Error()
		}
		if !strings.HasPrefix(got, tc.want) || (tc.want == "" && got != "") {
			t.Errorf("%v: got %q, want %q", tc.conf, got, tc.want)
		}
	}
}

// TestKerberosFlags: what the jobs scheduler hands its worker processes.
func TestKerberosFlags(t *testing.T) {
	k := Kerberos{Principal: "etl@EXAMPLE.COM", Keytab: "/k/etl.keytab", NameNodePrincipal: "hdfs/_HOST@EXAMPLE.COM"}
	got := strings.Join(k.Flags(), " ")
	want := "--hdfs-kerberos-principal etl@EXAMPLE.COM --hdfs-kerberos-keytab /k/etl.keytab --dfs-namenode-kerberos-principal hdfs/_HOST@EXAMPLE.COM"
	if got != want {
		t.Errorf("Flags() = %q, want %q", got, want)
	}
	if f := (Kerberos{}).Flags(); len(f) != 0 {
		t.Errorf("no settings gave flags %q", f)
	}
}
