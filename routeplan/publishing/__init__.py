"""Publishing: the versioned routing store, diffs between versions, the JSON schemas of every
document, and the read-only HTTP API over the store."""
