package routeplan

import "strconv"

// Version is this client's version: the content of clients/VERSION in the routeplan
// repository, which the Java client's pom and the Python client carry too.
const Version = "0.2.0"

// SpecVersion is the version of the routing specification (docs/routing-spec.md) this client
// follows.
const SpecVersion = 1

// RoutingVersionHeader is the record header that names the version of the table a record was
// routed by (kgoroute.VersionHeader, kafkagoroute.VersionHeader): the next night measures what
// each version did by it.
const RoutingVersionHeader = "routing_version"

// RoutingVersionValue is the header's value for version: its decimal digits, as UTF-8.
func RoutingVersionValue(version int64) []byte {
	return strconv.AppendInt(nil, version, 10)
}

// Version is the version of the table the router serves now.
func (r *Router) Version() int64 { return r.snap.Load().table.Version }
