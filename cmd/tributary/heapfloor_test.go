package main

import (
	"runtime"
	"runtime/metrics"
	"testing"
)

func TestHeapFloorRaisesTheGCGoal(t *testing.T) {
	t.Setenv("GOGC", "")
	t.Cleanup(func() { heapFloor = nil })
	heapFloor = nil
	runtime.GC() // the goal is set at the end of a cycle
	raiseHeapFloor()
	runtime.GC()
	s := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
	metrics.Read(s)
	if goal := s[0].Value.Uint64(); goal < heapFloorBytes {
		t.Errorf("GC heap goal is %d bytes with the floor; want at least %d", goal, heapFloorBytes)
	}
}

func TestHeapFloorLeavesAUsersGOGCAlone(t *testing.T) {
	t.Setenv("GOGC", "50")
	t.Cleanup(func() { heapFloor = nil })
	heapFloor = nil
	raiseHeapFloor()
	if heapFloor != nil {
		t.Error("GOGC=50 is set, yet the floor was raised")
	}
}
