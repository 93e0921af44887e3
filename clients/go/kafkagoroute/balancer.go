// Package kafkagoroute is a segmentio/kafka-go Balancer that sends each message to the Kafka
// partition of its worker in a routeplan table:
//
//	router, _ := routeplan.Open("http://routeplan:8080", "clicks",
//		routeplan.Options{ReloadInterval: 30 * time.Second, Kafka: true})
//	w := &kafka.Writer{Addr: kafka.TCP("kafka:9092"), Topic: "clicks",
//		Balancer: kafkagoroute.Balancer(router, nil)}
//
// A message's key is the UTF-8 bytes of its text (docs/routing-spec.md §3). kafka-go's Balancer
// cannot return an error: a message without a key, whose key is not UTF-8, or to a topic with
// fewer partitions than the table needs, is given partition -1 (and not counted in the
// router's local loads), which the write then fails; onError (default: a log line per distinct
// reason) says why. Check a writer's topic first with router.CheckPartitions(topic, n).
package kafkagoroute

import (
	"log/slog"
	"sync"

	"github.com/segmentio/kafka-go"

	routeplan "routeplan.dev/client"
)

// Balancer routes each message by router (routeplan.Router.Partition).
func Balancer(router *routeplan.Router, onError func(kafka.Message, error)) kafka.Balancer {
	b := &balancer{router: router, onError: onError}
	if onError == nil {
		b.onError = b.logOnce
	}
	return b
}

type balancer struct {
	router  *routeplan.Router
	onError func(kafka.Message, error)
	mu      sync.Mutex
	logged  map[string]bool
}

// Balance is the partition of the message's worker; kafka-go passes the topic's partitions,
// 0 … n-1.
func (b *balancer) Balance(msg kafka.Message, partitions ...int) int {
	partition, err := b.router.PartitionIn(msg.Topic, len(partitions), msg.Key)
	if err != nil {
		b.onError(msg, err)
		return -1
	}
	return int(partition)
}

func (b *balancer) logOnce(msg kafka.Message, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.logged == nil {
		b.logged = map[string]bool{}
	}
	if !b.logged[err.Error()] {
		b.logged[err.Error()] = true
		slog.Error("routeplan: message not routed", "topic", msg.Topic, "error", err)
	}
}

// VersionHeader is the routing_version header (routeplan.RoutingVersionHeader) for a message
// written now: the version of the table router serves, the one Balancer routes the message by
// (unless a new version is installed between the two; the header then names the one before).
//
//	w.WriteMessages(ctx, kafka.Message{Key: key, Value: value,
//		Headers: []kafka.Header{kafkagoroute.VersionHeader(router)}})
func VersionHeader(router *routeplan.Router) kafka.Header {
	return kafka.Header{Key: routeplan.RoutingVersionHeader,
		Value: routeplan.RoutingVersionValue(router.Version())}
}
