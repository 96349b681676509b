// Package interop pins the Go clients whose own test suites run against kcodec broker
// (tests/interop/test_interop_go.py runs `go test` on their packages from the module cache).
package interop

import (
	_ "github.com/segmentio/kafka-go"
	_ "github.com/twmb/franz-go/pkg/kgo"
)
