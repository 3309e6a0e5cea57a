package main

import "testing"

func TestByteSizeFlag(t *testing.T) {
	for in, want := range map[string]int64{"1048576": 1 << 20, "256MiB": 256 << 20, "512M": 512 << 20, "2GiB": 2 << 30, "1.5GB": 3 << 29, "64k": 64 << 10} {
		var b byteSize
		if err := b.Set(in); err != nil || int64(b) != want {
			t.Errorf("%q: %d %v, want %d", in, b, err, want)
		}
	}
	for _, in := range []string{"", "lots", "-1", "12XB"} {
		var b byteSize
		if err := b.Set(in); err == nil {
			t.Errorf("%q accepted as %d", in, b)
		}
	}
	if got := humanBytes(1126); got != "1.1 KiB" {
		t.Errorf("humanBytes(1126) = %q", got)
	}
}
