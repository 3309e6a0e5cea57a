package jobs

// Kerberized YARN. A Kerberized HDFS (the staging dir's client logged in
// with Kerberos) means a Kerberized ResourceManager, and then:
//
//   - Every REST call authenticates with SPNEGO, from the HDFS client's own
//     Kerberos login (gokrb5), as HTTP/<the RM URL's host>.
//   - The application carries an HDFS delegation token whose renewer is
//     the RM (yarn.resource_manager_principal): the NodeManagers localize
//     the AM's and the workers' files with it, DistributedShell's AM reads
//     HDFS with it, and the RM renews it while the application runs.
//   - The workers do not use that token: colinmarc/hdfs cannot
//     authenticate with one (no DIGEST-MD5 SASL). They log in from a
//     keytab instead, shipped as Spark's --keytab is: only the principal's
//     own keys (not whatever else the local keytab file holds), as
//     tributary.keytab in the application's 0700 staging dir, mode 0400,
//     an APPLICATION LocalResource (DistributedShell's visibility; never
//     PUBLIC, which NodeManagers share between users). The AM deletes the
//     directory when the application ends, the executor too.
//   - No token renewal matters to the workers: each logs in from the keytab
//     and gokrb5 logs in again when the TGT can no longer be renewed
//     (internal/fsys/kerberos.go). The delegation token matters only for
//     localization, for as long as containers start: the RM renews it up
//     to its maximum lifetime (HDFS's default 7 days).

import (
	"encoding/xml"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/jcmturner/gokrb5/v8/spnego"

	"github.com/tributary-io/tributary/internal/fsys"
)

// yarnKeytab is the keytab's name in the application's directory and in
// the containers' working directories.
const yarnKeytab = "tributary.keytab"

// yarnSecurity is what a Kerberized submission adds.
type yarnSecurity struct {
	principal string // the workers' principal, user@REALM
	keytab    []byte // its keys only
	token     fsys.Token
}

// kerberos returns the submission's Kerberos part, nil when the staging
// dir's HDFS client did not log in with Kerberos. It also makes the REST
// calls SPNEGO's.
func (e *yarnExecutor) kerberos(fs fsys.FS, rm string) (*yarnSecurity, error) {
	e.authorize, e.krbHTTP = nil, nil
	cl := fsys.KerberosClient(fs)
	if cl == nil {
		return nil, nil
	}
	k := e.opts.Kerberos
	principal := cl.Credentials.CName().PrincipalNameString() + "@" + cl.Credentials.Domain()
	if k.Keytab == "" {
		return nil, fmt.Errorf("yarn: on a Kerberized cluster the containers log in to HDFS with a keytab, and %s logged in from a ticket cache: give hdfs.kerberos.keytab (--hdfs-kerberos-keytab) with %s's keys", principal, principal)
	}
	if err := checkRMScheme(rm, e.cfg.AllowInsecureHTTP); err != nil {
		return nil, err
	}
	if strings.HasPrefix(rm, "http://") {
		e.log.Warn("submitting to a Kerberized ResourceManager over http://: the HDFS delegation token and the Kerberos tickets cross the network in clear (yarn.allow_insecure_http)", "resource_manager", rm)
	}
	u, err := url.Parse(rm)
	if err != nil {
		return nil, err
	}
	host := u.Hostname()
	renewer := e.cfg.ResourceManagerPrincipal
	if renewer == "" {
		renewer = yarnSiteProperty(e.opts.HadoopConfDir, "yarn.resourcemanager.principal")
	}
	if renewer == "" {
		return nil, fmt.Errorf("yarn: a Kerberized cluster needs yarn.resource_manager_principal (--yarn-resource-manager-principal, the ResourceManager's yarn.resourcemanager.principal, e.g. rm/_HOST@EXAMPLE.COM; HADOOP_CONF_DIR's yarn-site.xml has none): it renews the application's HDFS delegation token")
	}
	renewer = strings.ReplaceAll(renewer, "_HOST", host)
	kt, err := fsys.PrincipalKeytab(k.Keytab, principal)
	if err != nil {
		return nil, fmt.Errorf("yarn: the keytab shipped to the containers: %w", err)
	}
	tok, err := fsys.DelegationToken(fs, renewer)
	if err != nil {
		return nil, fmt.Errorf("yarn: %w", err)
	}
	e.authorize = func(req *http.Request) error {
		return spnego.SetSPNEGOHeader(cl, req, "HTTP/"+req.URL.Hostname())
	}
	return &yarnSecurity{principal: principal, keytab: kt, token: tok}, nil
}

// yarnSiteProperty is a property of yarn-site.xml in dir, else in
// $HADOOP_CONF_DIR ("" when there is none).
func yarnSiteProperty(dir, name string) string {
	if dir == "" {
		dir = os.Getenv("HADOOP_CONF_DIR")
	}
	if dir == "" {
		return ""
	}
	b, err := os.ReadFile(filepath.Join(dir, "yarn-site.xml"))
	if err != nil {
		return ""
	}
	var conf struct {
		Property []struct {
			Name  string `xml:"name"`
			Value string `xml:"value"`
		} `xml:"property"`
	}
	if xml.Unmarshal(b, &conf) != nil {
		return ""
	}
	v := ""
	for _, p := range conf.Property {
		if strings.TrimSpace(p.Name) == name {
			v = strings.TrimSpace(p.Value)
		}
	}
	return v
}

// sendKerberized sends one Kerberized REST call: a Negotiate header made
// for this request's host, one try, no redirect followed (not gokrb5's
// spnego.Client: it follows a redirect with the body, delegation token
// included, and a ticket made for the first host, retries a 401 without
// bound, and changes the http.Client it is given). A 3xx is an error
// naming where it pointed; a 401 or 403 is the RM's refusal (refused).
func (e *yarnExecutor) sendKerberized(req *http.Request) (*http.Response, error) {
	if e.krbHTTP == nil {
		e.krbHTTP = &http.Client{Timeout: e.client.Timeout, Transport: e.client.Transport,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if err := e.authorize(req); err != nil {
		return nil, fmt.Errorf("a Kerberos ticket for HTTP/%s: %w", req.URL.Hostname(), err)
	}
	resp, err := e.krbHTTP.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 == 3 {
		resp.Body.Close()
		return nil, fmt.Errorf("%s %s answered %s to %q: not followed with Kerberos credentials (give the active ResourceManager's address)",
			req.Method, req.URL.Redacted(), resp.Status, resp.Header.Get("Location"))
	}
	return resp, nil
}

// stageKeytab writes the keytab into the application's directory, the
// user's alone: created 0400 (never readable by others, not even for the
// moment between a create and a chmod) in a 0700 directory (stageBinary
// made it). It is the last file staged before the submission, so a
// submitter killed on the way leaves it behind as rarely as can be.
func (e *yarnExecutor) stageKeytab(fs fsys.FS, appDir string, s *yarnSecurity) error {
	name := path.Join(appDir, yarnKeytab)
	w, err := fsys.CreateMode(fs, name, 0o400)
	if err != nil {
		return fmt.Errorf("yarn: staging the keytab: %w", err)
	}
	if _, err := w.Write(s.keytab); err != nil {
		w.Close()
		fs.RemoveAll(name)
		return fmt.Errorf("yarn: staging the keytab: %w", err)
	}
	if err := w.Close(); err != nil {
		fs.RemoveAll(name)
		return fmt.Errorf("yarn: staging the keytab: %w", err)
	}
	return nil
}

// workerKerberosArgs are the worker's login flags in a container: the
// shipped keytab, by its name in the working directory. krb5.conf and
// the Hadoop configuration are the node's (KRB5_CONFIG or /etc/krb5.conf,
// HADOOP_CONF_DIR), as for every other client on it.
func (e *yarnExecutor) workerKerberosArgs(s *yarnSecurity) ([]string, error) {
	args := []string{"--hdfs-kerberos-principal"}
	q, err := shellQuote("the Kerberos principal", s.principal)
	if err != nil {
		return nil, err
	}
	args = append(args, q, "--hdfs-kerberos-keytab", yarnKeytab)
	if nn := e.opts.Kerberos.NameNodePrincipal; nn != "" {
		q, err := shellQuote("the NameNode's principal", nn)
		if err != nil {
			return nil, err
		}
		args = append(args, "--dfs-namenode-kerberos-principal", q)
	}
	return args, nil
}

// credentials is the am-container-spec's credentials: the HDFS token.
func (s *yarnSecurity) credentials() map[string]any {
	type entry struct {
		Key   string `json:"key"`
		Value string `json:"value"`
	}
	return map[string]any{
		"tokens":  map[string]any{"entry": []entry{{"tributary-hdfs", s.token.URLString()}}},
		"secrets": map[string]any{"entry": []entry{}},
	}
}

// refused explains a ResourceManager's 401/403.
func (e *yarnExecutor) refused(resp *http.Response) error {
	if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
		return nil
	}
	if e.authorize == nil && strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Negotiate") {
		return fmt.Errorf("yarn: the ResourceManager at %s wants Kerberos (SPNEGO) and this submission has no Kerberos login: "+
			"give --hdfs-kerberos-principal and --hdfs-kerberos-keytab (hdfs.kerberos.*), or a HADOOP_CONF_DIR with hadoop.security.authentication=kerberos (%s)",
			e.cfg.ResourceManager, resp.Status)
	}
	if e.authorize != nil {
		return fmt.Errorf("yarn: the ResourceManager at %s refused our Kerberos credentials (%s): is HTTP/<its host> its SPNEGO principal, and is the user allowed to submit?", e.cfg.ResourceManager, resp.Status)
	}
	return nil
}

// checkRMScheme refuses a Kerberized submission to an http://
// ResourceManager unless allowed: the submission's body carries the
// application's HDFS delegation token (the user's HDFS identity for the
// whole run, and with it the keytab in staging), and the Authorization
// header a replayable SPNEGO ticket.
func checkRMScheme(rm string, allowHTTP bool) error {
	u, err := url.Parse(rm)
	if err != nil {
		return err
	}
	if u.Scheme == "https" || allowHTTP {
		return nil
	}
	return fmt.Errorf("yarn: the ResourceManager %s is plain http and this cluster is Kerberized: the application's HDFS delegation token and the Kerberos tickets would cross the network in clear; "+
		"give its https:// address (yarn.http.policy=HTTPS_ONLY on the cluster), or set yarn.allow_insecure_http: true (--yarn-allow-insecure-http) on a network you trust", rm)
}
