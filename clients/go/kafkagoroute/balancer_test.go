package kafkagoroute

import (
	"maps"
	"strings"
	"testing"

	"github.com/segmentio/kafka-go"

	routeplan "routeplan.dev/client"
)

func TestBalanceIsTheWorkersPartitionAndABadMessageIsRefusedWithItsReason(t *testing.T) {
	table, err := routeplan.ReadTableFile("../../../schemas/vectors/tables/kr-seed42.json")
	if err != nil {
		t.Fatal(err)
	}
	router, _ := routeplan.NewRouter(table, routeplan.Options{Kafka: true})
	reference, _ := routeplan.NewRouter(table, routeplan.Options{Kafka: true})
	var reasons []string
	b := Balancer(router, func(_ kafka.Message, err error) { reasons = append(reasons, err.Error()) })
	all := []int{0, 1, 2, 3, 4, 5, 6, 7}
	for _, key := range []string{"hot-a", "user-1", "", "hot-a", "ключ"} {
		want, _ := reference.Partition([]byte(key))
		if got := b.Balance(kafka.Message{Key: []byte(key)}, all...); got != int(want) {
			t.Fatalf("%q: partition %d, the router says %d", key, got, want)
		}
	}
	for _, bad := range []kafka.Message{{Topic: "clicks"}, {Topic: "clicks", Key: []byte("hot-b")},
		{Topic: "clicks", Key: []byte{0xff}}} {
		if got := b.Balance(bad, 0, 1, 2); got != -1 { // the table needs 5 partitions
			t.Fatalf("%q: placed on partition %d", bad.Key, got)
		}
	}
	if len(reasons) != 3 || !strings.Contains(reasons[0], "no key") ||
		!strings.Contains(reasons[1], `which topic "clicks" does not have (partitions 0-2;`) ||
		!strings.Contains(reasons[2], "not UTF-8") {
		t.Fatalf("%v", reasons)
	}
	if !maps.Equal(router.LocalLoads(), reference.LocalLoads()) {
		t.Fatalf("a message not placed was counted: %v, want %v", router.LocalLoads(),
			reference.LocalLoads())
	}
}

func TestVersionHeaderIsTheRoutersVersionInDecimal(t *testing.T) {
	table, err := routeplan.ReadTableFile("../../../schemas/vectors/tables/kr-legacy.json")
	if err != nil {
		t.Fatal(err)
	}
	router, _ := routeplan.NewRouter(table, routeplan.Options{})
	if h := VersionHeader(router); h.Key != "routing_version" || string(h.Value) != "2" {
		t.Fatalf("%q=%q, want routing_version=2", h.Key, h.Value)
	}
}
