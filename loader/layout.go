package loader

import (
	"fmt"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/tributary-io/tributary/internal/fsys"
)

// Paths under the target. They are part of the on-disk contract: a newer
// loader must read what an older one wrote.
const (
	metaDir    = "_tributary"
	plansDir   = metaDir + "/plans"
	stagingDir = metaDir + "/staging"
	stateDir   = metaDir + "/state"
	runsDir    = metaDir + "/runs"
	errorsDir  = "_errors"
	successTag = "_SUCCESS"
)

var jobName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$`)

// ValidJob checks a job name: it names files and a consumer group.
func ValidJob(job string) error {
	if !jobName.MatchString(job) {
		return fmt.Errorf("job name %q: use letters, digits, '.', '_' and '-' (at most 100), starting with a letter or digit", job)
	}
	return nil
}

// GroupID is the consumer group under which a job's offsets are committed
// to the broker, so that `tributary group describe` shows its lag.
func GroupID(job string) string { return "tributary-loader." + job }

func planPath(run string) string  { return plansDir + "/" + run + ".json" }
func statePath(job string) string { return stateDir + "/" + job + ".json" }
func runDir(run string) string    { return runsDir + "/" + run }
func stagingRun(run string) string {
	return stagingDir + "/" + run
}
func unitDir(run string, unit int) string {
	return fmt.Sprintf("%s/unit-%06d", stagingRun(run), unit)
}

// unitDone is the result file of one attempt at a unit. A unit is done when
// any attempt's result is complete; attempts never share a file, so no
// file is ever torn by a second writer, and a result torn by a crash is
// simply not complete (a prefix of a JSON object never parses).
func unitDone(run string, unit int, attempt string) string {
	return fmt.Sprintf("%s/%s.done.json", unitDir(run, unit), attempt)
}

// newRunID names a run: the job, the time to the nanosecond, and a random
// tail. Runs of a job sort by name in the order they were planned, which is
// what OpenPlan relies on: a run planned after another, even within the
// same second, must sort after it (nextRunID makes sure).
func newRunID(job string, now time.Time) string {
	return fmt.Sprintf("%s-%s-%s", job, now.UTC().Format(runTimeLayout), randomHex(3))
}

// runTimeLayout keeps every digit, so that names sort as times do.
const runTimeLayout = "20060102T150405.000000000Z"

// runTime is the planning time a run id carries, in either layout: runs
// planned before ids kept nanoseconds have whole seconds.
func runTime(run string) (time.Time, bool) {
	i := strings.LastIndexByte(run, '-')
	j := strings.LastIndexByte(run[:max(i, 0)], '-')
	if j < 0 {
		return time.Time{}, false
	}
	for _, layout := range []string{runTimeLayout, "20060102T150405Z"} {
		if t, err := time.Parse(layout, run[j+1:i]); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// runJob is the job of a run id; ok is false for a name that is not one.
func runJob(run string) (string, bool) {
	i := strings.LastIndexByte(run, '-')
	if i <= 0 {
		return "", false
	}
	j := strings.LastIndexByte(run[:i], '-')
	if j <= 0 {
		return "", false
	}
	return run[:j], true
}

// hourDir is the directory of an event hour of a topic.
func hourDir(topic string, hour time.Time) string {
	return path.Join(topic, hour.Format("dt=2006-01-02"), hour.Format("hr=15"))
}

// dataFileName carries what makes the file unique and its content
// reproducible: rerunning a unit writes the same names.
func dataFileName(topic string, partition int32, first, last int64) string {
	return fmt.Sprintf("%s+%d+%d+%d.parquet", topic, partition, first, last)
}

var dataFileRE = regexp.MustCompile(`^(.+)\+(\d+)\+(\d+)\+(\d+)\.parquet$`)

// parseDataFileName reads a name dataFileName made.
func parseDataFileName(name string) (topic string, partition int32, first, last int64, ok bool) {
	m := dataFileRE.FindStringSubmatch(name)
	if m == nil {
		return "", 0, 0, 0, false
	}
	var p int64
	fmt.Sscan(m[2], &p)
	fmt.Sscan(m[3], &first)
	fmt.Sscan(m[4], &last)
	return m[1], int32(p), first, last, true
}

func errorsFile(topic string, partition int32, from, to int64) string {
	return fmt.Sprintf("%s/%s/%s+%d+%d+%d.jsonl", errorsDir, topic, topic, partition, from, to-1)
}

func isNotExist(err error) bool { return err != nil && fsys.IsNotExist(err) }

func isExist(err error) bool { return err != nil && fsys.IsExist(err) }

// PlanURI is the URI of a saved plan, what `load worker --plan` takes.
func PlanURI(target, run string) string {
	return strings.TrimSuffix(target, "/") + "/" + planPath(run)
}

// ParsePlanURI splits a plan's URI into the target and the run.
func ParsePlanURI(uri string) (target, run string, err error) {
	i := strings.LastIndex(uri, "/"+plansDir+"/")
	if i < 0 || !strings.HasSuffix(uri, ".json") {
		return "", "", fmt.Errorf("--plan %q: want <target>/%s/<run>.json", uri, plansDir)
	}
	return uri[:i], strings.TrimSuffix(uri[i+len(plansDir)+2:], ".json"), nil
}
