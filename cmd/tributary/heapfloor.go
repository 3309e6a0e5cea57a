package main

import "os"

// heapFloor is never read: it is live heap that the collector need not scan
// (it holds no pointers) and that nothing writes, so it costs address space,
// not resident memory. (The runtime zeroes a new object only where the heap
// held freed objects before; raised at start-up, the floor lands on fresh
// memory: a started broker's RSS is the same with it and without.) It puts
// a floor under the collector's goal.
//
// A broker's live heap is a few MiB, so with GOGC=100 the collector ran
// whenever a few more MiB had been allocated: 15 times a second for a
// producer and a consumer exchanging small requests at 50,000 records/s.
// Each cycle slows the requests in flight; together they made the slowest
// 1 % of those records about a third slower than with the collector off.
// With the floor it runs about once per heapFloorBytes allocated, and at
// most that much more garbage is ever resident.
var heapFloor []byte

const heapFloorBytes = 64 << 20

// raiseHeapFloor sets the floor unless the user paced the collector
// themselves with GOGC.
func raiseHeapFloor() {
	if heapFloor == nil && os.Getenv("GOGC") == "" {
		heapFloor = make([]byte, heapFloorBytes)
	}
}
