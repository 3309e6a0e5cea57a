package fsys

// Kerberos to HDFS. Every HDFS client of the loader and the jobs scheduler is
// made by openHDFS, and every one of them logs in here, so a Kerberized
// cluster needs its settings in one place:
//
//   - a keytab (hdfs.kerberos.principal + hdfs.kerberos.keytab): an AS
//     exchange with the KDC at each Open. gokrb5 then keeps the TGT fresh for
//     as long as the client lives: it renews it at 5/6 of its lifetime while
//     it is renewable, and logs in again from the keytab after that, so a load
//     that runs for days outlives any ticket lifetime.
//   - a ticket cache (hdfs.kerberos.ccache, else $KRB5CCNAME, else MIT's
//     /tmp/krb5cc_<uid>), filled by kinit or k5start. gokrb5 renews a
//     renewable TGT from it, but cannot log in again: past the ticket's
//     renew-until the cache must be refilled outside. It is read again at
//     every Open (each load and each job run), so a refreshed cache is used
//     from the next run on.
//
// What the NameNode asks for is read from HADOOP_CONF_DIR (core-site.xml,
// hdfs-site.xml), as a Hadoop client does: hadoop.security.authentication,
// dfs.namenode.kerberos.principal (the service principal; _HOST becomes the
// NameNode's host as written in the target URI), dfs.data.transfer.protection
// and dfs.encrypt.data.transfer (SASL on the DataNode connections, see
// dataTransferProtection), and hadoop.rpc.protection. The RPC's quality of
// protection is the NameNode's choice: it offers it in the SASL negotiation
// and colinmarc/hdfs takes the strongest offered, with no way to refuse a
// weaker one, so the local hadoop.rpc.protection is logged, not enforced.
//
// A failed login is an error that starts with "Kerberos:" and is returned
// before the NameNode is contacted, so nothing is written.

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/colinmarc/hdfs/v2"
	"github.com/colinmarc/hdfs/v2/hadoopconf"
	krb "github.com/jcmturner/gokrb5/v8/client"
	krbconfig "github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/credentials"
	"github.com/jcmturner/gokrb5/v8/keytab"
)

// Kerberos is how the HDFS client logs in to a Kerberized cluster. The zero
// value logs in only if HADOOP_CONF_DIR says hadoop.security.authentication
// is kerberos, and then from the ticket cache.
type Kerberos struct {
	// Principal is the client's principal, user@REALM or user/host@REALM; a
	// name without @REALM is in krb5.conf's default_realm.
	Principal string
	// Keytab holds Principal's keys. Without it, the ticket cache is used.
	Keytab string
	// Krb5Conf is the krb5.conf (realms, KDCs); default $KRB5_CONFIG, else
	// /etc/krb5.conf.
	Krb5Conf string
	// CCache is the ticket cache used without a keytab; default $KRB5CCNAME
	// (FILE: caches only), else /tmp/krb5cc_<uid>.
	CCache string
	// NameNodePrincipal is the NameNode's service principal, e.g.
	// hdfs/_HOST@EXAMPLE.COM; default dfs.namenode.kerberos.principal from
	// HADOOP_CONF_DIR.
	NameNodePrincipal string
}

// enabled says whether anything asks for Kerberos.
func (k Kerberos) enabled(conf hadoopconf.HadoopConf) bool {
	return k.Principal != "" || k.Keytab != "" || k.CCache != "" ||
		strings.EqualFold(conf["hadoop.security.authentication"], "kerberos")
}

// hadoopConf is the Hadoop configuration in dir, else HADOOP_CONF_DIR's (or
// HADOOP_HOME's); a missing one is empty.
func hadoopConf(dir string) hadoopconf.HadoopConf {
	var conf hadoopconf.HadoopConf
	var err error
	if dir != "" {
		conf, err = hadoopconf.Load(dir)
	} else {
		conf, err = hadoopconf.LoadFromEnvironment()
	}
	if err != nil || conf == nil {
		return hadoopconf.HadoopConf{}
	}
	return conf
}

// clientOptions is the one place an HDFS client's security options are
// decided: the Hadoop configuration's, then the Kerberos login. The
// returned client, if any, is the caller's to Destroy.
func (k Kerberos) clientOptions(conf hadoopconf.HadoopConf, log *slog.Logger) (hdfs.ClientOptions, *krb.Client, error) {
	o := hdfs.ClientOptionsFromConf(conf)
	o.KerberosClient = nil
	if err := dataTransferProtection(&o, conf); err != nil {
		return o, nil, err
	}
	if down := downgradedFrom(conf); down != "" && log != nil {
		log.Warn("hdfs: DataNode transfer protection downgraded to authentication: the cluster also offers "+down+
			", but the HDFS client cannot read blocks under SASL integrity or privacy (docs/loader.md#kerberos)",
			"dfs.data.transfer.protection", conf["dfs.data.transfer.protection"])
	}
	if !k.enabled(conf) {
		return o, nil, nil
	}
	spn := k.NameNodePrincipal
	if spn == "" {
		spn = conf["dfs.namenode.kerberos.principal"]
	}
	if spn == "" {
		return o, nil, errors.New("Kerberos: no NameNode service principal: set dfs.namenode.kerberos.principal in HADOOP_CONF_DIR's hdfs-site.xml or give --dfs-namenode-kerberos-principal (e.g. hdfs/_HOST@EXAMPLE.COM)")
	}
	// colinmarc/hdfs asks the KDC for a ticket to the name without its
	// realm, and finds the realm from krb5.conf's domain_realm.
	o.KerberosServicePrincipleName, _, _ = strings.Cut(spn, "@")

	cl, how, err := k.login()
	if err != nil {
		return o, nil, err
	}
	o.KerberosClient = cl
	rpcProt := conf["hadoop.rpc.protection"]
	if rpcProt == "" {
		rpcProt = "authentication"
	}
	dtProt := o.DataTransferProtection
	if dtProt == "" {
		dtProt = "none"
	}
	log.Info("hdfs: Kerberos login", "principal", cl.Credentials.CName().PrincipalNameString()+"@"+cl.Credentials.Domain(),
		"from", how, "namenode_principal", spn, "hadoop.rpc.protection", rpcProt, "dfs.data.transfer.protection", dtProt)
	return o, cl, nil
}

// dataTransferProtection settles the SASL protection of the DataNode
// connections. colinmarc/hdfs v2.4.0 writes blocks under every level, but
// reads under integrity and privacy fail ("proto: cannot parse invalid
// wire-format data": its digest-MD5 connection's Read drops the bytes it
// had buffered from the previous frame), and the loader reads its plans,
// manifests and leases back. The DataNode accepts any level of its list, so
// authentication is taken when the list has it; a cluster that insists on
// more gets a clear error before anything is written.
func dataTransferProtection(o *hdfs.ClientOptions, conf hadoopconf.HadoopConf) error {
	if strings.EqualFold(conf["dfs.encrypt.data.transfer"], "true") {
		return errors.New("dfs.encrypt.data.transfer=true (encrypted DataNode transfer) is not supported: the HDFS client cannot read blocks under SASL privacy; the cluster must accept dfs.data.transfer.protection=authentication")
	}
	levels := strings.Split(strings.ToLower(conf["dfs.data.transfer.protection"]), ",")
	for _, l := range levels {
		if strings.TrimSpace(l) == "authentication" {
			o.DataTransferProtection = "authentication"
			return nil
		}
	}
	if o.DataTransferProtection != "" {
		return fmt.Errorf("dfs.data.transfer.protection=%s is not supported: the HDFS client cannot read blocks under SASL integrity or privacy; the cluster must accept authentication (e.g. dfs.data.transfer.protection=authentication,privacy)", conf["dfs.data.transfer.protection"])
	}
	return nil
}

// downgradedFrom is the stronger levels the cluster's
// dfs.data.transfer.protection also offers when authentication is taken
// ("" when none).
func downgradedFrom(conf hadoopconf.HadoopConf) string {
	var hasAuth bool
	var stronger []string
	for _, l := range strings.Split(strings.ToLower(conf["dfs.data.transfer.protection"]), ",") {
		switch l = strings.TrimSpace(l); l {
		case "authentication":
			hasAuth = true
		case "integrity", "privacy":
			stronger = append(stronger, l)
		}
	}
	if !hasAuth {
		return ""
	}
	return strings.Join(stronger, " and ")
}

// login gets a TGT from the keytab or the ticket cache; how says which, for
// the log.
func (k Kerberos) login() (cl *krb.Client, how string, err error) {
	cfgPath := k.Krb5Conf
	if cfgPath == "" {
		cfgPath = os.Getenv("KRB5_CONFIG")
	}
	if cfgPath == "" {
		cfgPath = "/etc/krb5.conf"
	}
	cfg, err := krbconfig.Load(cfgPath)
	if err != nil {
		return nil, "", fmt.Errorf("Kerberos: krb5.conf %s: %w (give --hdfs-kerberos-krb5-conf or KRB5_CONFIG)", cfgPath, err)
	}

	if k.Keytab != "" {
		if k.Principal == "" {
			return nil, "", fmt.Errorf("Kerberos: keytab %s given without hdfs.kerberos.principal", k.Keytab)
		}
		kt, err := keytab.Load(k.Keytab)
		if err != nil {
			return nil, "", fmt.Errorf("Kerberos: keytab %s: %w", k.Keytab, err)
		}
		user, realm := splitPrincipal(k.Principal, cfg.LibDefaults.DefaultRealm)
		// PA-FX-FAST is off, as in MIT's kinit by default: Active Directory
		// and Kerby KDCs refuse what gokrb5 sends otherwise.
		cl = krb.NewWithKeytab(user, realm, kt, cfg, krb.DisablePAFXFAST(true))
		if err := cl.Login(); err != nil {
			cl.Destroy()
			return nil, "", fmt.Errorf("Kerberos: login as %s@%s with keytab %s failed%s: %w", user, realm, k.Keytab, kdcHint(err), err)
		}
		return cl, "keytab " + k.Keytab, nil
	}

	cc := k.CCache
	if cc == "" {
		cc = os.Getenv("KRB5CCNAME")
	}
	if cc == "" {
		cc = fmt.Sprintf("/tmp/krb5cc_%d", os.Getuid())
	}
	if kind, rest, ok := strings.Cut(cc, ":"); ok {
		if kind != "FILE" {
			return nil, "", fmt.Errorf("Kerberos: ticket cache %s: only FILE: caches can be read; give a keytab (hdfs.kerberos.keytab) instead", cc)
		}
		cc = rest
	}
	cache, err := credentials.LoadCCache(cc)
	if err != nil {
		hint := ""
		if k.Principal == "" {
			hint = "; give hdfs.kerberos.principal and hdfs.kerberos.keytab to log in from a keytab"
		}
		return nil, "", fmt.Errorf("Kerberos: ticket cache %s: %w (run kinit%s)", cc, err, hint)
	}
	if k.Principal != "" {
		user, realm := splitPrincipal(k.Principal, cfg.LibDefaults.DefaultRealm)
		got := cache.GetClientPrincipalName().PrincipalNameString() + "@" + cache.GetClientRealm()
		if got != user+"@"+realm {
			return nil, "", fmt.Errorf("Kerberos: ticket cache %s holds %s, not %s@%s", cc, got, user, realm)
		}
	}
	cl, err = krb.NewFromCCache(cache, cfg, krb.DisablePAFXFAST(true))
	if err != nil {
		return nil, "", fmt.Errorf("Kerberos: ticket cache %s: %w (run kinit)", cc, err)
	}
	if err := cl.AffirmLogin(); err != nil {
		cl.Destroy()
		return nil, "", fmt.Errorf("Kerberos: the TGT in ticket cache %s is expired and cannot be renewed: %w (run kinit)", cc, err)
	}
	return cl, "ticket cache " + cc, nil
}

// kdcHint says in words what the KDC's usual refusals of a keytab login
// mean; gokrb5's message has only the code.
func kdcHint(err error) string {
	switch msg := err.Error(); {
	case strings.Contains(msg, "PREAUTH_FAILED"), strings.Contains(msg, "BAD_INTEGRITY"):
		return " (the keytab's keys are not the principal's current keys: a keytab from before a password change or key rotation?)"
	case strings.Contains(msg, "C_PRINCIPAL_UNKNOWN"):
		return " (the KDC does not know this principal)"
	case strings.Contains(msg, "no keytab entry"), strings.Contains(msg, "matching"):
		return " (the keytab holds no keys of this principal)"
	}
	return ""
}

// splitPrincipal splits user[/host][@REALM].
func splitPrincipal(p, defaultRealm string) (user, realm string) {
	if i := strings.LastIndex(p, "@"); i >= 0 {
		return p[:i], p[i+1:]
	}
	return p, defaultRealm
}

// Flags are the tributary command-line flags that give k to a child
// process (the jobs scheduler's "load worker" processes).
func (k Kerberos) Flags() []string {
	var out []string
	for _, f := range []struct{ name, v string }{
		{"--hdfs-kerberos-principal", k.Principal},
		{"--hdfs-kerberos-keytab", k.Keytab},
		{"--hdfs-kerberos-krb5-conf", k.Krb5Conf},
		{"--hdfs-kerberos-ccache", k.CCache},
		{"--dfs-namenode-kerberos-principal", k.NameNodePrincipal},
	} {
		if f.v != "" {
			out = append(out, f.name, f.v)
		}
	}
	return out
}
