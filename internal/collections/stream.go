package collections

import (
	"bytes"
	"encoding/binary"
	"errors"
	"strconv"
	"strings"

	"anykv/internal/engine"
)

// Streams (XADD, XRANGE, XREAD, ...). A stream is a meta item (KindStream, generation, length and the last
// entry ID) and one member per entry, keyed by its ID as 16 big-endian bytes (milliseconds, sequence), so entries
// sort by ID and a range of IDs is a range scan. An entry's value is its field/value pairs. Consumer groups
// live in further members after every entry (streamgroup.go).

// ID is a stream entry ID.
type ID struct{ MS, Seq uint64 }

func (id ID) String() string {
	return strconv.FormatUint(id.MS, 10) + "-" + strconv.FormatUint(id.Seq, 10)
}

func (id ID) less(o ID) bool { return id.MS < o.MS || id.MS == o.MS && id.Seq < o.Seq }

// Less reports whether id comes before o.
func (id ID) Less(o ID) bool { return id.less(o) }

func (id ID) key() []byte {
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, id.MS), id.Seq)
}

func idOf(k []byte) ID { return ID{binary.BigEndian.Uint64(k), binary.BigEndian.Uint64(k[8:])} }

// Next is the ID just after id (false past the largest).
func (id ID) Next() (ID, bool) {
	if id.Seq < ^uint64(0) {
		return ID{id.MS, id.Seq + 1}, true
	}
	if id.MS < ^uint64(0) {
		return ID{id.MS + 1, 0}, true
	}
	return id, false
}

// Errors of the stream functions that protocols answer with Redis's text.
var (
	ErrStreamID      = errors.New("ERR Invalid stream ID specified as stream command argument")
	ErrStreamIDSmall = errors.New("ERR The ID specified in XADD is equal or smaller than the target stream top item")
	ErrStreamIDZero  = errors.New("ERR The ID specified in XADD must be greater than 0-0")
	ErrStreamFull    = errors.New("ERR The stream has exhausted the last possible ID, unable to add more items")
)

// ParseID parses an ID argument: "ms-seq" or "ms" (seq is 0, or the largest when high: an end of a range), as
// Redis's streamGenericParseIDOrReply reads it: at most 127 bytes, read as a C string (up to a NUL byte), each
// part as string2ull reads it (parseIDPart).
func ParseID(b []byte, high bool) (ID, bool) {
	if len(b) > 127 {
		return ID{}, false
	}
	msPart, seqPart, hasSeq := strings.Cut(string(CString(b)), "-")
	ms, ok := parseIDPart(msPart)
	if !ok {
		return ID{}, false
	}
	if !hasSeq {
		if high {
			return ID{ms, ^uint64(0)}, true
		}
		return ID{ms, 0}, true
	}
	seq, ok := parseIDPart(seqPart)
	return ID{ms, seq}, ok
}

// CString is b up to its first NUL byte, as C code that reads an argument as a string sees it.
func CString(b []byte) []byte {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return b[:i]
	}
	return b
}

// parseIDPart reads one number of an ID as Redis's string2ull does: a canonical integer (string2ll's: no sign
// but '-', no leading zero) unless it is negative; else what strtoull reads whole, without overflow: leading
// white space, a sign ('-' negates modulo 2^64, so " -1" is the largest), decimal digits. So "+5", " 5" and
// "005" are 5, while "-1" and "5 " are no number.
func parseIDPart(s string) (uint64, bool) {
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && s == strconv.FormatInt(n, 10) {
		return uint64(n), n >= 0
	}
	s = strings.TrimLeft(s, " \t\n\v\f\r")
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg, s = s[0] == '-', s[1:]
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, false
	}
	if neg {
		n = -n
	}
	return n, true
}

// ParseRangeID parses an XRANGE bound: "-", "+", an ID, or "(" and an ID for an exclusive bound.
func ParseRangeID(b []byte, high bool) (ID, bool) {
	switch {
	case string(b) == "-":
		return ID{}, true
	case string(b) == "+":
		return ID{^uint64(0), ^uint64(0)}, true
	case len(b) > 1 && b[0] == '(':
		id, ok := ParseID(b[1:], high)
		if !ok {
			return id, false
		}
		if high {
			if id.Seq > 0 {
				return ID{id.MS, id.Seq - 1}, true
			}
			if id.MS == 0 {
				return id, false
			}
			return ID{id.MS - 1, ^uint64(0)}, true
		}
		return id.Next()
	}
	return ParseID(b, high)
}

const (
	fnXAdd  = "stream.add"
	fnXDel  = "stream.del"
	fnXTrim = "stream.trim"
	fnXRead = "stream.range"
	// The consumer groups' (streamgroupfn.go, streamclaim.go, streaminfo.go).
	fnXGroup     = "stream.group"
	fnXReadGroup = "stream.readgroup"
	fnXAck       = "stream.ack"
	fnXClaim     = "stream.claim"
	fnXAutoClaim = "stream.autoclaim"
	fnXPending   = "stream.pending"
	fnXInfo      = "stream.info"
)

func init() {
	engine.RegisterFunc(fnXAdd, xadd)
	engine.RegisterFunc(fnXDel, xdel)
	engine.RegisterFunc(fnXTrim, xtrim)
	engine.RegisterUncachedKeyReadFunc(fnXRead, xrange)
	engine.RegisterFunc(fnXGroup, xgroup)
	engine.RegisterFunc(fnXReadGroup, xreadgroup)
	engine.RegisterFunc(fnXAck, xack)
	engine.RegisterFunc(fnXClaim, xclaim)
	engine.RegisterFunc(fnXAutoClaim, xautoclaim)
	engine.RegisterUncachedKeyReadFunc(fnXPending, xpending)
	engine.RegisterUncachedKeyReadFunc(fnXInfo, xinfo)
}

// StreamTrim says how XADD and XTRIM trim: by MaxLen (keep the newest MaxLen entries) or by MinID (drop older ones).
// Exactly, or with Approx (Redis's "~") only in whole nodes of Node entries, at most Limit entries a call.
//
// Redis keeps a stream in radix-tree nodes of up to stream-node-max-entries entries and its "~" frees only whole
// nodes, from the oldest on, while the stream keeps MaxLen entries (or the node's last ID is below MinID) and the
// call's deletions stay within LIMIT. anykv has no nodes; it trims as if the entries ever added had been laid in
// nodes of Node entries counted from the stream's first entry (the n-th entry added goes to node (n-1)/Node; the
// first entry added after the stream last ran empty starts a node again), the entries deleted so far (by trims
// and XDEL) being the oldest ones: so the first node holds the live entries up to the next multiple of Node,
// every further node Node entries, the last one what is left. That is Redis's layout when Node has not changed
// since the entries were added, no node filled up by bytes first (stream-node-max-bytes) and XDEL deleted only
// the oldest entries. A "~" trim deletes nothing until a whole node can go, and then all of it in one call:
// never fewer than MaxLen kept, and a capped stream (XADD MAXLEN ~ on every add) deletes a node's worth every
// Node adds instead of one entry on every add. The meta's Head (a list's first index; unused by streams before)
// counts the entries deleted since the stream last ran empty, so a trim knows where its nodes begin without
// reading anything (a stream last written by an older anykv counts from its first entry then).
type StreamTrim struct {
	By     string // "", "maxlen" or "minid"
	MaxLen int64
	MinID  ID
	Approx bool
	Limit  int64 // with Approx, the most entries one call deletes (0: no limit)
	Node   int64 // with Approx, the node size (stream-node-max-entries; 0 or less: 100)
}

// streamTrimArgs is how many arguments StreamTrim.args makes.
const streamTrimArgs = 6

func (t StreamTrim) args() [][]byte {
	approx := []byte("=")
	if t.Approx {
		approx = []byte("~")
	}
	return [][]byte{[]byte(t.By), num(t.MaxLen), []byte(t.MinID.String()), approx, num(t.Limit), num(t.Node)}
}

func parseTrim(a [][]byte) StreamTrim {
	n, _ := strconv.ParseInt(string(a[1]), 10, 64)
	id, _ := ParseID(a[2], false)
	limit, _ := strconv.ParseInt(string(a[4]), 10, 64)
	node, _ := strconv.ParseInt(string(a[5]), 10, 64)
	return StreamTrim{By: string(a[0]), MaxLen: n, MinID: id, Approx: string(a[3]) == "~", Limit: limit, Node: node}
}

// XAdd appends an entry with fields (name, value pairs) under id ("*", "ms-*" or "ms-seq"), creating the stream
// unless noMkStream, then trims; Result.New.Value is the new ID (ErrNotFound: no stream and noMkStream) and
// Result.Old.Value the number of entries trimmed, as Int text.
func XAdd(table string, key []byte, id []byte, noMkStream bool, trim StreamTrim, fields ...[]byte) engine.Mutation {
	mk := []byte("1")
	if noMkStream {
		mk = []byte("0")
	}
	args := append([][]byte{id, mk}, trim.args()...)
	return engine.CallMutation(table, key, fnXAdd, append(args, fields...)...)
}

// stream is one stream as a function sees it.
type stream struct {
	coll
	tally                   tally // loaded on demand (loadTally)
	tallyLoaded, tallyDirty bool
	first                   *ID      // the first entry's ID, once read (firstID)
	pel                     pelDelta // the call's changes to its group's pending counts (flushPel)
}

func openStream(tx *engine.Tx, table string, key []byte) (stream, bool, error) {
	c, wrong, err := openColl(tx, table, key, engine.KindStream)
	return stream{coll: c}, wrong, err
}

// create makes the (absent) stream the call works on, empty, with a new generation.
func (st *stream) create() {
	st.meta = engine.CollMeta{Gen: st.tx.NextVersion()}
	st.item = engine.Item{Kind: engine.KindStream}
	st.exists = true
}

// entries calls fn for the entries with IDs in [from, to], oldest first (newest first if rev). The scan starts
// at the meta's floor when that lies higher: trims leave their deletions below it.
func (st *stream) entries(from, to ID, rev bool, fn func(id ID, value []byte) bool) error {
	if !st.exists {
		return nil
	}
	prefix := engine.MemberPrefix(nil, st.key, st.meta.Gen)
	start := from.key()
	if bytes.Compare(st.meta.Floor, start) > 0 {
		start = st.meta.Floor
	}
	r := engine.Range{Start: append(prefix[:len(prefix):len(prefix)], start...)}
	if end, ok := to.Next(); ok {
		r.End = append(prefix[:len(prefix):len(prefix)], end.key()...)
	} else { // just past the largest ID's key: the group records after it (streamgroup.go) are no entries
		r.End = append(append(prefix[:len(prefix):len(prefix)], groupSpace...), 0)
	}
	if bytes.Compare(r.Start, r.End) >= 0 {
		return nil
	}
	read := st.tx.Scan
	if rev {
		read = st.tx.ScanReverse
	}
	return read(engine.MemberTable(st.table), r, func(k []byte, it engine.Item) bool {
		return fn(idOf(k[len(prefix):]), it.Value)
	})
}

// del deletes an entry (byXDel: XDEL's, which Redis's max-deleted-entry-id records; a trim's does not).
func (st *stream) del(id ID, byXDel bool) error {
	st.tx.Delete(engine.MemberTable(st.table), engine.MemberKey(st.key, st.meta.Gen, id.key()))
	st.meta.Count--
	if st.meta.Head++; st.meta.Count == 0 { // the entry added next starts a node (StreamTrim)
		st.meta.Head = 0
	}
	return st.noteDeleted(id, byXDel)
}

// trim drops entries by the rule and returns how many.
func (st *stream) trim(t StreamTrim) (int64, error) {
	most := st.meta.Count // the most entries that may go
	switch t.By {
	case "maxlen":
		most -= t.MaxLen
	case "minid":
	default:
		return 0, nil
	}
	if most <= 0 {
		return 0, nil
	}
	if t.Approx {
		if t.Limit > 0 {
			most = min(most, t.Limit)
		}
		if most = st.wholeNodes(most, t.Node); most == 0 { // no whole node may go: nothing to read
			return 0, nil
		}
	}
	var drop []ID
	err := st.entries(ID{}, ID{^uint64(0), ^uint64(0)}, false, func(id ID, _ []byte) bool {
		if t.By == "minid" && !id.less(t.MinID) {
			return false
		}
		drop = append(drop, id)
		return int64(len(drop)) < most
	})
	if err != nil {
		return 0, err
	}
	if t.Approx { // MINID's entries below the ID may end inside a node, which stays
		drop = drop[:st.wholeNodes(int64(len(drop)), t.Node)]
	}
	for _, id := range drop {
		if err := st.del(id, false); err != nil {
			return 0, err
		}
	}
	if len(drop) > 0 { // the oldest entries went: new IDs only come above them
		st.meta.Floor = drop[len(drop)-1].key()
	}
	return int64(len(drop)), nil
}

// wholeNodes is how many of the oldest entries, at most n, fill whole nodes of node entries (StreamTrim): the
// first node's live entries, and node more for each further node, or every entry with the last node.
func (st *stream) wholeNodes(n, node int64) int64 {
	if node <= 0 {
		node = 100 // Redis's default; its 0 (nodes bounded by bytes alone) has no count to follow
	}
	if n >= st.meta.Count {
		return st.meta.Count
	}
	first := node - st.meta.Head%node // the live entries of the first node: the deleted ones went from it
	if n < first {
		return 0
	}
	return first + (n-first)/node*node
}

func encodeFields(fields [][]byte) []byte {
	out := binary.AppendUvarint(nil, uint64(len(fields)))
	for _, f := range fields {
		out = binary.AppendUvarint(out, uint64(len(f)))
		out = append(out, f...)
	}
	return out
}

// DecodeFields reads an entry's field/value pairs.
func DecodeFields(v []byte) ([][]byte, error) {
	n, w := binary.Uvarint(v)
	if w <= 0 || n > uint64(len(v)) {
		return nil, engine.ErrCorrupt
	}
	v = v[w:]
	out := make([][]byte, 0, n)
	for i := uint64(0); i < n; i++ {
		l, w := binary.Uvarint(v)
		if w <= 0 || uint64(len(v)-w) < l {
			return nil, engine.ErrCorrupt
		}
		out = append(out, v[w:w+int(l)])
		v = v[w+int(l):]
	}
	return out, nil
}

func xadd(tx *engine.Tx, args [][]byte) (engine.Result, error) {
	if len(args) < 2+streamTrimArgs+2 || (len(args)-2-streamTrimArgs)%2 != 0 {
		return engine.Result{}, engine.ErrInvalid
	}
	st, wrong, err := openStream(tx, tx.Table(), tx.Key())
	switch {
	case err != nil:
		return engine.Result{}, err
	case wrong:
		return wrongType, nil
	case !st.exists && string(args[1]) == "0":
		return engine.Result{Err: engine.ErrNotFound}, nil
	case !st.exists:
		st.create()
	}
	last := ID{st.meta.LastMS, st.meta.LastSeq}
	if last == (ID{^uint64(0), ^uint64(0)}) {
		return engine.Result{Err: ErrStreamFull}, nil
	}
	var id ID
	spec := string(CString(args[0]))
	switch {
	case spec == "*":
		now := uint64(max(tx.Now(), 0))
		if now > last.MS {
			id = ID{now, 0}
		} else if id, _ = last.Next(); id == last {
			return engine.Result{Err: ErrStreamIDSmall}, nil
		}
	case strings.HasSuffix(spec, "-*"):
		ms, ok := parseIDPart(strings.TrimSuffix(spec, "-*"))
		if !ok || len(args[0]) > 127 {
			return engine.Result{Err: ErrStreamID}, nil
		}
		id = ID{ms, 0}
		if ms == last.MS && last != (ID{}) {
			id.Seq = last.Seq + 1
		}
		if id == (ID{}) {
			id.Seq = 1 // 0-0 is never an entry's ID
		}
	default:
		var ok bool
		if id, ok = ParseID(args[0], false); !ok {
			return engine.Result{Err: ErrStreamID}, nil
		}
	}
	if id == (ID{}) {
		return engine.Result{Err: ErrStreamIDZero}, nil
	}
	if !last.less(id) {
		return engine.Result{Err: ErrStreamIDSmall}, nil
	}
	tx.Put(engine.MemberTable(tx.Table()), engine.MemberKey(tx.Key(), st.meta.Gen, id.key()),
		engine.Item{Value: encodeFields(args[2+streamTrimArgs:])})
	st.meta.Count++
	st.meta.LastMS, st.meta.LastSeq = id.MS, id.Seq
	trimmed, err := st.trim(parseTrim(args[2 : 2+streamTrimArgs]))
	if err != nil {
		return engine.Result{}, err
	}
	st.store()
	return engine.Result{New: engine.Item{Value: []byte(id.String())}, NewFound: true, Old: engine.Item{Value: num(int64(trimmed))}}, nil
}

// XDel deletes entries by ID; Int is how many existed.
func XDel(table string, key []byte, ids ...[]byte) engine.Mutation {
	return engine.CallMutation(table, key, fnXDel, ids...)
}

func xdel(tx *engine.Tx, args [][]byte) (engine.Result, error) {
	st, wrong, err := openStream(tx, tx.Table(), tx.Key())
	if res, done, err := settle(st.exists, wrong, err, intResult(0)); done {
		return res, err
	}
	ids := make([]ID, len(args)) // all parsed before any goes, as Redis: a bad one deletes none
	for i, a := range args {
		var ok bool
		if ids[i], ok = ParseID(a, false); !ok {
			return engine.Result{Err: ErrStreamID}, nil
		}
	}
	n := int64(0)
	for _, id := range ids {
		mk := engine.MemberKey(st.key, st.meta.Gen, id.key())
		if _, found, err := tx.Get(engine.MemberTable(st.table), mk); err != nil {
			return engine.Result{}, err
		} else if found {
			if err := st.del(id, true); err != nil {
				return engine.Result{}, err
			}
			n++
		}
	}
	if n > 0 {
		st.store()
	}
	return intResult(n), nil
}

// XTrim trims the stream; Int is how many entries it dropped.
func XTrim(table string, key []byte, trim StreamTrim) engine.Mutation {
	return engine.CallMutation(table, key, fnXTrim, trim.args()...)
}

func xtrim(tx *engine.Tx, args [][]byte) (engine.Result, error) {
	st, wrong, err := openStream(tx, tx.Table(), tx.Key())
	if res, done, err := settle(st.exists, wrong, err, intResult(0)); done {
		return res, err
	}
	n, err := st.trim(parseTrim(args))
	if err != nil {
		return engine.Result{}, err
	}
	if n > 0 {
		st.store()
	}
	return intResult(n), nil
}

// XRange reads the entries with IDs in [from, to] into Members (Name the ID text, Item.Value the encoded fields,
// see DecodeFields), oldest first or newest first if rev, at most count (count < 0: all). Result.New.Value is the
// stream's last ID, for XREAD's "$".
func XRange(table string, key []byte, from, to ID, rev bool, count int64) engine.Mutation {
	r := []byte("0")
	if rev {
		r = []byte("1")
	}
	return engine.CallMutation(table, key, fnXRead, []byte(from.String()), []byte(to.String()), r, num(count))
}

func xrange(tx *engine.Tx, args [][]byte) (engine.Result, error) {
	from, ok1 := ParseID(args[0], false)
	to, ok2 := ParseID(args[1], false)
	count, err := parseNum(args[3])
	if !ok1 || !ok2 || err != nil {
		return engine.Result{}, engine.ErrInvalid
	}
	st, wrong, err := openStream(tx, tx.Table(), tx.Key())
	if res, done, err := settle(st.exists, wrong, err, engine.Result{Err: engine.ErrNotFound}); done {
		return res, err
	}
	rev := string(args[2]) == "1"
	var res engine.Result
	err = st.entries(from, to, rev, func(id ID, v []byte) bool {
		if count >= 0 && int64(len(res.Members)) >= count {
			return false // COUNT 0 answers none, as Redis
		}
		res.Members = append(res.Members, engine.Member{Name: []byte(id.String()), Item: engine.Item{Value: v}})
		tx.Hold(engine.EntryCost)
		return true
	})
	if err != nil {
		return engine.Result{}, err
	}
	res.New, res.NewFound = engine.Item{Value: []byte(ID{st.meta.LastMS, st.meta.LastSeq}.String())}, true
	return res, nil
}
