// Package memcache serves the memcached text and meta protocols (memcached 1.6) over one table of a
// kv.Store, so that any memcached client reads and writes the same items as RESP database 0 and HTTP.
//
// The pieces, in the order a request meets them:
//
//   - parser.go, metaparse.go: a resumable parser that turns the byte stream into requests with memcached's
//     exact checks, error lines and resynchronisation (a bad line, a bad data chunk, a value over the limit,
//     a line over 2048 bytes). It decides from the bytes alone, so a stream gives the same requests however
//     reads split it; FuzzSplit holds it to that.
//   - conn.go: the connection loop. Consecutive writes of one read become one kv.Store.Apply (one engine
//     batch, one fsync with a durable engine); a read first applies the writes before it; all replies of a
//     read leave in one Write.
//   - text.go, meta.go: each command as engine.Mutations and each result as memcached's reply.
//   - stats.go: memcached's stats, counted per connection and published once per read.
//   - handler.go: Options, New and the server.Handler / server.Rejecter methods; memcached's exptime rules.
//
// docs/memcache.md lists every command and meta flag with its status and each deviation from memcached.
package memcache
