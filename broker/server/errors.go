package server

import (
	"errors"
	"fmt"

	"github.com/tributary-io/tributary/broker/cluster"
	"github.com/tributary-io/tributary/broker/producer"
	"github.com/tributary-io/tributary/broker/record"
	"github.com/tributary-io/tributary/broker/replica"
)

// kafkaCode is the Kafka error code for err (replica.KafkaError): its own
// when it wraps a kerr.Error (every error of the storage, cluster and
// producer packages does), 0 for nil.
func kafkaCode(err error) int16 {
	if err == nil {
		return 0
	}
	return replica.KafkaError(err).Code
}

// errorMessage is the text for a response's error message field: nil when
// there is no error, so clients print only the code's own description.
//
// Clients show it to people, so it is the reason alone, without the Go
// package prefix our errors carry in logs.
func errorMessage(err error) *string {
	if err == nil {
		return nil
	}
	m := err.Error()
	var ce *cluster.Error
	var re *record.Error
	var pe *producer.Error
	switch {
	case errors.As(err, &ce):
		m = ce.Message
	case errors.As(err, &re):
		m = re.Reason
	case errors.As(err, &pe):
		m = pe.Reason
	}
	return &m
}

func errDuplicateTopic(name string) error {
	return fmt.Errorf("topic %q is listed more than once in the request", name)
}

func errAssignmentGap(p int32) error {
	return fmt.Errorf("replica assignments must cover partitions 0..n-1 without gaps; partition %d is out of place", p)
}
