package main

import (
	"github.com/spf13/pflag"

	"github.com/tributary-io/tributary/internal/fsys"
)

// addKerberosFlags adds the Kerberos-to-HDFS flags of every command that
// opens an HDFS target (docs/loader.md, "Kerberos"). Their keys are
// hdfs.kerberos.* and Hadoop's own dfs.namenode.kerberos.principal.
func addKerberosFlags(fs *pflag.FlagSet, k *fsys.Kerberos) {
	fs.StringVar(&k.Principal, "hdfs-kerberos-principal", "", "Kerberos principal to log in to HDFS as, e.g. etl@EXAMPLE.COM (with --hdfs-kerberos-keytab; without it, the ticket cache must hold this principal)")
	fs.StringVar(&k.Keytab, "hdfs-kerberos-keytab", "", "keytab file with the keys of --hdfs-kerberos-principal")
	fs.StringVar(&k.Krb5Conf, "hdfs-kerberos-krb5-conf", "", "krb5.conf with the realm's KDCs (default $KRB5_CONFIG, else /etc/krb5.conf)")
	fs.StringVar(&k.CCache, "hdfs-kerberos-ccache", "", "Kerberos ticket cache used without a keytab (default $KRB5CCNAME, else /tmp/krb5cc_<uid>)")
	fs.StringVar(&k.NameNodePrincipal, "dfs-namenode-kerberos-principal", "", "the NameNode's Kerberos service principal, e.g. hdfs/_HOST@EXAMPLE.COM (default: HADOOP_CONF_DIR's hdfs-site.xml)")
}
