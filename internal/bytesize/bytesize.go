// Package bytesize reads and writes sizes in bytes as people write them in
// flags and config files: 268435456, 256MiB, 256M or 1.5GB, binary units
// either way (these size buffers and files, never disks sold in decimal).
package bytesize

import (
	"fmt"
	"strconv"
	"strings"
)

// Parse reads a size.
func Parse(text string) (int64, error) {
	t := strings.TrimSpace(text)
	num := strings.TrimRight(t, "KMGTiBkmgtib")
	unit := strings.ToUpper(strings.TrimSuffix(strings.TrimSuffix(t[len(num):], "B"), "b"))
	unit = strings.TrimSuffix(strings.TrimSuffix(unit, "I"), "i")
	shift := map[string]uint{"": 0, "K": 10, "M": 20, "G": 30, "T": 40}
	sh, ok := shift[unit]
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if !ok || err != nil || v < 0 {
		return 0, fmt.Errorf("%q is not a size: write bytes as 1048576, 1MiB, 512M or 2GiB", text)
	}
	return int64(v * float64(uint64(1)<<sh)), nil
}

// Exact writes n in the largest binary unit that divides it: 256MiB,
// 1536KiB, 1000.
func Exact(n int64) string {
	for _, u := range []struct {
		shift uint
		name  string
	}{{40, "TiB"}, {30, "GiB"}, {20, "MiB"}, {10, "KiB"}} {
		if n >= 1<<u.shift && n%(1<<u.shift) == 0 {
			return fmt.Sprintf("%d%s", n>>u.shift, u.name)
		}
	}
	return strconv.FormatInt(n, 10)
}

// Human writes n rounded for people: 1.1 MiB, 732.0 KiB, 12 B.
func Human(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	f, i := float64(n)/unit, 0
	for f >= unit && i < 3 {
		f /= unit
		i++
	}
	return fmt.Sprintf("%.1f %ciB", f, "KMGT"[i])
}
