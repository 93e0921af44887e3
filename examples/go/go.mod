module example.com/routed-producer

go 1.26.0

require (
	github.com/twmb/franz-go v1.22.3
	routeplan.dev/client v0.2.0
)

require (
	github.com/klauspost/compress v1.20.3 // indirect
	github.com/pierrec/lz4/v4 v4.1.33 // indirect
	github.com/twmb/franz-go/pkg/kmsg v1.15.1 // indirect
)

// routeplan.dev/client is not served by any module proxy: use the client's folder of a
// routeplan checkout (an absolute path, or relative to this go.mod).
replace routeplan.dev/client => ../../clients/go
