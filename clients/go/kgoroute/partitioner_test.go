package kgoroute

import (
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	routeplan "routeplan.dev/client"
)

func TestPartitionIsTheWorkersAndABadRecordIsRefusedWithItsReason(t *testing.T) {
	table, err := routeplan.ReadTableFile("../../../schemas/vectors/tables/kr-seed42.json")
	if err != nil {
		t.Fatal(err)
	}
	router, _ := routeplan.NewRouter(table, routeplan.Options{Kafka: true})
	reference, _ := routeplan.NewRouter(table, routeplan.Options{Kafka: true})
	var reasons []error
	topic := Partitioner(router, func(_ *kgo.Record, err error) { reasons = append(reasons, err) }).ForTopic("clicks")
	if !topic.RequiresConsistency(nil) {
		t.Fatal("a key's partition must not move to another while one is down")
	}
	for _, key := range []string{"hot-a", "user-1", "", "hot-a", "ключ"} {
		want, _ := reference.Partition([]byte(key))
		if got := topic.Partition(&kgo.Record{Key: []byte(key)}, 8); got != int(want) {
			t.Fatalf("%q: partition %d, the router says %d", key, got, want)
		}
	}
	if topic.Partition(&kgo.Record{}, 8) != -1 || topic.Partition(&kgo.Record{Key: []byte("hot-b")}, 3) != -1 {
		t.Fatal("a record without key, or beyond the topic's partitions, was placed")
	}
	if len(reasons) != 2 || !strings.Contains(errors.Join(reasons...).Error(), "no key") ||
		!strings.Contains(reasons[1].Error(), `which topic "clicks" does not have (partitions 0-2)`) {
		t.Fatalf("%v", reasons)
	}
}
