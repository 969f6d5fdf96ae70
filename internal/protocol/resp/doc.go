// Package resp turns a client's byte stream into commands and commands'
// results into bytes, in the Redis serialization protocol (RESP2 and RESP3),
// so that redis-cli, redis-benchmark and the usual client libraries can talk
// to anykv unchanged.
//
// It holds no sockets and no storage logic: a connection handler owns one
// Parser and one Writer, calls Parser.Fill with its connection, takes
// commands from Parser.Next until it returns nil, runs them, and writes the
// Writer's bytes back in one write per batch.
//
// The parser follows redis-server 7's networking.c (processInlineBuffer,
// processMultibulkBuffer, sdssplitargs): same accepted inputs, same protocol
// error texts. Where Redis's outcome depends on how the bytes happened to be
// split between reads, this parser decides from the bytes alone, so a stream
// gives the same commands however it is chunked.
package resp
