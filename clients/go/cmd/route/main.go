// Command route routes keys read on stdin by a routeplan table file, one key per line, and
// prints each message's worker (with -partitions N: "worker<TAB>partition"); for a
// partition_assignment table each line is a partition and the output its consumer. It is
// routeplan's `routeplan route` in Go (docs/routing-spec.md §6).
//
//	route --table clicks-v3.json [--partitions N] < keys.txt
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"unicode/utf8"

	routeplan "routeplan.dev/client"
)

func main() {
	if err := run(os.Args[1:], os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "route: error:", err)
		os.Exit(1)
	}
}

func run(args []string, stdin io.Reader, stdout io.Writer) error {
	flags := flag.NewFlagSet("route", flag.ContinueOnError)
	tablePath := flags.String("table", "", "a routing-table document (.json or .json.gz)")
	partitions := flags.Int("partitions", 0, "the topic's partition count: print partitions too")
	if err := flags.Parse(args); err != nil {
		return err
	}
	if *tablePath == "" || flags.NArg() > 0 {
		return fmt.Errorf("usage: route --table FILE [--partitions N] < keys")
	}
	table, err := routeplan.ReadTableFile(*tablePath)
	if err != nil {
		return err
	}
	data, err := io.ReadAll(stdin)
	if err != nil {
		return err
	}
	if !utf8.Valid(data) {
		return fmt.Errorf("stdin: not UTF-8")
	}
	var lines [][]byte
	if len(data) > 0 {
		lines = bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	}
	out := bufio.NewWriterSize(stdout, 1<<16)
	defer out.Flush()
	if table.Kind == routeplan.PartitionAssignment {
		if *partitions != 0 {
			return fmt.Errorf("--partitions is for key_routing tables")
		}
		for _, line := range lines {
			p, err := strconv.Atoi(string(line))
			consumer, ok := table.PartitionConsumer[p]
			if err != nil || !ok || p < 0 {
				return fmt.Errorf("stdin: the table assigns no partition %q", line)
			}
			fmt.Fprintln(out, consumer)
		}
		return nil
	}
	router, err := routeplan.NewRouter(table, routeplan.Options{Kafka: *partitions > 0})
	if err != nil {
		return err
	}
	if *partitions > 0 {
		if err := router.CheckPartitions("(--partitions)", *partitions); err != nil {
			return err
		}
	}
	for _, line := range lines {
		if *partitions == 0 {
			worker, _ := router.Route(string(line))
			fmt.Fprintln(out, worker)
			continue
		}
		worker, partition, err := router.RoutePartition(string(line))
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "%s\t%d\n", worker, partition)
	}
	return nil
}
