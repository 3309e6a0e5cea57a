package dump

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/tributary-io/tributary/broker/record"
)

// Options choose what Run prints and checks.
type Options struct {
	// Deep decodes every batch and prints each record (Kafka's
	// --deep-iteration).
	Deep bool
	// PrintData prints record keys and values; it implies Deep (Kafka's
	// --print-data-log).
	PrintData bool
	// Verify checks batches, index entries and time index entries against
	// the log, reports each mismatch as a Problem, and makes Run return
	// ErrVerify if there was any.
	Verify bool
	// JSON prints JSON Lines instead of Kafka's text format.
	JSON bool
}

// ErrVerify is returned (wrapped) by Run when --verify found problems.
var ErrVerify = errors.New("broker/log/dump: verification failed")

// Run dumps each path to out: a .log, .index or .timeindex file, or a
// partition directory, whose segment files are dumped in offset order. Every
// file is announced by its absolute path. In text, the problems Verify finds
// and the closing "Verified" line go to errw, as Kafka's reports do; in
// JSON, everything goes to out.
//
// A file that cannot be read does not stop the others: Run returns the
// errors of all files joined, plus ErrVerify if verification failed.
func Run(out, errw io.Writer, paths []string, opts Options) error {
	bw := bufio.NewWriter(out)
	d := &dumper{opts: opts, logs: make(map[string]*logScan)}
	if opts.PrintData {
		d.opts.Deep = true
	}
	if opts.JSON {
		d.p = newJSONPrinter(bw)
	} else {
		// Problems are interleaved with the dump only if both go to
		// the same place; flush the dump first to keep their order.
		d.p = &textPrinter{out: bw, err: flushFirst{bw, errw}}
	}
	var errs []error
	for _, path := range paths {
		files, err := expand(path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, f := range files {
			if err := d.dumpFile(f); err != nil {
				errs = append(errs, fmt.Errorf("broker/log/dump: %w", err))
			}
		}
	}
	d.p.summary(d.files, d.problems, opts.Verify)
	if d.problems > 0 {
		errs = append(errs, fmt.Errorf("%w: %d problems in %d files", ErrVerify, d.problems, d.files))
	}
	if err := bw.Flush(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// flushFirst flushes the buffered dump before writing to the error stream.
type flushFirst struct {
	buf *bufio.Writer
	w   io.Writer
}

func (f flushFirst) Write(p []byte) (int, error) {
	f.buf.Flush()
	return f.w.Write(p)
}

// expand makes path absolute (KAFKA-1121: say which file is dumped) and
// turns a directory into its segment files.
func expand(path string) ([]string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, fmt.Errorf("broker/log/dump: %s: %w", path, err)
	}
	st, err := os.Stat(abs)
	if errors.Is(err, fs.ErrNotExist) {
		// KAFKA-1009: a missing file is a one-line error naming it.
		return nil, fmt.Errorf("broker/log/dump: %s: %w", abs, fs.ErrNotExist)
	}
	if err != nil {
		return nil, fmt.Errorf("broker/log/dump: %w", err)
	}
	if !st.IsDir() {
		return []string{abs}, nil
	}
	files, err := segmentFiles(abs)
	if err != nil {
		return nil, fmt.Errorf("broker/log/dump: %w", err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("broker/log/dump: %s: no segment files (*%s, *%s, *%s) in directory", abs, LogSuffix, IndexSuffix, TimeIndexSuffix)
	}
	return files, nil
}

type dumper struct {
	opts     Options
	p        printer
	logs     map[string]*logScan // logs already read, for index verification
	files    int
	problems int
}

func (d *dumper) report(ps []Problem) {
	for i := range ps {
		d.p.problem(&ps[i])
	}
	d.problems += len(ps)
}

func (d *dumper) dumpFile(path string) error {
	kind := kindOf(path)
	if kind == KindUnknown {
		return fmt.Errorf("%s: not a segment file (want *%s, *%s or *%s)", path, LogSuffix, IndexSuffix, TimeIndexSuffix)
	}
	base, err := baseOffset(path)
	if err != nil {
		return err
	}
	d.files++
	d.p.file(path, kind, base)
	switch kind {
	case KindLog:
		return d.dumpLog(path, base)
	case KindIndex:
		return d.dumpIndex(path, base)
	default:
		return d.dumpTimeIndex(path, base)
	}
}

func (d *dumper) dumpLog(path string, base int64) error {
	var chk *logChecker
	if d.opts.Verify {
		chk = newLogChecker(path, base)
	}
	scan, err := scanLog(path, func(pos int64, b record.Batch) error {
		info := batchInfo(pos, b, b.CRC() == b.ComputeCRC())
		d.p.batch(path, &info)
		if chk != nil {
			verr := record.Validate(b, record.FromReplica, record.Limits{})
			d.report(chk.batch(pos, b, verr))
		}
		if d.opts.Deep {
			d.records(path, pos, b)
		}
		return nil
	})
	if err != nil {
		return err
	}
	d.logs[path] = scan
	if trailing := scan.size - scan.valid; trailing > 0 {
		d.p.note(path, fmt.Sprintf("Found %d invalid bytes at the end of %s", trailing, filepath.Base(path)))
	}
	if chk != nil {
		d.report(chk.end(scan))
	}
	return nil
}

// logFor reads the .log an index belongs to, once per run.
func (d *dumper) logFor(indexPath string) (*logScan, error) {
	lp := siblingLog(indexPath)
	if scan, ok := d.logs[lp]; ok {
		return scan, nil
	}
	scan, err := scanLog(lp, nil)
	if err != nil {
		return nil, fmt.Errorf("cannot verify %s without its log: %w", indexPath, err)
	}
	d.logs[lp] = scan
	return scan, nil
}

func (d *dumper) dumpIndex(path string, base int64) error {
	entries, trailing, err := readIndex(path, base)
	if err != nil {
		return err
	}
	if len(entries) == 0 && trailing == 0 {
		d.p.note(path, path+" is empty.")
	}
	for i := range entries {
		d.p.index(path, &entries[i])
	}
	if trailing > 0 {
		d.p.note(path, fmt.Sprintf("Found %d trailing bytes at the end of %s", trailing, filepath.Base(path)))
	}
	if !d.opts.Verify {
		return nil
	}
	scan, err := d.logFor(path)
	if err != nil {
		return err
	}
	d.report(verifyIndex(path, entries, trailing, scan))
	return nil
}

func (d *dumper) dumpTimeIndex(path string, base int64) error {
	entries, trailing, err := readTimeIndex(path, base)
	if err != nil {
		return err
	}
	// Unlike an empty .index, Kafka says nothing of an empty .timeindex.
	for i := range entries {
		d.p.timeIndex(path, &entries[i])
	}
	if trailing > 0 {
		d.p.note(path, fmt.Sprintf("Found %d trailing bytes at the end of %s", trailing, filepath.Base(path)))
	}
	if !d.opts.Verify {
		return nil
	}
	scan, err := d.logFor(path)
	if err != nil {
		return err
	}
	d.report(verifyTimeIndex(path, entries, trailing, scan))
	return nil
}
