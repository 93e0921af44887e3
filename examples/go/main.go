// Command producer sends each line of stdin to a Kafka topic, keyed by the line (its value: the
// line's number from 0), on the partition of the key's worker in the stream's routeplan table
// (franz-go and routeplan's kgoroute partitioner), each record stamped with the header
// routing_version: the version of the table it was routed by.
//
//	KAFKA_BOOTSTRAP_SERVERS=kafka:9092 ROUTEPLAN_API_TOKEN=... go run . < keys.txt
//
// Environment: KAFKA_BOOTSTRAP_SERVERS (default kafka:9092), KAFKA_TOPIC (default: the stream),
// ROUTING_LOCATION (the HTTP API, a routing store directory or a table file; default
// http://localhost:8080/routeplan), ROUTING_STREAM (default clicks), ROUTEPLAN_API_TOKEN (the
// API's bearer token; the API is closed by default).
//
// It is a module of its own, as an application is: go.mod requires routeplan.dev/client and
// replaces it by the client's folder in this repository.
package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	routeplan "routeplan.dev/client"
	"routeplan.dev/client/kgoroute"
)

func env(name, fallback string) string {
	if value := os.Getenv(name); value != "" {
		return value
	}
	return fallback
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "producer: error:", err)
		os.Exit(1)
	}
}

func run() error {
	ctx := context.Background()
	stream := env("ROUTING_STREAM", "clicks")
	topic := env("KAFKA_TOPIC", stream)
	router, err := routeplan.Open(env("ROUTING_LOCATION", "http://localhost:8080/routeplan"), stream,
		routeplan.Options{ReloadInterval: 30 * time.Second, Kafka: true,
			Token: os.Getenv("ROUTEPLAN_API_TOKEN")}) // the API is closed by default
	if err != nil {
		return err
	}
	defer router.Close()
	client, err := kgo.NewClient(kgo.SeedBrokers(env("KAFKA_BOOTSTRAP_SERVERS", "kafka:9092")),
		kgo.RecordPartitioner(kgoroute.Partitioner(router, nil)))
	if err != nil {
		return err
	}
	defer client.Close()
	var mu sync.Mutex
	var failed error
	done := func(_ *kgo.Record, err error) {
		if err != nil {
			mu.Lock()
			failed = err // the last failure, returned after the flush
			mu.Unlock()
		}
	}
	lines := bufio.NewScanner(os.Stdin)
	sent := 0
	for ; lines.Scan(); sent++ {
		record := &kgo.Record{Topic: topic, Key: []byte(lines.Text()), Value: []byte(strconv.Itoa(sent)),
			Headers: []kgo.RecordHeader{kgoroute.VersionHeader(router)}} // routing_version
		client.Produce(ctx, record, done) // to the partition of the key's worker
	}
	if err := lines.Err(); err != nil {
		return err
	}
	if err := client.Flush(ctx); err != nil {
		return err
	}
	mu.Lock()
	defer mu.Unlock()
	if failed != nil {
		return failed
	}
	fmt.Fprintf(os.Stderr, "sent %d records to %s\n", sent, topic)
	return nil
}
