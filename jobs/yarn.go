package jobs

// The yarn executor: a plan's units as one YARN application.
//
// The planner and the commit stay in the scheduler (loader.Run); only the
// units move. Submission goes through the ResourceManager's REST API
// (/ws/v1/cluster/apps/new-application, then POST /ws/v1/cluster/apps), so
// the tributary binary needs no Java client. The ApplicationMaster is
// Hadoop's own DistributedShell (hadoop-yarn-applications-distributedshell,
// the same version as the cluster): it asks for N containers and runs one
// shell command in each. Why DistributedShell and not an AM of our own: an
// AM speaks the AMRM and NM protocols (Hadoop RPC with protobuf and SASL
// tokens); DistributedShell is maintained with YARN, and the one thing it
// lacks, a per-container index, the command derives from the container id.
//
// What reaches HDFS (the staging dir, by default <target>/_tributary/yarn):
//
//	lib/<am jar>                          the AM's jar, uploaded once
//	bin/<sha256>/<application id>         copies of the binary, uploaded once per content
//	tributary/<application id>/tributary  the binary while the application runs
//	tributary/<application id>/shellCommands  the worker command (Java's writeUTF)
//
// DistributedShell localizes a container's files only from
// <homedir>/<appname>/<application id>/ (its --localized_files): a copy of
// the binary is renamed there for the application's life and back after
// (yarn_binary.go); the directory is removed when the application ends.
//
// Each container runs
//
//	for try in 1 2 3 4; do ./tributary load worker --plan P --index $(( (10#${CONTAINER_ID##*_} - 2) % N )) --count N && exit 0; sleep 1; done; exit 1
//
// Container 1 is the AM, so the first attempt's workers are 2..N+1: index
// 0..N-1. A worker that fails or is killed is run again in its container by
// the loop (DistributedShell's own --container_retry_policy would not do:
// the NodeManager never relaunches a container whose process ended by
// SIGKILL or SIGTERM, exit 137 or 143, taking those for its own kills), so
// it keeps its index; a container the framework takes away (preemption, a
// lost node) is replaced by a new container whose id maps to some index
// again (DistributedShell asks for one more). An index run twice
// is harmless: a worker skips the units already done, and two attempts of
// one unit both complete and the commit takes one (loader.RunUnit). An index
// that no container ran leaves units without a result: the loader runs those
// itself before it commits (loader.Complete), so the run still ends exactly
// once, only slower.
//
// Failures: a ResourceManager that does not answer fails the attempt at
// once with its address in the error (the job's retries and schedule apply);
// an application that ends FAILED or KILLED fails the attempt with YARN's
// diagnostics, and the plan stays open for the next attempt or run, which
// resumes it. Cancelling the attempt (timeout, lost lease, shutdown) kills
// the application.

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/tributary-io/tributary/internal/fsys"
	"github.com/tributary-io/tributary/loader"
)

// ExecYARN runs a plan's units as one YARN application.
const ExecYARN = "yarn"

// YARN is a job's `yarn:` block.
type YARN struct {
	// ResourceManager is the RM's web address, http://host:8088.
	ResourceManager string `yaml:"resource_manager" json:"resourceManager"`
	// ResourceManagerPrincipal is the RM's Kerberos principal
	// (yarn.resourcemanager.principal, _HOST allowed): on a Kerberized
	// cluster, the renewer of the application's HDFS delegation token
	// (yarn_kerberos.go).
	ResourceManagerPrincipal string `yaml:"resource_manager_principal" json:"resourceManagerPrincipal,omitempty"`
	// AllowInsecureHTTP lets a Kerberized submission use an http://
	// ResourceManager: the application's HDFS delegation token and the
	// SPNEGO tickets then cross the network in clear (yarn_kerberos.go).
	AllowInsecureHTTP bool `yaml:"allow_insecure_http" json:"allowInsecureHttp,omitempty"`
	// User submits the application (?user.name=, simple authentication);
	// default: the job's HDFS user.
	User     string `yaml:"user" json:"user,omitempty"`
	Queue    string `yaml:"queue" json:"queue,omitempty"`
	Priority int    `yaml:"priority" json:"priority,omitempty"`
	// ContainerMemoryMB and ContainerVCores size each worker container.
	ContainerMemoryMB int `yaml:"container_memory_mb" json:"containerMemoryMB,omitempty"`
	ContainerVCores   int `yaml:"container_vcores" json:"containerVCores,omitempty"`
	// MaxContainers caps the worker containers; default the job's
	// parallelism. Never more than the plan's units.
	MaxContainers int `yaml:"max_containers" json:"maxContainers,omitempty"`
	// ContainerRetries is how often a worker that failed or was killed is
	// run again in its container.
	ContainerRetries int `yaml:"container_retries" json:"containerRetries,omitempty"`
	AMMemoryMB       int `yaml:"am_memory_mb" json:"amMemoryMB,omitempty"`
	// AMJar is DistributedShell's jar: a local path (uploaded to Staging
	// once) or an hdfs:// URI on the cluster's default file system.
	AMJar string `yaml:"am_jar" json:"amJar"`
	// ClassPath is the AM container's CLASSPATH, YARN's {{VAR}} and <CPS>
	// allowed; default: Hadoop's yarn.application.classpath of a standard
	// install.
	ClassPath string `yaml:"classpath" json:"classpath,omitempty"`
	// Staging is an HDFS directory on the cluster's default file system
	// (the AM resolves DistributedShell's files there); default
	// <target>/_tributary/yarn.
	Staging string `yaml:"staging" json:"staging,omitempty"`
	// Binary is the tributary executable to ship (default: the
	// scheduler's own). Containers need a Linux binary of their
	// architecture.
	Binary string `yaml:"binary" json:"binary,omitempty"`
}

// Defaults of the yarn block.
const (
	DefaultYARNContainerMemoryMB = 1024
	DefaultYARNContainerVCores   = 1
	DefaultYARNAMMemoryMB        = 512
	DefaultYARNContainerRetries  = 3
	// DefaultYARNClassPath is yarn.application.classpath's default.
	DefaultYARNClassPath = "{{HADOOP_CONF_DIR}}<CPS>{{HADOOP_COMMON_HOME}}/share/hadoop/common/*<CPS>{{HADOOP_COMMON_HOME}}/share/hadoop/common/lib/*" +
		"<CPS>{{HADOOP_HDFS_HOME}}/share/hadoop/hdfs/*<CPS>{{HADOOP_HDFS_HOME}}/share/hadoop/hdfs/lib/*" +
		"<CPS>{{HADOOP_YARN_HOME}}/share/hadoop/yarn/*<CPS>{{HADOOP_YARN_HOME}}/share/hadoop/yarn/lib/*"
	yarnAppName = "tributary"
	// yarnLostAfter is how long an RM that stopped answering is waited for
	// (a restart, an HA failover) before the attempt fails.
	yarnLostAfter = 2 * time.Minute
	yarnAMClass   = "org.apache.hadoop.yarn.applications.distributedshell.ApplicationMaster"
)

// validate fills the defaults in and checks the block.
func (y *YARN) validate(parallelism int) error {
	u, err := url.Parse(y.ResourceManager)
	if y.ResourceManager == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("yarn.resource_manager %q: want the ResourceManager's web address, http://host:8088", y.ResourceManager)
	}
	if y.AMJar == "" {
		return fmt.Errorf("yarn.am_jar: want the path of hadoop-yarn-applications-distributedshell-<version>.jar (docs/jobs.md)")
	}
	def := func(v *int, d int, name string) error {
		if *v == 0 {
			*v = d
		}
		if *v < 0 {
			return fmt.Errorf("yarn.%s %d: want a positive number", name, *v)
		}
		return nil
	}
	return errors.Join(
		def(&y.ContainerMemoryMB, DefaultYARNContainerMemoryMB, "container_memory_mb"),
		def(&y.ContainerVCores, DefaultYARNContainerVCores, "container_vcores"),
		def(&y.AMMemoryMB, DefaultYARNAMMemoryMB, "am_memory_mb"),
		def(&y.MaxContainers, parallelism, "max_containers"),
		def(&y.ContainerRetries, DefaultYARNContainerRetries, "container_retries"),
	)
}

// Application is a YARN application that ran (some of) an attempt's units,
// as the run history keeps it.
type Application struct {
	ID          string `json:"id"`
	Queue       string `json:"queue,omitempty"`
	State       string `json:"state"`
	FinalStatus string `json:"finalStatus,omitempty"`
	Diagnostics string `json:"diagnostics,omitempty"`
	TrackingURL string `json:"trackingUrl,omitempty"`
	Containers  int    `json:"containers"` // worker containers asked for
	// Started is when the executor got the saved plan; Submitted when the
	// RM accepted the application (the uploads are in between).
	Started   time.Time `json:"started"`
	Submitted time.Time `json:"submitted"`
	// FirstContainer is when the first worker container ran, if seen.
	FirstContainer time.Time `json:"firstContainer,omitzero"`
	Ended          time.Time `json:"ended,omitzero"`
	// ContainerIDs are the containers seen running (the AM's included).
	ContainerIDs []string `json:"containerIds,omitempty"`
	// ContainerLogs are their log URLs on the NodeManagers, as the RM
	// reports them (served by the NodeManager while the application's logs
	// are kept there; with log aggregation, `yarn logs` has them after).
	ContainerLogs []string `json:"containerLogs,omitempty"`
	// Logs says where the containers' logs are.
	Logs string `json:"logs,omitempty"`
	// BinaryReused: the tributary binary was already on HDFS (a copy an
	// earlier application gave back), not uploaded for this one.
	BinaryReused bool `json:"binaryReused,omitempty"`
	// BinaryReturned: the binary went back to the cache for the next
	// application before this one's AM deleted its directory.
	BinaryReturned bool `json:"binaryReturned,omitempty"`
}

// yarnExecutor submits a plan's units as one DistributedShell application.
type yarnExecutor struct {
	cfg       YARN
	target    string // the job's target URI
	opts      fsys.Options
	bootstrap string
	hdfsUser  string
	bin       string
	client    *http.Client
	// authorize sets a REST call's SPNEGO header on a Kerberized cluster
	// (kerberos); nil without Kerberos. krbHTTP sends those calls.
	authorize func(*http.Request) error
	krbHTTP   *http.Client
	log       *slog.Logger
	// record publishes the application's state to the run record.
	record func(Application)
	// poll is the interval of status requests (default 250 ms).
	poll time.Duration
}

func (e *yarnExecutor) user() string {
	if e.cfg.User != "" {
		return e.cfg.User
	}
	if e.hdfsUser != "" {
		return e.hdfsUser
	}
	if u := os.Getenv("HADOOP_USER_NAME"); u != "" {
		return u
	}
	return "tributary"
}

func (e *yarnExecutor) staging() string {
	if e.cfg.Staging != "" {
		return strings.TrimRight(e.cfg.Staging, "/")
	}
	return strings.TrimRight(e.target, "/") + "/_tributary/yarn"
}

func (e *yarnExecutor) execute(ctx context.Context, p *loader.Plan, parallelism int) error {
	began := time.Now()
	n := max(1, min(e.cfg.MaxContainers, len(p.Units)))
	rm := strings.TrimRight(e.cfg.ResourceManager, "/")
	if e.client == nil {
		e.client = &http.Client{Timeout: 30 * time.Second}
	}
	if e.poll == 0 {
		e.poll = 250 * time.Millisecond
	}

	staging := e.staging()
	fs, err := fsys.Open(staging, e.opts)
	if err != nil {
		return fmt.Errorf("yarn: staging dir %s: %w", staging, err)
	}
	defer fs.Close()
	if err := checkStagingRoot(fs, staging); err != nil {
		return err
	}
	sec, err := e.kerberos(fs, rm)
	if err != nil {
		return err
	}
	posted := false
	if sec != nil {
		// The RM cancels the token of an application it ran
		// (cancel-tokens-when-complete); one never submitted is ours to.
		defer func() {
			if !posted {
				if err := fsys.CancelDelegationToken(fs, sec.token); err != nil {
					e.log.Warn("cancelling the unused HDFS delegation token", "err", err)
				}
			}
		}()
	}
	// Refused before the RM is asked: a value that cannot be quoted must
	// not leave an application behind.
	command, err := e.workerCommand(p, n, sec)
	if err != nil {
		return err
	}
	// The RM before any upload: down, it fails the attempt with nothing
	// left behind.
	var newApp struct {
		ID string `json:"application-id"`
	}
	if err := e.call(ctx, http.MethodPost, rm+"/ws/v1/cluster/apps/new-application", nil, &newApp); err != nil {
		return err
	}
	appID := newApp.ID
	// The RM answers: a good moment to clear what killed submitters left.
	e.sweep(ctx, fs, rm)
	amJar, err := e.stageAMJar(fs, staging)
	if err != nil {
		return err
	}
	appDir := path.Join(yarnAppName, appID)
	// Localized by the AM from <homedir>/<appname>/<app id>/ (yarn_binary.go).
	reused, giveBack, err := e.stageBinary(fs, staging, path.Join(appDir, "tributary"), appID)
	if err != nil {
		fs.RemoveAll(appDir)
		return err
	}
	localized := "tributary"
	if sec != nil {
		localized += "," + yarnKeytab
	}
	var app Application
	units := e.unitsDone(p)
	defer func() {
		// A lost RM leaves the application's end unknown: its containers
		// may still localize the binary, so it is not taken back.
		if app.ID == "" || !app.Ended.IsZero() {
			giveBack()
		}
		units.close()
		if err := fs.RemoveAll(appDir); err != nil {
			e.log.Warn("removing the application's staging dir", "dir", staging+"/"+appDir, "err", err)
		}
	}()
	cmdRes, err := e.upload(fs, staging, path.Join(appDir, "shellCommands"), func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(writeUTF(command))), nil
	})
	if err != nil {
		return fmt.Errorf("yarn: uploading the worker command: %w", err)
	}
	if sec != nil {
		// Last before the submission (the defer above removes it).
		if err := e.stageKeytab(fs, appDir, sec); err != nil {
			return err
		}
	}

	cp := e.cfg.ClassPath
	if cp == "" {
		cp = DefaultYARNClassPath
	}
	// C1 only and the serial collector: the AM mostly waits, and its JVM's
	// start is most of the time to the first worker container.
	am := []string{"{{JAVA_HOME}}/bin/java", fmt.Sprintf("-Xmx%dm", max(64, e.cfg.AMMemoryMB*3/4)),
		"-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xshare:auto", yarnAMClass,
		"--appname", yarnAppName, "--homedir", homeDir(staging), "--localized_files", localized,
		"--container_memory", fmt.Sprint(e.cfg.ContainerMemoryMB), "--container_vcores", fmt.Sprint(e.cfg.ContainerVCores),
		"--num_containers", fmt.Sprint(n), "--priority", fmt.Sprint(e.cfg.Priority),
		// The worker command retries the worker itself (workerCommand): a
		// NodeManager relaunch on top would multiply the tries.
		"--container_retry_policy", "0",
	}
	for _, kv := range e.workerEnv() {
		am = append(am, "--shell_env", kv)
	}
	am = append(am, "1><LOG_DIR>/AppMaster.stdout", "2><LOG_DIR>/AppMaster.stderr")
	type entry struct {
		Key   string `json:"key"`
		Value any    `json:"value"`
	}
	sub := map[string]any{
		"application-id":   appID,
		"application-name": fmt.Sprintf("tributary load %s %s", p.Job, p.Run),
		"application-type": "TRIBUTARY",
		"priority":         e.cfg.Priority,
		"max-app-attempts": 2,
		// The RM's default, said: it cancels the HDFS token at the end.
		"cancel-tokens-when-complete": true,
		"resource":                    map[string]int{"memory": e.cfg.AMMemoryMB, "vCores": 1},
		"am-container-spec": map[string]any{
			"local-resources": map[string]any{"entry": []entry{
				{"AppMaster.jar", amJar},
				{"shellCommands", cmdRes},
			}},
			"environment": map[string]any{"entry": []entry{
				{"CLASSPATH", "{{CLASSPATH}}<CPS>./*<CPS>" + cp},
			}},
			"commands": map[string]string{"command": strings.Join(am, " ")},
		},
	}
	if e.cfg.Queue != "" {
		sub["queue"] = e.cfg.Queue
	}
	if sec != nil {
		sub["am-container-spec"].(map[string]any)["credentials"] = sec.credentials()
	}
	body, _ := json.Marshal(sub)
	submitted := time.Now()
	if err := e.call(ctx, http.MethodPost, rm+"/ws/v1/cluster/apps", body, nil); err != nil {
		return err
	}
	posted = true
	app = Application{ID: appID, State: "SUBMITTED", Containers: n, Started: began.UTC(), Submitted: submitted.UTC(), Queue: e.cfg.Queue,
		BinaryReused: reused}
	e.record(app)
	e.log.Info("YARN application submitted", "run", p.Run, "application", appID, "containers", n, "units", len(p.Units))
	workers := &localizedWorkers{want: n, done: map[string]bool{}}
	err = e.follow(ctx, rm, &app, func(cs []yarnContainer) {
		// DistributedShell's AM deletes its application's directory when
		// it ends, binary and all: the binary goes back to the cache once
		// no container needs it (yarn_localized.go).
		if app.BinaryReturned {
			return
		}
		if e.workersLocalized(ctx, rm, cs, workers) || units.all() {
			if giveBack() {
				app.BinaryReturned = true
				e.record(app)
			}
		}
	})
	units.last = time.Time{}
	if err != nil && app.State == "FINISHED" && units.all() {
		// The work is done and the commit checks it: a container that
		// failed after (one that could not localize the binary given back,
		// say) does not fail the attempt.
		e.log.Warn("YARN application ended unsuccessfully, but every unit has a result", "application", app.ID, "err", err)
		return nil
	}
	return err
}

// follow polls the application to its end.
func (e *yarnExecutor) follow(ctx context.Context, rm string, app *Application, running func([]yarnContainer)) error {
	seen := map[string]bool{}
	last := ""
	var lostSince time.Time
	for {
		select {
		case <-ctx.Done():
			e.kill(rm, app.ID)
			app.State, app.Ended = "KILLED", time.Now().UTC()
			app.Diagnostics = "killed by tributary: " + context.Cause(ctx).Error()
			e.record(*app)
			return ctx.Err()
		case <-time.After(e.poll):
		}
		var r struct {
			App struct {
				State             string `json:"state"`
				FinalStatus       string `json:"finalStatus"`
				Diagnostics       string `json:"diagnostics"`
				TrackingURL       string `json:"trackingUrl"`
				Queue             string `json:"queue"`
				RunningContainers int    `json:"runningContainers"`
				AMContainerLogs   string `json:"amContainerLogs"`
			} `json:"app"`
		}
		if err := e.call(ctx, http.MethodGet, rm+"/ws/v1/cluster/apps/"+app.ID, nil, &r); err != nil {
			if ctx.Err() != nil {
				continue
			}
			// The RM may restart under a long run; the application
			// survives it (work-preserving recovery) or is reported lost
			// below. Keep asking until the attempt's own timeout.
			// Not forever, though: a job without a timeout would hang.
			if lostSince.IsZero() {
				lostSince = time.Now()
			}
			if time.Since(lostSince) > yarnLostAfter {
				// Ask once more to kill it, in case the RM is back: its
				// workers would otherwise run beside the next attempt's.
				e.kill(rm, app.ID)
				return fmt.Errorf("yarn: lost the ResourceManager for %s while application %s ran (the plan stays open; the next attempt resumes it): %w",
					yarnLostAfter, app.ID, err)
			}
			e.log.Warn("asking the ResourceManager for the application", "application", app.ID, "err", err)
			continue
		}
		lostSince = time.Time{}
		a := r.App
		app.State, app.FinalStatus, app.Diagnostics, app.TrackingURL, app.Queue = a.State, a.FinalStatus, a.Diagnostics, a.TrackingURL, a.Queue
		if a.AMContainerLogs != "" {
			app.Logs = "yarn logs -applicationId " + app.ID + " (AM: " + a.AMContainerLogs + ")"
		}
		if a.RunningContainers > 1 && app.FirstContainer.IsZero() {
			app.FirstContainer = time.Now().UTC()
			e.log.Info("YARN worker containers running", "application", app.ID, "after", app.FirstContainer.Sub(app.Submitted))
		}
		if a.State == "RUNNING" {
			cs := e.containers(ctx, rm, app.ID)
			for _, c := range cs {
				if !seen[c.ID] {
					seen[c.ID] = true
					app.ContainerIDs = append(app.ContainerIDs, c.ID)
					if c.LogURL != "" {
						app.ContainerLogs = append(app.ContainerLogs, c.LogURL)
					}
				}
			}
			running(cs)
		}
		switch a.State {
		case "FINISHED", "FAILED", "KILLED":
			app.Ended = time.Now().UTC()
			e.record(*app)
			if a.State == "FINISHED" && a.FinalStatus == "SUCCEEDED" {
				return nil
			}
			return fmt.Errorf("yarn: application %s ended %s/%s (the plan stays open; the next attempt resumes it): %s",
				app.ID, a.State, a.FinalStatus, strings.TrimSpace(a.Diagnostics))
		}
		if s := a.State + fmt.Sprint(len(app.ContainerIDs)) + fmt.Sprint(!app.FirstContainer.IsZero()); s != last {
			last = s
			e.record(*app)
		}
	}
}

// containers lists the running containers of the application's current
// attempt (RM REST: appattempts, then their containers).
func (e *yarnExecutor) containers(ctx context.Context, rm, appID string) []yarnContainer {
	var at struct {
		AppAttempts struct {
			AppAttempt []struct {
				ID string `json:"appAttemptId"`
			} `json:"appAttempt"`
		} `json:"appAttempts"`
	}
	if err := e.call(ctx, http.MethodGet, rm+"/ws/v1/cluster/apps/"+appID+"/appattempts", nil, &at); err != nil || len(at.AppAttempts.AppAttempt) == 0 {
		return nil
	}
	id := at.AppAttempts.AppAttempt[len(at.AppAttempts.AppAttempt)-1].ID
	var cs struct {
		Container []yarnContainer `json:"container"`
	}
	if err := e.call(ctx, http.MethodGet, rm+"/ws/v1/cluster/apps/"+appID+"/appattempts/"+id+"/containers", nil, &cs); err != nil {
		return nil
	}
	return cs.Container
}

// yarnContainer is a container of the RM's appattempts API.
type yarnContainer struct {
	ID     string `json:"containerId"`
	LogURL string `json:"logUrl"`
	// NodeHTTPAddress is its NodeManager's web address (with the scheme,
	// from RM 2.8 on).
	NodeHTTPAddress string `json:"nodeHttpAddress"`
}

// kill asks the RM to kill the application; best effort, with its own
// deadline (the attempt's context is done).
func (e *yarnExecutor) kill(rm, appID string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := e.call(ctx, http.MethodPut, rm+"/ws/v1/cluster/apps/"+appID+"/state", []byte(`{"state":"KILLED"}`), nil); err != nil {
		e.log.Warn("killing the YARN application", "application", appID, "err", err)
	}
}

// workerCommand is the shell command of every worker container: the
// worker, retried in the container up to ContainerRetries times. The
// NodeManager relaunches a container whose command failed, but not one
// that ended by SIGKILL or SIGTERM (exit 137, 143: it takes those for its
// own kills), so a worker killed under the shell is rerun by the shell.
func (e *yarnExecutor) workerCommand(p *loader.Plan, n int, sec *yarnSecurity) (string, error) {
	// The index is expanded by the container's launch script, which has
	// CONTAINER_ID exported; a shell variable set in the command itself
	// would be expanded there too, before it is set.
	index := fmt.Sprintf("$(( (10#${CONTAINER_ID##*_} - 2) %% %d ))", n)
	args := []string{"./tributary", "load", "worker", "--plan"}
	plan, err := shellQuote("the plan URI (target)", loader.PlanURI(e.target, p.Run))
	if err != nil {
		return "", err
	}
	args = append(args, plan, "--index", index, "--count", fmt.Sprint(n))
	for _, f := range []struct{ flag, v string }{{"--bootstrap", e.bootstrap}, {"--hdfs-user", e.hdfsUser}} {
		if f.v == "" {
			continue
		}
		q, err := shellQuote(f.flag, f.v)
		if err != nil {
			return "", err
		}
		args = append(args, f.flag, q)
	}
	if sec != nil {
		krbArgs, err := e.workerKerberosArgs(sec)
		if err != nil {
			return "", err
		}
		args = append(args, krbArgs...)
	}
	tries := make([]string, e.cfg.ContainerRetries+1)
	for i := range tries {
		tries[i] = fmt.Sprint(i + 1)
	}
	// No double quotes and no $var: the NodeManager wraps the command in
	// bash -c "...".
	return fmt.Sprintf("for try in %s; do %s && exit 0; sleep 1; done; exit 1", strings.Join(tries, " "), strings.Join(args, " ")), nil
}

// shellQuote makes v one word of the worker command. The command passes
// two shells: the launch script's double quotes (bash -c "..."), where $,
// `, \ and " still act, then bash -c itself. Single quotes protect v from
// the second; nothing in double quotes can protect it from the first, so
// values with those characters (or a quote or line break) are refused, not
// escaped: a target, bootstrap list or user name never needs them.
func shellQuote(what, v string) (string, error) {
	if i := strings.IndexAny(v, "$`\\\"'\n\r\x00"); i >= 0 {
		return "", fmt.Errorf("yarn: %s %q: %q cannot be passed to a YARN container's shell command", what, v, v[i])
	}
	return "'" + v + "'", nil
}

// workerEnv is what the workers need in their environment.
func (e *yarnExecutor) workerEnv() []string {
	var env []string
	if e.hdfsUser != "" {
		env = append(env, "HADOOP_USER_NAME="+e.hdfsUser)
	}
	return env
}

func (e *yarnExecutor) binary() string {
	if e.cfg.Binary != "" {
		return e.cfg.Binary
	}
	return e.bin
}

// yarnResource is a LocalResource of the RM's REST API.
type yarnResource struct {
	Resource   string `json:"resource"`
	Type       string `json:"type"`
	Visibility string `json:"visibility"`
	Size       int64  `json:"size"`
	Timestamp  int64  `json:"timestamp"`
}

// stageAMJar puts the AM's jar into staging/lib once, and describes it.
func (e *yarnExecutor) stageAMJar(fs fsys.FS, staging string) (yarnResource, error) {
	if strings.Contains(e.cfg.AMJar, "://") {
		// Already on HDFS: it must be on the staging dir's file system.
		rel, ok := strings.CutPrefix(e.cfg.AMJar, staging+"/")
		if !ok {
			return yarnResource{}, fmt.Errorf("yarn.am_jar %s: give a local path, or an HDFS path under the staging dir %s", e.cfg.AMJar, staging)
		}
		return describe(fs, staging, rel)
	}
	rel := path.Join("lib", filepath.Base(e.cfg.AMJar))
	if r, err := describe(fs, staging, rel); err == nil {
		// The AM runs as the user with the application's tokens: a jar
		// of the right size is reused only if the user wrote it and it
		// holds the local bytes (yarn_binary.go's checkCopy, for the jar).
		if err := e.checkAMJar(fs, rel, r.Size); err == nil {
			return r, nil
		} else {
			e.log.Warn("uploading the ApplicationMaster's jar again", "file", staging+"/"+rel, "err", err)
		}
	}
	r, err := e.upload(fs, staging, rel, func() (io.ReadCloser, error) { return os.Open(e.cfg.AMJar) })
	if err != nil {
		return r, fmt.Errorf("yarn: uploading the ApplicationMaster's jar %s: %w", e.cfg.AMJar, err)
	}
	return r, nil
}

// checkAMJar checks the AM's jar on HDFS against the local one: the user
// owns it and nobody else can write it, same size, same HDFS checksum.
func (e *yarnExecutor) checkAMJar(fs fsys.FS, rel string, size int64) error {
	me, err := fsys.User(fs)
	if err != nil {
		return err
	}
	owner, perm, err := fsys.Owner(fs, rel)
	if err != nil {
		return err
	}
	if owner != me || perm&0o022 != 0 {
		return fmt.Errorf("owner %s, mode %v: want %s's, not group- or other-writable", owner, perm, me)
	}
	st, err := os.Stat(e.cfg.AMJar)
	if err != nil {
		return err
	}
	if st.Size() != size {
		return fmt.Errorf("%d bytes, the local jar has %d", size, st.Size())
	}
	sum, blockSize, err := fsys.Checksum(fs, rel)
	if errors.Is(err, fsys.ErrNoChecksum) {
		return nil
	}
	if err != nil {
		return err
	}
	f, err := os.Open(e.cfg.AMJar)
	if err != nil {
		return err
	}
	defer f.Close()
	want, err := fsys.LocalChecksum(f, blockSize)
	if err != nil {
		return err
	}
	if !bytes.Equal(sum, want) {
		return fmt.Errorf("HDFS checksum %x, the local jar's is %x", sum, want)
	}
	return nil
}

// upload writes a file into staging (a temporary name, then a rename, so
// a reader never sees it half written) and describes it.
func (e *yarnExecutor) upload(fs fsys.FS, staging, rel string, open func() (io.ReadCloser, error)) (yarnResource, error) {
	src, err := open()
	if err != nil {
		return yarnResource{}, err
	}
	defer src.Close()
	var b [6]byte
	rand.Read(b[:])
	tmp := rel + ".tmp-" + hex.EncodeToString(b[:])
	w, err := fs.Create(tmp)
	if err != nil {
		return yarnResource{}, err
	}
	if _, err := io.Copy(w, src); err != nil {
		w.Close()
		fs.RemoveAll(tmp)
		return yarnResource{}, err
	}
	if err := w.Close(); err != nil {
		fs.RemoveAll(tmp)
		return yarnResource{}, err
	}
	if err := fs.Rename(tmp, rel); err != nil {
		fs.RemoveAll(tmp)
		return yarnResource{}, err
	}
	return describe(fs, staging, rel)
}

// describe is the LocalResource of staging/rel: YARN checks its size and
// modification time against the file before it localizes it.
func describe(fs fsys.FS, staging, rel string) (yarnResource, error) {
	st, err := fs.Stat(rel)
	if err != nil {
		return yarnResource{}, err
	}
	return yarnResource{Resource: staging + "/" + rel, Type: "FILE", Visibility: "APPLICATION",
		Size: st.Size(), Timestamp: st.ModTime().UnixMilli()}, nil
}

// homeDir is DistributedShell's --homedir: the staging dir as a path on
// the cluster's default file system.
func homeDir(staging string) string {
	if u, err := url.Parse(staging); err == nil && u.Scheme != "" {
		return u.Path
	}
	return staging
}

// call makes one REST call to the RM; out, if not nil, gets the JSON answer.
func (e *yarnExecutor) call(ctx context.Context, method, u string, body []byte, out any) error {
	q := "?"
	if strings.Contains(u, "?") {
		q = "&"
	}
	req, err := http.NewRequestWithContext(ctx, method, u+q+"user.name="+url.QueryEscape(e.user()), bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	var resp *http.Response
	if e.authorize != nil {
		resp, err = e.sendKerberized(req)
	} else {
		resp, err = e.client.Do(req)
	}
	if err != nil {
		return fmt.Errorf("yarn: the ResourceManager at %s does not answer: %w", e.cfg.ResourceManager, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err := e.refused(resp); err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("yarn: %s %s: %s: %s", method, strings.TrimPrefix(u, e.cfg.ResourceManager), resp.Status, strings.TrimSpace(string(b)))
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("yarn: %s %s: %w", method, u, err)
		}
	}
	return nil
}

// writeUTF encodes s as Java's DataOutputStream.writeUTF does (a 2-byte
// length, then modified UTF-8, which is UTF-8 for what we write):
// DistributedShell reads its shellCommands file with readUTF.
func writeUTF(s string) []byte {
	b := make([]byte, 2, 2+len(s))
	binary.BigEndian.PutUint16(b, uint16(len(s)))
	return append(b, s...)
}

// recordApplication returns the yarn executor's record callback: the
// application goes into the current attempt of rec (added, or updated by
// id) and the record is written to the history, so `tributary jobs runs`
// shows the application while it runs.
func (s *Scheduler) recordApplication(st *jobState, j *Job, cfg *Config, rec *Record) func(Application) {
	return func(app Application) {
		s.mu.Lock()
		if n := len(rec.Attempts); n > 0 {
			a := &rec.Attempts[n-1]
			i := 0
			for i < len(a.Applications) && a.Applications[i].ID != app.ID {
				i++
			}
			if i == len(a.Applications) {
				a.Applications = append(a.Applications, app)
			} else {
				a.Applications[i] = app
			}
		}
		s.mu.Unlock()
		s.persist(st, j, cfg, rec, nil)
	}
}
