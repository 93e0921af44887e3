"""Publishing: the versioned routing store and the diffs between its versions. The JSON schemas
and the bounded document reader it reads with are ``routeplan.contracts``; the HTTP API over the
store is ``routeplan.api``."""
