package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"

	"github.com/tributary-io/tributary/jobs"
	"github.com/tributary-io/tributary/loader"
)

// executorFlags choose where `load run` executes a plan's units: here, or
// as one YARN application (the same settings as a job's yarn: block).
type executorFlags struct {
	executor string
	yarn     jobs.YARN
}

func (f *executorFlags) add(fs *pflag.FlagSet) {
	fs.StringVar(&f.executor, "executor", jobs.ExecLocal, "where the units run: local (this process) or yarn (one YARN application, --yarn-* flags; docs/jobs.md)")
	y := &f.yarn
	fs.StringVar(&y.ResourceManager, "yarn-resource-manager", "", "the ResourceManager's web address, http://host:8088 (--executor yarn)")
	fs.StringVar(&y.AMJar, "yarn-am-jar", "", "DistributedShell's jar, hadoop-yarn-applications-distributedshell-<version>.jar: a local path or hdfs:// under the staging dir")
	fs.StringVar(&y.Queue, "yarn-queue", "", "YARN queue (default: the scheduler's)")
	fs.IntVar(&y.Priority, "yarn-priority", 0, "YARN application priority")
	fs.IntVar(&y.ContainerMemoryMB, "yarn-container-memory-mb", jobs.DefaultYARNContainerMemoryMB, "memory of each worker container, MB")
	fs.IntVar(&y.ContainerVCores, "yarn-container-vcores", jobs.DefaultYARNContainerVCores, "vcores of each worker container")
	fs.IntVar(&y.MaxContainers, "yarn-max-containers", 0, "most worker containers (default --parallelism; never more than the plan's units)")
	fs.IntVar(&y.AMMemoryMB, "yarn-am-memory-mb", jobs.DefaultYARNAMMemoryMB, "memory of the ApplicationMaster's container, MB")
	fs.IntVar(&y.ContainerRetries, "yarn-container-retries", jobs.DefaultYARNContainerRetries, "how often a failed worker is rerun in its container")
	fs.StringVar(&y.ClassPath, "yarn-classpath", "", "the ApplicationMaster's CLASSPATH (default: yarn.application.classpath of a standard Hadoop install)")
	fs.StringVar(&y.Staging, "yarn-staging", "", "HDFS staging dir for the binary and the AM's jar (default <target>/_tributary/yarn)")
	fs.StringVar(&y.User, "yarn-user", "", "user the application is submitted as (default --hdfs-user)")
	fs.BoolVar(&y.AllowInsecureHTTP, "yarn-allow-insecure-http", false, "on a Kerberized cluster, submit to an http:// ResourceManager anyway: the application's HDFS delegation token and the Kerberos tickets cross the network in clear (default: refused; use its https:// address, yarn.http.policy=HTTPS_ONLY)")
	fs.StringVar(&y.ResourceManagerPrincipal, "yarn-resource-manager-principal", "", "the ResourceManager's Kerberos principal, e.g. rm/_HOST@EXAMPLE.COM: the renewer of the application's HDFS delegation token (Kerberized YARN; default: yarn-site.xml's yarn.resourcemanager.principal in HADOOP_CONF_DIR; docs/jobs.md)")
}

// hook sets the loader's Execute hook for --executor yarn, with progress
// on w: the application's state as it changes, and the units' records as
// they finish (the workers run elsewhere, so records count per unit).
func (f *executorFlags) hook(w io.Writer, lf *loadFlags, l *loader.Loader) (stop func(), err error) {
	switch f.executor {
	case jobs.ExecLocal:
		return func() {}, nil
	case jobs.ExecYARN:
	default:
		return nil, fmt.Errorf("--executor %q: want local or yarn", f.executor)
	}
	if !strings.HasPrefix(lf.target, "hdfs://") {
		return nil, fmt.Errorf("--executor yarn: --target %q must be on HDFS (hdfs://namenode:port/path), where the containers read the plan", lf.target)
	}
	bin, err := os.Executable()
	if err != nil {
		return nil, err
	}
	opts := lf.hdfs
	opts.BlockSize = int64(lf.hdfsBlock)
	var mu sync.Mutex
	last := ""
	run := jobs.YARNRun{Config: f.yarn, Parallelism: lf.parallelism, Target: l.FS.String(), FS: opts, Bootstrap: lf.bootstrap, Binary: bin,
		Record: func(a jobs.Application) {
			line := fmt.Sprintf("YARN application %s: %s", a.ID, a.State)
			if a.FinalStatus != "" && a.FinalStatus != "UNDEFINED" {
				line += "/" + a.FinalStatus
			}
			line += fmt.Sprintf(", %d worker containers asked", a.Containers)
			if len(a.ContainerIDs) > 0 {
				line += fmt.Sprintf(", %d seen", len(a.ContainerIDs))
			}
			if !a.FirstContainer.IsZero() {
				line += fmt.Sprintf(", first worker running %.1fs after the plan", a.FirstContainer.Sub(a.Started).Seconds())
			}
			if a.BinaryReused {
				line += " (binary already on HDFS)"
			}
			if a.BinaryReturned {
				line += " (binary kept on HDFS for the next run)"
			}
			mu.Lock()
			defer mu.Unlock()
			if line != last {
				last = line
				fmt.Fprintf(w, "\r%s\n", line)
			}
		}}
	exec, err := run.Execute()
	if err != nil {
		return nil, err
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	l.Hooks.Execute = func(ctx context.Context, p *loader.Plan, parallelism int) error {
		if l.Progress != nil {
			l.Progress.Total.Store(p.Records())
			wg.Go(func() { followUnits(l, p, done) })
		}
		return exec(ctx, p, parallelism)
	}
	return func() { close(done); wg.Wait() }, nil
}

// followUnits counts the records of the plan's finished units into the
// loader's progress until done is closed.
func followUnits(l *loader.Loader, p *loader.Plan, done chan struct{}) {
	finished := make([]bool, len(p.Units))
	for {
		for i := range p.Units {
			if !finished[i] {
				if n, ok := l.UnitDone(p, i); ok {
					finished[i] = true
					l.Progress.Records.Add(n)
				}
			}
		}
		select {
		case <-done:
			return
		case <-time.After(time.Second):
		}
	}
}
