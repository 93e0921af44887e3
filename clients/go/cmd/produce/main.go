// Command produce sends the keys of a file (one per line) to a Kafka topic with franz-go and the
// routeplan partitioner (kgoroute), record i with the value "i". With -phases P it sends them in
// P parts; after each it flushes, prints "sent PART", waits for a line on stdin and reloads the
// table, printing "reloaded true|false vN" (the broker test publishes bad tables between parts).
//
//	produce -bootstrap 127.0.0.1:9092 -topic clicks -location var/routing -stream clicks -keys keys.txt
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/twmb/franz-go/pkg/kgo"

	routeplan "routeplan.dev/client"
	"routeplan.dev/client/kgoroute"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "produce: error:", err)
		os.Exit(1)
	}
}

func run() error {
	bootstrap := flag.String("bootstrap", "", "Kafka bootstrap servers")
	topic := flag.String("topic", "", "topic")
	location := flag.String("location", "", "a table file, a routing store directory or an API URL")
	stream := flag.String("stream", "", "the stream (for a directory or an API)")
	keysFile := flag.String("keys", "", "a file of keys, one per line")
	phases := flag.Int("phases", 1, "send in this many parts, reloading the table between them")
	flag.Parse()
	data, err := os.ReadFile(*keysFile)
	if err != nil {
		return err
	}
	keys := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	router, err := routeplan.Open(*location, *stream, routeplan.Options{Kafka: true})
	if err != nil {
		return err
	}
	var mu sync.Mutex
	var failed error
	client, err := kgo.NewClient(
		kgo.SeedBrokers(strings.Split(*bootstrap, ",")...),
		kgo.RecordPartitioner(kgoroute.Partitioner(router, nil)),
		kgo.ProducerLinger(5e6),
	)
	if err != nil {
		return err
	}
	defer client.Close()
	ctx := context.Background()
	stdin := bufio.NewReader(os.Stdin)
	for part := 0; part < *phases; part++ {
		from, to := len(keys)*part / *phases, len(keys)*(part+1) / *phases
		for i := from; i < to; i++ {
			record := &kgo.Record{Topic: *topic, Key: []byte(keys[i]), Value: []byte(strconv.Itoa(i))}
			client.Produce(ctx, record, func(_ *kgo.Record, err error) {
				if err != nil {
					mu.Lock()
					failed = err
					mu.Unlock()
				}
			})
		}
		if err := client.Flush(ctx); err != nil {
			return err
		}
		if failed != nil {
			return failed
		}
		fmt.Println("sent", part)
		if part+1 < *phases {
			if _, err := stdin.ReadString('\n'); err != nil {
				return err
			}
			changed := router.Reload()
			fmt.Printf("reloaded %t v%d\n", changed, router.Table().Version)
		}
	}
	return nil
}
