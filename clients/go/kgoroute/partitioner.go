// Package kgoroute is a franz-go (github.com/twmb/franz-go) partitioner that sends each record
// to the Kafka partition of its worker in a routeplan table:
//
//	router, _ := routeplan.Open("http://routeplan:8080", "clicks",
//		routeplan.Options{ReloadInterval: 30 * time.Second, Kafka: true})
//	client, _ := kgo.NewClient(kgo.SeedBrokers("kafka:9092"),
//		kgo.RecordPartitioner(kgoroute.Partitioner(router, nil)))
//	client.Produce(ctx, &kgo.Record{Topic: "clicks", Key: []byte("user-42")}, done)
//
// A record's key is the UTF-8 bytes of its text (docs/routing-spec.md §3). franz-go's
// partitioner cannot return an error: a record without a key, whose key is not UTF-8, or to a
// topic with fewer partitions than the table needs, is given partition -1 (and not counted in
// the router's local loads), which franz-go fails through the record's promise ("invalid
// record partitioning choice"); onError (default: a log line per distinct reason) says why.
package kgoroute

import (
	"log/slog"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"

	routeplan "routeplan.dev/client"
)

// Partitioner routes each record by router (routeplan.Router.Partition); onError, if not nil,
// is called for each record it cannot place.
func Partitioner(router *routeplan.Router, onError func(*kgo.Record, error)) kgo.Partitioner {
	p := &partitioner{router: router, onError: onError}
	if onError == nil {
		p.onError = p.logOnce
	}
	return p
}

type partitioner struct {
	router  *routeplan.Router
	onError func(*kgo.Record, error)
	mu      sync.Mutex
	logged  map[string]bool
}

func (p *partitioner) ForTopic(topic string) kgo.TopicPartitioner {
	return &topicPartitioner{p: p, topic: topic}
}

func (p *partitioner) logOnce(r *kgo.Record, err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.logged == nil {
		p.logged = map[string]bool{}
	}
	if !p.logged[err.Error()] {
		p.logged[err.Error()] = true
		slog.Error("routeplan: record not produced", "topic", r.Topic, "error", err)
	}
}

type topicPartitioner struct {
	p     *partitioner
	topic string
}

// RequiresConsistency is true: a key's partition is its worker's, even while it is down (then
// franz-go's index into the topic's partitions is the partition number).
func (t *topicPartitioner) RequiresConsistency(*kgo.Record) bool { return true }

// Partition is the partition of the record's worker among the topic's n.
func (t *topicPartitioner) Partition(r *kgo.Record, n int) int {
	partition, err := t.p.router.PartitionIn(t.topic, n, r.Key)
	if err != nil {
		t.p.onError(r, err)
		return -1
	}
	return int(partition)
}

// VersionHeader is the routing_version header (routeplan.RoutingVersionHeader) for a record
// built now: the version of the table router serves, the one Partitioner routes the record by
// (unless a new version is installed between the two; the header then names the one before).
//
//	client.Produce(ctx, &kgo.Record{Topic: "clicks", Key: key, Value: value,
//		Headers: []kgo.RecordHeader{kgoroute.VersionHeader(router)}}, done)
func VersionHeader(router *routeplan.Router) kgo.RecordHeader {
	return kgo.RecordHeader{Key: routeplan.RoutingVersionHeader,
		Value: routeplan.RoutingVersionValue(router.Version())}
}
