package server

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/tributary-io/tributary/broker/cluster"
)

// MetaPropertiesFile identifies a log dir, in Kafka's format:
//
//	version=1
//	cluster.id=<22-char base64 uuid>
//	node.id=1
//	directory.id=<22-char base64 uuid>
//
// A log dir that belongs to another node or cluster refuses the start,
// which keeps a misconfigured node from serving someone else's data.
const MetaPropertiesFile = "meta.properties"

// ensureMetaProperties checks every log dir's meta.properties and writes it
// where it is missing, generating the cluster id on first start.
func ensureMetaProperties(dirs []string, nodeID int32, configured string) (string, error) {
	clusterID := configured
	for _, d := range dirs {
		props, err := readProperties(filepath.Join(d, MetaPropertiesFile))
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return "", err
		}
		if n := props["node.id"]; n != strconv.Itoa(int(nodeID)) {
			return "", fmt.Errorf("broker/server: log dir %s belongs to node.id %s, this is node.id %d", d, n, nodeID)
		}
		id := props["cluster.id"]
		if clusterID != "" && id != clusterID {
			return "", fmt.Errorf("broker/server: log dir %s belongs to cluster %s, not %s", d, id, clusterID)
		}
		clusterID = id
	}
	if clusterID == "" {
		clusterID = cluster.NewTopicID().String()
	}
	for _, d := range dirs {
		path := filepath.Join(d, MetaPropertiesFile)
		if _, err := os.Stat(path); err == nil {
			continue
		}
		if err := os.MkdirAll(d, 0o755); err != nil {
			return "", err
		}
		dirID := cluster.NewTopicID()
		body := fmt.Sprintf("#\n#Written by Tributary\nversion=1\ncluster.id=%s\nnode.id=%d\ndirectory.id=%s\n",
			clusterID, nodeID, base64.RawURLEncoding.EncodeToString(dirID[:]))
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			return "", err
		}
	}
	return clusterID, nil
}

func readProperties(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	props := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("broker/server: %s: line %q is not key=value", path, line)
		}
		props[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return props, sc.Err()
}

// producerIDs hands out idempotent producer ids from blocks the controller
// allocates durably, so ids are never reused across restarts.
type producerIDs struct {
	ctrl *cluster.Controller

	mu         sync.Mutex
	next, stop int64
}

func (p *producerIDs) allocate() (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.next >= p.stop {
		first, err := p.ctrl.AllocateProducerIDs(cluster.ProducerIDBlockSize)
		if err != nil {
			return 0, err
		}
		p.next, p.stop = first, first+cluster.ProducerIDBlockSize
	}
	id := p.next
	p.next++
	return id, nil
}

// quorumClusterID is the cluster id of a quorum whose nodes were not given
// one: a UUID-shaped hash of the sorted voters, the same on every node.
func quorumClusterID(voters []string) string {
	sorted := slices.Clone(voters)
	slices.Sort(sorted)
	sum := sha256.Sum256([]byte(strings.Join(sorted, ",")))
	var id cluster.TopicID
	copy(id[:], sum[:16])
	id[6] = id[6]&0x0f | 0x40
	id[8] = id[8]&0x3f | 0x80
	return id.String()
}

// directoryIDs are the directory.id of each log dir's meta.properties, as a
// broker registers them (BrokerRegistration v2+ LogDirs): the controller
// tells a restart of this node, on the same disks, from another node
// configured with the same node.id.
func directoryIDs(dirs []string) ([][16]byte, error) {
	var out [][16]byte
	for _, d := range dirs {
		props, err := readProperties(filepath.Join(d, MetaPropertiesFile))
		if err != nil {
			return nil, err
		}
		var id cluster.TopicID
		if err := id.UnmarshalText([]byte(props["directory.id"])); err != nil {
			return nil, fmt.Errorf("broker/server: %s: directory.id: %w", filepath.Join(d, MetaPropertiesFile), err)
		}
		out = append(out, id)
	}
	return out, nil
}
