package kafkagoroute

import (
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
	if b.Balance(kafka.Message{Topic: "clicks"}, all...) != -1 ||
		b.Balance(kafka.Message{Topic: "clicks", Key: []byte("hot-b")}, 0, 1, 2) != -1 {
		t.Fatal("a message without key, or beyond the topic's partitions, was placed")
	}
	if len(reasons) != 2 || !strings.Contains(reasons[0], "no key") ||
		!strings.Contains(reasons[1], `which topic "clicks" does not have (3 partitions)`) {
		t.Fatalf("%v", reasons)
	}
}
