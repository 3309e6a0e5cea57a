package fsys

import (
	"crypto/md5"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/colinmarc/hdfs/v2"
)

// ErrNoChecksum: the file system keeps no file checksums (a local target).
var ErrNoChecksum = errors.New("the file system keeps no file checksums")

// Checksum is HDFS's checksum of a file, as `hadoop fs -checksum` prints it
// (MD5-of-MD5-of-CRC32C: the MD5 of each block's CRCs, the MD5 of those),
// computed by the DataNodes from the CRCs they store, and the file's block
// size, which LocalChecksum needs to compute the same from local bytes.
// ErrNoChecksum on a local target.
func Checksum(f FS, name string) (sum []byte, blockSize int64, err error) {
	h, ok := f.(*hdfsFS)
	if !ok {
		return nil, 0, ErrNoChecksum
	}
	p, err := h.path(name)
	if err != nil {
		return nil, 0, err
	}
	r, err := h.c.Open(p)
	if err != nil {
		return nil, 0, err
	}
	defer r.Close()
	st, ok := r.Stat().Sys().(*hdfs.FileStatus)
	if !ok {
		return nil, 0, fmt.Errorf("%s: no block size in its status", name)
	}
	sum, err = r.Checksum()
	return sum, int64(st.GetBlocksize()), err
}

// BytesPerCRC is dfs.bytes-per-checksum's default: one CRC per 512 bytes.
const BytesPerCRC = 512

// LocalChecksum computes Checksum's value from a file's bytes, for a file
// written with blockSize, CRC32C and BytesPerCRC (HDFS's defaults): an
// uploaded file can be checked against its source without reading it back.
func LocalChecksum(r io.Reader, blockSize int64) ([]byte, error) {
	if blockSize <= 0 || blockSize%BytesPerCRC != 0 {
		return nil, fmt.Errorf("block size %d: want a positive multiple of %d", blockSize, BytesPerCRC)
	}
	table := crc32.MakeTable(crc32.Castagnoli)
	file := md5.New()
	buf := make([]byte, BytesPerCRC)
	total := 0
	for done := false; !done; {
		block := md5.New()
		var n int64
		for n < blockSize {
			k, err := io.ReadFull(r, buf)
			if k > 0 {
				block.Write(binary.BigEndian.AppendUint32(nil, crc32.Checksum(buf[:k], table)))
				n += int64(k)
			}
			if err == io.EOF || err == io.ErrUnexpectedEOF {
				done = true
				break
			}
			if err != nil {
				return nil, err
			}
		}
		if n == 0 {
			break
		}
		file.Write(block.Sum(nil))
		total += md5.Size
	}
	// As Hadoop (and the HDFS client's Checksum) does: the block MD5s are
	// padded with zeros to the next power of two, 32 bytes at least.
	padded := 32
	for padded < total {
		padded *= 2
	}
	file.Write(make([]byte, padded-total))
	return file.Sum(nil), nil
}
