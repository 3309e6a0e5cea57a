package testbroker

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// Two test processes never get ports from the same block: the child
// process here, starting at this one's block, claims another.
func TestPortBlocksAreExclusiveAcrossProcesses(t *testing.T) {
	if start := os.Getenv("TRIBUTARY_PORT_CHILD"); start != "" {
		b, _ := strconv.Atoi(start)
		base, _ := claimPortBlock(b)
		os.Stdout.WriteString("port=" + strconv.Itoa(base) + "\n")
		return
	}
	mine := freePort(t)
	if mine < portsFrom || mine >= portsFrom+portBlocks*blockSize {
		t.Fatalf("port %d is outside the blocks (another process may hold them all)", mine)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestPortBlocksAreExclusiveAcrossProcesses$")
	cmd.Env = append(os.Environ(), "TRIBUTARY_PORT_CHILD="+strconv.Itoa((mine-portsFrom)/blockSize))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	_, after, ok := strings.Cut(string(out), "port=")
	if !ok {
		t.Fatalf("child printed no port:\n%s", out)
	}
	theirs, err := strconv.Atoi(strings.Fields(after)[0])
	if err != nil {
		t.Fatal(err)
	}
	if theirs < portsFrom {
		t.Fatal("the child claimed no block")
	}
	if (theirs-portsFrom)/blockSize == (mine-portsFrom)/blockSize {
		t.Fatalf("this process got port %d and the child %d, from the same block", mine, theirs)
	}
}
