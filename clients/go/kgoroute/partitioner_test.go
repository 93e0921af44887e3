package kgoroute

import (
	"errors"
	"maps"
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
	for _, bad := range []*kgo.Record{{}, {Key: []byte("hot-b")}, {Key: []byte{0xff}}} {
		if got := topic.Partition(bad, 3); got != -1 { // the table needs 5 partitions
			t.Fatalf("%q: placed on partition %d", bad.Key, got)
		}
	}
	if len(reasons) != 3 || !strings.Contains(reasons[0].Error(), "no key") ||
		!strings.Contains(reasons[1].Error(), `which topic "clicks" does not have (partitions 0-2;`) ||
		!strings.Contains(reasons[2].Error(), "not UTF-8") {
		t.Fatalf("%v", errors.Join(reasons...))
	}
	if !maps.Equal(router.LocalLoads(), reference.LocalLoads()) {
		t.Fatalf("a record not placed was counted: %v, want %v", router.LocalLoads(),
			reference.LocalLoads())
	}
}
