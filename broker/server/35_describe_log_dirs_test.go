package server

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/tributary-io/tributary/broker/log"
)

func TestDescribeLogDirs(t *testing.T) {
	dirA, dirB := t.TempDir(), t.TempDir()
	s := startAdminBroker(t, map[string]string{"log.dirs": dirA + "," + dirB})
	admCreateTopic(t, s, "spread", 4, nil)
	admCreateTopic(t, s, "other", 1, nil)
	cl := admClient(t, s)
	for p := range int32(4) {
		admProduce(t, cl, "spread", p, int(p+1)*10)
	}

	// Where each partition is, and how big, from the logs themselves.
	wantDir := map[log.TopicPartition]string{}
	wantSize := map[log.TopicPartition]int64{}
	for i, d := range s.dirs {
		for _, l := range d.Logs() {
			wantDir[l.TopicPartition()] = []string{dirA, dirB}[i]
			wantSize[l.TopicPartition()] = l.Size()
		}
	}
	if len(wantDir) != 5 {
		t.Fatalf("%d logs, want 5", len(wantDir))
	}

	for v := int16(1); v <= 5; v++ {
		req := kmsg.NewPtrDescribeLogDirsRequest() // null topics: everything
		resp := admSend[*kmsg.DescribeLogDirsResponse](t, s, req, v)
		if len(resp.Dirs) != 2 {
			t.Fatalf("v%d: %d dirs", v, len(resp.Dirs))
		}
		seen := 0
		for _, d := range resp.Dirs {
			what := fmt.Sprintf("v%d %s", v, d.Dir)
			if d.ErrorCode != 0 || !filepath.IsAbs(d.Dir) {
				t.Errorf("%s: error %d", what, d.ErrorCode)
			}
			if v >= 4 && (d.TotalBytes <= 0 || d.UsableBytes <= 0 || d.UsableBytes > d.TotalBytes) {
				t.Errorf("%s: total %d, usable %d bytes", what, d.TotalBytes, d.UsableBytes)
			}
			if d.IsCordoned {
				t.Errorf("%s: cordoned", what)
			}
			for _, dt := range d.Topics {
				for _, dp := range dt.Partitions {
					tp := log.TopicPartition{Topic: dt.Topic, Partition: dp.Partition}
					seen++
					if wantDir[tp] != d.Dir {
						t.Errorf("%s: lists %s, which is in %s", what, tp, wantDir[tp])
					}
					if dp.Size != wantSize[tp] || dp.OffsetLag != 0 || dp.IsFuture {
						t.Errorf("%s: %s size %d (want %d), lag %d, future %v", what, tp, dp.Size, wantSize[tp], dp.OffsetLag, dp.IsFuture)
					}
					if tp.Topic == "spread" && dp.Size == 0 {
						t.Errorf("%s: %s is empty after a produce", what, tp)
					}
				}
			}
		}
		if seen != 5 {
			t.Errorf("v%d: %d partitions listed, want 5", v, seen)
		}
	}

	// Only what is asked for; unknown partitions are simply absent.
	req := kmsg.NewPtrDescribeLogDirsRequest()
	rt := kmsg.NewDescribeLogDirsRequestTopic()
	rt.Topic, rt.Partitions = "spread", []int32{2, 7}
	missing := kmsg.NewDescribeLogDirsRequestTopic()
	missing.Topic, missing.Partitions = "missing", []int32{0}
	req.Topics = append(req.Topics, rt, missing)
	var listed []string
	for _, d := range admSend[*kmsg.DescribeLogDirsResponse](t, s, req, 4).Dirs {
		for _, dt := range d.Topics {
			for _, dp := range dt.Partitions {
				listed = append(listed, fmt.Sprintf("%s-%d", dt.Topic, dp.Partition))
			}
		}
	}
	if len(listed) != 1 || listed[0] != "spread-2" {
		t.Errorf("asked for spread-2, spread-7 and missing-0, got %v", listed)
	}
}
