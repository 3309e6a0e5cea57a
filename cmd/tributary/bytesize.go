package main

import "github.com/tributary-io/tributary/internal/bytesize"

// byteSize is a flag of bytes written as 268435456, 256MiB, 256M or 1.5GB.
type byteSize int64

func (b *byteSize) String() string { return bytesize.Exact(int64(*b)) }
func (b *byteSize) Type() string   { return "bytes" }

func (b *byteSize) Set(s string) error {
	n, err := bytesize.Parse(s)
	if err == nil {
		*b = byteSize(n)
	}
	return err
}

func humanBytes(n int64) string { return bytesize.Human(n) }
