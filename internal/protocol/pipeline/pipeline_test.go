package pipeline

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	"anykv/internal/engine"
)

// got is what Answer handed one request.
type got struct {
	req  string
	keys []string
	vals []string
	err  error
}

func keysOf(muts []engine.Mutation) []string {
	var out []string
	for _, m := range muts {
		out = append(out, string(m.Key))
	}
	return out
}

func answerAll(b *Batch[string], res []engine.Result, err error) []got {
	var out []got
	b.Answer(res, err, func(req *string, own []engine.Result, muts []engine.Mutation, err error) {
		g := got{req: *req, keys: keysOf(muts), err: err}
		for _, r := range own {
			g.vals = append(g.vals, string(r.New.Value))
		}
		out = append(out, g)
	})
	return out
}

// resultsFor gives each mutation a result naming its key, as an engine would answer in order.
func resultsFor(muts []engine.Mutation) []engine.Result {
	res := make([]engine.Result, len(muts))
	for i, m := range muts {
		res[i].New.Value = []byte("v" + string(m.Key))
	}
	return res
}

func TestEachRequestGetsItsOwnResultsInOrder(t *testing.T) {
	var b Batch[string]
	b.Add(engine.Mutation{Key: []byte("a")})
	b.Plan("set a")
	b.Plan("ping") // no mutation: answered in order
	b.Add(engine.Mutation{Key: []byte("b")})
	b.Add(engine.Mutation{Key: []byte("c")})
	b.Plan("mset b c")
	out := answerAll(&b, resultsFor(b.Muts()), nil)
	want := []got{
		{req: "set a", keys: []string{"a"}, vals: []string{"va"}},
		{req: "ping"},
		{req: "mset b c", keys: []string{"b", "c"}, vals: []string{"vb", "vc"}},
	}
	if !reflect.DeepEqual(out, want) {
		t.Fatalf("answers:\n got %+v\nwant %+v", out, want)
	}
	if b.Len() != 0 || len(b.Muts()) != 0 {
		t.Fatalf("Answer left %d requests and %d mutations", b.Len(), len(b.Muts()))
	}
}

func TestBatchFailureReachesEveryRequest(t *testing.T) {
	var b Batch[string]
	b.Add(engine.Mutation{Key: []byte("a")})
	b.Plan("set a")
	b.Plan("ping")
	boom := errors.New("disk gone")
	for _, g := range answerAll(&b, nil, boom) {
		if g.err != boom || g.vals != nil {
			t.Fatalf("%s: got err %v and results %v, want the batch's error and no results", g.req, g.err, g.vals)
		}
	}
}

func TestAbortedBatchAnswersEachMutationAborted(t *testing.T) {
	var b Batch[string]
	b.Add(engine.Mutation{Key: []byte("a")})
	b.Add(engine.Mutation{Key: []byte("b")})
	b.Plan("msetnx a b")
	var errs []error
	b.Answer(nil, fmt.Errorf("guard: %w", engine.ErrAborted), func(_ *string, own []engine.Result, _ []engine.Mutation, err error) {
		if err != nil {
			t.Fatalf("an aborted batch reached a request as a batch error %v", err)
		}
		for _, r := range own {
			errs = append(errs, r.Err)
		}
	})
	if len(errs) != 2 || !errors.Is(errs[0], engine.ErrAborted) || !errors.Is(errs[1], engine.ErrAborted) {
		t.Fatalf("results' errors = %v, want ErrAborted for both mutations", errs)
	}
}

func TestRewriteWrapsTheLastRequest(t *testing.T) {
	var b Batch[string]
	b.Add(engine.Mutation{Key: []byte("a")})
	b.Plan("set a")
	from := len(b.Muts())
	b.Add(engine.Mutation{Key: []byte("b")})
	b.Plan("incr b")
	b.Rewrite(from, func(own []engine.Mutation) []engine.Mutation {
		out := []engine.Mutation{{Key: []byte("before")}}
		out = append(out, own...)
		return append(out, engine.Mutation{Key: []byte("after")})
	})
	b.Add(engine.Mutation{Key: []byte("c")})
	b.Plan("del c")
	out := answerAll(&b, resultsFor(b.Muts()), nil)
	if k := out[1].keys; !reflect.DeepEqual(k, []string{"before", "b", "after"}) {
		t.Fatalf("rewritten request owns %v", k)
	}
	if k := out[2].keys; !reflect.DeepEqual(k, []string{"c"}) {
		t.Fatalf("the request after the rewrite owns %v", k)
	}
}

func TestFitsKeepsOneRequestTogether(t *testing.T) {
	var b Batch[string]
	if !b.Fits(10, 4) {
		t.Fatal("an empty batch refused a request bigger than the bound")
	}
	b.Add(engine.Mutation{})
	b.Add(engine.Mutation{})
	b.Plan("x")
	if !b.Fits(2, 4) || b.Fits(3, 4) {
		t.Fatal("Fits does not compare the batch with its bound")
	}
}

func TestResetDropsReferences(t *testing.T) {
	var b Batch[string]
	b.Add(engine.Mutation{Key: []byte("a")})
	b.Plan("set a")
	muts := b.Muts()
	b.Reset()
	if muts[:1][0].Key != nil {
		t.Fatal("Reset kept a reference to a request's key")
	}
	if b.Last() != nil {
		t.Fatal("Last after Reset")
	}
}
